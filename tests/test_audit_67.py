"""Issue 67 part 4: the audit learns the calls integrations make today (execute-time shape
overrides, the native CUDA-graph API per step, the frontend's cudnn.Graph wrapper and SDPA provider,
the stream pointer read through a Stream object, a plan run on misaligned pointers), each priced
from its probe's rows or said unpriced and why; and it sees a trap in a backward that runs on the
autograd thread as it sees one in the forward. CPU only: cuDNN is faked (tests/test_audit.py)."""
import sys
import threading
import types

import pytest

torch = pytest.importorskip("torch")

from cudnn_hostbench.bench.audit import cost, dispatch, sampler
from cudnn_hostbench.bench.audit import count as audit_count
from cudnn_hostbench.bench.measure.runfile.records import Record, load_run, run_document, write_run
from tests.test_audit import fake_cudnn


def by_rule(findings):
    return {f.rule: f for f in findings}


@pytest.fixture
def cpu_stream(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: types.SimpleNamespace(cuda_stream=7))


# -- a backward on the autograd thread -------------------------------------------------------------

BACKWARD_TRAPS = {"set_stream", "raw_stream", "generic_execute", "new_pack", "new_output", "interleave"}


def _training_step(cudnn, on_thread: bool):
    """A step through an autograd.Function whose forward is clean (built once, ordered execute,
    prebuilt pack) and whose backward plants each trap: set_stream with current_stream().cuda_stream
    (traps 3), a generic execute with a new dict and a new output (traps 2, 4), and a torch.mm
    between two cuDNN executes (trap 7). With `on_thread`, backward() runs on another thread while
    the step waits, as torch's autograd engine runs a CUDA backward on its device thread."""
    h, g = cudnn.Handle(), cudnn.pygraph()
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(8, 8, requires_grad=True)
    pack = (x.detach(), w.detach(), torch.empty(8, 8))
    seen = set()

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            g.execute_plan_at_index(pack, None, 0, handle=h, tensor_uids=(1, 2, 3))
            return pack[2]

        @staticmethod
        def backward(ctx, dy):
            seen.add(threading.get_ident())
            dx = torch.empty(8, 8)                                               # trap 4 (new output)
            cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)   # trap 3
            g.execute({"dy": dy, "w": w, "dx": dx}, None, handle=h)              # traps 2, 4
            dw = torch.mm(dy, dy)                                                # trap 7: between two cuDNN calls
            g.execute({"dy": dy, "w": w, "dx": dx}, None, handle=h)
            return dx, dw

    def step():
        y = Linear.apply(x, w)
        loss = y.sum()
        if on_thread:
            t = threading.Thread(target=loss.backward)
            t.start()
            t.join()
        else:
            loss.backward()
    return step, seen


@pytest.mark.parametrize("on_thread", [True, False], ids=["autograd-thread", "caller-thread"])
def test_every_trap_planted_in_the_backward_is_found(cpu_stream, on_thread):
    cudnn = fake_cudnn()
    step, seen = _training_step(cudnn, on_thread)
    c = audit_count.count_step(step, 4, cudnn=cudnn, torch=torch, device_type="cpu")
    assert (threading.main_thread().ident in seen) != on_thread      # where the backward ran
    found = set(by_rule(cost.evaluate(c, None)))
    assert BACKWARD_TRAPS <= found, BACKWARD_TRAPS - found
    # cuDNN (fwd), cuDNN, cuBLAS, cuDNN: 2 switches cyclically, the floor's count; 2 inside the step
    assert c["lib_switches"] == 2 and c["lib_switches_within"] == 2
    # each count is tied to the backward's own lines
    body = [ln for ln in c["lines"]["stream_ptr_queries"]]
    assert len(body) == 1 and body[0].startswith("tests/test_audit_67.py:")


def test_a_phased_step_is_not_interleaved():
    from cudnn_hostbench.bench.audit import rules
    assert audit_count.lib_switches_within([["cudnn", "cudnn", "cublas"]] * 3) == 1
    assert audit_count.lib_switches_within([["cudnn", "cublas", "cudnn"]] * 3) == 2
    assert rules.derived({"lib_switches": 2, "lib_switches_within": 1})["extra_switches"] == 0
    assert rules.derived({"lib_switches": 2, "lib_switches_within": 2})["extra_switches"] == 1
    assert rules.derived({"lib_switches": 4})["extra_switches"] == 2      # an audit from before: as it was


def test_sampler_charges_a_timed_call_on_another_thread_to_the_step():
    """A timed call made on the autograd thread: its stack goes on with the main thread's up to the
    step loop (before, it fell outside the step: no loop frame on that thread)."""
    s = sampler._Sampler()
    got = []

    def backward_line():
        got.append(s._key(sys._getframe(), ("….execute()", "cuDNN frontend")))

    def step():
        t = threading.Thread(target=backward_line)
        t.start()
        t.join()
    sampler._loop(step, 1)
    key = got[0]
    assert key is not sampler.OUTSIDE and key is not sampler.IN_LOOP
    names = [fr[0].co_name for fr in key[1:]]
    assert names[0] == "backward_line" and "step" in names


# -- the new calls, counted -------------------------------------------------------------------------

def test_counts_overrides_graph_updates_alignment_and_pointer_reads(cpu_stream):
    cudnn = fake_cudnn()
    cudnn.pygraph.execute = lambda self, pack, ws, handle=None, **overrides: None
    cudnn.pygraph.populate_cuda_graph = lambda self, h, pack, ws, graph: None
    cudnn.pygraph.update_cuda_graph = lambda self, h, pack, ws, graph: None
    h, g = cudnn.Handle(), cudnn.pygraph()
    base = torch.zeros(1024, dtype=torch.bfloat16)
    off = base[1:257]                                        # 2 bytes past an aligned start
    assert off.data_ptr() % 16 and not base.data_ptr() % 16
    sets = [{1: 4096, 2: 8192}, {1: 12288, 2: 16384}]
    flip = [0]

    def step():
        g.execute({1: base[:256]}, None, handle=h, override_uids=[1], override_shapes=[[1, 256]])
        g.execute({1: off}, None, handle=h)
        g.update_cuda_graph(h, sets[0], 0, 111)              # same pointers every step: the trap
        flip[0] ^= 1
        g.update_cuda_graph(h, sets[flip[0]], 0, 222)        # new pointers: the fix, not counted
        g.populate_cuda_graph(h, sets[0], 0, 333 + flip[0])  # a graph populated per step
        s = torch.cuda.current_stream()                      # a Stream object used otherwise
        return torch.cuda.current_stream().cuda_stream, s

    c = audit_count.count_step(step, 4, cudnn=cudnn, torch=torch, device_type="cpu")
    assert c["override_executes"] == 1 and c["misaligned_executes"] == 1
    assert c["cuda_graph_updates"] == 1 and c["cuda_graph_updates_moved"] == 1 and c["cuda_graph_populates"] == 1
    assert c["stream_queries"] == 2 and c["stream_ptr_queries"] == 1
    found = set(by_rule(cost.evaluate(c, None)))
    assert {"override", "alignment", "cuda_graph_update", "raw_stream", "stream_query"} <= found


WRAPPER_SRC = '''
class Graph:
    def __init__(self, cudnn, torch, handle):
        self._Graph__handle, self.g, self.cudnn, self.torch = handle, cudnn.pygraph(), cudnn, torch
    def __call__(self, *args, **kwargs):
        h = kwargs.get("handle") or self.cudnn.Handle()
        if self._Graph__handle == "auto" and "handle" not in kwargs:
            self.cudnn.set_stream(handle=h, stream=self.torch.cuda.current_stream().cuda_stream)
        out = self.torch.empty(4)
        self.g.execute({i: a for i, a in enumerate(args)} | {"out": out}, None, handle=h)
        return out
'''


def test_fe_wrapper_call_counted_once_and_what_it_does_inside_kept_apart(cpu_stream):
    """cudnn.Graph's own pack, output, generic execute and stream calls are its row's cost: counted
    under the wrapper, not priced again by generic_execute, new_pack, new_output or set_stream."""
    cudnn = fake_cudnn()
    mod = types.ModuleType("fake_cudnn.wrapper")
    # the wrapper must live in a module of its own, as cudnn.wrapper does
    exec(WRAPPER_SRC, mod.__dict__)  # noqa: S102
    sys.modules[mod.__name__] = mod
    try:
        cudnn.Graph = mod.Graph
        h = cudnn.Handle()
        a = torch.randn(4)
        pos, auto = mod.Graph(cudnn, torch, h), mod.Graph(cudnn, torch, "auto")

        def step():
            pos(a, a, handle=h)
            pos({"A": a}, handle=h)
            auto(a)
        c = audit_count.count_step(step, 3, cudnn=cudnn, torch=torch, device_type="cpu")
    finally:
        del sys.modules[mod.__name__]
    assert c["fe_wrapper_calls"] == 3
    assert (c["fe_wrapper_positional"], c["fe_wrapper_named"], c["fe_wrapper_auto_handle"]) == (1, 1, 1)
    assert c["execute"] == c["new_packs"] == c["cuda_factory_calls"] == c["set_stream"] == 0
    assert c["stream_ptr_queries"] == 0 and c["executes"] == 3           # still cuDNN calls, for switches
    assert set(by_rule(cost.evaluate(c, None))) == {"fe_wrapper"}


def test_frontend_ops_are_not_the_users_registration():
    prov = "cudnn.torch.sdpa_provider"
    assert dispatch.frontend_kind("cudnn::sdpa_fwd", prov, prov) == "sdpa_provider_calls"
    assert dispatch.frontend_kind("cudnn::sdpa_bwd", prov, prov) == "sdpa_provider_bwd_calls"
    assert dispatch.frontend_kind("cudnn::sdpa_fwd", "my_model", prov) == "fe_op_calls"
    assert dispatch.frontend_kind("mylib::linear", prov, prov) is None


# -- priced from the probes' rows, or unpriced and why ------------------------------------------------

def _rec(probe, variant, size, us, status="ok"):
    return Record(probe, variant, size, "eager", samples=[us] * 5 if status == "ok" else [], status=status)


NEW = dict(override_executes=4, cuda_graph_updates=1, cuda_graph_populates=1, fe_wrapper_calls=2,
           fe_wrapper_positional=1, fe_wrapper_named=1, sdpa_provider_calls=2, stream_queries=1,
           stream_ptr_queries=1, misaligned_executes=1, executes=4, steps=4)


def test_new_rules_priced_from_their_probe_rows(tmp_path):
    o = "m64_128_256_512k1024n1024"
    recs = [_rec("override", "override", o, 12.0), _rec("override", "per_shape", o, 9.0),
            _rec("override", "override", "m512_1024_2048_4096k4096n4096", 50.0),
            _rec("cuda_graph_api", "native_update_same", "256", 8.0), _rec("cuda_graph_api", "native_launch", "256", 3.0),
            _rec("fe_wrapper", "wrapper_positional", "256", 30.0), _rec("fe_wrapper", "wrapper_named", "256", 25.0),
            _rec("fe_wrapper", "pygraph_pinned", "256", 10.0),
            _rec("sdpa_provider", "provider", "b4h32s2048d128", 60.0),
            _rec("sdpa_provider", "install_remove", "b4h32s2048d128", 5.0),
            _rec("sdpa_provider", "provider_op", "b4h32s2048d128", 40.0),
            _rec("set_stream", "query_stream", "256", 14.1), _rec("set_stream", "query_raw_stream", "256", 10.1),
            _rec("set_stream", "set_once", "256", 10.0),
            _rec("alignment", "offset_reuse", "256", 13.0), _rec("alignment", "aligned", "256", 11.0)]
    run = load_run(write_run(tmp_path / "run.json", run_document(recs, {"gpu_name": "Fake GPU"})))
    f = by_rule(cost.evaluate(NEW, run))
    assert f["override"].cost_us == pytest.approx(4 * 3.0) and "@m64_128_256_512k1024n1024" in f["override"].cost_from[0]
    assert f["cuda_graph_update"].cost_us == pytest.approx(5.0 + 5.0)
    assert "a floor" in f["cuda_graph_update"].cost_from[-1]
    assert f["fe_wrapper"].cost_us == pytest.approx(20.0 + 15.0)
    assert f["sdpa_provider"].cost_us == pytest.approx(2 * (60.0 - 5.0 - 40.0))
    assert "install_remove" in f["sdpa_provider"].cost_from[0]
    assert f["raw_stream"].cost_us == pytest.approx(4.0)
    assert "stream_query" not in f                        # the one query read its pointer: raw_stream's
    assert f["alignment"].cost_us == pytest.approx(2.0)


def test_new_rules_without_rows_say_unpriced_and_why(tmp_path):
    recs = [_rec("execute", "generic", "256", 14.0),
            _rec("alignment", "offset_reuse", "256", 0, status="unsupported: the backend rejected the offset views"),
            _rec("alignment", "aligned", "256", 11.0)]
    run = load_run(write_run(tmp_path / "run.json", run_document(recs, {"gpu_name": "Fake GPU"})))
    f = by_rule(cost.evaluate(dict(NEW, sdpa_provider_bwd_calls=1), run))
    for rule in ("override", "cuda_graph_update", "fe_wrapper", "sdpa_provider", "raw_stream", "alignment"):
        assert f[rule].cost_us is None, rule
        assert any("no figure in" in x for x in f[rule].cost_from), (rule, f[rule].cost_from)
    assert "rejected the offset views" in f["alignment"].cost_from[0]
    assert any("probe times the forward only" in x for x in f["sdpa_provider"].cost_from)
    assert all(x.cost_us is None for x in cost.evaluate(NEW, None))
