"""The runner's bookkeeping on CPU, with a stand-in GPU context: checks before timing, statuses per
mode, a failed capture that keeps the other modes' figures, incremental records and the run file."""
import contextlib
import json

import pytest

from cudnn_hostbench.bench.measure.core import plan_clock, timing
from cudnn_hostbench.bench.measure.core.runner import Session
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant
from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.status import Unsupported
from cudnn_hostbench.bench.measure.workers import replicas


class _Cuda:
    @staticmethod
    def stream(_s):
        return contextlib.nullcontext()


class _Torch:
    cuda = _Cuda


class FakeCtx:
    torch = _Torch
    stream = None

    def sync(self):
        pass


def _probe():
    def build(ctx, size):
        return {
            "base": Case(fn=lambda: 1.0, check=lambda out: 0.0),
            "trap": Case(fn=lambda: 1.0, check=lambda out: 0.001),
            "wrong": Case(fn=lambda: 2.0, check=lambda out: 0.5),
            "old": Unsupported("needs frontend >= 9.99"),
        }
    return Probe("toy", "doc", [Variant("base", "baseline", "b"), Variant("trap", "trap", "t"),
                                Variant("wrong", "trap", "w"), Variant("old", "fixed", "o")],
                 build=build, sizes=lambda options: ["8"], baseline="base")


@pytest.fixture
def session(tmp_path, monkeypatch):
    s = Session(tmp_path, timing.Options(rounds=4, warmup_rounds=1, target_round_s=1e-5, min_calls=2, max_calls=4,
                                         device_rounds=3, device_calls=2))
    s._ctx = FakeCtx()
    s.fingerprint = Fingerprint.of({"gpu_name": "fake"})

    def capture(fn, calls, stream, warmup=3):
        if fn is s._cases[("toy", "8")]["trap"].fn:
            raise timing.CaptureError("RuntimeError: operation not permitted when stream is capturing")
        return timing.Captured(graph=type("G", (), {"replay": lambda self: None})(), calls=calls, last=fn())

    monkeypatch.setattr(timing, "capture", capture)
    monkeypatch.setattr(timing, "measure_graph",
                        lambda caps, stream, opt, ranges=None, watch=None: {n: [2.0, 2.2, 2.1, 2.0] for n in caps})
    monkeypatch.setattr(timing, "measure_device", lambda fns, sync, opt, ranges=None, watch=None: {
        n: [timing.DeviceSample(1.5, 1.0, __import__("collections").Counter({"k": 2}))] * 3 for n in fns})
    return s


def test_statuses_per_variant_and_mode(session, tmp_path):
    p = _probe()
    for mode in ("eager", "graph", "device"):
        for v in ("base", "trap", "wrong", "old"):
            session.record(p, "8", v, mode)
    get = lambda v, m: session.records[("toy", v, "8", m)]  # noqa: E731
    assert get("base", "eager").ok and get("trap", "eager").ok
    assert get("trap", "eager").ratio is not None and get("base", "eager").ratio is None
    assert get("trap", "graph").status.startswith("capture failed") and get("base", "graph").ok
    assert get("trap", "device").ok and get("trap", "device").kernels_per_call == 1.0
    for m in ("eager", "graph", "device"):  # never timed: failed numerics, unsupported
        assert get("wrong", m).status.startswith("failed: numerics rel_err=0.5")
        assert get("old", m).status == "unsupported: needs frontend >= 9.99"
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert len(lines) == 12  # written as they were made
    run = records.load_run(session.finish("run.json"))
    assert run.find("toy", "trap", "8", "graph").status.startswith("capture failed")
    assert run.find("toy", "trap", "8", "eager").samples == pytest.approx(get("trap", "eager").samples)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert {u["variant"] for u in doc["records"] if u["status"] != "ok"} == {"trap", "wrong", "old"}


def test_cudnn_probe_without_cudnn_is_unsupported_everywhere(session):
    p = _probe()

    def prepare(ctx):
        raise Unsupported("no cuDNN here")
    p.prepare = prepare
    rec = session.record(p, "8", "base", "eager")
    assert rec.status == "unsupported: no cuDNN here"
    assert session.records[("toy", "trap", "8", "device")].status == "unsupported: no cuDNN here"


def test_profiler_failure_keeps_host_figures(session, monkeypatch):
    p = _probe()
    session.record(p, "8", "base", "eager")

    def boom(*a, **k):
        raise RuntimeError("CUPTI unavailable")
    monkeypatch.setattr(timing, "measure_device", boom)
    assert session.record(p, "8", "base", "device").status.startswith("error: profiler")
    assert session.records[("toy", "base", "8", "eager")].ok


def test_nvtx_range_is_a_harmless_context_on_cpu():
    from cudnn_hostbench.bench.measure.core.nvtx_ranges import backend, nvtx_range
    with nvtx_range("toy/8/base/eager"):
        pass
    assert backend() in ("nvtx", "torch.cuda.nvtx")


def test_only_a_focus_probes_first_size_is_a_focus_block(session):
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    host = HostState(read=lambda: 1.0, floor=1.0)
    host.focus_budget_s = 12.0
    session.watch = timing.Watch(host=host)
    p = _probe()
    p.sizes = lambda options: ["8", "16"]
    session.record(p, "8", "base", "eager")
    assert host.focus_blocks == 0            # not a focus probe
    p.focus = True
    assert p.focus_size(session.suite) == "8"
    session.record(p, "16", "base", "eager")
    assert host.focus_blocks == 0            # its other sizes share the plain gate
    session._cases.pop(("toy", "8"))
    session.records = {}
    session.record(p, "8", "base", "eager")
    assert host.focus_blocks == 1 and host.summary()["focus_budget_s"] == 12.0


def test_a_focus_block_timed_slow_is_retried_before_the_profiler_phase(session, tmp_path):
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    state = {"us": 2.0}                      # the host sits in its slow state ...
    host = HostState(read=lambda: state["us"], floor=1.0, sleep=lambda s: None)
    host.focus_budget_s = 0.0001             # (no real waiting in a test)
    session.watch = timing.Watch(host=host)
    session.retry_focus, session.focus_wait_s = True, 0.0002
    p = _probe()
    p.focus = True
    session.record(p, "8", "trap", "eager")
    first = session.records[("toy", "trap", "8", "eager")]
    assert first.host_state == "slow"
    state["us"] = 1.0                        # ... and has left it by the time device mode comes
    session.record(p, "8", "trap", "device")
    again = session.records[("toy", "trap", "8", "eager")]
    assert again.host_state == "fast" and again is not first
    assert session.retries == {"toy/8": "fast"}
    run = records.load_run(tmp_path / "records.jsonl")    # the retried row's last line wins
    assert run.find("toy", "trap", "8", "eager").host_state == "fast"
    assert sum(1 for r in run.records if r.key == again.key) == 1


def test_no_retry_in_a_single_process_run_or_once_the_row_is_fast(session):
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    host = HostState(read=lambda: 1.0, floor=1.0)
    host.focus_budget_s = 1.0
    session.watch = timing.Watch(host=host)
    p = _probe()
    p.focus = True
    session.record(p, "8", "trap", "eager")
    session.record(p, "8", "trap", "device")
    assert session.retries == {}             # retry_focus is off (the default: --hb-workers 1)
    session.retry_focus = True
    session._retry = []
    host._read = lambda: 2.0
    session.finish()
    assert session.retries == {}             # nothing was queued: the first figure was fast


def _sample(names: dict):
    from collections import Counter

    from cudnn_hostbench.bench.measure.core.kernels import families
    c = Counter({k: 2 * v for k, v in names.items()})          # device_calls=2 in the fixture
    return timing.DeviceSample(1.5, float(sum(names.values())), c, Counter(), families(c, 2))


def test_a_kernel_signature_mismatch_is_a_status_and_keeps_the_figure(session, monkeypatch):
    ran = {"base": {"nvjet_sm90_tst_64x8_NNT": 1},
           "fix": {"nvjet_sm90_tst_64x8_NNT": 1},
           "trap": {"at::native::elementwise_kernel [copy]": 1, "nvjet_sm90_tst_splitK_NNT": 1,
                    "cublasLt::splitKreduce_kernel": 1, "nvjet_x": 1}}
    monkeypatch.setattr(timing, "measure_device", lambda fns, sync, opt, ranges=None, watch=None: {
        n: [_sample(ran[n])] * 3 for n in fns})
    gemm = (("gemm", 1), ("reduce", (0, 1)))
    p = Probe("sig", "doc", [Variant("base", "baseline", "b", kernels=gemm),
                             Variant("trap", "trap", "t", kernels=(("copy", 1), *gemm)),
                             Variant("fix", "fixed", "f", kernels=(("conv", 1),))],
              build=lambda ctx, size: {n: Case(fn=lambda: 1.0) for n in ("base", "trap", "fix")},
              sizes=lambda o: ["8"], baseline="base")
    session.record(p, "8", "base", "device")
    get = lambda v: session.records[("sig", v, "8", "device")]  # noqa: E731
    assert get("base").ok
    assert get("trap").status == ("failed: kernel signature: ran 4 kernel(s)/call (2 gemm, 1 copy, 1 reduce), "
                                  "expected 1 copy + 1 gemm + 0-1 reduce")
    assert get("fix").status.startswith("failed: kernel signature: ran 1 kernel(s)/call (1 gemm), expected 1 conv")
    assert get("trap").samples and get("trap").kernel_names     # the figure and the names stay for the reader


def test_a_pair_declared_to_share_the_plan_must_run_the_same_kernels(session, monkeypatch):
    ran = {"base": {"nvjet_a": 1}, "trap": {"nvjet_a": 1}, "fix": {"cudnn_generated_fort_native_sm90_matMul_knob_47": 1},
           "same": {"nvjet_a": 1}}
    monkeypatch.setattr(timing, "measure_device", lambda fns, sync, opt, ranges=None, watch=None: {
        n: [_sample(ran[n])] * 3 for n in fns})
    names = ("base", "trap", "fix", "same")
    p = Probe("pl", "doc", [Variant("base", "baseline", "b"), Variant("trap", "trap", "t"),
                            Variant("fix", "fixed", "f"), Variant("same", "fixed", "s")],
              build=lambda ctx, size: {n: Case(fn=lambda: 1.0) for n in names},
              sizes=lambda o: ["8"], baseline="base",
              extra={"pairs": [("trap", "fix", True), ("trap", "same", True)]})
    session.record(p, "8", "base", "device")
    fix = session.records[("pl", "fix", "8", "device")]
    assert fix.status.startswith("failed: plan check: declared to share trap's plan, but ran "
                                 "cudnn_generated_fort_native_sm90_matMul_knob_47; trap ran nvjet_a")
    assert session.records[("pl", "same", "8", "device")].ok and fix.samples


def test_build_time_rows_say_which_host_state_timed_them(tmp_path):
    """Host-mode rows (build, deserialize, tuning sweeps) are host-bound: the runner waits for
    the fast state before them and stamps the state the sentinel saw around them."""
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    from cudnn_hostbench.bench.measure.core.runner import host_state_of
    from cudnn_hostbench.bench.measure.runfile.records import Record

    readings = iter([1.0, 1.05, 2.1, 1.0])   # fast, fast | slow after, fast before
    hs = HostState(read=lambda: next(readings), floor=1.0)
    hs.gate_budget_s = 0.0
    assert host_state_of(hs, 1.0, 1.05) == ("fast", 1.05)
    assert host_state_of(hs, 1.0, 2.1) == ("slow", 2.1)
    assert host_state_of(None, 1.0, 1.0) == ("", None)

    probe = Probe("build", "doc", [Variant("step", "info", "s", modes=("host",))], build=lambda c, s: {},
                  sizes=lambda o: ["8"], baseline=None,
                  extra={"measure": lambda ctx, size, opt: [Record("build", "step", size, "host", unit="ms",
                                                                  samples=[0.3, 0.31, 0.29])]})
    s = Session(tmp_path)
    s._ctx = FakeCtx()
    s.watch.host = HostState(read=iter([1.0, 2.2]).__next__, floor=1.0)
    s.watch.host.gate_budget_s = 0.0
    rec = s.record(probe, "8", "step", "host")
    assert rec.ok and rec.host_state == "slow" and rec.sentinel_us == 2.2 and "slow_host" in rec.flags


def test_a_worker_records_where_its_time_went(session, monkeypatch):
    """Issue 38: start-up, warm-up, building, eager rounds, waiting for the fast state, graph,
    device, build-time rows and the rest, per worker, in its fingerprint; the run prints them."""
    import time as _time

    from cudnn_hostbench.bench.measure.core import runner
    from cudnn_hostbench.bench.measure.runfile import run_format
    from cudnn_hostbench.reports import run_summary
    slow = {"graph": 0.06, "device": 0.06}
    real_graph, real_device = timing.measure_graph, timing.measure_device
    monkeypatch.setattr(timing, "measure_graph", lambda *a, **k: (_time.sleep(slow["graph"]), real_graph(*a, **k))[1])
    monkeypatch.setattr(timing, "measure_device", lambda *a, **k: (_time.sleep(slow["device"]), real_device(*a, **k))[1])
    def build(ctx, size):
        _time.sleep(0.02)
        plan_clock.add(0.01)       # as cudnn_graphs.build.build_steps does around each step
        return {n: Case(fn=lambda: _time.sleep(0.001) or 1.0, check=lambda out: 0.0) for n in ("base", "trap")}
    p = Probe("toy", "doc", [Variant("base", "baseline", "b"), Variant("trap", "trap", "t")], build=build,
              sizes=lambda options: ["8"], baseline="base")
    for mode in ("eager", "graph", "device"):
        for v in ("base", "trap"):
            session.record(p, "8", v, mode)
    session.finish()
    t = session.fingerprint["time_s"]
    assert list(t) == list(runner.PHASES)
    assert t["graph"] >= slow["graph"] and t["device"] >= slow["device"] and t["eager"] > 0 and t["build"] > 0
    assert t["wait_fast"] == 0.0 and t["other"] >= 0.0
    t2 = dict(t, graph=0.0, device=0.0)
    table = [run_format.row_of(1, {"time_s": t}, "full"), run_format.row_of(2, {"time_s": t2}, "eager")]
    run = records.Run("r", {"worker_table": table, "suite_wall_s": sum(t.values()) + sum(t2.values()) + 1.0}, [])
    text = run_summary.time_text(run)
    assert text.startswith("time (s): all workers ") and "; worker 1 full " in text and "; worker 2 eager " in text
    assert "graph" in text.split("; worker 1 full ")[1].split(";")[0]
    assert "graph" not in text.split("; worker 2 eager ")[1].split(";")[0]
    assert text.endswith("(the parent's own 1.0)")
    assert run_summary.time_text(records.Run("old", {}, [])) == ""          # runs from before it: nothing printed
    assert run_summary.summary_lines(run, 200)[-1].endswith("--wide: blocks and discard reasons, time per worker")
    # building per block (what sharing plans across workers would save), summed over workers
    assert session.fingerprint["build_s"]["toy/8"] >= 0.02
    two = replicas.merge_fingerprints([{"build_s": {"toy/8": 0.5, "big/1": 3.0}}, {"build_s": {"toy/8": 0.25}}])
    assert two["build_s"] == {"toy/8": 0.75, "big/1": 3.0}
    run = records.Run("r", {"worker_table": table, "build_s": {f"p{i}/1": float(i) for i in range(1, 8)}}, [])
    assert run_summary.time_text(run).endswith("building by block, all workers: p7/1 7.0, p6/1 6.0, p5/1 5.0, p4/1 4.0, "
                                         "p3/1 3.0 (of 28.0 over 7 blocks)")
    # of which in cuDNN's build steps: the part plan sharing could save, per block and summed
    assert session.fingerprint["plans_s"]["toy/8"] == 0.01 < session.fingerprint["build_s"]["toy/8"]
    assert replicas.merge_fingerprints([{"plans_s": {"toy/8": 0.5}}, {"plans_s": {"toy/8": 0.25}}])["plans_s"] == {"toy/8": 0.75}
    run = records.Run("r", {"worker_table": table, "build_s": {"a/1": 3.0, "b/1": 1.0}, "plans_s": {"a/1": 0.5, "b/1": 0.25}}, [])
    assert run_summary.time_text(run).endswith("a/1 3.0, b/1 1.0; in cuDNN's build steps 0.8 of 4.0")


def test_cudnn_build_steps_feed_the_plan_clock():
    """Each of the five build steps is timed into plan_clock, a refused step included, so a
    worker's 'building' splits into cuDNN planning and the rest (data, references, checks)."""
    import time as _time
    from types import SimpleNamespace

    from cudnn_hostbench.bench.cudnn_graphs import build
    from cudnn_hostbench.bench.measure.runfile.status import Unsupported

    class Refused(Exception):
        pass

    def graph(refuse: str = ""):
        def step(name):
            def run(*_a):
                _time.sleep(0.002)
                if name == refuse:
                    raise Refused(name)
            return run
        return SimpleNamespace(**{n: step(n) for n in build.STEPS})
    cudnn = SimpleNamespace(heur_mode=SimpleNamespace(A=0, FALLBACK=1), cudnnGraphNotSupportedError=Refused,
                            build_plan_policy=SimpleNamespace(HEURISTICS_CHOICE=0))
    t0 = plan_clock.total()
    ms = build.build_steps(cudnn, graph())
    assert list(ms) == list(build.STEPS) and plan_clock.total() - t0 >= 5 * 0.002
    t1 = plan_clock.total()
    with pytest.raises(Unsupported, match="check_support"):
        build.build_steps(cudnn, graph("check_support"))
    assert plan_clock.total() - t1 >= 4 * 0.002


def test_a_worker_writes_its_host_trace(session, tmp_path, monkeypatch):
    """Every sentinel reading and every eager cycle on one clock, with the block each cycle
    belongs to: how long the host's states last, and which cycles straddled a switch, read
    offline; a second reading after each cycle only when asked (HB_TRACE_REREAD=1)."""
    import json

    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    session.watch = timing.Watch(host=HostState(read=lambda: 1.0, floor=1.0))
    session.record(_probe(), "8", "trap", "eager")
    monkeypatch.setenv(timing.REREAD_ENV, "1")
    session.record(_probe(), "9", "trap", "eager")
    session.finish()
    doc = json.loads((tmp_path / "host_trace.json").read_text())
    cycles, reads = doc["cycles"], doc["readings"]
    (b1, s1, e1), (b2, s2, e2) = doc["blocks"]
    assert doc["floor_us"] == 1.0 and doc["given_us"] is None   # an earlier worker's floor, had it one
    assert (b1, s1, b2, s2, e2) == ("toy/8", 0, "toy/9", e1, len(cycles))
    assert e1 >= 4 and all(a <= b for a, b, _ in cycles)
    assert {k for _, _, k in cycles} == {"fast"}
    times = [t for t, _ in reads]
    assert times == sorted(times) and {us for _, us in reads} == {1.0}
    # one reading before and one after each cycle; asked, a second one after it
    assert len(reads) == 2 * e1 + 3 * (e2 - e1)
