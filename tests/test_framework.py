"""Issue 21 on CPU: op registration (custom_op, Library) and its counting, variant-pack sizes and
their per-tensor slope, the audit rules priced from synthetic runs, the decode SDPA operands and
the pointwise-chain problem. GPU paths are the probes themselves (run on the H200)."""
import types

import pytest

torch = pytest.importorskip("torch")

from cudnn_hostbench.bench.audit import cost, dispatch, packs
from cudnn_hostbench.bench.audit import count as audit_count
from cudnn_hostbench.bench.cudnn_graphs import registration
from cudnn_hostbench.bench.measure.core.options import SuiteOptions
from cudnn_hostbench.bench.measure.runfile.records import Record, load_run, run_document, write_run
from cudnn_hostbench.probes import probe_pack_size, probe_registration, probe_sdpa_decode
from cudnn_hostbench.reports import pack_cost


def _mm(a, b):
    return torch.matmul(a, b)


def _run(tmp_path, recs, name="run.json"):
    return load_run(write_run(tmp_path / name, run_document(recs, {"gpu_name": "Fake GPU"})))


def _rec(probe, variant, size, us, mode="eager"):
    return Record(probe, variant, size, mode, samples=[us] * 5)


# -- registration ---------------------------------------------------------------------------------

def test_registrations_call_the_same_impl_on_cpu():
    a, b = torch.randn(1, 4, 5), torch.randn(1, 5, 3)
    regs = [registration.custom_op(_mm, "cpu"), registration.custom_op(_mm, "cpu", autograd=True),
            registration.library_op(_mm, "CPU")]
    assert len({r.qualname for r in regs}) == 3          # a fresh name per registration
    for r in regs:
        assert torch.allclose(r.call(a, b), a @ b) and torch.allclose(r.via_ops(a, b), a @ b)
    x = a.clone().requires_grad_()
    regs[1].call(x, b).sum().backward()                  # the autograd formula is a real matmul gradient
    assert torch.allclose(x.grad, torch.ones(1, 4, 3) @ b.transpose(-1, -2))


@pytest.mark.parametrize("kind", ["custom_op", "custom_op_autograd", "library"])
def test_registry_close_frees_what_the_impl_holds(kind):
    # torch keeps a registered impl after deregistration; the graph it closes over must not stay
    import gc
    import weakref

    class Graph:
        pass

    def make():                 # the graph lives only in impl's closure, as in probe_registration
        graph = Graph()

        def impl(a, b):
            assert graph is not None
            return torch.mm(a, b)
        return impl, weakref.ref(graph)
    impl, alive = make()
    reg = registration.Registry()
    reg.release(impl)
    made = (registration.library_op(impl, "CPU") if kind == "library"
            else registration.custom_op(impl, "cpu", autograd=kind.endswith("autograd")))
    reg.add(made)
    a = torch.randn(3, 3)
    assert torch.allclose(made.via_ops(a, a), a @ a)
    del made, impl
    reg.close()
    gc.collect()
    assert alive() is None and not reg.items and not reg.impls


class _FakeGraph:
    def __init__(self):
        self.calls = []

    def execute_plan_at_index(self, pack, ws, index, handle=None, tensor_uids=None):
        self.calls.append((pack, index, tensor_uids))
        a, b, out = pack if tensor_uids else tuple(pack.values())
        out.copy_(torch.matmul(a, b))


@pytest.mark.parametrize("ordered", [True, False])
def test_registration_probe_body_through_custom_op_on_cpu(ordered):
    g = _FakeGraph()
    c = torch.empty(1, 4, 3)
    built = types.SimpleNamespace(graph=g, workspace=None, pinned=2, uids=(11, 12, 13))
    ctx = types.SimpleNamespace(torch=torch, handle="h", caps=types.SimpleNamespace(ordered=ordered))
    impl, form = probe_registration.cudnn_impl(ctx, types.SimpleNamespace(built=built, c=c))
    assert ("tensor_uids" in form) == ordered
    op = registration.custom_op(impl, "cpu").call
    a, b = torch.randn(1, 4, 5), torch.randn(1, 5, 3)
    o1, o2 = op(a, b), op(a, b)
    assert torch.allclose(o1, a @ b) and o1.data_ptr() != o2.data_ptr()     # a new output per call
    pack, index, uids = g.calls[-1]
    assert index == 2 and (uids == (11, 12, 13) if ordered else set(pack) == {11, 12, 13})


# -- counting dispatcher calls ----------------------------------------------------------------------

def test_dispatch_kinds():
    opdefs = {"ns::plain": types.SimpleNamespace(_backward_fn=None), "ns::grad": types.SimpleNamespace(_backward_fn=len)}
    assert dispatch.kind_of("ns::plain", opdefs) == "custom_op_calls"
    assert dispatch.kind_of("ns::grad", opdefs) == "custom_op_autograd_calls"
    assert dispatch.kind_of("mylib::mm", opdefs) == "dispatcher_calls"
    assert dispatch.kind_of("aten::mm", opdefs) is None and dispatch.kind_of(None, opdefs) is None
    assert dispatch.qualname(torch.ops.aten.mm) == "aten::mm" == dispatch.qualname(torch.ops.aten.mm.default)


def test_counting_pass_sees_registered_ops_and_restores(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: types.SimpleNamespace(cuda_stream=7))
    co, co_grad = registration.custom_op(_mm, "cpu"), registration.custom_op(_mm, "cpu", autograd=True)
    lib = registration.library_op(_mm, "CPU")
    a, b = torch.randn(1, 4, 4), torch.randn(1, 4, 4)
    before = {c: vars(c)["__call__"] for c in (torch._ops.OpOverload, torch._ops.OpOverloadPacket)}

    def step():
        co.call(a, b)
        co.via_ops(a, b)
        co_grad.call(a, b)
        lib.via_ops(a, b)
        lib.call(a, b)
        torch.ops.aten.mm(a[0], b[0])      # torch's own op through torch.ops: not a registration
        return torch.mm(a[0], b[0])

    c = audit_count.count_step(step, 3, cudnn=None, torch=torch, device_type="cpu")
    assert (c["custom_op_calls"], c["custom_op_autograd_calls"], c["dispatcher_calls"]) == (2, 1, 2)
    assert c["op_calls"][f"{co.qualname} (custom op)"] == 2
    assert c["op_calls"][f"{lib.qualname} (dispatcher)"] == 2
    assert not any(k.startswith("aten::") for k in c["op_calls"])
    assert {cls: vars(cls)["__call__"] for cls in before} == before
    assert torch.allclose(co.call(a, b), a @ b)        # still callable after the pass


def test_pack_sizes_counted_per_execute(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: types.SimpleNamespace(cuda_stream=7))
    from tests.test_audit import fake_cudnn
    cudnn = fake_cudnn()
    g = cudnn.pygraph()
    ts = [torch.empty(2) for _ in range(7)]
    big = {f"t{i}": t for i, t in enumerate(ts)}
    big["unused"] = None                               # a None value binds nothing

    def step():
        g.execute(big, None)
        g.execute_plan_at_index(tuple(ts[:5]), None, 0, tensor_uids=(1, 2, 3, 4, 5))

    c = audit_count.count_step(step, 4, cudnn=cudnn, torch=torch, device_type="cpu")
    assert (c["pack_tensors"], c["pack_tensors_dict"], c["pack_extra_tensors_dict"]) == (12, 7, 4)
    assert c["pack_sizes"] == {"7 tensors, dict": 1.0, "5 tensors, ordered": 1.0}


# -- per-tensor slopes and the audit rules ----------------------------------------------------------

def test_least_squares_and_size_labels():
    assert packs.least_squares([3, 5, 7], [10.0, 11.0, 12.0]) == pytest.approx((0.5, 8.5))
    assert packs.least_squares([3, 3], [1.0, 2.0]) is None
    assert packs.tensors_of("p11") == 11 and packs.tensors_of("256") is None


def _pack_run(tmp_path):
    recs = []
    for n in (3, 5, 7, 11, 15):
        recs += [_rec("pack_size", "generic", f"p{n}", 10 + 0.6 * n), _rec("pack_size", "pinned", f"p{n}", 11 + 0.5 * n),
                 _rec("pack_size", "ordered", f"p{n}", 8 + 0.2 * n), _rec("pack_size", "torch_mm", f"p{n}", 9.0)]
    recs.append(Record("pack_size", "ordered", "p16", "eager", status="unsupported: old frontend"))
    recs += [_rec("registration", "custom_op", "256", 26.0), _rec("registration", "custom_op_autograd", "256", 28.0),
             _rec("registration", "library", "256", 16.0), _rec("registration", "python_fn", "256", 13.0)]
    return _run(tmp_path, recs)


def test_slope_fits_skip_unmeasured_rows(tmp_path):
    run = _pack_run(tmp_path)
    f = packs.fits(run)
    assert set(f) == {"generic", "pinned", "ordered"}
    assert f["generic"].slope_us == pytest.approx(0.6) and f["ordered"].intercept_us == pytest.approx(8.0)
    assert len(f["ordered"].points) == 5                # the unsupported p16 row is no point
    assert packs.fits(run, "graph") == {}


def test_eager_slopes_come_from_paired_ratios_so_a_host_state_change_between_sizes_cancels(tmp_path):
    # p3-p7 timed in a slow host state (every µs x 1.6), p11-p15 fast: the absolute µs line falls,
    # the ratio line (in the baseline's fast µs) keeps the true 0.5 µs per tensor
    from cudnn_hostbench.bench.measure.runfile import stats
    recs = []
    for n in (3, 5, 7, 11, 15):
        slow = 1.6 if n <= 7 else 1.0
        state = "slow" if n <= 7 else "fast"
        base = _rec("pack_size", "torch_mm", f"p{n}", 10.0 * slow)
        base.role, base.host_state = "baseline", state
        r = _rec("pack_size", "pinned", f"p{n}", (10 + 0.5 * n) * slow)
        r.host_state = state
        ratios = [(10 + 0.5 * n) / 10 * (1 + d) for d in (-0.01, 0.0, 0.01)]
        r.ratio = stats.summarize(ratios)
        r.workers = [{"worker": i + 1, "n": 5, "median": 0.0, "ratio": x} for i, x in enumerate(ratios)]
        recs += [base, r]
    f = packs.fits(_run(tmp_path, recs))["pinned"]
    assert f.slope_us == pytest.approx(0.5, rel=1e-6)
    assert len(f.worker_slopes) == 3 and min(f.worker_slopes) > 0.45 and "(3 workers: " in f.range_text()
    absolute = packs.least_squares([3, 5, 7, 11, 15], [(10 + 0.5 * n) * (1.6 if n <= 7 else 1) for n in (3, 5, 7, 11, 15)])
    assert absolute[0] < 0                             # what the µs fit said before


def test_framework_rules_priced_from_the_probes(tmp_path):
    run = _pack_run(tmp_path)
    counts = dict(custom_op_calls=2, custom_op_autograd_calls=1, dispatcher_calls=1, executes=1,
                  execute_plan_at_index=1, pack_tensors=7, pack_tensors_dict=7, pack_extra_tensors_dict=4,
                  op_calls={"ns::mm0 (custom op)": 2.0}, pack_sizes={"7 tensors, dict": 1.0})
    f = {x.rule: x for x in cost.evaluate(counts, run)}
    assert {"custom_op", "dispatcher", "pack_size"} <= set(f)
    assert f["custom_op"].cost_us == pytest.approx(2 * 10.0 + 1 * 12.0)      # (26 − 16) ×2 + (28 − 16) ×1
    assert "registration/custom_op 26.00" in " ".join(f["custom_op"].cost_from)
    assert "ns::mm0 (custom op) ×2" in f["custom_op"].evidence and "Library" in f["custom_op"].fix
    assert f["dispatcher"].cost_us == pytest.approx(3.0)                       # library − python_fn
    assert f["pack_size"].cost_us == pytest.approx(4 * (0.5 - 0.2))           # extra tensors × slope gap
    assert "7 tensors, dict ×1" in f["pack_size"].evidence and "tensor_uids" in f["pack_size"].fix
    # 3-tensor dict packs are what the execute probe already prices: no finding
    assert "pack_size" not in {x.rule for x in cost.evaluate(dict(pack_tensors_dict=3, executes=1), run)}
    g = {x.rule: x for x in cost.evaluate(counts, None)}
    assert g["pack_size"].cost_us is None and g["custom_op"].cost_us is None


def test_pack_cost_reports(tmp_path):
    run = _pack_run(tmp_path)
    md = pack_cost.markdown(run)
    assert "0.600" in md and "0.200" in md and "@15" in md
    old = _run(tmp_path, [_rec("pack_size", "generic", f"p{n}", 10 + 1.0 * n) for n in (3, 7)], "old.json")
    lines = pack_cost.matrix_section([old, run], ["1.20.0", "1.32.0"])
    text = "\n".join(lines)
    assert "| generic | 1.000 | 0.600 |" in text and "| ordered | – | 0.200 |" in text
    assert pack_cost.matrix_section([], []) == []
    assert "No pack_size rows" in pack_cost.markdown(_run(tmp_path, [], "empty.json"))


# -- the probes' declarations and CPU-side operands -------------------------------------------------

def test_new_probes_declare_kernels_and_sizes():
    reg = probe_registration.PROBE
    assert all(v.kernels == (("gemm", 1),) for v in reg.variants)
    assert reg.variant("graphed").modes == ("eager", "device")
    assert {v.name for v in reg.variants if v.role == "trap"} == {"custom_op", "custom_op_torch_ops",
                                                                  "custom_op_autograd"}
    assert all("TRAP" in v.label for v in reg.variants if v.role == "trap")
    assert "FIX" in reg.variant("library").label
    assert reg.sizes(SuiteOptions()) == ["256"]
    sizes = probe_pack_size.PROBE.sizes(SuiteOptions())
    assert [packs.tensors_of(s) for s in sizes] == [3, 5, 7, 11, 15]
    assert max(packs.tensors_of(s) for s in probe_pack_size.PROBE.sizes(SuiteOptions(heavy=True))) == 16


def _cpu_ctx():
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, dtype=None, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(dtype or torch.bfloat16)
    kept: dict = {}

    def attached(key, make):    # as GpuContext.attached: one object per key, made on first use
        if key not in kept:
            kept[key] = make()
        return kept[key]
    return types.SimpleNamespace(torch=torch, device=torch.device("cpu"), randn=randn, attached=attached, kept=kept)


def test_decode_lengths_offsets_and_ragged_packing():
    assert probe_sdpa_decode.lengths(4, 4096) == [4096, 3414, 2731, 2048]
    assert probe_sdpa_decode.offsets([2, 4, 1], 10) == [0, 20, 60, 70]
    p = probe_sdpa_decode.Decode(_cpu_ctx(), "b3h2s8d4")
    assert p.lens == [8, 6, 4] and p.q.shape == (3, 2, 1, 4) and p.ref.shape == (3, 2, 1, 4)
    assert p.k_rag.stride() == (8 * 2 * 4, 4, 2 * 4, 1)          # BSHD strides, as the frontend's tests declare
    flat = p.k_rag.as_strided((p.k_rag.untyped_storage().nbytes() // 2,), (1,))
    offs = probe_sdpa_decode.offsets(p.lens, 2 * 4)
    for j, n in enumerate(p.lens):     # each sequence's tokens start at its ragged offset
        got = flat[offs[j]:offs[j] + n * 8].view(n, 2, 4)
        assert torch.equal(got, p.k.transpose(1, 2)[j, :n])
    # the reference ignores keys past each length
    k2 = p.k.clone()
    k2[2, :, 4:] = 100
    ref2 = torch.nn.functional.scaled_dot_product_attention(p.q.float(), k2.float(), p.v.float(),
                                                            attn_mask=p.mask, scale=p.scale)
    assert torch.allclose(ref2, p.ref)


def test_matmul_add_chain_operands():
    from cudnn_hostbench.bench.cudnn_graphs.chain import MatmulAddChain
    ch = MatmulAddChain(_cpu_ctx(), 7, n=8)
    assert ch.k == 4 and len(ch.buffers()) == 7 and ch.buffers()[-1] is ch.c
    acc = ch.a.float() @ ch.b.float() + sum(x.float() for x in ch.xs)
    assert torch.allclose(ch.ref, torch.relu(acc))
    with pytest.raises(ValueError):
        MatmulAddChain(_cpu_ctx(), 2, n=8)


def test_readme_framework_section(tmp_path):
    from cudnn_hostbench.scripts.maint import readme_figures
    run = _pack_run(tmp_path)
    text = readme_figures.framework(run)
    assert "TRAP: @torch.library.custom_op + register_fake (`registration/custom_op`) | 26.00" in text
    assert "0.600" in text
    assert readme_figures.framework(_run(tmp_path, [], "none.json")) == ""     # no such rows: no section


def test_pack_note_prices_each_pack_and_reprices(tmp_path):
    from cudnn_hostbench.bench.audit.auditor import AuditReport, price
    run = _pack_run(tmp_path)
    counts = {"pack_sizes": {"7 tensors, dict": 1.0, "3 tensors, ordered": 2.0, "4 tensors, sequence": 1.0}}
    note = packs.pack_note(counts, run)
    assert note.startswith(packs.NOTE_PREFIX)
    assert "7 tensors, dict ×1 ≈ 3.50 µs" in note and "3 tensors, ordered ×2 ≈ 1.20 µs" in note
    assert "4 tensors, sequence ×1" in note and packs.pack_note({}, run) is None
    assert "≈" not in packs.pack_note(counts, None)
    r = AuditReport(target="t", env={}, modes={}, kernels_per_step=None, kernels=[], host_overhead_us=None,
                    counts=counts, findings=[], avoidable_us=0.0, run_file=None, run_note="", notes=["keep me"])
    once = price(r, run)
    assert once.notes == ["keep me", note] and price(once, run) == once      # one pack note, however often priced


# -- the probes' graph wiring, against a recording stand-in for the frontend ------------------------

class _T:
    """A graph tensor stand-in: records what the probe declares."""
    def __init__(self, g, **kw):
        self.kw, self.uid = kw, len(g.tensors) + 1
        g.tensors.append(self)

    def __getattr__(self, name):
        if name.startswith("set_"):
            def setter(v, name=name):
                self.kw[name[4:]] = v
                if name == "set_uid":
                    self.uid = v
                return self
            return setter
        raise AttributeError(name)

    def get_uid(self):
        return self.uid


def _fake_cudnn():
    ns = types.SimpleNamespace
    cudnn = ns(data_type=ns(BFLOAT16="bf16", HALF="f16", FLOAT="f32", INT32="i32", INT64="i64"),
               heur_mode=ns(A="A", FALLBACK="F"), build_plan_policy=ns(HEURISTICS_CHOICE="H", ALL="ALL"),
               cudnnGraphNotSupportedError=type("cudnnGraphNotSupportedError", (Exception,), {}),
               backend_version=lambda: 91900)

    class pygraph:  # noqa: N801 - the frontend's spelling
        def __init__(self, **kw):
            self.tensors, self.ops, self.calls, self._plan_index = [], [], [], pygraph.plan_index
            pygraph.made.append(self)

        def tensor(self, **kw):
            return _T(self, **kw)

        def _op(self, op, **kw):
            self.ops.append((op, kw))
            return _T(self, op=op)

        def matmul(self, **kw):
            return self._op("matmul", **kw)

        def add(self, **kw):
            return self._op("add", **kw)

        def relu(self, **kw):
            return self._op("relu", **kw)

        def sdpa(self, **kw):
            return [self._op("sdpa", **kw), None]

        def validate(self): pass
        def build_operation_graph(self): pass
        def create_execution_plans(self, modes): pass
        def check_support(self): pass
        def build_plans(self, policy): pygraph.policies.append(policy)
        def get_execution_plan_count(self): return 3
        def get_workspace_size_plan_at_index(self, i): return 8
        def get_workspace_size(self): return 16
        def get_plan_name_at_index(self, i): return f"eng{i}"

        def execute(self, pack, ws, handle=None, tensor_uids=None):
            self.calls.append(("execute", pack, tensor_uids))

        def execute_plan_at_index(self, pack, ws, index, handle=None, tensor_uids=None):
            self.calls.append(("pinned", pack, tensor_uids))
    pygraph.made, pygraph.plan_index, pygraph.policies = [], 0, []
    cudnn.pygraph = pygraph
    return cudnn


def _fake_cudnn_ctx(ordered=True):
    ctx = _cpu_ctx()
    ctx.cudnn, ctx.handle = _fake_cudnn(), "h"
    ctx.caps = types.SimpleNamespace(ordered=ordered, gen_stats=True)
    return ctx


@pytest.mark.parametrize("ordered", [True, False])
def test_pack_size_wiring(ordered, monkeypatch):
    import cudnn_hostbench.bench.cudnn_graphs.chain as chain
    monkeypatch.setattr(chain.MatmulAddChain.__init__, "__defaults__", (16,))     # n=16 on CPU
    ctx = _fake_cudnn_ctx(ordered)
    cases = probe_pack_size.build(ctx, "p7")
    assert set(cases) == {"torch_mm", "generic", "pinned", "ordered"}
    assert isinstance(cases["ordered"], Exception) != ordered
    for name in ("generic", "pinned") + (("ordered",) if ordered else ()):
        assert "7 tensors; plan 0 'eng0'" in cases[name].note
        cases[name].fn()
    g, = ctx.cudnn.pygraph.made
    assert [op for op, _ in g.ops] == ["matmul", "add", "add", "add", "add", "relu"]
    assert all(len(pack) == 7 for _, pack, _ in g.calls)
    assert [uids for _, _, uids in g.calls][-1] == (tuple(range(2001, 2008)) if ordered else None)
    assert cases["torch_mm"].check(cases["torch_mm"].fn()) < 1e-2


def test_pack_size_classic_frontend_runs_generic_only(monkeypatch):
    import cudnn_hostbench.bench.cudnn_graphs.chain as chain
    monkeypatch.setattr(chain.MatmulAddChain.__init__, "__defaults__", (16,))
    ctx = _fake_cudnn_ctx(False)
    ctx.cudnn.pygraph.plan_index = None          # no selected index before 1.27
    cases = probe_pack_size.build(ctx, "p5")
    assert "candidate" in cases["generic"].note
    assert all("frontend >=" in str(cases[n]) for n in ("pinned", "ordered"))


def test_sdpa_decode_wiring():
    cases = probe_sdpa_decode.build(_fake_cudnn_ctx(), "b3h2s8d4")
    assert set(cases) == {"torch_sdpa", "cudnn_padded", "cudnn_ragged"}
    assert cases["torch_sdpa"].check(cases["torch_sdpa"].fn()) < 2e-2
    assert "6 tensors" in cases["cudnn_padded"].note and "10 tensors" in cases["cudnn_ragged"].note
    p = probe_sdpa_decode.Decode(_fake_cudnn_ctx(), "b3h2s8d4")
    bl, bufs, o = p.graph(ragged=True)
    (_, kw), = bl.graph.ops
    assert kw["use_padding_mask"] and kw["generate_stats"] is False and kw["attn_scale"] == pytest.approx(0.5)
    named = {t.kw.get("name"): t for t in bl.graph.tensors}
    decl = {k: t.kw for k, t in named.items()}
    assert decl["K"]["ragged_offset"] is named["k_ragged_offset"] and decl["Q"]["ragged_offset"] is named["q_ragged_offset"]
    assert decl["k_ragged_offset"]["data_type"] == "i64" and decl["seq_len_kv"]["data_type"] == "i32"
    assert decl["K"]["stride"] == [8 * 2 * 4, 4, 2 * 4, 1] and decl["Q"]["dim"] == [3, 2, 1, 4]
    assert bufs[-3].view(-1).tolist() == [0, 8 * 8, 8 * 14, 8 * 18]   # K offsets: lengths 8, 6, 4 × H·D
    assert bl.tensors[5].kw["ragged_offset"] is named["o_ragged_offset"] is bl.tensors[-1]
    assert bl.tensors[5].kw["output"] is True and bufs[5] is o


@pytest.mark.parametrize("index", [2, None])
def test_a_heuristic_pin_builds_the_heuristics_plan_alone(index):
    """Rows pinned by the heuristic rule build one plan (policy HEURISTICS_CHOICE), not every plan:
    the others would only cost build time in every worker. Without the selected index (frontends
    before 1.27) it builds every plan and takes the first that built."""
    from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
    ctx = _fake_cudnn_ctx()
    ctx.cudnn.pygraph.plan_index = index
    mm = Matmul.cube(ctx, "8")
    assert mm.pin(rule="heuristic") == (2 if index is not None else 0)
    assert ctx.cudnn.pygraph.policies == (["H"] if index is not None else ["H", "ALL"])
    assert mm.built.plans == ([2] if index is not None else [0, 1, 2])
    assert mm.built.pinned_by == "heuristic" and mm.built.uids == Matmul.UIDS
    assert mm.plan_label() == ("2:eng2" if index is not None else "0:eng0")


def test_registration_probe_wiring(monkeypatch):
    """Every cuDNN variant reaches the one pinned plan with (a, b, a new output); registrations on
    the CPU key stand in for CUDA; the CUDA-graph variant cannot capture on CPU and says so."""
    from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
    ctx = _fake_cudnn_ctx()
    ctx.cudnn.pygraph.get_execution_plan_count = lambda self: 2
    ctx.cudnn.pygraph.get_workspace_size_plan_at_index = lambda self, i: 8
    ctx.stream = None

    def pin(self, cache=True, rule="autotuned"):
        assert rule == "heuristic", "the registration rows run one plan on every GPU: the heuristic's"
        self.build(all_plans=True)
        self.built.pinned, self.built.pinned_by = 1, "heuristic"
        return 1
    monkeypatch.setattr(Matmul, "pin", pin)
    monkeypatch.setattr(Matmul, "cube", classmethod(lambda cls, c, size: cls.random(c, 1, 8, 8, 8)))
    real = probe_registration.registration
    monkeypatch.setattr(probe_registration, "registration", types.SimpleNamespace(
        custom_op=lambda impl, dev, autograd=False: real.custom_op(impl, "cpu", autograd=autograd),
        library_op=lambda impl, key: real.library_op(impl, "CPU"), Registry=real.Registry))
    cases = probe_registration.build(ctx, "256")
    assert set(cases) == {v.name for v in probe_registration.PROBE.variants}
    assert isinstance(cases["graphed"], Exception)
    g, = ctx.cudnn.pygraph.made
    for name in ("direct", "python_fn", "custom_op", "custom_op_torch_ops", "custom_op_autograd", "library"):
        out = cases[name].fn()
        (_, pack, uids) = g.calls[-1]
        assert g.calls[-1][0] == "pinned" and pack[2] is not None and uids == (1001, 1002, 1003)
        assert out.shape == (1, 8, 8) and out.data_ptr() == pack[2].data_ptr()   # the bound output comes back
        assert "plan 1 " in cases[name].note   # the one pinned plan every path runs
    assert "hostbench_co::" in cases["custom_op"].note and "hostbench_lib::" in cases["library"].note
    registry = ctx.kept[("registration", "registry")]
    assert len(registry.items) == 4      # three custom_op variants and the Library op, kept for close()
    registry.close()
    assert not registry.items


def test_declared_kernels_use_known_families():
    import importlib
    import pkgutil

    from cudnn_hostbench import probes
    families = {"gemm", "copy", "reduce", "pointwise", "conv", "sdpa", "norm", "any"}
    for m in pkgutil.iter_modules(probes.__path__):
        if not m.name.startswith("probe_"):
            continue
        for v in importlib.import_module(f"cudnn_hostbench.probes.{m.name}").PROBE.variants:
            for fam, n in v.kernels:   # a count, or a (low, high) range
                lo, hi = (n, n) if isinstance(n, int) else n
                assert fam in families and 0 <= lo <= hi and hi >= 1, (m.name, v.name, fam, n)


def test_a_registry_deregisters_its_ops_on_close():
    """The dispatcher holds a registered implementation (and the cuDNN graph it closes over) until
    the op is deregistered: the GPU context's close must do it, or the frontend reports leaks."""
    import torch

    from cudnn_hostbench.bench.cudnn_graphs import registration
    reg = registration.Registry()
    co = reg.add(registration.custom_op(lambda a, b: a @ b, "cpu"))
    lib = reg.add(registration.library_op(lambda a, b: a @ b, "CPU"))
    x = torch.ones(2, 2)
    assert co.call(x, x).sum() == 8 and lib.call(x, x).sum() == 8
    reg.close()
    for r in (co, lib):
        ns, name = r.qualname.split("::")
        assert not hasattr(getattr(torch.ops, ns), name), r.qualname
    assert not reg.items
