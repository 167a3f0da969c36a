"""The issue-67 probes on CPU: their declarations, the skip reason each gives on a frontend without
its call, the override probe's one-line shape errors, and the alignment trial's verdicts."""
import importlib
import inspect
import json
import types

import pytest
import torch

from cudnn_hostbench.bench.cudnn_graphs import alignment, calls, cudart, override
from cudnn_hostbench.bench.cudnn_graphs.load import Capabilities
from cudnn_hostbench.bench.measure.core.options import SuiteOptions
from cudnn_hostbench.bench.measure.probe import Case
from cudnn_hostbench.bench.measure.runfile.status import Status, Unsupported

NEW = ("override", "cuda_graph_api", "fe_wrapper", "sdpa_provider", "py_engines", "alignment")


def _probe(name):
    return importlib.import_module(f"cudnn_hostbench.probes.probe_{name}")


def _fake_cudnn(version="1.32.0", override_kw=True, **attrs):
    """A frontend module with nothing but what the probes test for."""
    class Graph:
        if override_kw:
            def __init__(self, *, is_override_shape_enabled=False):
                pass

            def execute(self, pack, ws=None, handle=None, override_uids=None, override_shapes=None,
                        override_strides=None):
                pass
        else:
            def __init__(self):
                pass

            def execute(self, pack, ws=None, handle=None):
                pass
    return types.SimpleNamespace(__version__=version, pygraph=Graph, **attrs)


def _ctx(cudnn, backend=91900):
    """A CPU stand-in for the cuDNN context: the probes' torch side runs, their cuDNN side refuses."""
    def randn(*shape, dtype=None, scale=1.0):
        return (torch.randn(*shape) * scale).to(dtype or torch.bfloat16)
    return types.SimpleNamespace(torch=torch, device=torch.device("cpu"), randn=randn, cudnn=cudnn,
                                 caps=Capabilities(backend=backend), handle=None, stream=None, stream_ptr=0,
                                 sync=lambda: None, pinned_plans={})


def _status(case) -> Status:
    assert isinstance(case, BaseException), f"expected a refusal, got {case!r}"
    return Status.of(case)


@pytest.mark.parametrize("name", NEW)
def test_each_new_probe_has_a_baseline_a_trap_and_a_fix(name):
    p = _probe(name).PROBE
    roles = {v.role for v in p.variants}
    assert {"baseline", "trap", "fixed"} <= roles, f"{name}: roles {roles}"
    assert p.baseline in {v.name for v in p.variants}
    assert p.doc and p.sizes(SuiteOptions())


@pytest.mark.parametrize("name", ("sdpa_provider", "py_engines"))
def test_sdpa_probes_run_the_sdpa_probes_shapes(name):
    sdpa = _probe("sdpa").PROBE
    for opts in (SuiteOptions(), SuiteOptions(heavy=True)):
        assert _probe(name).PROBE.sizes(opts) == sdpa.sizes(opts)


def test_override_sizes_parse_to_four_shapes_of_one_problem():
    for opts in (SuiteOptions(), SuiteOptions(heavy=True)):
        for size in _probe("override").PROBE.sizes(opts):
            d = override.Dynamic.parse(size)
            assert len(d.ms) == _probe("override").SHAPES and d.m_max == max(d.ms)
    d = override.Dynamic.parse("m64_128k1024n512")
    assert (d.ms, d.k, d.n) == ((64, 128), 1024, 512)
    assert d.shapes(64) == [[1, 64, 1024], [1, 1024, 512], [1, 64, 512]]
    assert d.strides(64, (1024 * 512, 512, 1)) == [[64 * 1024, 1024, 1], [1024 * 512, 512, 1], [64 * 512, 512, 1]]


def test_a_bad_override_label_is_one_line_naming_it():
    with pytest.raises(ValueError) as e:
        override.Dynamic.parse("m64k")
    assert "'m64k'" in str(e.value) and "\n" not in str(e.value)


def test_a_shape_the_override_cannot_reach_is_one_line_naming_the_shape():
    declared = [[1, 512, 1024], [1, 1024, 1024], [1, 512, 1024]]
    assert override.reach_problem(declared, [[1, 64, 1024], [1, 1024, 1024], [1, 64, 1024]]) is None
    bad_k = [[1, 64, 2048], [1, 2048, 1024], [1, 64, 1024]]
    why = override.reach_problem(declared, bad_k)
    assert "K and N are fixed" in why
    assert "rank" in override.reach_problem(declared, [[64, 1024], [1, 1024, 1024], [1, 64, 1024]])
    assert "below 1" in override.reach_problem(declared, [[1, 0, 1024], [1, 1024, 1024], [1, 0, 1024]])
    err = override.unreachable(bad_k, 512, why)
    text = str(Status.of(err))
    assert text.startswith("error: Unreachable: override cannot reach [1,64,2048] x [1,2048,1024] x [1,64,1024]")
    assert "M=512" in text and "\n" not in text
    # the backend's own refusal keeps its first line only
    multi = RuntimeError("CUDNN_STATUS_BAD_PARAM: shape not supported\n  at graph_interface.h:1300\n  more")
    assert override.one_line(multi) == "RuntimeError: CUDNN_STATUS_BAD_PARAM: shape not supported"


def test_override_needs_the_call_then_the_backend():
    old = _ctx(_fake_cudnn(version="1.23.0"))            # has the keywords, but execute dropped them
    with pytest.raises(Unsupported, match=r"frontend >= 1\.24"):
        override.require(old)
    none = _ctx(_fake_cudnn(override_kw=False))
    with pytest.raises(Unsupported, match=r"override_uids.*frontend >= 1\.24"):
        override.require(none)
    gpu_run = _ctx(_fake_cudnn())                          # 1.32 on cuDNN 9.19, the planned GPU run
    with pytest.raises(Unsupported, match=r"cuDNN >= 9\.21\.0.*this backend is 91900"):
        override.require(gpu_run)
    override.require(_ctx(_fake_cudnn(), backend=92100))


def test_override_probe_records_the_reason_on_its_rows_and_keeps_torch():
    cases = _probe("override").build(_ctx(_fake_cudnn(version="1.20.0")), "m4_8_12_16k16n8")
    assert isinstance(cases["torch_mm"], Case)
    for row in ("override", "override_ws_query"):
        assert str(_status(cases[row])).startswith("unsupported: needs execute(override_uids=")
    assert isinstance(cases["per_shape"], BaseException)   # the fake frontend builds no graph either


def test_cuda_graph_api_rows_skip_without_populate_cuda_graph():
    cases = _probe("cuda_graph_api").build(_ctx(_fake_cudnn()), "32")
    assert isinstance(cases["torch_mm"], Case)
    for row in ("execute", *_probe("cuda_graph_api").GRAPH_ROWS):
        assert str(_status(cases[row])) == ("unsupported: needs pygraph.populate_cuda_graph / update_cuda_graph "
                                            "(frontend >= 1.8)")


def test_fe_wrapper_skips_without_cudnn_graph():
    mod = _probe("fe_wrapper")
    with pytest.raises(Unsupported, match=r"cudnn.Graph.*frontend >= 1\.15"):
        mod.wrapped_matmul(_ctx(_fake_cudnn()), None, None)


def test_py_engines_skip_on_a_frontend_without_the_ranked_list():
    cases = _probe("py_engines").build(_ctx(_fake_cudnn(version="1.26.0")), "b1h2s16d8")
    assert isinstance(cases["torch_sdpa"], Case)
    for row in ("python_engine", "backend_plan"):
        assert "frontend >= 1.27" in str(_status(cases[row]))


def test_py_engines_split_the_ranked_list_by_engine_id():
    plans = [types.SimpleNamespace(engine_id=e) for e in (5, 10_000, 7, 10_001)]
    assert _probe("py_engines").split_plans(plans, lambda e: e >= 10_000) == ([1, 3], [0, 2])


def test_sdpa_provider_skip_names_the_call(monkeypatch):
    real = importlib.import_module

    def no_provider(name, *a, **k):
        if name == "cudnn.torch.sdpa_provider":
            raise ImportError("No module named 'cudnn.torch'")
        return real(name, *a, **k)
    monkeypatch.setattr(calls.importlib, "import_module", no_provider)
    with pytest.raises(Unsupported, match=r"cudnn.torch.sdpa_provider \(frontend >= 1\.30\); import failed"):
        calls.sdpa_provider(None)


def test_sdpa_provider_rows_say_why_when_torch_has_no_cudnn_attention():
    cases = _probe("sdpa_provider").build(_ctx(_fake_cudnn()), "b1h2s16d8")
    for row in ("torch_native", "provider", "install_remove", "provider_op"):
        assert str(_status(cases[row])).startswith("unsupported: torch's cuDNN attention refused")


def test_set_stream_raw_getter_skips_where_torch_lacks_it():
    mod = _probe("set_stream")
    fake_torch = types.SimpleNamespace(_C=types.SimpleNamespace())
    with pytest.raises(Unsupported, match="_cuda_getCurrentRawStream"):
        mod.raw_stream_getter(fake_torch)
    def get(device_index):
        return 0
    assert mod.raw_stream_getter(types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=get))) is get
    pairs = mod.PROBE.extra["pairs"]
    assert ("query_stream", "query_raw_stream", True) in pairs and ("query_and_set", "query_raw_and_set", True) in pairs


def test_each_call_names_its_first_version_in_its_skip_reason():
    for key, call in calls.CALLS.items():
        text = str(calls.needs(key, "why"))
        assert text == f"needs {call.name} (frontend >= {call.since}); why"
    assert calls.version(types.SimpleNamespace(__version__="1.32.0rc1")) == (1, 32, 0)
    assert not calls.has_native_cuda_graph(_fake_cudnn())
    assert not calls.has_python_engines(_fake_cudnn())


def _line(shape, verdict, detail="d"):
    return json.dumps({"shape": list(shape), "verdict": verdict, "detail": detail})


def test_alignment_trial_reads_each_verdict():
    one = [(256, 256, 256)]
    ok = alignment.parse_child(0, "noise\n" + _line(one[0], "fine", "rel_err=0.003") + "\n", "", one)
    assert ok == {one[0]: alignment.Trial("fine", "rel_err=0.003")}
    assert alignment.parse_child(0, _line(one[0], "rejected"), "", one)[one[0]].verdict == "rejected"
    died = alignment.parse_child(-6, "", "RuntimeError: CUDA error: misaligned address\n", one)[one[0]]
    assert died.verdict == "faulted" and "misaligned" in died.detail
    assert alignment.parse_child(1, "", "ImportError: no torch", one)[one[0]].verdict == "no trial"
    for v in alignment.VERDICTS:
        text = alignment.Trial(v, "d").describe(2)
        assert "2 bytes past them" in text and "(d)" in text
    compile(alignment.CHILD, "<alignment child>", "exec")


def test_a_child_that_dies_mid_list_leaves_the_shapes_it_did_not_answer():
    shapes = [(256,) * 3, (1024,) * 3, (4096,) * 3]
    got = alignment.parse_child(-11, _line(shapes[0], "fine"), "CUDA error: an illegal address", shapes)
    assert got == {shapes[0]: alignment.Trial("fine", "d")}   # the death may be the first shape's aftermath
    first = alignment.parse_child(-11, "", "CUDA error: an illegal address", shapes[1:])
    assert first[shapes[1]].verdict == "faulted" and shapes[2] not in first


def test_one_child_tries_every_size_and_a_shape_it_missed_gets_its_own(monkeypatch):
    children = []
    dies_on = (1024, 1024, 1024)

    def run(args, **kw):
        shapes = [tuple(int(x) for x in a.split(",")) for a in args[5:]]
        children.append(shapes)
        said = []
        for x in shapes:
            if x == dies_on:
                return types.SimpleNamespace(returncode=-11, stdout="\n".join(said), stderr="illegal address")
            said.append(_line(x, "fine"))
        return types.SimpleNamespace(returncode=0, stdout="\n".join(said), stderr="")
    monkeypatch.setattr(alignment.subprocess, "run", run)
    monkeypatch.setattr(alignment, "_trials", {})
    sizes = [(256,) * 3, (1024,) * 3, (4096,) * 3]
    verdicts = [alignment.trial(*x, device=0, also=sizes).verdict for x in sizes]
    assert verdicts == ["fine", "faulted", "fine"]
    assert children == [sizes, sizes[1:], sizes[2:]]   # never a child for a shape already answered
    alignment.trial(*sizes[0], device=0, also=sizes)
    assert len(children) == 3


def test_an_offset_view_keeps_shape_stride_dtype_and_moves_the_pointer():
    t = torch.randn(3, 8, dtype=torch.float32).to(torch.bfloat16)
    base, view = alignment.offset_view(torch, t)
    assert (view.shape, view.stride(), view.dtype) == (t.shape, t.stride(), t.dtype)
    assert view.data_ptr() - base.data_ptr() == 2 and torch.equal(view, t)
    assert alignment.byte_alignment(base.data_ptr() + 2) == 2
    assert alignment.byte_alignment(4096) == 256


def test_cudart_loads_or_says_why_not():
    try:
        lib = cudart.runtime()
    except Unsupported as e:
        assert "libcudart" in str(e)
    else:
        assert hasattr(lib, "cudaGraphExecUpdate")


def test_the_native_rows_run_eager_and_device_only():
    p = _probe("cuda_graph_api").PROBE
    for name in _probe("cuda_graph_api").GRAPH_ROWS:
        assert p.variant(name).modes == ("eager", "device"), name
    assert "graph" in p.variant("execute").modes


def test_the_probes_cite_their_frontend_source():
    for name in NEW:
        src = inspect.getsource(_probe(name))
        assert "Probe(" in src and f'name="{name}"' in src
