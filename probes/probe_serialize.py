"""Plan serialization: a batched matmul (B=8, M=256, K=512, N=256, bf16) built with the five
steps vs deserialized from a saved plan (host ms per fresh graph), then executed by integer UIDs
(the deserialized graph runs in all three modes, checked against torch.bmm like the built one).
Saved plans go through bench.cudnn_graphs.plan_store: a file from another GPU / cuDNN / frontend, or a
truncated one, falls back to a rebuild with a warning; the two fallback rows time that path and
fail unless the warning came, the rebuild happened and its result is right."""
import tempfile
import warnings
from pathlib import Path

from cudnn_hostbench.bench.cudnn_graphs import plan_store
from cudnn_hostbench.bench.cudnn_graphs.build import as_unsupported, build_steps, plan_name, selected_index, workspace_for
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.host import host_placeholders, host_record, safe_measure, stats_ratio, time_ms
from cudnn_hostbench.bench.cudnn_graphs.load import last_error
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, parse_dims
from cudnn_hostbench.bench.cudnn_graphs.winners import Env, env_of
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import OK, Status, Unsupported, failed


def _sizes(options):
    return ["b8m256k512n256"] + (["b32m512k1024n512"] if options.heavy else [])


class _Bmm(Matmul):
    """The batched matmul with fixed UIDs (a blob is executed by UID), built to the plan that is serialized."""

    def __init__(self, ctx, size):
        d = parse_dims(size)
        p = Matmul.random(ctx, d["b"], d["m"], d["k"], d["n"])
        super().__init__(ctx, p.a, p.b, p.c, p.ref)
        self.key = self.problem("bmm", modes=None)
        self.pack = dict(zip(self.UIDS, self.buffers()))   # integer UID keys
        self.index = None          # the plan that is serialized; None: the heuristic's pick

    def fresh(self):
        """A fresh graph built to the plan that is serialized: the five steps with HEURISTICS_CHOICE,
        or, when that plan cannot be serialized, planning then build_plan_at_index(self.index)."""
        cudnn = self.ctx.cudnn
        g, _ = self.describe(fixed_uids=True, name="bmm")
        if self.index is None:
            build_steps(cudnn, g)
        else:
            build_steps(cudnn, g, upto="check_support")
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

    def call(self, graph):
        ws = workspace_for(self.ctx, graph.get_workspace_size())
        pack, h, c = self.pack, self.ctx.handle, self.c
        return lambda: graph.execute(pack, ws, handle=h) or c

    def verify(self, graph) -> float:
        """Runs graph once on poisoned output; relative error vs torch."""
        torch = self.ctx.torch
        fn = self.call(graph)
        with torch.cuda.stream(self.ctx.stream):
            self.poison()
            fn()
        self.ctx.sync()
        return self.check(self.c)


def _serialize_selected(ctx, graph) -> bytes:
    if ctx.caps.serialize_bytes:
        return graph.serialize(as_bytes=True)
    return plan_store.to_bytes(graph.serialize())


def _serialize(ctx, problem, graph) -> tuple[bytes, str]:
    """The heuristic's pick serialized; if its engine cannot be, the first plan in rank order that
    can (frontend 1.27+: build_plan_at_index selects the plan that serialize() writes)."""
    try:
        return _serialize_selected(ctx, graph), f"heuristic's pick {plan_name(graph, selected_index(graph))!r}"
    except Exception as e:  # noqa: BLE001 - only some engines can be serialized
        first = f"{type(e).__name__}: {e}{last_error(ctx.cudnn)}"
    if not ctx.caps.ir:
        raise Unsupported(f"serialize() refused the heuristic's pick: {first}")
    skipped = []
    for i in range(graph.get_execution_plan_count()):
        if i == selected_index(graph):
            continue
        try:
            graph.build_plan_at_index(i)
            blob = _serialize_selected(ctx, graph)
        except Exception as e:  # noqa: BLE001
            skipped.append(f"[{i}] {type(e).__name__}")
            continue
        problem.index = i
        return blob, (f"plan {i} {plan_name(graph, i)!r}: the heuristic's pick refused ({first[:160]}); "
                      f"also refused: {', '.join(skipped) or 'none'}")
    raise Unsupported(f"serialize() refused every plan: heuristic's pick: {first}; others: {', '.join(skipped)}")


def _state(ctx, size) -> dict:
    """What build() found for this size on this context, for measure()."""
    return ctx.attached((PROBE.name, size), dict)


def build(ctx, size):
    p = _Bmm(ctx, size)
    torch = ctx.torch
    g1 = p.fresh()
    cases = {"torch_bmm": Case(lambda: torch.bmm(p.a, p.b), p.check, p.poison)}
    st = _state(ctx, size)
    st.update(prob=p, blob=None, error=None, which="")
    # plan files live in a folder only while they are used: a worker ended by os._exit runs no atexit
    with tempfile.TemporaryDirectory(prefix="hb-plans-") as d:
        _check_saved_plan(ctx, st, p, g1, size, Path(d), cases)
    # the built graph runs the plan that was serialized (build_plan_at_index selected it, if it had to)
    cases["built"] = Case(p.call(g1), p.check, p.poison,
                          note=f"five-step build, int UID pack; {st['which'] or 'heuristic pick'}")
    cases.update(host_placeholders(PROBE))
    return cases


def _save(ctx, state, size, folder: Path) -> Path:
    p = state["prob"]
    return plan_store.save(folder / "bmm.hbplan", state["blob"], env_of(ctx), p.key,
                           {"uids": dict(zip("ABC", p.UIDS)), "size": size})


def _check_saved_plan(ctx, state, problem, graph, size, folder: Path, cases: dict) -> None:
    """Serializes, saves and loads the plan once; the deserialized case, or the error on its row."""
    try:
        state["blob"], state["which"] = _serialize(ctx, problem, graph)
        env = env_of(ctx)
        path = _save(ctx, state, size, folder)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = plan_store.load_or_build(path, env, problem.key, problem.deserialize, problem.fresh)
        if out.action != "deserialized":
            raise RuntimeError(f"a plan saved by this process was not deserialized: {out.reason}; "
                               f"{[str(w.message) for w in caught]}")
        cases["deserialized"] = Case(
            problem.call(out.value), problem.check, problem.poison,
            note=(f"deserialized from {len(state['blob'])}-byte blob of {state['which']}, "
                  f"executed by int UIDs {sorted(problem.pack)}"))
    except Exception as e:  # noqa: BLE001 - recorded on the deserialized row (and the host rows)
        state["error"] = cases["deserialized"] = as_unsupported(e)


def _fallback(ctx, state, folder: Path, env_saved: Env, mangle, label: str, reps: int) -> tuple[list, Status, str]:
    """Times load_or_build on a bad file; checks it warned, rebuilt, and the rebuild is right."""
    p, env = state["prob"], env_of(ctx)
    path = folder / f"{label}.hbplan"
    data = plan_store.dumps(state["blob"], env_saved, p.key, {"uids": dict(zip("ABC", p.UIDS))})
    path.write_bytes(mangle(data))
    ms, msgs, out = [], [], None
    for _ in range(reps):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out, t = time_ms(lambda: plan_store.load_or_build(path, env, p.key, p.deserialize, p.fresh))
        ms.append(t)
        msgs = [str(w.message) for w in caught if issubclass(w.category, plan_store.PlanFallbackWarning)]
        if out.action != "rebuilt" or not msgs:
            return ms, failed(f"expected a warned rebuild, got {out.action} ({out.reason}) warnings={msgs}"), ""
    err = p.verify(out.value)
    if not err <= 2e-2:
        return ms, failed(f"numerics rel_err={err:.3g} after fallback rebuild"), ""
    return ms, OK, f"warned and rebuilt: {msgs[0][-160:]}"


def measure(ctx, size, opt):
    st = _state(ctx, size)
    if not st:
        build(ctx, size)
    p, blob = st["prob"], st["blob"]
    reps = 20 if ctx.options.heavy else 8
    b_ms = [time_ms(p.fresh)[1] for _ in range(reps)]
    build_row = host_record(PROBE, size, "build", b_ms,
                                   note="fresh graph + five steps (HEURISTICS_CHOICE, A + FALLBACK)" if p.index is None
                                   else f"fresh graph, planned (A + FALLBACK), build_plan_at_index({p.index}): "
                                        f"the serialized plan")
    if st["error"] is not None:        # nothing to deserialize: the build row still stands
        why = Status.of(st["error"])
        return [build_row] + [host_record(PROBE, size, v.name, status=why)
                              for v in PROBE.variants if "host" in v.modes and v.name != "build"]
    d_ms = []
    for _ in range(reps):
        g, t = time_ms(lambda: p.deserialize(blob))
        d_ms.append(t)
    err = p.verify(g)
    with tempfile.TemporaryDirectory(prefix="hb-plans-") as d:
        return _timed_files(ctx, st, size, Path(d), reps, build_row, b_ms, d_ms, err)


def _timed_files(ctx, state, size, folder: Path, reps: int, build_row, b_ms, d_ms, err) -> list:
    """The rows that read plan files: a good one (load_file) and three bad ones (the fallbacks)."""
    p, blob, env = state["prob"], state["blob"], env_of(ctx)
    path = _save(ctx, state, size, folder)
    f_ms = []
    for _ in range(reps):
        out, t = time_ms(lambda: plan_store.load_or_build(path, env, p.key, p.deserialize, p.fresh))
        f_ms.append(t)
    ratio = stats_ratio(d_ms, b_ms)
    recs = [
        build_row,
        host_record(PROBE, size, "deserialize", d_ms, ratio=ratio, baseline="build",
                           status=OK if err <= 2e-2 else failed(f"numerics rel_err={err:.3g} after deserialize"),
                           note=f"fresh pygraph(handle) + deserialize({len(blob)} B); includes the frontend's "
                                f"warm-up execute; result checked vs torch.bmm"),
        host_record(PROBE, size, "load_file", f_ms, ratio=stats_ratio(f_ms, b_ms), baseline="build",
                           status=OK if out.action == "deserialized" else failed(out.reason),
                           note="plan_store.load_or_build: read, header/SHA-256 checks, deserialize"),
    ]
    foreign = Env("NVIDIA other-GPU", env.cudnn_backend, env.cudnn_frontend) if "H200" not in env.gpu else \
        Env(env.gpu.replace("H200", "B200"), env.cudnn_backend, env.cudnn_frontend)
    for name, env_saved, mangle in (
            ("fallback_foreign", foreign, lambda d: d),
            ("fallback_version", Env(env.gpu, env.cudnn_backend - 100, env.cudnn_frontend), lambda d: d),
            ("fallback_truncated", env, lambda d: d[: len(d) - max(1, len(blob) // 2)])):
        ms, status, note = _fallback(ctx, state, folder, env_saved, mangle, name, max(2, reps // 4))
        recs.append(host_record(PROBE, size, name, ms, status=status, note=note,
                                       ratio=stats_ratio(ms, b_ms[:len(ms)]), baseline="build"))
    return recs


PROBE = Probe(
    name="serialize",
    doc=__doc__,
    variants=[
        Variant("torch_bmm", "baseline", "torch.bmm", kernels=GEMM),
        Variant("built", "info", "built graph, executed by int UIDs", kernels=GEMM),
        Variant("deserialized", "fixed", "deserialized graph, executed by int UIDs", kernels=GEMM),
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
    prepare=prepare,
    extra={"measure": safe_measure(lambda: PROBE, measure)},
)


def test_serialize(hb_run):
    hb_run()
