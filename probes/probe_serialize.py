"""Plan serialization: a batched matmul (B=8, M=256, K=512, N=256, bf16) built with the five
steps vs deserialized from a saved plan (host ms per fresh graph), then executed by integer UIDs
(the deserialized graph runs in all three modes, checked against torch.bmm like the built one).
Saved plans go through bench.cudnn_graphs.plan_store: a file from another GPU / cuDNN / frontend, or a
truncated one, falls back to a rebuild with a warning; the two fallback rows time that path and
fail unless the warning came, the rebuild happened and its result is right."""
import atexit
import shutil
import tempfile
import warnings
from pathlib import Path

from bench.cudnn_graphs import support as cs
from bench.cudnn_graphs import graphs
from bench.cudnn_graphs import plan_store
from bench.cudnn_graphs.cache_keys import problem_key
from bench.measure.probe import Probe, Variant
from bench.cudnn_graphs.winners import Env, env_of

UIDS = {"A": 101, "B": 102, "C": 103}
_STATE: dict = {}


def _sizes(config):
    _HEAVY[0] = graphs.heavy(config)
    return ["b8m256k512n256"] + (["b32m512k1024n512"] if _HEAVY[0] else [])


_HEAVY = [False]


class _Bmm:
    def __init__(self, ctx, size):
        torch = ctx.torch
        d = graphs.parse_dims(size)
        b, m, k, n = d["b"], d["m"], d["k"], d["n"]
        self.ctx = ctx
        self.a = ctx.randn(b, m, k, scale=k ** -0.5)
        self.b = ctx.randn(b, k, n)
        self.c = torch.empty(b, m, n, dtype=torch.bfloat16, device=ctx.device)
        self.ref = torch.bmm(self.a.float(), self.b.float())
        self.problem = problem_key("bmm", self.a, self.b, self.c)
        self.pack = {UIDS["A"]: self.a, UIDS["B"]: self.b, UIDS["C"]: self.c}   # integer UID keys

        self.index = None          # the plan that is serialized; None: the heuristic's pick

    def describe(self):
        ctx = self.ctx
        g = graphs.new_graph(ctx)
        A, B = graphs.tensor_of(ctx, g, self.a, "A"), graphs.tensor_of(ctx, g, self.b, "B")
        C = g.matmul(A=A, B=B, compute_data_type=ctx.cudnn.data_type.FLOAT, name="bmm")
        graphs.as_output(ctx, C, self.c)
        for t, k in ((A, "A"), (B, "B"), (C, "C")):
            t.set_uid(UIDS[k])           # fixed before serializing: a blob is executed by UID
        return g

    def build(self):
        """A fresh graph built to the plan that is serialized: the five steps with HEURISTICS_CHOICE,
        or, when that plan cannot be serialized, planning then build_plan_at_index(self.index)."""
        cudnn = self.ctx.cudnn
        g = self.describe()
        if self.index is None:
            graphs.five_steps(cudnn, g)
        else:
            g.validate()
            g.build_operation_graph()
            g.create_execution_plans(graphs.default_modes(cudnn))
            g.check_support()
            g.build_plan_at_index(self.index)
        return g

    def deserialize(self, blob: bytes):
        """A fresh graph on our handle, loaded from the blob (no build)."""
        ctx = self.ctx
        g = ctx.cudnn.pygraph(handle=ctx.handle)
        try:
            g.deserialize(ctx.handle, blob)
        except TypeError:             # frontends without the (handle, data) overload
            g.deserialize(blob)
        return g

    def call(self, g):
        ws = graphs.workspace_for(self.ctx, g.get_workspace_size())
        pack, h, c = self.pack, self.ctx.handle, self.c
        return lambda: g.execute(pack, ws, handle=h) or c

    def check(self, out):
        return graphs.rel_err(out if isinstance(out, self.ctx.torch.Tensor) else self.c, self.ref)

    def poison(self):
        self.c.fill_(float("nan"))

    def verify(self, g) -> float:
        """Runs g once on poisoned output; relative error vs torch."""
        torch = self.ctx.torch
        fn = self.call(g)
        with torch.cuda.stream(self.ctx.stream):
            self.poison()
            fn()
        self.ctx.sync()
        return self.check(self.c)


def _serialize_selected(ctx, g) -> bytes:
    if graphs.extra_caps(ctx.cudnn)["serialize_bytes"]:
        return g.serialize(as_bytes=True)
    return plan_store.to_bytes(g.serialize())


def _serialize(ctx, p, g) -> tuple[bytes, str]:
    """The heuristic's pick serialized; if its engine cannot be, the first plan in rank order that
    can (frontend 1.27+: build_plan_at_index selects the plan that serialize() writes)."""
    try:
        return _serialize_selected(ctx, g), f"heuristic's pick {graphs.plan_name(g, graphs.selected_index(g))!r}"
    except Exception as e:  # noqa: BLE001 - only some engines can be serialized
        first = f"{type(e).__name__}: {e}{graphs.last_error(ctx.cudnn)}"
    if not graphs.extra_caps(ctx.cudnn)["ir"]:
        raise cs.Unsupported(f"serialize() refused the heuristic's pick: {first}")
    skipped = []
    for i in range(g.get_execution_plan_count()):
        if i == graphs.selected_index(g):
            continue
        try:
            g.build_plan_at_index(i)
            blob = _serialize_selected(ctx, g)
        except Exception as e:  # noqa: BLE001
            skipped.append(f"[{i}] {type(e).__name__}")
            continue
        p.index = i
        return blob, (f"plan {i} {graphs.plan_name(g, i)!r}: the heuristic's pick refused ({first[:160]}); "
                      f"also refused: {', '.join(skipped) or 'none'}")
    raise cs.Unsupported(f"serialize() refused every plan: heuristic's pick: {first}; others: {', '.join(skipped)}")


def build(ctx, size):
    p = _Bmm(ctx, size)
    torch = ctx.torch
    g1 = p.build()
    cases = {"torch_bmm": graphs.checked_case(lambda: torch.bmm(p.a, p.b), p.check, p.poison)}
    st = {"prob": p, "blob": None, "error": None, "dir": Path(tempfile.mkdtemp(prefix="hb-plans-")), "which": ""}
    atexit.register(shutil.rmtree, st["dir"], True)
    _STATE[(id(ctx), size)] = st
    try:
        st["blob"], st["which"] = _serialize(ctx, p, g1)
        env = env_of(ctx)
        path = plan_store.save(st["dir"] / "bmm.hbplan", st["blob"], env, p.problem,
                               {"uids": UIDS, "size": size})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = plan_store.load_or_build(path, env, p.problem, p.deserialize, p.build)
        if out.action != "deserialized":
            raise RuntimeError(f"a plan saved by this process was not deserialized: {out.reason}; "
                               f"{[str(w.message) for w in caught]}")
        cases["deserialized"] = graphs.checked_case(
            p.call(out.value), p.check, p.poison,
            note=f"deserialized from {len(st['blob'])}-byte blob of {st['which']}, executed by int UIDs {sorted(p.pack)}")
    except Exception as e:  # noqa: BLE001 - recorded on the deserialized row (and the host rows)
        st["error"] = e
        cases["deserialized"] = e
    # the built graph runs the plan that was serialized (build_plan_at_index selected it, if it had to)
    cases["built"] = graphs.checked_case(p.call(g1), p.check, p.poison,
                                         note=f"five-step build, int UID pack; {st['which'] or 'heuristic pick'}")
    cases.update(graphs.host_placeholders(PROBE))
    return cases


def _fallback(ctx, st, env_saved: Env, mangle, label: str, reps: int) -> tuple[list, str, str]:
    """Times load_or_build on a bad file; checks it warned, rebuilt, and the rebuild is right."""
    p, env = st["prob"], env_of(ctx)
    path = st["dir"] / f"{label}.hbplan"
    data = plan_store.dumps(st["blob"], env_saved, p.problem, {"uids": UIDS})
    path.write_bytes(mangle(data))
    ms, msgs, out = [], [], None
    for _ in range(reps):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out, t = graphs.time_ms(lambda: plan_store.load_or_build(path, env, p.problem, p.deserialize, p.build))
        ms.append(t)
        msgs = [str(w.message) for w in caught if issubclass(w.category, plan_store.PlanFallbackWarning)]
        if out.action != "rebuilt" or not msgs:
            return ms, f"failed: expected a warned rebuild, got {out.action} ({out.reason}) warnings={msgs}", ""
    err = p.verify(out.value)
    if not err <= 2e-2:
        return ms, f"failed: numerics rel_err={err:.3g} after fallback rebuild", ""
    return ms, "ok", f"warned and rebuilt: {msgs[0][-160:]}"


def measure(ctx, size, opt):
    key = (id(ctx), size)
    if key not in _STATE:
        build(ctx, size)
    st = _STATE[key]
    p, blob = st["prob"], st["blob"]
    reps = 20 if _HEAVY[0] else 8
    env = env_of(ctx)
    b_ms = [graphs.time_ms(p.build)[1] for _ in range(reps)]
    build_row = graphs.host_record(PROBE, size, "build", b_ms,
                                   note="fresh graph + five steps (HEURISTICS_CHOICE, A + FALLBACK)" if p.index is None
                                   else f"fresh graph, planned (A + FALLBACK), build_plan_at_index({p.index}): "
                                        f"the serialized plan")
    if st["error"] is not None:        # nothing to deserialize: the build row still stands
        why = graphs.status_of(st["error"])
        return [build_row] + [graphs.host_record(PROBE, size, v.name, status=why)
                              for v in PROBE.variants if "host" in v.modes and v.name != "build"]
    d_ms = []
    for _ in range(reps):
        g, t = graphs.time_ms(lambda: p.deserialize(blob))
        d_ms.append(t)
    err = p.verify(g)
    path = st["dir"] / "bmm.hbplan"
    f_ms = []
    for _ in range(reps):
        out, t = graphs.time_ms(lambda: plan_store.load_or_build(path, env, p.problem, p.deserialize, p.build))
        f_ms.append(t)
    ratio = graphs.stats_ratio(d_ms, b_ms)
    recs = [
        build_row,
        graphs.host_record(PROBE, size, "deserialize", d_ms, ratio=ratio, baseline="build",
                           status="ok" if err <= 2e-2 else f"failed: numerics rel_err={err:.3g} after deserialize",
                           note=f"fresh pygraph(handle) + deserialize({len(blob)} B); includes the frontend's "
                                f"warm-up execute; result checked vs torch.bmm"),
        graphs.host_record(PROBE, size, "load_file", f_ms, ratio=graphs.stats_ratio(f_ms, b_ms), baseline="build",
                           status="ok" if out.action == "deserialized" else f"failed: {out.reason}",
                           note="plan_store.load_or_build: read, header/SHA-256 checks, deserialize"),
    ]
    foreign = Env("NVIDIA other-GPU", env.cudnn_backend, env.cudnn_frontend) if "H200" not in env.gpu else \
        Env(env.gpu.replace("H200", "B200"), env.cudnn_backend, env.cudnn_frontend)
    for name, env_saved, mangle in (
            ("fallback_foreign", foreign, lambda d: d),
            ("fallback_version", Env(env.gpu, env.cudnn_backend - 100, env.cudnn_frontend), lambda d: d),
            ("fallback_truncated", env, lambda d: d[: len(d) - max(1, len(blob) // 2)])):
        ms, status, note = _fallback(ctx, st, env_saved, mangle, name, max(2, reps // 4))
        recs.append(graphs.host_record(PROBE, size, name, ms, status=status, note=note,
                                       ratio=graphs.stats_ratio(ms, b_ms[:len(ms)]), baseline="build"))
    return recs


PROBE = Probe(
    name="serialize",
    doc=__doc__,
    variants=[
        Variant("torch_bmm", "baseline", "torch.bmm"),
        Variant("built", "info", "built graph, executed by int UIDs"),
        Variant("deserialized", "fixed", "deserialized graph, executed by int UIDs"),
        Variant("build", "trap", "five-step build, fresh graph", modes=("host",)),
        Variant("deserialize", "fixed", "deserialize a saved plan, fresh graph", modes=("host",)),
        Variant("load_file", "fixed", "checked load from file + deserialize", modes=("host",)),
        Variant("fallback_foreign", "info", "plan from another GPU -> warned rebuild", modes=("host",)),
        Variant("fallback_version", "info", "plan from another cuDNN -> warned rebuild", modes=("host",)),
        Variant("fallback_truncated", "info", "truncated plan file -> warned rebuild", modes=("host",)),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_bmm",
    extra={"measure": graphs.safe_measure(lambda: PROBE, measure)},
)


def test_serialize(hb_run):
    hb_run()
