"""hostbench audit: trap rules over recorded counts, cost figures from a synthetic run file,
rendering, the counting wrappers (fakes and CPU torch) and their restoration, bad input.
The GPU path runs only where torch sees a CUDA GPU."""
import contextlib
import json
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from bench import audit, audit_count, audit_rules  # noqa: E402
from bench.records import Record, run_document, write_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HAS_GPU = torch.cuda.is_available()

NAIVE = dict(graphs_created=1, validate=1, build_operation_graph=1, create_execution_plans=1, check_support=1,
             build_plans=1, build=1, graph_builds=1, build_us=1500.0, execute=1, executes=1, new_packs=1,
             set_stream=1, set_stream_cached=1, stream_queries=1, cuda_allocs=2, contiguous_copies=1, steps=10)
FIXED = dict(execute_ordered=1, executes=1, steps=10)
NAIVE_RULES = {"rebuild", "generic_execute", "set_stream", "stream_query", "new_pack", "new_output", "transpose"}


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
    from bench.records import load_run
    return load_run(path)


def by_rule(findings):
    return {f.rule: f for f in findings}


# -- rules over counts ---------------------------------------------------------------------------

def test_naive_counts_flag_each_trap_and_fixed_none(run):
    assert set(by_rule(audit.evaluate(NAIVE, run))) == NAIVE_RULES
    assert audit.evaluate(FIXED, run) == []
    assert audit.evaluate({}, run) == []


def test_costs_from_run_file(run):
    f = by_rule(audit.evaluate(NAIVE, run, {"copy_kernel_us": 3.0}))
    assert f["generic_execute"].cost_us == pytest.approx(4.0)        # 14 − min(11, 10)
    assert "execute/ordered_pinned" in f["generic_execute"].cost_from[0]
    assert f["set_stream"].cost_us == pytest.approx(0.5)             # cached call: same − once
    assert f["stream_query"].cost_us == pytest.approx(2.5)
    assert f["new_pack"].cost_us == pytest.approx(2.0)               # closest size: 1024
    assert "@1024" in f["new_pack"].cost_from[0]
    assert f["new_output"].cost_us == pytest.approx(6.0)             # 2 allocations × 3
    assert f["transpose"].cost_us == pytest.approx(3.0)              # the audit's own device figure first
    assert f["rebuild"].cost_us == pytest.approx(1500.0)             # no rebuild probe: counting-pass time
    assert "this audit" in f["rebuild"].cost_from[0]
    costs = [x.cost_us for x in audit.evaluate(NAIVE, run, {"copy_kernel_us": 3.0})]
    assert costs == sorted(costs, reverse=True)                       # biggest first


def test_backend_set_stream_and_fallbacks(run):
    c = dict(NAIVE, set_stream=2, set_stream_backend=1, set_stream_cached=1, build_us=0)
    f = by_rule(audit.evaluate(c, run))
    assert f["set_stream"].cost_us == pytest.approx(3.0 + 0.5)
    assert f["transpose"].cost_us == pytest.approx(200.0)            # no device figure: probe @t256
    assert f["rebuild"].cost_us is None
    assert "no figure in" in f["rebuild"].cost_from[0] and "run.json" in f["rebuild"].cost_from[0]
    v = by_rule(audit.evaluate(dict(FIXED, validate=1, build_us=40.0), run))["rebuild"]   # no full build
    assert v.cost_us == pytest.approx(40.0)


def test_rebuild_probe_figure_preferred(tmp_path):
    from bench.records import load_run
    recs = [_rec("rebuild", "rebuild", "256", 2000.0), _rec("rebuild", "cache_hit", "256", 12.0),
            _rec("rebuild", "prebuilt", "256", 11.0)]
    r = load_run(write_run(tmp_path / "r.json", run_document(recs, {})))
    f = by_rule(audit.evaluate(NAIVE, r))["rebuild"]           # the step's own build time first
    assert f.cost_us == pytest.approx(1500.0) and "probe for reference: 1989.00" in f.cost_from[0]
    f = by_rule(audit.evaluate(dict(NAIVE, build_us=0), r))["rebuild"]
    assert f.cost_us == pytest.approx(1989.0) and "rebuild/prebuilt" in f.cost_from[0]


def test_interleave_sync_and_no_run_file(run):
    f = by_rule(audit.evaluate(dict(FIXED, lib_switches=7, cublas_calls=4, syncs=1), run))
    assert set(f) == {"interleave", "sync"}
    assert f["interleave"].cost_us == pytest.approx(6 * 5.0 * 8 / 6)
    assert f["sync"].cost_us is None and f["sync"].label == "extra"
    assert audit.evaluate(dict(FIXED, lib_switches=1), run) == []      # phased: one switch is fine
    g = by_rule(audit.evaluate(NAIVE, None))
    assert g["generic_execute"].cost_us is None and "no run file" in g["generic_execute"].cost_from[0]


def test_negative_delta_costs_nothing(tmp_path):
    recs = [_rec("execute", "generic", "256", 10.0), _rec("execute", "pinned", "256", 10.4)]
    from bench.records import load_run
    r = load_run(write_run(tmp_path / "r.json", run_document(recs, {})))
    f = by_rule(audit.evaluate(dict(FIXED, execute=1), r))["generic_execute"]
    assert f.cost_us == 0.0 and "no cost measured" in f.cost_from[0]


def test_capture_error_is_a_finding(run):
    f = audit.evaluate(FIXED, run, capture_error="capture failed: RuntimeError: boom")
    assert [x.rule for x in f] == ["capture"] and "boom" in f[0].evidence


def test_copy_kernel_names():
    assert audit_rules.is_copy_kernel("void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>")
    assert audit_rules.is_copy_kernel("transpose_kernel")
    assert not audit_rules.is_copy_kernel("Memcpy HtoD (Pageable -> Device)")
    assert not audit_rules.is_copy_kernel("nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNN")


# -- rendering -----------------------------------------------------------------------------------

def _report(run, **kw):
    findings = audit.evaluate(NAIVE, run, {"copy_kernel_us": 3.0}, capture_error="capture failed: X")
    base = dict(target="x.py:make_step", env={"gpu_name": "Fake GPU", "cudnn_frontend": "1.32.0"},
                modes={"eager": {"median": 900.0, "iqr": 5.0, "q1": 1, "q3": 6, "n": 5},
                       "graph": {"error": "capture failed: X"}, "device": {"median": 8.0, "iqr": 0.1}},
                kernels_per_step=2.0, kernels=[["direct_copy_kernel", 1.0, 3.0], ["nvjet_tst", 1.0, 5.0]],
                host_overhead_us=892.0, counts=audit_count.per_step(audit_count.Counter(NAIVE), 1),
                findings=findings, avoidable_us=sum(f.cost_us or 0 for f in findings),
                run_file="reports/reference/fake/run.json", run_note="reference run", notes=["a note"])
    base.update(kw)
    return audit.AuditReport(**base)


def test_render_text_markdown_json(run, tmp_path):
    r = _report(run)
    text = audit.render_text(r)
    assert "[trap 1]" in text and "[trap 3]" in text and "892.00" in text and "capture failed: X" in text
    md = audit.render_markdown(r)
    assert "| # | trap | finding |" in md and "reports/reference/fake/run.json" in md and "## Notes" in md
    paths = audit.write_outputs(r, tmp_path / "out")
    assert sorted(p.name for p in paths) == ["audit.json", "audit.md"]
    doc = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert {f["rule"] for f in doc["findings"]} == NAIVE_RULES | {"capture"}
    assert not list((tmp_path / "out").glob("*.tmp"))
    clean = audit.render_text(_report(run, findings=[], avoidable_us=0.0))
    assert "no traps found" in clean


def test_write_outputs_nothing_half_written(run, tmp_path, monkeypatch):
    def boom(r):
        raise RuntimeError("render failed")
    monkeypatch.setattr(audit, "render_markdown", boom)
    with pytest.raises(RuntimeError):
        audit.write_outputs(_report(run), tmp_path / "out")
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
            self.validate(); self.build_operation_graph(); self.create_execution_plans(modes)
            self.check_support(); self.build_plans()

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
    assert c["execute"] == 1 and c["new_packs"] == 1 and c["cuda_allocs"] == 1 and c["contiguous_copies"] == 1
    assert c["set_stream"] == 1 and c["set_stream_cached"] == 1 and c["set_stream_backend"] == 0
    assert c["stream_queries"] == 1
    assert set(by_rule(audit.evaluate(c, None))) == NAIVE_RULES

    g = cudnn.pygraph()
    g.build()
    pack, wt = (x, w.t(), torch.empty(8, 8)), w.t()

    def fixed():
        g.execute_plan_at_index(pack, None, 0, handle=h, tensor_uids=(1, 2, 3))
        return wt

    c = audit_count.count_step(fixed, 4, cudnn=cudnn, torch=torch, device_type="cpu")
    assert c["execute_ordered"] == 1 and c["new_packs"] == 0 and c["graph_builds"] == 0
    assert audit.evaluate(c, None) == []


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
    assert c["execute_plan_at_index"] == 2 and c["cublas_calls"] == 3 and c["lib_switches"] == 3
    assert c["set_stream_backend"] == 1 and c["set_stream_cached"] == 0
    assert c["syncs"] == 2 and c["new_packs"] == 0
    assert "interleave" in by_rule(audit.evaluate(c, None))


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
    with pytest.raises(audit.AuditInputError, match=message):
        audit.load_factory(f"{path}:{spec_attr}")
    with pytest.raises(audit.AuditInputError, match="expected path/to/file.py:factory"):
        audit.load_factory(str(path))


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(audit, "_context", lambda: object())
    monkeypatch.setattr(audit, "_on_stream", lambda ctx: contextlib.nullcontext())


@pytest.mark.parametrize("body, message", [
    ("def make_step():\n    raise ValueError('no weights')\n", "make_step() raised ValueError: no weights"),
    ("def make_step():\n    return 42\n", "make_step() returned a int, not a zero-argument callable"),
    ("def make_step():\n    def step():\n        raise KeyError('x')\n    return step\n",
     "raised on its first call: KeyError"),
])
def test_cli_bad_factory_or_step(tmp_path, capsys, fake_gpu, body, message):
    p = _write(tmp_path, body, f"s{abs(hash(message))}.py")
    out = tmp_path / "out"
    assert audit.main([f"{p}:make_step", "--out", str(out)]) == audit.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_bad_path_and_run_file(tmp_path, capsys):
    out = tmp_path / "out"
    assert audit.main([f"{tmp_path}/nope.py:make_step", "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    p = _write(tmp_path, "def make_step():\n    return lambda: None\n")
    bad = _write(tmp_path, "{not json", "bad.json")
    assert audit.main([f"{p}:make_step", "--run-file", str(bad), "--out", str(out)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message")
def test_cli_no_gpu(tmp_path, capsys):
    p = _write(tmp_path, "def make_step():\n    return lambda: None\n")
    assert audit.main([f"{p}:make_step", "--out", str(tmp_path / "out")]) == audit.EXIT_NO_GPU
    assert "no GPU to audit on" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_find_run_file(tmp_path):
    import os
    for name, gpu, mtime in (("a", "NVIDIA H200", 100), ("b", "NVIDIA B200", 200)):
        p = write_run(tmp_path / "results" / name / "run.json", run_document([], {"gpu_name": gpu}))
        os.utime(p, (mtime, mtime))
    assert audit.find_run_file("NVIDIA H200", tmp_path) == tmp_path / "results" / "a" / "run.json"
    assert audit.find_run_file("NVIDIA H100", tmp_path) is None
    ref = write_run(tmp_path / "reports" / "reference" / "h100" / "run.json", run_document([], {}))
    assert audit.find_run_file("NVIDIA H100", tmp_path) == ref


def test_examples_expose_make_step():
    pytest.importorskip("cudnn")
    for name in ("naive_integration", "fixed_integration"):
        assert callable(audit.load_factory(f"{ROOT}/examples/{name}.py:make_step"))


# -- the GPU path ----------------------------------------------------------------------------------

@pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU visible to torch: the audit's timing needs one")
def test_audit_examples_on_gpu(tmp_path):
    # one process may profile only after its host timings: run the audit in a fresh interpreter
    import subprocess
    import sys
    for name, expect in (("fixed_integration", set()), ("naive_integration", NAIVE_RULES)):
        out = tmp_path / name
        res = subprocess.run([sys.executable, "-m", "scripts.cli", "audit", f"examples/{name}.py:make_step",
                              "--rounds", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr
        doc = json.loads((out / "audit.json").read_text())
        assert {f["rule"] for f in doc["findings"]} - {"capture"} == expect, res.stdout
