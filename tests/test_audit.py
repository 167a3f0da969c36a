"""hostbench audit: trap rules over recorded counts, cost figures from a synthetic run file,
rendering, the counting wrappers (fakes and CPU torch) and their restoration, bad input.
The GPU path runs only where torch sees a CUDA GPU."""
import contextlib
import json
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from cudnn_hostbench.bench.audit import auditor as audit
from cudnn_hostbench.bench.audit import cost, target
from cudnn_hostbench.bench.audit import count as audit_count
from cudnn_hostbench.bench.audit import rules as audit_rules
from cudnn_hostbench.bench.measure.runfile.records import Record, run_document, write_run
from cudnn_hostbench.reports import audit_report
from cudnn_hostbench.scripts import audit_cmd, cli

ROOT = Path(__file__).resolve().parent.parent
HAS_GPU = torch.cuda.is_available()

NAIVE = dict(graphs_created=1, validate=1, build_operation_graph=1, create_execution_plans=1, check_support=1,
             build_plans=1, build=1, graph_builds=1, build_us=1500.0, execute=1, executes=1, new_packs=1,
             set_stream=1, set_stream_cached=1, stream_queries=1, cuda_allocs=3, cuda_allocs_explicit=2,
             cuda_factory_calls=2, alloc_counted_by="allocator", alloc_calls={"torch.empty": 2.0},
             copies=1, copies_transposed=1, copy_bytes_transposed=131072, copy_kernels=1, steps=10)
FIXED = dict(execute_ordered=1, executes=1, steps=10)
NAIVE_RULES = {"rebuild", "generic_execute", "set_stream", "stream_query", "new_pack", "new_output", "transpose"}
# a step that reads torch.cuda.current_stream().cuda_stream: its query is raw_stream's (issue 67)
NAIVE_RULES_PTR = NAIVE_RULES - {"stream_query"} | {"raw_stream"}


def _rec(probe, variant, size, us, unit="us/call"):
    return Record(probe, variant, size, "eager", samples=[us] * 5, unit=unit)


@pytest.fixture
def run(tmp_path):
    recs = [
        _rec("set_stream", "set_once", "256", 10.0), _rec("set_stream", "set_stream_same", "256", 10.5),
        _rec("set_stream", "raw_set_stream", "256", 13.0), _rec("set_stream", "query_stream", "256", 12.5),
        _rec("execute", "generic", "256", 14.0), _rec("execute", "pinned", "256", 11.0),
        _rec("execute", "ordered_pinned", "256", 10.0),
        _rec("churn", "reuse", "1024", 10.0), _rec("churn", "new_dict", "1024", 12.0),
        _rec("churn", "new_output", "1024", 13.0),
        _rec("transpose", "strided_view", "t256", 100.0), _rec("transpose", "contiguous_copy", "t256", 300.0),
        _rec("transpose", "contiguous_copy", "t4096", 900.0), _rec("transpose", "strided_view", "t4096", 500.0),
        _rec("interleave", "alternating", "256", 20.0, "us/op"), _rec("interleave", "phased", "256", 15.0, "us/op"),
        Record("execute", "ordered", "256", "eager", status="unsupported: old frontend"),
    ]
    path = write_run(tmp_path / "run.json", run_document(recs, {"gpu_name": "Fake GPU"}))
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    return load_run(path)


def by_rule(findings):
    return {f.rule: f for f in findings}


# -- rules over counts ---------------------------------------------------------------------------

def test_naive_counts_flag_each_trap_and_fixed_none(run):
    assert set(by_rule(cost.evaluate(NAIVE, run))) == NAIVE_RULES
    assert cost.evaluate(FIXED, run) == []
    assert cost.evaluate({}, run) == []


def test_costs_from_run_file(run):
    f = by_rule(cost.evaluate(NAIVE, run, {"copy_kernel_us": 3.0}))
    assert f["generic_execute"].cost_us == pytest.approx(4.0)        # 14 − min(11, 10)
    assert "execute/ordered_pinned" in f["generic_execute"].cost_from[0]
    assert f["set_stream"].cost_us == pytest.approx(0.5)             # cached call: same − once
    assert f["stream_query"].cost_us == pytest.approx(2.5)
    assert f["new_pack"].cost_us == pytest.approx(2.0)               # closest size: 1024
    assert "@1024" in f["new_pack"].cost_from[0]
    assert f["new_output"].cost_us == pytest.approx(6.0)             # 2 explicit allocations × 3
    assert f["new_output"].evidence == ("3 CUDA allocations per step (2 explicit: torch.empty ×2; "
                                        "the rest inside ops)")
    assert "allocations inside ops (1 per step) not priced" in f["new_output"].cost_from[-1]
    assert f["transpose"].cost_us == pytest.approx(3.0)              # the audit's own device figure first
    assert f["rebuild"].cost_us == pytest.approx(1500.0)             # no rebuild probe: counting-pass time
    assert "this audit" in f["rebuild"].cost_from[0]
    costs = [x.cost_us for x in cost.evaluate(NAIVE, run, {"copy_kernel_us": 3.0})]
    assert costs == sorted(costs, reverse=True)                       # biggest first


def test_backend_set_stream_and_fallbacks(run):
    c = dict(NAIVE, set_stream=2, set_stream_backend=1, set_stream_cached=1, build_us=0)
    f = by_rule(cost.evaluate(c, run))
    assert f["set_stream"].cost_us == pytest.approx(3.0 + 0.5)
    assert f["transpose"].cost_us == pytest.approx(200.0)            # no device figure: probe @t256
    assert f["rebuild"].cost_us is None
    assert "no figure in" in f["rebuild"].cost_from[0] and "run.json" in f["rebuild"].cost_from[0]
    v = by_rule(cost.evaluate(dict(FIXED, validate=1, build_us=40.0), run))["rebuild"]   # no full build
    assert v.cost_us == pytest.approx(40.0)


def test_run_figures_are_carried_to_this_hosts_pace(tmp_path):
    """A price is host work measured in another process: at the audit's host sentinel against the
    cited records' own: priced at another host's pace, a projection lands off the fixed step by the
    hosts' ratio (log 2026-12-03-1505). No sentinel on either side: as measured."""
    from cudnn_hostbench.bench.audit import auditor
    from cudnn_hostbench.bench.audit.pace import host_pace
    from cudnn_hostbench.bench.measure.runfile.records import load_run

    def rec(variant, us, sentinel):
        return Record("execute", variant, "256", "eager", samples=[us] * 5, sentinel_us=sentinel)
    r = load_run(write_run(tmp_path / "r.json", run_document([rec("generic", 14.0, 0.78), rec("pinned", 11.0, 0.82)], {})))
    k, cite = host_pace(0.88, (r.find("execute", "generic", "256", "eager"), r.find("execute", "pinned", "256", "eager")))
    assert k == pytest.approx(1.1) and cite == " × host pace 1.10 (sentinel 0.880 µs here, 0.800 in the run)"
    f = by_rule(cost.evaluate(dict(FIXED, execute=1), r, here=0.88))["generic_execute"]
    assert f.cost_us == pytest.approx(3.0 * 1.1) and "× host pace 1.10" in f.cost_from[0]
    assert by_rule(cost.evaluate(dict(FIXED, execute=1), r))["generic_execute"].cost_us == pytest.approx(3.0)
    assert cost.warm_execute(r, {"execute": 2}, here=0.88)[0] == pytest.approx(14.0 * 0.88 / 0.78)
    # a record without its sentinel (a run from before it was kept): nothing is carried
    old = load_run(write_run(tmp_path / "o.json", run_document([_rec("execute", "generic", "256", 14.0),
                                                                  _rec("execute", "pinned", "256", 11.0)], {})))
    assert by_rule(cost.evaluate(dict(FIXED, execute=1), old, here=0.88))["generic_execute"].cost_us == pytest.approx(3.0)
    # the audit's own sentinel: its plain loop's where it has one, else its eager rounds'
    assert auditor.host_sentinel({"eager": {"median": 5, "sentinel_us": 0.8},
                                  "loop": {"median": 5, "sentinel_us": 0.9}}) == 0.9
    assert auditor.host_sentinel({"eager": {"median": 5, "sentinel_us": 0.8}, "loop": {"error": "x"}}) == 0.8
    assert auditor.host_sentinel({"eager": {"median": 5}}) is None


def test_rebuild_probe_figure_preferred(tmp_path):
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    recs = [_rec("rebuild", "rebuild", "256", 2000.0), _rec("rebuild", "cache_hit", "256", 12.0),
            _rec("rebuild", "prebuilt", "256", 11.0)]
    r = load_run(write_run(tmp_path / "r.json", run_document(recs, {})))
    f = by_rule(cost.evaluate(NAIVE, r))["rebuild"]           # the step's own build time first
    assert f.cost_us == pytest.approx(1500.0) and "probe for reference: 1989.00" in f.cost_from[0]
    f = by_rule(cost.evaluate(dict(NAIVE, build_us=0), r))["rebuild"]
    assert f.cost_us == pytest.approx(1989.0) and "rebuild/prebuilt" in f.cost_from[0]
    # no set_stream figures in this run: the cached call is "no figure", not "costs nothing"
    assert by_rule(cost.evaluate(NAIVE, r))["set_stream"].cost_us is None


def test_interleave_sync_and_no_run_file(run):
    f = by_rule(cost.evaluate(dict(FIXED, lib_switches=8, cublas_calls=4, syncs=1), run))
    assert set(f) == {"interleave", "sync"}
    assert f["interleave"].cost_us == pytest.approx(6 * 5.0 * 8 / 6)   # 8 cyclic switches, 2 is the floor
    assert f["sync"].cost_us is None and f["sync"].label == "extra"
    assert cost.evaluate(dict(FIXED, lib_switches=2), run) == []      # phased: into cuBLAS and back
    g = by_rule(cost.evaluate(NAIVE, None))
    assert g["generic_execute"].cost_us is None and "no run file" in g["generic_execute"].cost_from[0]


def test_negative_delta_costs_nothing(tmp_path):
    recs = [_rec("execute", "generic", "256", 10.0), _rec("execute", "pinned", "256", 10.4)]
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    r = load_run(write_run(tmp_path / "r.json", run_document(recs, {})))
    f = by_rule(cost.evaluate(dict(FIXED, execute=1), r))["generic_execute"]
    assert f.cost_us == 0.0 and "no cost measured" in f.cost_from[0]


def test_capture_error_is_a_finding(run):
    f = cost.evaluate(FIXED, run, capture_error="not capturable — boom")
    assert [x.rule for x in f] == ["capture"] and f[0].evidence == "not capturable — boom"


def test_copy_kernel_names():
    assert audit_rules.is_copy_kernel("void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>")
    assert audit_rules.is_copy_kernel("transpose_kernel")
    assert not audit_rules.is_copy_kernel("Memcpy HtoD (Pageable -> Device)")
    assert not audit_rules.is_copy_kernel("nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNN")


# -- rendering -----------------------------------------------------------------------------------

def _report(run, **kw):
    findings = cost.evaluate(NAIVE, run, {"copy_kernel_us": 3.0}, capture_error="not capturable — X")
    base = dict(target="x.py:make_step", env={"gpu_name": "Fake GPU", "cudnn_frontend": "1.32.0"},
                modes={"eager": {"median": 900.0, "iqr": 5.0, "q1": 1, "q3": 6, "n": 5},
                       "graph": {"error": "not capturable — X"}, "device": {"median": 8.0, "iqr": 0.1}},
                kernels_per_step=2.0, kernels=[["direct_copy_kernel", 1.0, 3.0], ["nvjet_tst", 1.0, 5.0]],
                host_overhead_us=892.0, counts=dict(NAIVE),
                findings=findings, avoidable_us=sum(f.cost_us or 0 for f in findings),
                run_file="reports/reference/fake/run.json", run_note="reference run", notes=["a note"])
    base.update(kw)
    return audit.AuditReport(**base)


def test_render_text_markdown_json(run, tmp_path):
    r = _report(run)
    text = audit_report.render_text(r)
    assert "[trap 1]" in text and "[trap 3]" in text and "892.00" in text and "\ngraph: not capturable — X\n" in text
    assert "trust marks" not in text                                  # nothing cited is flagged
    md = audit_report.render_markdown(r)
    assert "| # | trap | finding |" in md and "reports/reference/fake/run.json" in md and "## Notes" in md
    paths = audit_report.write_outputs(r, tmp_path / "out")
    assert sorted(p.name for p in paths) == ["audit.json", "audit.md"]
    doc = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert {f["rule"] for f in doc["findings"]} == NAIVE_RULES | {"capture"}
    assert not list((tmp_path / "out").glob("*.tmp"))
    clean = audit_report.render_text(_report(run, findings=[], avoidable_us=0.0))
    assert "no traps found" in clean


def test_each_phase_says_when_it_is_done_and_the_report_says_where_the_time_went(run, capsys, monkeypatch):
    clock = iter([100.0, 103.5, 140.25])
    monkeypatch.setattr(audit.time, "perf_counter", lambda: next(clock))
    ph = audit._Phases()
    ph.done("eager rounds")
    ph.done("line sampling")
    err = capsys.readouterr().err.splitlines()
    assert err == ["hostbench audit: eager rounds done in 3.5 s (3.5 s so far)",
                   "hostbench audit: line sampling done in 36.8 s (40.2 s so far)"]
    r = _report(run, phases_s=ph.s)
    assert "the audit's own time: eager rounds 3.5 s · line sampling 36.8 s (40.2 s in all)" in audit_report.render_text(r)
    assert "The audit's own time: eager rounds 3.5 s" in audit_report.render_markdown(r)
    # an audit.json from before the phases were timed still loads, and says nothing of them
    old = {k: v for k, v in json.loads(json.dumps(r.to_dict(), default=str)).items() if k != "phases_s"}
    back = audit.AuditReport.from_dict(old)
    assert back.phases_s == {} and "own time" not in audit_report.render_text(back)


def test_write_outputs_nothing_half_written(run, tmp_path, monkeypatch):
    def boom(r):
        raise RuntimeError("render failed")
    monkeypatch.setattr(audit_report, "render_markdown", boom)
    with pytest.raises(RuntimeError):
        audit_report.write_outputs(_report(run), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- the counting pass ---------------------------------------------------------------------------

def fake_cudnn():
    cudnn = types.ModuleType("fake_cudnn")
    pb = types.ModuleType("fake_cudnn._pybind_module")
    pb.raw = 0

    def _raw_set_stream(h, s):
        pb.raw += 1
    pb._raw_set_stream = _raw_set_stream

    class Handle:
        stream = 0

    def set_stream(handle, stream):
        if handle.stream == stream:
            return
        cudnn._pybind_module._raw_set_stream(1, stream)
        handle.stream = stream

    class pygraph:  # noqa: N801 - the frontend's spelling
        def __init__(self, **kw):
            self.built = False

        def validate(self): pass
        def build_operation_graph(self): pass
        def create_execution_plans(self, modes=None): pass
        def check_support(self): pass
        def build_plans(self, *a): self.built = True

        def build(self, modes=None):
            self.validate()
            self.build_operation_graph()
            self.create_execution_plans(modes)
            self.check_support()
            self.build_plans()

        def execute(self, pack, ws, handle=None, tensor_uids=None):
            return self._execute(pack)

        def execute_plan_at_index(self, pack, ws, index=0, handle=None, tensor_uids=None):
            return self._execute(pack)

        def _execute(self, pack):
            return None

    cudnn.pygraph, cudnn.set_stream, cudnn._pybind_module, cudnn.Handle = pygraph, set_stream, pb, Handle
    return cudnn


def _snapshot(cudnn):
    return (dict(vars(cudnn.pygraph)), cudnn.set_stream, cudnn._pybind_module._raw_set_stream,
            dict(vars(torch.Tensor)), {n: getattr(torch, n) for n in audit_count.ALLOC_FNS + audit_count.CUBLAS_FNS},
            torch.cuda.current_stream, torch.cuda.synchronize, torch.nn.functional.linear,
            dict(vars(torch.cuda.Stream)), dict(vars(torch.cuda.Event)))


@pytest.fixture
def cpu_stream(monkeypatch):
    # torch.cuda.current_stream cannot run without CUDA: stand a fake in, the pass wraps the fake
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: types.SimpleNamespace(cuda_stream=7))


def test_counts_naive_and_fixed_shapes(cpu_stream):
    cudnn = fake_cudnn()
    h = cudnn.Handle()
    w = torch.randn(8, 8)
    x = torch.randn(8, 8)

    def naive():
        wt = w.t().contiguous()
        out = torch.empty(8, 8)
        g = cudnn.pygraph(name="g")
        g.build()
        cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)
        g.execute({"x": x, "w": wt, "y": out}, None, handle=h)
        return out

    c = audit_count.count_step(naive, 4, cudnn=cudnn, torch=torch, device_type="cpu")
    assert c["steps"] == 4 and c["graphs_created"] == 1 and c["graph_builds"] == 1
    assert c["validate"] == c["build_plans"] == c["build"] == 1 and c["build_us"] > 0
    assert c["execute"] == 1 and c["new_packs"] == 1 and c["cuda_allocs"] == 1 and c["copies_transposed"] == 1
    assert c["alloc_counted_by"] == "factory calls" and c["alloc_calls"] == {"torch.empty": 1.0}
    assert c["set_stream"] == 1 and c["set_stream_cached"] == 1 and c["set_stream_backend"] == 0
    assert c["stream_queries"] == 1
    assert c["tensor_views"] == 1 and c["stride_reads"] == 0      # w.t() per step, from this file
    assert set(c["lines"]["tensor_views"]) == {f"tests/test_audit.py:{naive.__code__.co_firstlineno + 1}"}
    assert c["stream_ptr_queries"] == 1
    assert set(by_rule(cost.evaluate(c, None))) == NAIVE_RULES_PTR | {"views"}

    g = cudnn.pygraph()
    g.build()
    pack, wt = (x, w.t(), torch.empty(8, 8)), w.t()

    def fixed():
        g.execute_plan_at_index(pack, None, 0, handle=h, tensor_uids=(1, 2, 3))
        return wt

    c = audit_count.count_step(fixed, 4, cudnn=cudnn, torch=torch, device_type="cpu")
    assert c["execute_ordered"] == 1 and c["new_packs"] == 0 and c["graph_builds"] == 0
    assert cost.evaluate(c, None) == []


def test_counts_alternation_backend_stream_and_syncs(cpu_stream, monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    cudnn = fake_cudnn()
    h = cudnn.Handle()
    g = cudnn.pygraph()
    a = torch.randn(4, 4)
    vp = {}
    streams = iter(range(1, 1000))

    def step():
        cudnn.set_stream(handle=h, stream=next(streams))    # a new stream each call: reaches the backend
        for _ in range(2):
            g.execute_plan_at_index(vp, None, 0, handle=h)
            a @ a                                            # Tensor.__matmul__ -> one cuBLAS call
        torch.mm(a, a).sum().item()
        torch.cuda.synchronize()

    c = audit_count.count_step(step, 3, cudnn=cudnn, torch=torch, device_type="cpu")
    # cuDNN, cuBLAS, cuDNN, cuBLAS, cuBLAS: 3 switches inside the step, 1 into the next one
    assert c["execute_plan_at_index"] == 2 and c["cublas_calls"] == 3 and c["lib_switches"] == 4
    assert c["set_stream_backend"] == 1 and c["set_stream_cached"] == 0
    assert c["syncs"] == 2 and c["new_packs"] == 0
    assert c["sync_calls"] == {".item()": 1.0, "torch.cuda.synchronize": 1.0}
    assert "interleave" in by_rule(cost.evaluate(c, None))


def test_wrappers_restored_even_when_step_raises(cpu_stream):
    cudnn = fake_cudnn()
    before = _snapshot(cudnn)
    calls = []

    def step():
        calls.append(1)
        torch.empty(2)
        if len(calls) == 3:
            raise RuntimeError("step broke")

    with pytest.raises(RuntimeError, match="step broke"):
        audit_count.count_step(step, 5, cudnn=cudnn, torch=torch, device_type="cpu")
    assert _snapshot(cudnn) == before
    assert "item" not in vars(torch.Tensor) and "__matmul__" not in vars(torch.Tensor)
    assert audit_count.count_step(lambda: None, 2, cudnn=cudnn, torch=torch)["executes"] == 0
    assert _snapshot(cudnn) == before


def test_real_cudnn_module_restored():
    cudnn = pytest.importorskip("cudnn")
    attrs = {n: vars(cudnn.pygraph)[n] for n in audit_count.EXECUTES + audit_count.BUILD_STEPS + ("__init__",)
             if n in vars(cudnn.pygraph)}
    ss, pb = cudnn.set_stream, getattr(cudnn, "_pybind_module", None)
    raw = getattr(pb, "_raw_set_stream", None)
    with pytest.raises(ZeroDivisionError):
        audit_count.count_step(lambda: 1 / 0, 2)
    assert {n: vars(cudnn.pygraph)[n] for n in attrs} == attrs
    assert cudnn.set_stream is ss and getattr(pb, "_raw_set_stream", None) is raw


# -- allocations: the allocator's own statistics -------------------------------------------------

def test_allocator_stats_reader():
    assert audit_count.allocator_requests({"allocation.all.allocated": 12, "segment.all.allocated": 2}) == 12
    assert audit_count.allocator_requests({}) is None and audit_count.allocator_requests(None) is None
    before, after = {"allocation.all.allocated": 100}, {"allocation.all.allocated": 140}
    assert audit_count.allocs_per_step(before, after, 10) == 4.0
    assert audit_count.allocs_per_step(before, {}, 10) is None          # stats vanished: no figure
    assert audit_count.allocs_per_step(after, before, 10) is None        # a reset in between: no figure


def _stats_feed(*values):
    feed = iter({"allocation.all.allocated": v} for v in values)
    return lambda: next(feed)


def test_allocations_counted_from_allocator_and_named(cpu_stream):
    x, w = torch.randn(4, 4), torch.randn(4, 4)

    def step():                       # the allocator would see 4: out, zeros, the .t() copy, a + b
        out = torch.empty(4, 4)
        torch.zeros(4).add_(1)
        return out.copy_(x + w.t().contiguous()), torch.empty(0)

    c = audit_count.count_step(step, 5, cudnn=None, torch=torch, device_type="cpu",
                               memory_stats=_stats_feed(1000, 1020))
    assert c["cuda_allocs"] == 4 and c["cuda_allocs_explicit"] == 2 and c["cuda_factory_calls"] == 3
    assert c["alloc_counted_by"] == "allocator"
    assert c["alloc_calls"] == {"torch.empty": 1.0, "torch.empty (0 bytes)": 1.0, "torch.zeros": 1.0}
    f = by_rule(cost.evaluate(c, None))["new_output"]
    assert f.evidence.startswith("4 CUDA allocations per step (2 explicit: torch.empty ×1, torch.zeros ×1; "
                                 "the rest inside ops)")
    assert "torch.empty (0 bytes) ×1: no allocation" in f.evidence
    # an allocator without statistics: factory calls are all that is seen, and the text says so
    c = audit_count.count_step(step, 5, cudnn=None, torch=torch, device_type="cpu", memory_stats=lambda: {})
    assert c["cuda_allocs"] == 2 and c["alloc_counted_by"] == "factory calls"
    assert "allocations inside ops are not seen" in by_rule(cost.evaluate(c, None))["new_output"].evidence
    # the allocator never reports fewer than the explicit calls it served
    c = audit_count.count_step(step, 5, cudnn=None, torch=torch, device_type="cpu", memory_stats=_stats_feed(0, 5))
    assert c["cuda_allocs"] == 2


def test_count_step_runs_at_least_two_steps():
    calls = []
    c = audit_count.count_step(lambda: calls.append(1), 1, cudnn=None, torch=torch, device_type="cpu")
    assert c["steps"] == audit_count.MIN_STEPS == 2 and len(calls) == 3     # one uncounted call first


# -- cuDNN↔cuBLAS switches, step boundaries included ------------------------------------------------

@pytest.mark.parametrize("steps, per_step", [
    ([["cudnn", "cublas"]] * 3, 2.0),                       # one each: into cuBLAS, back at the next step
    ([["cudnn", "cudnn", "cublas", "cublas"]] * 4, 2.0),    # phased: still the floor
    ([["cudnn", "cublas"] * 4] * 3, 8.0),                   # the interleave probe's alternating call
    ([["cudnn", "cublas", "cudnn"]] * 3, 2.0),              # the boundary cudnn→cudnn is no switch
    ([["cublas", "cudnn"]], 2.0),                           # one step wraps onto itself
    ([["cudnn"], [], ["cublas"]], 0.5),                     # 0 inside; 1 switch over 2 boundaries
    ([["cudnn"]] * 5, 0.0),
    ([], 0.0),
])
def test_lib_switches_cyclic(steps, per_step):
    assert audit_count.lib_switches(steps) == pytest.approx(per_step)


# -- copies: what was copied and the fix that fits ---------------------------------------------------

def test_copy_classifier_from_strides():
    assert audit_count.is_transposed_view((256, 512), (1, 256))               # W.t() of a [512, 256] W
    assert audit_count.is_transposed_view((1, 256, 512), (131072, 1, 256))   # W.t().unsqueeze(0)
    assert audit_count.is_transposed_view((2, 3, 4), (12, 1, 3))             # permute(0, 2, 1)
    assert not audit_count.is_transposed_view((256, 512), (512, 1))          # contiguous
    assert not audit_count.is_transposed_view((4, 8), (16, 1))               # a slice: not dense
    assert not audit_count.is_transposed_view((4, 8), (0, 1))                # a broadcast
    nchw, nhwc = (8, 64, 14, 14), (64 * 14 * 14, 1, 14 * 64, 64)
    assert audit_count.is_channels_last(nchw, nhwc) and not audit_count.is_channels_last(nchw, (12544, 196, 14, 1))
    assert not audit_count.is_channels_last((8, 1, 14, 14), (196, 196, 14, 1))  # C = 1: both layouts agree
    assert audit_count.copy_kind((256, 512), (1, 256)) == "transposed"
    assert audit_count.copy_kind(nchw, (12544, 196, 14, 1), nhwc) == "channels_last"   # NCHW → NHWC
    assert audit_count.copy_kind(nchw, nhwc) == "channels_last"                         # NHWC → contiguous
    assert audit_count.copy_kind((256, 512), (1, 256), (1, 256)) == "other"   # clone keeping the strides
    assert audit_count.copy_kind((4, 8), (16, 1)) == "other"                  # a slice made contiguous
    assert audit_count.copy_kind((4, 8), (8, 1), ()) == "other"               # broadcast copy_: no strides


def test_copies_counted_by_call_on_cpu(cpu_stream):
    w = torch.randn(16, 8)
    x = torch.randn(2, 3, 4, 5)
    out = torch.empty(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    y = torch.randn(6, 6)

    def step():
        w.t().contiguous()                                   # transposed weight
        x.contiguous(memory_format=torch.channels_last)      # activation into NHWC
        out.copy_(x)                                         # output converted into NHWC
        y[:, :3].clone(memory_format=torch.contiguous_format)  # a slice
        x.contiguous()                                       # already contiguous: no copy
        x.to(torch.float64)                                  # a cast is not counted by call
        x.to(memory_format=torch.contiguous_format)          # already so: no copy

    c = audit_count.count_step(step, 3, cudnn=None, torch=torch, device_type="cpu")
    assert (c["copies"], c["copies_transposed"], c["copies_channels_last"], c["copies_other"]) == (4, 1, 2, 1)
    assert c["copy_bytes_transposed"] == 16 * 8 * 4
    by_call = {x["call"]: x for x in c["copy_list"]}
    t = by_call[".contiguous()"]
    assert t["kind"] == "transposed" and t["shape"] == [8, 16] and t["stride"] == [1, 8] and t["transposed_view"]
    assert t["dtype"] == "float32" and t["where"].startswith("tests/test_audit.py:")
    assert by_call[".contiguous(memory_format=torch.channels_last)"]["kind"] == "channels_last"
    assert by_call[".copy_()"]["kind"] == "channels_last"
    assert by_call[".clone(memory_format=torch.contiguous_format)"]["kind"] == "other"
    f = by_rule(cost.evaluate(dict(c, copy_kernels=5), None, {"copy_kernel_us": 10.0}))
    assert {"transpose", "layout_copy", "copy"} <= set(f)
    assert f["transpose"].label == "trap 5" and f["layout_copy"].label == f["copy"].label == "extra"
    assert "of float32 [8, 16] strides (1, 8), a transposed view" in f["transpose"].evidence
    assert "W.t()" in f["transpose"].fix and "NHWC strides" in f["layout_copy"].fix
    assert "layout its consumer wants" in f["copy"].fix
    assert "1 copy kernels per step from no counted call" in f["copy"].evidence     # the cast
    assert sum(f[k].cost_us for k in ("transpose", "layout_copy", "copy")) == pytest.approx(10.0)


def test_copy_time_split():
    c = dict(copies=2, copies_transposed=1, copies_other=1, copy_bytes_transposed=300, copy_bytes_other=100,
             copy_kernels=2)
    assert audit_rules.split_copy_time(8.0, c) == {"copy_us_transposed": 6.0, "copy_us_other": 2.0}
    # a third kernel no call explains goes to "other"
    s = audit_rules.split_copy_time(9.0, dict(c, copy_kernels=3))
    assert s["copy_us_other"] == pytest.approx(3.0 + 1.5) and s["copy_us_transposed"] == pytest.approx(4.5)
    assert audit_rules.split_copy_time(4.0, dict(copy_kernels=1)) == {"copy_us_other": 4.0}
    assert audit_rules.split_copy_time(0.0, c) == {} and audit_rules.split_copy_time(None, c) == {}


def test_only_transposed_copy_cites_the_transpose_probe(run):
    c = dict(FIXED, copies=2, copies_transposed=1, copies_channels_last=1, copy_bytes_transposed=100,
             copy_bytes_channels_last=300, copy_kernels=2)
    f = by_rule(cost.evaluate(c, run, {"copy_kernel_us": 4.0}))
    assert f["transpose"].trap == 5 and f["transpose"].cost_us == pytest.approx(1.0)
    assert "probe for reference: 200.00 µs per occurrence (transpose/contiguous_copy" in f["transpose"].cost_from[0]
    assert f["layout_copy"].trap is None and f["layout_copy"].cost_us == pytest.approx(3.0)
    assert "transpose/" not in f["layout_copy"].cost_from[0] and "this audit" in f["layout_copy"].cost_from[0]
    g = by_rule(cost.evaluate(dict(c, copy_kernels=0), run))      # no device figure
    assert g["transpose"].cost_us == pytest.approx(200.0) and g["layout_copy"].cost_us is None
    assert "not measured" in g["layout_copy"].cost_from[0]


# -- a failed capture in one line ----------------------------------------------------------------------

CUDA_SYNC_ERR = ("CUDA error: operation not permitted when stream is capturing\n"
                 "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                 "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def _chained():
    """What torch raises: the step's error, then capture_end's while leaving the graph context."""
    try:
        try:
            raise RuntimeError(CUDA_SYNC_ERR)
        finally:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture\n"
                               "CUDA kernel errors might be asynchronously reported at some other API call")
    except RuntimeError as e:
        try:
            raise audit.timing.CaptureError(f"RuntimeError: {e}") from e
        except audit.timing.CaptureError as ce:
            return ce


def test_capture_summary_one_line():
    msgs = audit_rules.error_messages(_chained())
    assert len(msgs) == 3 and "not permitted" in msgs[0] and msgs[-1].startswith("CaptureError:")
    line = audit_rules.capture_summary(msgs, {"syncs": 1, "sync_calls": {".item()": 1.0}})
    assert line == ("not capturable — the step synchronizes (.item()) during capture: "
                    "operation not permitted when stream is capturing")
    line = audit_rules.capture_summary(msgs, {})
    assert "\n" not in line and line.startswith("not capturable — the step calls something capture forbids")
    assert "the step builds or plans" in audit_rules.capture_summary(msgs, {"graph_builds": 1})
    legacy = ["RuntimeError: CUDA error: operation would make the legacy stream depend on a capturing "
              "blocking stream\nCUDA kernel errors might be asynchronously reported"]
    assert "legacy default stream" in audit_rules.capture_summary(legacy, {"syncs": 1})
    other = ["RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture.\nmore"]
    assert audit_rules.capture_summary(other) == ("not capturable — Cannot call CUDAGeneratorImpl::current_seed "
                                                  "during CUDA graph capture.")
    assert audit_rules.capture_summary([]) == "not capturable — the capture failed without a message"
    assert audit_rules.capture_summary(other, {"syncs": 2}).startswith(
        "not capturable — the step synchronizes (torch.cuda.synchronize / .item() / .cpu()) during capture: Cannot")
    assert audit_rules.error_line(CUDA_SYNC_ERR) == "operation not permitted when stream is capturing"


@pytest.mark.slow
@pytest.mark.newest_only
def test_audit_keeps_going_when_capture_fails(run, monkeypatch, cpu_stream):
    """The orchestration on CPU with the GPU pieces faked: a step that synchronizes fails capture,
    the failure becomes one line named from the counts, and the other modes and findings stay."""
    tm = audit.timing
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "memory_stats", _stats_feed(50, 80))
    monkeypatch.setattr(audit, "_env", lambda ctx: {"gpu_name": "Fake GPU"})
    monkeypatch.setattr(tm, "measure_eager", lambda fns, *a, **k: {"step": ([30.0, 31.0, 32.0], 10)})

    def capture(*a, **k):
        raise _chained()
    monkeypatch.setattr(tm, "capture", capture)
    monkeypatch.setattr(audit, "_device_mode", lambda step, sync, opt: (
        {"median": 5.0, "iqr": 0.1, "q1": 5, "q3": 5.1, "n": 3}, 2.0,
        [["nvjet_tst", 1.0, 2.0], ["direct_copy_kernel_cuda", 1.0, 3.0]]))
    monkeypatch.setattr(audit.audit_sampler, "sample_step", lambda step, sync, us, **k: {"error": "not sampled here"})
    monkeypatch.setattr(audit, "_timeline", lambda step, us, host=None, want="": {})
    monkeypatch.setattr(audit, "HOST_WARM_S", 0.5)   # a loaded host never holds its floor: 10 s of waiting
    steps = []
    ctx = types.SimpleNamespace(stream=None)
    rep = audit.audit(lambda: (steps.append(1), torch.cuda.synchronize()), run_file=run.path, ctx=ctx,
                      count_steps=3, target="t.py:make_step")
    assert len(steps) == 1 + 1 + 3                                   # first call, uncounted, counted
    assert rep.modes["loop"]["median"] == 31.0 and rep.modes["loop"]["calls"] == 10   # the plain loop's rounds
    assert rep.sampling == {"error": "not sampled here"}
    g = rep.modes["graph"]["error"]
    assert g == ("not capturable — the step synchronizes (torch.cuda.synchronize) during capture: "
                 "operation not permitted when stream is capturing")
    assert "CUDA_LAUNCH_BLOCKING" in rep.modes["graph"]["raw"]      # the raw error stays in the JSON
    assert rep.modes["eager"]["median"] == 31.0 and rep.modes["device"]["median"] == 5.0
    assert rep.counts["cuda_allocs"] == 10 and rep.counts["copy_kernels"] == 1
    f = by_rule(rep.findings)
    assert {"capture", "sync", "new_output", "copy"} == set(f)
    assert f["copy"].cost_us == pytest.approx(3.0) and f["capture"].evidence == g
    text = audit_report.render_text(rep)
    assert text.count(g) == 2 and "Traceback" not in text            # the graph line and the finding
    assert f"costs from: {Path(run.path).resolve()} (given)" in text
    md = audit_report.render_markdown(rep)
    assert f"| graph | – | – | {g} |" in md


# -- trust marks and the run file named -----------------------------------------------------------------

def test_flagged_probe_figure_is_marked(tmp_path):
    from cudnn_hostbench.bench.measure.runfile import trust
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    gen = _rec("execute", "generic", "256", 14.0)
    gen.flags = ["discarded", "wide_spread"]
    recs = [gen, _rec("execute", "pinned", "256", 11.0), _rec("churn", "reuse", "256", 10.0),
            _rec("churn", "new_output", "256", 13.0)]
    r = load_run(write_run(tmp_path / "r.json", run_document(recs, {"gpu_name": "Fake GPU"})))
    f = by_rule(cost.evaluate(dict(FIXED, execute=1, cuda_allocs=1, cuda_allocs_explicit=1, cuda_factory_calls=1), r))
    # rounds discarded and redone (d) mark no figure; workers that disagree (w) do
    assert f["generic_execute"].flagged and "execute/generic 14.00⚑w − execute/pinned 11.00 µs" in \
        f["generic_execute"].cost_from[0]
    assert not f["new_output"].flagged and "⚑" not in f["new_output"].cost_from[0]
    rep = audit.AuditReport(target="t", env={}, modes={}, kernels_per_step=None, kernels=[], host_overhead_us=None,
                            counts={}, findings=list(f.values()), avoidable_us=0.0, run_file="r.json", run_note="")
    text, md = audit_report.render_text(rep), audit_report.render_markdown(rep)
    w = f"w: {trust.MARKS['wide_spread'].meaning}"
    for out in (text, md):   # the legend names only the marks its citations carry
        assert out.count(w) == 1 and f"d: {trust.MARKS['discarded'].meaning}" not in out
        assert f"c: {trust.MARKS['clock_drop'].meaning}" not in out
    gen.flags = ["discarded"]   # a figure only redone: no mark, no legend
    r = load_run(write_run(tmp_path / "r2.json", run_document(recs, {"gpu_name": "Fake GPU"})))
    f = by_rule(cost.evaluate(dict(FIXED, execute=1, cuda_allocs=1, cuda_allocs_explicit=1, cuda_factory_calls=1), r))
    assert not f["generic_execute"].flagged and "⚑" not in f["generic_execute"].cost_from[0]


def test_run_file_named_as_used(tmp_path):
    path = write_run(tmp_path / "mine" / "run.json", run_document([_rec("churn", "reuse", "256", 1.0)], {}))
    run, shown, note = cost.load_costs(str(path), "Fake GPU")
    assert shown == str(path.resolve()) and note == "given" and run.records
    run, shown, note = cost.load_costs(None, "No Such GPU")
    assert run is None and shown is None and "no run of the probes on No Such GPU" in note


# -- bad input -----------------------------------------------------------------------------------

def _write(tmp_path, body, name="user_step.py"):
    p = tmp_path / name
    p.write_text(body)
    return p


@pytest.mark.parametrize("body, spec_attr, message", [
    (None, "make_step", "no such file"),
    ("def make_step():\n    return lambda: None\n", "make_stepp", "has no attribute 'make_stepp'"),
    ("def make_step(:\n", "make_step", "SyntaxError at line 1"),
    ("raise ImportError('no cudnn here')\n", "make_step", "raised ImportError: no cudnn here"),
    ("make_step = 3\n", "make_step", "not a factory function"),
])
def test_load_factory_messages(tmp_path, body, spec_attr, message):
    path = tmp_path / "missing.py" if body is None else _write(tmp_path, body, f"m{abs(hash(message))}.py")
    with pytest.raises(target.AuditInputError, match=message):
        target.load_factory(f"{path}:{spec_attr}")
    with pytest.raises(target.AuditInputError, match="expected path/to/file.py:factory"):
        target.load_factory(str(path))


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(target, "environment_problem", lambda: None)
    monkeypatch.setattr(audit_cmd, "_gpu_context", lambda: object())
    monkeypatch.setattr(audit_cmd, "_on_stream", lambda ctx: contextlib.nullcontext())


@pytest.mark.parametrize("body, message", [
    ("def make_step():\n    raise ValueError('no weights')\n", "make_step() raised ValueError: no weights"),
    ("def make_step():\n    return 42\n", "make_step() returned a int, not a zero-argument callable"),
    ("def make_step():\n    def step():\n        raise KeyError('x')\n    return step\n",
     "raised on its first call: KeyError"),
])
def test_cli_bad_factory_or_step(tmp_path, capsys, fake_gpu, body, message):
    p = _write(tmp_path, body, f"s{abs(hash(message))}.py")
    out = tmp_path / "out"
    assert cli.main(["audit", f"{p}:make_step", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_bad_path_and_run_file(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["audit", f"{tmp_path}/nope.py:make_step", "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    p = _write(tmp_path, "def make_step():\n    return lambda: None\n")
    bad = _write(tmp_path, "{not json", "bad.json")
    assert cli.main(["audit", f"{p}:make_step", "--run-file", str(bad), "--out", str(out)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert cli.main(["audit", f"{p}:make_step", "--fixed", f"{tmp_path}/gone.py:make_step", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "gone.py" in err and "no such file" in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_fixed_step_that_raises_names_the_fixed_target(tmp_path, capsys, fake_gpu):
    p = _write(tmp_path, "def make_step():\n    return lambda: None\n")
    f = _write(tmp_path, "def make_step():\n    def step():\n        raise KeyError('x')\n    return step\n", "fixed.py")
    out = tmp_path / "out"
    assert cli.main(["audit", f"{p}:make_step", "--fixed", f"{f}:make_step", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--fixed {f}:make_step: the step raised on its first call: KeyError" in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message")
def test_cli_no_gpu(tmp_path, capsys):
    # the user's file imports cudnn, as the examples do: the answer is still what the machine lacks
    p = _write(tmp_path, "import cudnn\ndef make_step():\n    return lambda: None\n")
    assert cli.main(["audit", f"{p}:make_step", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs a CUDA GPU and nvidia-cudnn-frontend" in err
    assert "pip install nvidia-cudnn-frontend" in err and "CUDA GPU" in err.split("here:")[1]
    assert not (tmp_path / "out").exists()


def test_cli_without_frontend(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "init", lambda: None)
    monkeypatch.setitem(sys.modules, "cudnn", None)        # import cudnn fails, as without the package
    problem = target.environment_problem()
    assert problem and "cudnn" in problem and "CPU build" not in problem
    p = _write(tmp_path, "import cudnn\ndef make_step():\n    return lambda: None\n")
    assert cli.main(["audit", f"{p}:make_step"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(pip install nvidia-cudnn-frontend); here:" in err and "cudnn" in err


def test_cli_help_and_step_count(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli.main(["audit", "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "needs a CUDA GPU and nvidia-cudnn-frontend (pip install nvidia-cudnn-frontend)" in out
    assert "(default: 25)" in out.replace(str(audit.timing.Options.rounds), "25") and "(default: 10)" in out
    assert "reports/reference/<gpu>/run.json" in out
    p = _write(tmp_path, "def make_step():\n    return lambda: None\n")
    assert cli.main(["audit", f"{p}:make_step", "--count-steps", "1"]) == 2
    assert "--count-steps at least 2" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["audit", f"{p}:make_step", "--rounds", "many"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "--rounds" in err


def test_find_run_file(tmp_path):
    import os
    for name, gpu, mtime in (("a", "NVIDIA H200", 100), ("b", "NVIDIA B200", 200)):
        p = write_run(tmp_path / "results" / name / "run.json", run_document([], {"gpu_name": gpu}))
        os.utime(p, (mtime, mtime))
    assert cost.find_run_file("NVIDIA H200", tmp_path) == tmp_path / "results" / "a" / "run.json"
    assert cost.find_run_file("NVIDIA H100", tmp_path) is None
    ref = write_run(tmp_path / "reports" / "reference" / "h100" / "run.json", run_document([], {}))
    assert cost.find_run_file("NVIDIA H100", tmp_path) == ref


def test_examples_expose_make_step():
    pytest.importorskip("cudnn")
    for name in ("naive_integration", "fixed_integration", "mixed_integration", "custom_op_integration",
                 "direct_op_integration", "sync_check_integration", "sync_check_fixed_integration",
                 "library_op_integration", "library_op_fixed_integration", "scheduler_integration",
                 "scheduler_fixed_integration", "attn_proj_integration", "attn_proj_fixed_integration",
                 "autograd_backward_integration"):
        assert callable(target.load_factory(f"{ROOT}/examples/{name}.py:make_step"))


def _audit_example(name: str, tmp_path):
    """`hostbench audit examples/<name>.py:make_step` in a fresh interpreter (one process may profile
    only after its host timings): (the process, audit.json)."""
    import subprocess
    import sys
    out = tmp_path / name
    res = subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "audit", f"examples/{name}.py:make_step",
                          "--rounds", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return res, json.loads((out / "audit.json").read_text())


# -- the GPU path ----------------------------------------------------------------------------------

@pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU visible to torch: the audit's timing needs one")
def test_audit_examples_on_gpu(tmp_path):
    mixed = {"new_output", "interleave", "layout_copy", "copy", "sync", "capture"}
    # the custom op returns a new output per call (functional), so its tuple pack is new too
    custom = {"custom_op", "new_output", "new_pack"}
    for name, expect in (("fixed_integration", set()), ("naive_integration", NAIVE_RULES_PTR),
                         ("mixed_integration", mixed), ("custom_op_integration", custom)):
        res, doc = _audit_example(name, tmp_path)
        found = {f["rule"] for f in doc["findings"]}
        assert (found if name == "mixed_integration" else found - {"capture"}) == expect, res.stdout
        c = doc["counts"]
        if name == "naive_integration":   # the .t() copy is an allocation inside an op
            assert c["alloc_counted_by"] == "allocator" and c["cuda_allocs"] > c["cuda_allocs_explicit"] >= 1
            assert [x["kind"] for x in c["copy_list"]] == ["transposed"]
        if name == "custom_op_integration":
            assert c["custom_op_calls"] == 1 and c["dispatcher_calls"] == 0
            assert by_rule([cost.Finding(**f) for f in doc["findings"]])["custom_op"].cost_us is not None
        if name == "mixed_integration":
            assert c["lib_switches"] == 4 and c["cuda_allocs_explicit"] == 0 and c["cuda_allocs"] >= 4
            assert "\n" not in doc["modes"]["graph"]["error"] and ".item()" in doc["modes"]["graph"]["error"]
    # issue 39's pairs: at least these findings (their fixed versions keep the sync, or none at all)
    for name, expect in (("sync_check_integration", {"transpose", "views", "new_output", "sync"}),
                         ("sync_check_fixed_integration", {"sync"}),
                         ("library_op_integration", {"dispatcher", "new_output", "new_pack", "metadata", "views"}),
                         ("library_op_fixed_integration", set())):
        res, doc = _audit_example(name, tmp_path)
        found = {f["rule"] for f in doc["findings"]}
        assert expect <= found and ("dispatcher" in found) == name.startswith("library_op_integ"), res.stdout
        assert doc["modes"]["loop"]["median"] > 0
        if name.startswith("sync_check"):   # the timeline saw the finite check's .item() and priced it
            assert doc["timeline"]["syncs_per_step"] == 1 and doc["projection"]["syncs"][0]["sync"] == ".item()"
        if name == "library_op_fixed_integration":
            assert found <= {"capture"}, res.stdout


def test_reprice_keeps_the_measured_step_and_cites_the_new_run(tmp_path):
    """`hostbench reprice`: a committed audit priced again from the reference run; the step's
    own measurements stay, every citation comes from the new run."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from cudnn_hostbench.bench.audit.auditor import AuditReport, price
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    root = Path(__file__).resolve().parents[1]
    src = root / "reports/reference/h200/audit-naive/audit.json"
    old = AuditReport.from_dict(json.loads(src.read_text(encoding="utf-8")))
    ref = root / "reports/reference/h200/run.json"
    res = subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "reprice", str(src), "--run-file", str(ref),
                          "--out", str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    new = AuditReport.from_dict(json.loads((tmp_path / "audit.json").read_text(encoding="utf-8")))
    assert (new.modes, new.counts, new.kernels, new.target) == (old.modes, old.counts, old.kernels, old.target)
    assert sorted(f.rule for f in new.findings) == sorted(f.rule for f in old.findings)  # re-sorted by cost
    assert new.run_note.startswith("given")
    run = load_run(ref)
    rebuild = run.find("rebuild", "rebuild", "256", "eager").summary().median
    assert any(f"rebuild/rebuild {rebuild:.2f}" in c for f in new.findings for c in f.cost_from)
    assert new == price(new, run)       # pricing is a pure function of the audit and the run
    assert (tmp_path / "audit.md").read_text(encoding="utf-8").count("Costs from") == 1


def test_a_fixed_step_importing_the_trap_file_shares_its_module(tmp_path):
    """--fixed loads two files in one process; a fixed file that imports the trap's (its weights,
    its reference) gets the trap's module, not a second run of it: a torch.library namespace
    defined twice raises (H200, library_op + library_op_fixed)."""
    import sys

    from cudnn_hostbench.bench.audit import target
    ns = f"hb_share_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / "trap_share.py").write_text(
        f"import torch\nLIB = torch.library.Library({ns!r}, 'DEF')\nRUNS = [1]\n"
        "def make_step():\n    return lambda: None\n")
    (tmp_path / "fixed_share.py").write_text(
        "import trap_share\ntrap_share.RUNS.append(2)\ndef make_step():\n    return lambda: len(trap_share.RUNS)\n")
    try:
        target.load_factory(f"{tmp_path}/trap_share.py:make_step")
        fixed = target.load_factory(f"{tmp_path}/fixed_share.py:make_step")
        assert fixed()() == 2                        # the trap file ran once; the fixed one saw its module
        again = target.load_factory(f"{tmp_path}/trap_share.py:make_step")
        assert again()() is None and sys.modules["trap_share"].RUNS == [1, 2]
    finally:
        for m in ("trap_share", "fixed_share"):
            sys.modules.pop(m, None)
