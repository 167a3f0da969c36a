"""The audit's host time by source line: the SIGALRM sampler on CPU steps (where it puts the time
of Python, a builtin that holds the interpreter and a torch op; its overhead; when it cannot
start or resolve), naming a line's callee, the line table, findings tied to lines, the remainder,
the projection with every finding fixed, the reports and the icicle chart in a real browser."""
import contextlib
import dataclasses
import json
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from cudnn_hostbench.bench.audit import auditor as audit
from cudnn_hostbench.bench.audit import callsite, cost, sampler, usercode
from cudnn_hostbench.bench.audit import lines as audit_lines
from cudnn_hostbench.bench.audit.target import AuditInputError
from cudnn_hostbench.reports import audit_lines as report_lines
from cudnn_hostbench.reports import audit_report, flame

from . import audit_line_steps as steps
from .test_dashboard import browse, chromium  # noqa: F401 - the browser fixture

ROOT = Path(__file__).resolve().parent.parent
HERE = "tests/audit_line_steps.py"
THIS = "tests/test_audit_lines.py"
# a projection against its fixed step timed live on a CPU host that is noisy and flips speed (the
# committed H200 audits are held to 15 %)
CPU_BAND = 0.3


@pytest.fixture(autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)     # a CPU torch.mm on one thread: its time stays on its line
    yield
    torch.set_num_threads(old)


def loop_us(fn, n: int) -> float:
    """µs per call of a plain loop of n calls."""
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def _alone(fn, n=3000) -> float:
    loop_us(fn, 100)   # warm-up
    return loop_us(fn, n)


def quick_sampling(monkeypatch) -> None:
    """Sampled rounds of 70 ms and 0.55 s sampled a try (about 550 samples at 1 ms, 275 at 2 ms:
    past MIN_SAMPLES) instead of 125 ms and 1 s, and at most three times the rounds wanted when
    pairs run in another host state (not four): the CPU steps here split by line as they do with
    the defaults, in about half the time."""
    monkeypatch.setattr(sampler, "CHUNK_S", 0.07)
    monkeypatch.setattr(sampler, "MIN_SAMPLED_S", 0.55)
    monkeypatch.setattr(sampler, "MAX_ROUNDS_MULT", 3)


def _by_line(s: dict) -> dict:
    t = audit_lines.table(s, s["step_us_sampled"])
    return {r["line"]: r for r in t["rows"]}, t


# -- the sampler -------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_sampler_puts_each_kind_of_work_on_its_own_line():
    us = _alone(steps.step)
    s = sampler.sample_step(steps.step, lambda: None, us, chunk_s=0.1, rounds=6)
    rows, t = _by_line(s)
    mm, builtin = (f"{HERE}:{steps.line_of(m)}" for m in ("torch-op", "builtin"))
    py = "python_work"      # a Python loop: its time spreads over the loop's two lines
    rows[py] = {"us": sum(r["us"] for r in rows.values() if r.get("function") == py)}
    # each line's share of the step against its work timed alone (noisy CI hosts: a wide band)
    alone = {py: _alone(steps.python_work), mm: _alone(lambda: torch.mm(steps.A, steps.W)),
             builtin: _alone(lambda: sum(range(3000)))}
    total = sum(alone.values())
    for line, a in alone.items():
        got = rows[line]["us"] / t["sum_us"]
        assert abs(got - a / total) < 0.2, (line, got, a / total)
    assert rows[mm]["callees"][0]["callee"] == "torch.mm()" and rows[mm]["callees"][0]["kind"] == callsite.TORCH
    assert rows[builtin]["callees"][0]["callee"] == "sum()" and rows[builtin]["callees"][0]["kind"] == callsite.PYTHON
    body = {f"{HERE}:{steps.line_of('python') + k}" for k in (-2, -1, 0, 1)}    # def .. loop body
    assert {r["line"] for r in t["rows"] if r["function"] == py} <= body
    # the lines add up to the sampled step (what is left: the loop between steps)
    assert t["sum_us"] + t["loop_us"] + t["outside_us"] == pytest.approx(s["step_us_sampled"], rel=0.25)
    # the interval kept is the last one tried, or, where doubling it did not lower the overhead (the
    # cost is not the signal's: a loaded 2-core CI box read it once), the one before
    kept = s["tries"][-2] if s["overhead_not_signal"] else s["tries"][-1]
    assert s["samples"] >= 100 and s["steps"] >= 12 and kept["interval_us"] == s["interval_us"]
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL          # the handler is gone again


@pytest.mark.slow
@pytest.mark.newest_only
def test_sampler_raises_the_interval_while_it_distorts_the_step(monkeypatch):
    monkeypatch.setattr(sampler, "MAX_OVERHEAD", -1.0)   # every try "too slow": the interval doubles to the cap
    monkeypatch.setattr(sampler, "SIGNAL_FALL", 1e-9)    # ... as the signal's cost, whatever each try read
    s = sampler.sample_step(steps.step, lambda: None, 100.0, chunk_s=0.02, rounds=2, interval=1e-3, max_interval=4e-3)
    assert [t["interval_us"] for t in s["tries"]] == [1000.0, 2000.0, 4000.0]
    assert all("overhead" in t and "step_us_plain" in t and "step_us_sampled" in t for t in s["tries"])


_STATE = {"slow": False, "n": 0}


def _two_state_step():
    if _STATE["slow"]:
        sum(range(20000))   # the other host state: extra time on this line only
    steps.step()


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_sampler_leaves_out_rounds_in_another_host_state(monkeypatch):
    """A pair whose plain round ran off the eager figure ran in another host state (H200: custom_op
    plain 44.6 µs/step against eager 31.7): its stacks stay out of the line table."""
    real = sampler._round

    def round_(step, n, sync, clock=time.perf_counter):
        # every third pair, its plain, wrapped and sampled rounds alike
        _STATE["slow"] = (_STATE["n"] // 3) % 3 == 1
        _STATE["n"] += 1
        return real(step, n, sync, clock)

    _STATE.update(slow=False, n=0)
    us = _alone(_two_state_step, 1000)
    monkeypatch.setattr(sampler, "_round", round_)
    monkeypatch.setattr(sampler, "MATCH_TOL", 1.0)    # the other state here is 4-5× slower; CI hosts drift
    s = sampler.sample_step(_two_state_step, lambda: None, us, chunk_s=0.02, rounds=4)
    extra = f"{THIS}:{_two_state_step.__code__.co_firstlineno + 2}"
    rows, t = _by_line(s)
    assert s["rounds_other_state"] >= 1 and s["rounds"] - s["rounds_other_state"] >= 4 and not s["state_note"], (us, s["tries"])
    assert extra not in rows
    assert "sampled rounds left out" in report_lines.header(t)
    # nothing matched: all rounds stay, and the table says the lines are from another state
    monkeypatch.setattr(sampler, "MATCH_TOL", 0.15)
    s = sampler.sample_step(steps.step, lambda: None, us * 100, chunk_s=0.02, rounds=2)
    assert s["rounds"] == 2 * sampler.MAX_ROUNDS_MULT and s["state_note"].startswith("no sampled round matched")
    assert "no sampled round matched" in report_lines.header(audit_lines.table(s, us * 100))


class _FlippingHost:
    """A HostState stand-in whose host is slow on every third pair of rounds: the sampler reads it
    three times a pair (before, between and after its two rounds), and the slow pairs run an extra
    line whose time the step's figure does not show (a device-bound step's plain rounds)."""

    def __init__(self):
        self.reads = 0

    def read(self) -> float:
        _STATE["slow"] = (self.reads // 3) % 3 == 1
        self.reads += 1
        return 2.0 if _STATE["slow"] else 1.0

    def state(self, us: float) -> str:
        return "slow" if us >= 1.4 else "fast"

    # the sampler waits for the fast state before each pair; this host flips on its own schedule
    def allow_focus_blocks(self, n: int) -> None:
        pass

    def focused(self):
        return contextlib.nullcontext()

    def await_fast(self) -> float:
        return 1.0


class _WaitedHost(_FlippingHost):
    """A host slow but for a spell after each wait for its fast state: its next three readings
    (before, between and after a pair) read fast."""

    def __init__(self):
        super().__init__()
        self.spell, self.waits = 0, 0

    def read(self) -> float:
        self.reads += 1
        self.spell -= 1
        return 1.0 if self.spell >= 0 else 2.0

    def await_fast(self) -> float:
        self.waits += 1
        self.spell = 3
        return 1.0


def test_sampler_waits_for_the_fast_state_before_each_pair(monkeypatch):
    """On a mostly-slow host a pair that merely checks the state is almost always left out, and the
    lines come from a few rounds (log 2026-12-04-1018). A pair starts after a wait for the fast state,
    so it lands in it."""
    monkeypatch.setattr(sampler, "MATCH_TOL", 100.0)
    monkeypatch.setattr(sampler, "MIN_SAMPLES", 10)
    host = _WaitedHost()
    s = sampler.sample_step(steps.step, lambda: None, _alone(steps.step, 300), chunk_s=0.02, rounds=4,
                            host=host, host_state="fast")
    # every pair of every try waited (a loaded host can read the first try's overhead high: a second try)
    assert host.waits == sum(t["rounds"] for t in s["tries"]) and s["rounds_other_state"] == 0 and not s["state_note"]
    # a slow state is not waited for: the pairs are only checked
    host = _WaitedHost()
    s = sampler.sample_step(steps.step, lambda: None, _alone(steps.step, 300), chunk_s=0.02, rounds=4,
                            host=host, host_state="slow")
    assert host.waits == 0


@pytest.mark.slow
@pytest.mark.newest_only
def test_sampler_matches_rounds_on_the_host_sentinel_not_the_step_time(monkeypatch):
    """A device-bound step's plain rounds stay near the loop's figure while its host lines slow in the
    slow state; matched on the step's time, those rounds made the projection (log 2026-12-03-0530).
    Matched on the sentinel, a pair in the other state stays out of the line table even when its
    step time matches."""
    _STATE.update(slow=False, n=0)
    us = _alone(_two_state_step, 1000)
    monkeypatch.setattr(sampler, "MATCH_TOL", 100.0)    # the step's time matches whatever the host did
    monkeypatch.setattr(sampler, "MIN_SAMPLES", 10)     # short CPU rounds: enough samples to keep the match
    s = sampler.sample_step(_two_state_step, lambda: None, us, chunk_s=0.02, rounds=4,
                            host=_FlippingHost(), host_state="fast")
    rows, _ = _by_line(s)
    assert f"{THIS}:{_two_state_step.__code__.co_firstlineno + 2}" not in rows
    assert s["rounds_host_off"] >= 1 and s["rounds_other_state"] == s["rounds_host_off"] and not s["state_note"]
    assert s["matched_on"] == "host sentinel (fast state) and plain-round time"
    # without the host, the same rounds all match on the step's time: the slow line is in the table
    _STATE.update(slow=False, n=0)
    flips = _FlippingHost()

    def round_(step, n, sync, clock=time.perf_counter, real=sampler._round):
        flips.read()      # the host flips as before; the sampler does not read it
        return real(step, n, sync, clock)

    monkeypatch.setattr(sampler, "_round", round_)
    s = sampler.sample_step(_two_state_step, lambda: None, us, chunk_s=0.02, rounds=4)
    assert s["rounds_other_state"] == 0 and s["matched_on"] == "plain-round time"
    assert f"{THIS}:{_two_state_step.__code__.co_firstlineno + 2}" in _by_line(s)[0]


def test_a_sampler_try_stops_adding_pairs_at_its_time_cap(monkeypatch):
    """H200, naive (a 7 ms step): each plain, wrapped and sampled round ran 0.9 s, and on a host mostly
    off its state a try went on to 32 pairs; the audit was cut at 100-150 s on three starts. A try
    stops adding pairs past MAX_TRY_S, keeps what it has and says so."""
    monkeypatch.setattr(sampler, "MATCH_TOL", 0.15)
    us = _alone(steps.step, 300)
    # nothing matches (the eager figure is 100 × the step), so without the cap every pair is tried
    s = sampler.sample_step(steps.step, lambda: None, us * 100, chunk_s=0.02, rounds=2)
    assert s["rounds"] == 2 * sampler.MAX_ROUNDS_MULT and "stopped after" not in s["state_note"]
    monkeypatch.setattr(sampler, "MAX_TRY_S", 0.0)
    s = sampler.sample_step(steps.step, lambda: None, us * 100, chunk_s=0.02, rounds=2)
    assert s["rounds"] == 1 and s["state_note"].startswith("no sampled round matched")
    assert "stopped after 1 pair of rounds" in s["state_note"] and "0 of them in the eager step's host state" in s["state_note"]
    assert s["stacks"] and s["wrap_overhead"] is not None       # the pair it has still splits the step by line


def test_sampler_says_when_it_cannot_resolve_the_step():
    s = sampler.sample_step(steps.tiny_step, lambda: None, 0.2, chunk_s=0.05, rounds=2)
    assert s["verdict"].startswith("too fast to split by line: a 0.2 µs step")
    few = dict(s, stacks=[{"frames": [], "callee": "x", "kind": "Python", "spill": [], "us": 1.0, "n": 3}])
    assert sampler.verdict(few, 50.0) == "too few samples to split by line: 3 in the step (needs 200)"
    t = audit_lines.table(s, 0.2)
    assert t["verdict"] and "too fast" in "\n".join(report_lines.text(t, {}, []))


def test_sampler_that_cannot_start_says_why_in_one_line():
    got = {}
    th = threading.Thread(target=lambda: got.setdefault("why", sampler.cannot_start()))
    th.start()
    th.join()
    assert got["why"] == "the line sampler runs on SIGALRM, so it needs the main thread: audit from the main thread"
    old = signal.signal(signal.SIGALRM, lambda *a: None)
    try:
        assert sampler.cannot_start().startswith("SIGALRM already has a handler")
        with pytest.raises(sampler.SamplerError, match="SIGALRM already has a handler"):
            sampler.sample_step(steps.step, lambda: None, 50.0)
    finally:
        signal.signal(signal.SIGALRM, old)


def test_a_step_raising_while_sampled_leaves_no_timer():
    with pytest.raises(ValueError, match="boom"):
        sampler.sample_step(steps.raising_step, lambda: None, 10.0, chunk_s=0.01, rounds=1)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# -- naming what a line called ---------------------------------------------------------------------------

def _calls(fn):
    import dis
    return [i for i in dis.get_instructions(fn.__code__) if callsite._is_call(i.opname)]


def test_callee_named_from_positions_and_from_the_statement_order():
    def f(x, w):
        y = torch.mm(x, w).t().contiguous()
        return abs(len([y]))
    code, line = f.__code__, f.__code__.co_firstlineno + 1
    want = ["torch.mm(x, w)", "torch.mm(x, w).t()", "torch.mm(x, w).t().contiguous()"]
    calls = _calls(f)[:3]                     # the three calls of the first line
    # the fallback (Python 3.10 has no column positions): the k-th call of the statement
    assert [callsite.call_text_by_order(code, i.offset, line) for i in calls] == want
    assert [callsite.decode(code, i.offset, line, f.__globals__) for i in calls] == [
        ("torch.mm()", callsite.TORCH), ("….t()", callsite.TORCH), ("….contiguous()", callsite.TORCH)]
    last = _calls(f)[-2:]
    assert [callsite.decode(code, i.offset, line + 1, f.__globals__)[0] for i in last] == ["len()", "abs()"]
    assert callsite.callee_of("self.graph.execute(pack, ws, handle=h)") == "self.graph.execute"


def test_callee_kinds():
    g = {"torch": torch, "len": len}
    assert callsite.kind_of_name("torch.mm", g) == callsite.TORCH
    assert callsite.kind_of_name("len", g) == callsite.PYTHON
    assert callsite.kind_of_name("self.graph.execute_plan_at_index") == callsite.CUDNN
    assert callsite.kind_of_name("x.unsqueeze") == callsite.TORCH
    assert callsite.kind_of_name("helper") == callsite.CALL
    lib = torch.library.Library("hb_lines_test", "FRAGMENT")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    assert callsite.kind_of_name("torch.ops.hb_lines_test.twice", {"torch": torch}) == callsite.DISPATCHER
    assert sampler.file_kind([torch._ops.__file__]) == callsite.DISPATCHER


def test_operators_before_a_call_are_named_as_possible_spill():
    def f(a, b):
        c = a + b
        return torch.mm(c, b)
    call = _calls(f)[-1]
    assert callsite.operators_before(f.__code__, call.offset) == ((f.__code__.co_firstlineno + 1, "+"),)


def test_user_code_is_not_the_harness_torch_or_the_standard_library():
    assert usercode.is_user(str(ROOT / "tests" / "audit_line_steps.py"))
    assert usercode.is_user(str(ROOT / "examples" / "naive_integration.py"))
    assert not usercode.is_user(str(ROOT / "bench" / "audit" / "count.py"))
    assert not usercode.is_user(torch.__file__) and not usercode.is_user(json.__file__)
    assert not usercode.is_user("<string>")


# -- the line table, ties, remainder, projection (pure, from saved data) ------------------------------------

def _stack(line, fn, callee, kind, us, n=50, extra=(), outer=()):
    """A sampled stack, root first: `outer` user frames, the line's own frame, then `extra` library frames."""
    return {"frames": [*outer, ["x.py", line, fn, True], *extra], "callee": callee, "kind": kind, "spill": [], "us": us,
            "n": n}


SAMPLING = {"interval_us": 1000.0, "samples": 900, "steps": 4000, "overhead": 0.02, "step_us_plain": 100.0,
            "step_us_sampled": 102.0, "loop_us": 1.0, "outside_us": 0.0, "verdict": "",
            "stacks": [_stack(10, "call", "g.tensor()", callsite.CUDNN, 50.0),
                       _stack(11, "call", "torch.empty()", callsite.TORCH, 10.0),
                       _stack(12, "call", "g.execute()", callsite.CUDNN, 20.0),
                       _stack(13, "call", "….unsqueeze()", callsite.TORCH, 5.0),
                       _stack(14, "call", "Python", callsite.PYTHON, 14.0)]}
COUNTS = {"graphs_created": 1, "graph_builds": 1, "execute": 1, "executes": 1, "new_packs": 1, "cuda_factory_calls": 1,
          "lines": {"graphs_created": {"x.py:10": 1}, "execute": {"x.py:12": 1}, "executes": {"x.py:12": 1},
                    "new_packs": {"x.py:12": 1}, "cuda_factory_calls": {"x.py:11": 1}}}


def _f(rule, us):
    return cost.Finding(rule, None, "", rule, "", us)


def test_lines_table_ties_findings_and_projects_the_fixed_step():
    t = audit_lines.table(SAMPLING, 100.0)
    assert [r["line"] for r in t["rows"]] == ["x.py:10", "x.py:12", "x.py:14", "x.py:11", "x.py:13"]
    assert t["sum_us"] == pytest.approx(99.0) and t["note"] == ""           # within 10 % of 100
    findings = [_f("rebuild", 45.0), _f("generic_execute", 4.0), _f("new_pack", 2.0), _f("new_output", 3.0)]
    tied = audit_lines.tie(findings, COUNTS, t)
    assert [x["line"] for x in tied["rebuild"]] == ["x.py:10"]
    assert tied["generic_execute"] == [{"line": "x.py:12", "per_step": 1, "us": 20.0}]
    assert [r["line"] for r in audit_lines.remainder(t, tied)] == ["x.py:14", "x.py:13"]
    modes = {"eager": {"median": 100.0}, "graph": {"median": 5.0}, "device": {"median": 4.0}}
    p = audit_lines.project(findings, COUNTS, t, tied, modes)
    # dropped: the build line and the allocation line; the execute line loses 4 + 2 priced µs
    assert p["method"] == "lines" and set(p["dropped"]) == {"x.py:10", "x.py:11"} and p["reduced"] == ["x.py:12"]
    # kept: 14 (execute − 6) + 14 + 5; the loop's 1 µs between steps frees the per-step output
    assert p["projected_us"] == pytest.approx(14 + 14 + 5) and p["graph_us"] == 5.0 and p["freed"] == ["between steps"]
    assert p["err_us"] > 0
    assert audit_lines.against(p, 33.0) == pytest.approx(0.0)
    # without lines: eager minus the priced findings
    q = audit_lines.project(findings, COUNTS, {}, {}, modes)
    assert q["method"] == "eager − priced findings" and q["projected_us"] == pytest.approx(46.0)


def test_a_rebuilding_step_projects_a_warm_execute_and_drops_the_graph_teardown():
    """H200, naive example: its execute ran cold after each rebuild (105 µs against a warm 14.5) and
    the graph built in `__call__` was torn down on the caller's line (30 µs/step): with the rebuild
    fixed, the execute line takes the execute probe's warm figure and the caller loses its call time."""
    build = _stack(28, "Layer.__call__", "g.build()", callsite.CUDNN, 900.0,
                   outer=[["x.py", 42, "<lambda>", True]])
    run = _stack(31, "Layer.__call__", "g.execute()", callsite.CUDNN, 100.0, outer=[["x.py", 42, "<lambda>", True]])
    teardown = _stack(42, "<lambda>", "layer()", callsite.CALL, 30.0)
    s = dict(SAMPLING, loop_us=0.0, stacks=[build, run, teardown])
    counts = {"graphs_created": 1, "graph_builds": 1, "execute": 1, "executes": 1,
              "lines": {"graphs_created": {"x.py:28": 1}, "execute": {"x.py:31": 1}, "executes": {"x.py:31": 1}}}
    t = audit_lines.table(s, 1030.0)
    assert {r["line"]: r["calls_into"] for r in t["rows"]}["x.py:42"] == ["Layer.__call__"]
    f = [_f("rebuild", 900.0), _f("generic_execute", 2.0)]
    tied = audit_lines.tie(f, counts, t)
    p = audit_lines.project(f, counts, t, tied, {"eager": {"median": 1030.0}}, (14.5, "execute/generic 14.50 µs"))
    assert p["warmed"] == ["x.py:31"] and p["freed"] == ["x.py:42"] and p["dropped"] == ["x.py:28"]
    assert p["projected_us"] == pytest.approx(14.5 - 2.0) and "execute/generic" in p["warm_from"]
    assert "priced warm" in report_lines.text(t, p, [])[-1] and "x.py:42" in report_lines.text(t, p, [])[-1]
    # no warm figure: the execute stays cold, and the projection says why
    q = audit_lines.project(f, counts, t, tied, {"eager": {"median": 1030.0}}, (None, "no run file"))
    assert "warmed" not in q and q["cold"].endswith("(no run file)") and q["projected_us"] == pytest.approx(98.0)


def test_a_registered_op_projects_to_the_direct_call():
    """custom_op/dispatcher: the fix the projection takes is the direct call, so the op's line loses
    the time it spent inside the dispatcher, not the Library-registration price."""
    disp = _stack(20, "<lambda>", "my_op()", callsite.DISPATCHER, 12.0,
                  extra=[["torch/_ops.py", 700, "OpOverload.__call__", False]])
    own = _stack(20, "<lambda>", "my_op()", callsite.CALL, 1.0)
    body = _stack(30, "impl", "g.execute()", callsite.CUDNN, 9.0)
    s = dict(SAMPLING, loop_us=0.0, stacks=[disp, own, body])
    counts = {"custom_op_calls": 1, "lines": {"custom_op_calls": {"x.py:20": 1}, "executes": {"x.py:30": 1}}}
    t = audit_lines.table(s, 22.0)
    f = [_f("custom_op", 8.0)]
    tied = audit_lines.tie(f, counts, t)
    p = audit_lines.project(f, counts, t, tied, {"eager": {"median": 22.0}})
    assert p["reduced"] == ["x.py:20"] and p["projected_us"] == pytest.approx(10.0)   # 1 + 9: 12 µs of dispatcher gone
    assert p["unpriced"] == []


def test_an_overhead_in_the_timed_calls_wrappers_comes_off_their_lines_not_every_line():
    """The sampler found its overhead in the timed calls' wrappers (it did not fall with a longer
    interval): that time sits on the line of the timed execute, which the fix keeps. Scaled off every
    line, the removed allocation shrank with it and the projection stayed high (H200, custom-op on
    three starts: +10 to +21 % above its fixed step)."""
    alloc = _stack(11, "call", "torch.empty()", callsite.TORCH, 10.0)
    run = dict(_stack(12, "call", "g.execute()", callsite.CUDNN, 26.0), timed=True)   # 20 µs + 6 of wrapper
    counts = {"cuda_factory_calls": 1, "executes": 1,
              "lines": {"cuda_factory_calls": {"x.py:11": 1}, "executes": {"x.py:12": 1}}}
    f = [_f("new_output", 3.0)]
    for not_signal, want in ((True, 20.0), (False, 26.0 * 30.0 / 36.0)):
        s = dict(SAMPLING, loop_us=0.0, overhead=0.2, overhead_not_signal=not_signal, stacks=[alloc, run])
        t = audit_lines.table(s, 30.0)
        p = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t), {"loop": {"median": 30.0}})
        assert p["dropped"] == ["x.py:11"] and p["projected_us"] == pytest.approx(want), not_signal
        assert ("wrappers_us" in p) == not_signal
    s = dict(SAMPLING, loop_us=0.0, overhead=0.2, overhead_not_signal=True, stacks=[alloc, run])
    t = audit_lines.table(s, 30.0)
    p = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t), {"loop": {"median": 30.0}})
    assert p["wrappers_us"] == pytest.approx(6.0)
    assert "6.00 µs/step of the timed calls' wrappers" in " ".join(report_lines._projection_text(p))


def test_a_measured_wrappers_cost_comes_off_their_lines_whatever_the_interval_did():
    """The wrappers' cost measured in a round of their own (no timer) comes off the lines that make
    the timed calls, also where the overhead fell with a longer interval (H200, custom-op on start
    Z: +14.6 % at 1 ms, +7.2 % at 2 ms, read as the signal's; the execute line kept the wrappers'
    time and the projection read +16.7 % off the fixed step)."""
    alloc = _stack(11, "call", "torch.empty()", callsite.TORCH, 10.0)
    run = dict(_stack(12, "call", "g.execute()", callsite.CUDNN, 26.0), timed=True)
    counts = {"cuda_factory_calls": 1, "executes": 1,
              "lines": {"cuda_factory_calls": {"x.py:11": 1}, "executes": {"x.py:12": 1}}}
    f = [_f("new_output", 3.0)]
    s = dict(SAMPLING, loop_us=0.0, overhead=0.07, overhead_not_signal=False, wrap_overhead=0.3, stacks=[alloc, run])
    t = audit_lines.table(s, 30.0)
    p = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t), {"loop": {"median": 30.0}})
    wrap = 36.0 * 0.3 / 1.3
    assert p["projected_us"] == pytest.approx((26.0 - wrap) * 30.0 / (36.0 - wrap))
    assert p["wrappers_measured"] == 0.3
    text = " ".join(report_lines._projection_text(p))
    assert "timed calls' wrappers (measured: a round with the wrappers and no timer ran +30.0 %" in text
    assert "wrappers alone +30.0 %" in report_lines.header(t)
    # measured at nothing: nothing comes off, whatever the interval did
    s = dict(s, overhead_not_signal=True, wrap_overhead=-0.01)
    t = audit_lines.table(s, 30.0)
    p = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t), {"loop": {"median": 30.0}})
    assert "wrappers_us" not in p and p["projected_us"] == pytest.approx(26.0 * 30.0 / 36.0)


class _Lib:
    """A frontend stand-in whose call is far cheaper than the wrapper that times it."""

    def run(self):
        return 0


_LIB = _Lib()


def _many_timed_calls():
    for _ in range(50):
        _LIB.run()


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_the_sampler_measures_what_the_timed_calls_wrappers_cost():
    """Each pair of rounds has a round with the wrappers and no timer between its plain and sampled
    ones: a step of 50 cheap timed calls pays for the wrappers many times over; a step that makes
    no timed call pays nothing."""
    timed = [(_Lib, "run", "run()", callsite.CUDNN)]
    s = sampler.sample_step(_many_timed_calls, lambda: None, _alone(_many_timed_calls, 300), chunk_s=0.005,
                            rounds=2, max_interval=2e-3, timed=timed)
    assert s["wrap_overhead"] > 1.0, s["tries"]
    assert _Lib.run is _LIB.run.__func__                 # the wrappers are gone again
    s = sampler.sample_step(steps.step, lambda: None, _alone(steps.step), chunk_s=0.02, rounds=2,
                            max_interval=2e-3, timed=timed)
    assert abs(s["wrap_overhead"]) < 0.5, s["tries"]


def test_a_sparse_execute_line_takes_the_counting_pass_time():
    """A slow step whose one kept line has a few samples: its execute time comes from the counting pass."""
    build = _stack(10, "call", "g.build()", callsite.CUDNN, 1000.0, n=5000)
    run = _stack(12, "call", "g.execute()", callsite.CUDNN, 30.0, n=3)      # 3 samples: ±60 %
    s = dict(SAMPLING, loop_us=0.0, stacks=[build, run])
    counts = dict(COUNTS, executes=1, execute_us=11.0)
    t = audit_lines.table(s, 1030.0)
    f = [_f("rebuild", 1000.0), _f("generic_execute", 4.0), _f("new_pack", 0.5), _f("new_output", 3.0)]
    tied = audit_lines.tie(f, counts, t)
    p = audit_lines.project(f, counts, t, tied, {"eager": {"median": 1030.0}})
    assert p["timed"] == ["x.py:12"] and p["projected_us"] == pytest.approx(11.0 - 4.0 - 0.5)
    assert "1 with too few samples taking the counting pass's execute time" in report_lines._projection_text(p)[0]


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_projection_on_cpu_lands_on_the_fixed_step(tmp_path, monkeypatch):
    """The method end to end on CPU: a step that builds a key and two views per call, counted,
    sampled and priced with churn figures measured here, projects to its fixed version's step.
    Eager times alternate trap/fixed so host drift cancels; CPU hosts are noisy, so the band is
    wider than the 15 % the H200 audits are held to."""
    import statistics

    from cudnn_hostbench.bench.audit import count as audit_count
    from cudnn_hostbench.bench.measure.runfile.records import Record, load_run, run_document, write_run

    def view():
        return steps.A.view(96, 96)

    def key():
        return tuple((tuple(t.shape), tuple(t.stride()), t.dtype) for t in (steps.A, steps.B))

    quick_sampling(monkeypatch)
    for fn in (steps.keyed_step, steps.keyed_step_fixed, view, key):
        loop_us(fn, 200)
    c = audit_count.count_step(steps.keyed_step, 10, cudnn=None, torch=torch, device_type="cpu")
    work = f"{HERE}:{steps.line_of('work')}"

    def attempt():
        rounds = [tuple(loop_us(fn, 2000) for fn in (steps.keyed_step, steps.keyed_step_fixed, lambda: None, view, key))
                  for _ in range(7)]
        trap, fixed, reuse, new_view, cache_key = (statistics.median(r[i] for r in rounds) for i in range(5))
        recs = [Record("churn", v, "256", "eager", samples=[x] * 5)
                for v, x in (("reuse", reuse), ("new_view", new_view), ("cache_key", cache_key))]
        run = load_run(write_run(tmp_path / "run.json", run_document(recs, {})))
        s = sampler.sample_step(steps.keyed_step, lambda: None, trap)
        r = audit.price(_report(modes={"eager": {"median": trap}}, counts=c, sampling=s), run)
        return (abs(audit_lines.against(r.projection, fixed)), r, r.projection["projected_us"], fixed, trap,
                _steady([x[0] for x in rounds], [x[1] for x in rounds]))

    # the median steady attempt: on 2 cores 3 single passes in 9 missed the band (+31, +37 % where read)
    (miss, r, *_), done = _median_steady(attempt)
    assert {"views", "metadata"} <= {f.rule for f in r.findings}
    p = r.projection
    assert set(p["dropped"]) == {f"{HERE}:{steps.line_of('key')}", f"{HERE}:{steps.line_of('views')}"}
    assert work in p["reduced"]          # its index view goes, the matmul stays
    assert miss <= CPU_BAND, [(a[0], *a[2:]) for a in done]


def test_lines_that_do_not_sum_to_the_step_say_why():
    s = dict(SAMPLING, outside_us=60.0)
    t = audit_lines.table(s, 200.0)
    assert t["note"].startswith("the lines sum to 99.0 µs/step, 50 % of the eager step (200.0 µs)")
    assert "60.0 µs/step waited outside the step" in t["note"] and "device-bound" in t["note"]
    assert audit_lines.table({"error": "no timer"}, 10.0) == {"error": "no timer"}


# -- the reports --------------------------------------------------------------------------------------------

def _report(**kw):
    modes = {"eager": {"median": 100.0, "iqr": 1.0}, "graph": {"median": 5.0, "iqr": 0.1},
             "device": {"median": 4.0, "iqr": 0.1}}
    r = audit.AuditReport(target="x.py:make_step", env={"gpu_name": "Fake GPU", "cudnn_frontend": "1.32.0"},
                          modes=modes, kernels_per_step=1.0, kernels=[], host_overhead_us=96.0, counts=COUNTS,
                          findings=[], avoidable_us=0.0, run_file=None, run_note="", sampling=SAMPLING)
    return dataclasses.replace(r, **kw)


def test_reports_carry_the_line_table_ties_remainder_and_projection(tmp_path):
    r = audit.price(_report(), None)
    assert r.lines["remainder"] == ["x.py:14", "x.py:13"] and r.projection["method"] == "lines"
    text = audit_report.render_text(r)
    assert "host time by source line: 4000 steps sampled every 1000 µs (900 samples); sampling overhead +2.0 %" in text
    assert re.search(r"\s50\.00\s+50 %  x\.py:10 \(call\): g\.tensor\(\) \[cuDNN frontend\] 50\.0", text)
    assert "lines no finding explains, most time first:" in text and "x.py:14: Python [Python] 14.0" in text
    assert "    at:   x.py:10 (1/step, 50.0 µs)" in text                        # the rebuild, tied by its sampled callee
    assert "projected with every finding fixed:" in text and "CUDA-graph ceiling 5.00 µs/step" in text
    md = audit_report.render_markdown(r)
    assert "## Host time by source line" in md and "| `x.py:10` | call | 50.00 | 50 % |" in md
    assert "### Lines no finding explains" in md and "## Projected with every finding fixed" in md
    written = {p.name for p in audit_report.write_outputs(r, tmp_path)}
    assert written == {"audit.md", "audit.json", "flame.html"}
    back = audit.AuditReport.from_dict(json.loads((tmp_path / "audit.json").read_text()))
    assert back.lines == json.loads(json.dumps(r.lines)) and back.findings[0].lines == r.findings[0].lines


def test_flame_page_is_self_contained(tmp_path):
    page = flame.render_html(flame.tree(SAMPLING), "t</script>")
    assert "http://" not in page and "https://" not in page and " src=" not in page and "@import" not in page
    assert "t&lt;/script&gt;" in page and page.count("<script>") == 1
    tree = flame.tree(SAMPLING)
    assert tree["value"] == pytest.approx(100.0)                           # 99 in lines + 1 between steps
    assert [c["name"] for c in tree["children"]][:2] == ["call · x.py:10", "call · x.py:12"]


def test_flame_page_draws_and_zooms_in_chromium(chromium, tmp_path):  # noqa: F811
    path = tmp_path / "flame.html"
    path.write_text(flame.render_html(flame.tree(SAMPLING), "audit"), encoding="utf-8")
    dom = browse(chromium, tmp_path, path.as_uri(), "--window-size=1200,600", "--dump-dom").stdout
    assert 'data-focus="0"' in dom
    boxes = re.findall(r'class="box" id="n(\d+)" data-width="([\d.]+)"', dom)
    assert len(boxes) == 1 + 5 * 2 + 1 and dict(boxes)["0"] == "100.000"     # step, 5 lines × (frame, callee), loop
    nodes = {}
    for m in re.finditer(r'id="n(\d+)" data-width="([\d.]+)"[^>]*title="([^"]*)"', dom):
        nodes[m.group(3).split(": ")[0]] = (m.group(1), float(m.group(2)))
    nid, width = nodes["call · x.py:10"]
    assert width == pytest.approx(50.0, abs=0.1)                           # the build line: half the step
    zoomed = browse(chromium, tmp_path, path.as_uri() + f"#zoom={nid}", "--window-size=1200,600", "--dump-dom").stdout
    assert f'data-focus="{nid}"' in zoomed
    assert re.search(rf'id="n{nid}" data-width="100\.000"', zoomed)       # the zoomed box fills the width
    assert 'title="call · x.py:12' not in zoomed                           # its siblings are gone


# -- the audit end to end on CPU (the GPU pieces faked), and reprice --------------------------------------------

@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_audit_samples_the_step_on_cpu(monkeypatch):
    tm = audit.timing
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "memory_stats", lambda: {})
    monkeypatch.setattr(audit, "_env", lambda ctx: {"gpu_name": "Fake GPU"})
    us = _alone(steps.step, 500)
    monkeypatch.setattr(tm, "measure_eager", lambda fns, *a, **k: {"step": ([us] * 3, 10)})
    monkeypatch.setattr(tm, "capture", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no capture on CPU")))
    monkeypatch.setattr(audit, "_device_mode", lambda step, sync, opt: ({"median": 1.0, "iqr": 0.0}, 1.0, []))
    monkeypatch.setattr(sampler, "CHUNK_S", 0.05)
    monkeypatch.setattr(audit, "HOST_WARM_S", 0.5)
    # every pair kept whatever host state it ran in: this test is about the audit's orchestration, not
    # matching (alone on 2 cores, 2 passes in 6 kept 67 and 129 samples, under MIN_SAMPLES, the host
    # having changed state after the step was timed)
    monkeypatch.setattr(sampler, "MATCH_TOL", 100.0)
    seen = {}
    # the floor the eager rounds ran with, taken as they start (the timeline pass reads the host
    # later and keeps learning its floor, as the loops do)
    monkeypatch.setattr(tm, "measure_eager", lambda fns, *a, **k: seen.setdefault("watch", k.get("watch"))
                        and seen.setdefault("floor", k["watch"].host.floor) and {"step": ([us] * 3, 10)})
    r = audit.audit(steps.step, ctx=types.SimpleNamespace(stream=None), target="t.py:step", root=ROOT)
    # the eager rounds ran under a host-state watch, and the figure says what it learned
    assert seen["watch"].host is not None and seen["floor"] > 0
    assert r.modes["eager"]["host_state"] == "" and r.modes["eager"]["host"]["floor_us"] == seen["floor"]
    assert "eager: host state unknown" in audit_report.render_text(r)
    lines = {x["line"] for x in r.lines["rows"]}
    assert f"{HERE}:{steps.line_of('torch-op')}" in lines and r.sampling["steps"] > 0
    assert r.projection["method"] == "lines" and r.projection["projected_us"] > 0, (r.sampling.get("verdict"), r.modes)
    assert "host time by source line" in audit_report.render_text(r)


@pytest.mark.slow
@pytest.mark.newest_only
def test_a_fixed_step_is_timed_in_the_same_loop_rounds_and_reported_against_the_projection(monkeypatch):
    """--fixed: the hand-fixed step's plain loop in this process, in blocks alternating with the
    trap's loop (one block each after the other put a stretch of the host's pace on one side only;
    interleaved round by round with a Python-heavy trap it read 7-25 % slow), so both read one
    process's host floor and pace; the report sets the projection against it."""
    tm = audit.timing
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "memory_stats", lambda: {})
    monkeypatch.setattr(audit, "_env", lambda ctx: {"gpu_name": "Fake GPU"})
    monkeypatch.setattr(tm, "capture", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no capture on CPU")))
    monkeypatch.setattr(audit, "_device_mode", lambda step, sync, opt: ({"median": 1.0, "iqr": 0.0}, 1.0, []))
    monkeypatch.setattr(sampler, "CHUNK_S", 0.05)
    monkeypatch.setattr(audit, "HOST_WARM_S", 0.5)
    trap, fixed = _alone(steps.op_step, 300), _alone(steps.op_step_fixed, 300)
    calls = []
    figure = {"step": trap, "fixed": fixed}
    monkeypatch.setattr(tm, "measure_eager", lambda fns, *a, **k: calls.append(sorted(fns))
                        or {n: ([figure[n]] * 3, 10) for n in fns})
    r = audit.audit(steps.op_step, ctx=types.SimpleNamespace(stream=None), target="t.py:op_step", root=ROOT,
                    fixed=steps.op_step_fixed, fixed_target="t.py:op_step_fixed")
    # eager rounds, then the step's loop and the fixed one in alternating blocks
    assert calls == [["step"]] + [["step"], ["fixed"]] * audit.LOOP_BLOCKS
    assert r.modes["fixed_loop"]["median"] == fixed and r.modes["fixed_loop"]["target"] == "t.py:op_step_fixed"
    assert r.modes["loop"]["median"] == trap and r.projection["fixed_us"] == fixed
    off = r.projection["projected_us"] / fixed - 1
    text = audit_report.render_text(r)
    assert f"the fixed step t.py:op_step_fixed in a plain loop of this process ({audit.PAIRED}): {fixed:.2f} µs/step; " \
           f"the projection is " \
           f"{off:+.1%} off it" in text
    assert f"The fixed step t.py:op_step_fixed in a plain loop of this process ({audit.PAIRED}): {fixed:.2f}" \
        in audit_report.render_markdown(r)
    assert r.modes["fixed_loop"]["timed"] == audit.PAIRED and r.modes["fixed_loop"]["blocks"] == audit.LOOP_BLOCKS
    # each loop's rounds are kept beside its median (what a miss is read again from)
    n = 3 * audit.LOOP_BLOCKS
    assert r.modes["loop"]["rounds_us"] == [round(trap, 3)] * n and r.modes["fixed_loop"]["rounds_us"] == [round(fixed, 3)] * n
    again = audit.AuditReport.from_dict(json.loads(json.dumps(r.to_dict())))   # audit.json keeps it
    assert audit.price(again, None).projection["fixed_us"] == fixed


def test_paired_loops_keep_the_pairs_whose_two_blocks_ran_in_the_wanted_host_state(monkeypatch):
    """A pair (a block of the trap's loop, then one of the fixed step's) with a block in another host
    state is left out and one more pair is run: both figures come from the same stretches of the host."""
    states = iter(["fast", "slow", "fast", "fast", "slow", "slow", "fast", "fast", "fast", "fast"])
    watch = types.SimpleNamespace(host=None, state="", sentinel=[0.9])
    seen = []

    def fake(fns, sync, opt, watch=None):
        (n,) = fns
        watch.state = next(states)
        seen.append((n, opt.rounds, opt.warmup_rounds))
        value = 10.0 * len(seen)   # each block its own figure: which were kept shows in the median
        return {n: ([value] * opt.rounds, 100)}

    monkeypatch.setattr(audit.timing, "measure_eager", fake)
    monkeypatch.setattr(audit.gc, "collect", lambda: 0)   # a long test session's heap: seconds a pass
    got = audit._paired_loops({"step": lambda: None, "fixed": lambda: None}, None, watch, "fast")
    assert len(seen) == 10 and seen[0][2] == audit.LOOP_WARMUP and seen[2][2] == 1   # pairs 0 and 2 left out
    assert got["step"]["blocks"] == got["fixed"]["blocks"] == audit.LOOP_BLOCKS and got["step"]["tries"] == 5
    assert got["step"]["host_state"] == got["fixed"]["host_state"] == "fast"
    assert sorted(set(got["step"]["rounds_us"])) == [30.0, 70.0, 90.0]
    assert sorted(set(got["fixed"]["rounds_us"])) == [40.0, 80.0, 100.0]
    # no pair in the wanted state: every pair is kept, and the figures say the state they ran in
    states = iter(["slow"] * 12)
    got = audit._paired_loops({"step": lambda: None, "fixed": lambda: None}, None, watch, "fast")
    assert got["step"]["host_state"] == "slow" and got["step"]["blocks"] == 2 * audit.LOOP_BLOCKS


def test_the_eager_figure_names_its_host_state():
    note = audit_report._state_note
    assert note({"median": 10.9}) == ""                              # audits from before it was recorded
    assert note({"median": 10.9, "host_state": "fast"}) == "host in its fast state"
    assert note({"median": 19.6, "host_state": "slow"}).startswith("host in its slow state: not comparable")
    r = _load("audit-fixed")
    slow = dataclasses.replace(r, modes=dict(r.modes, eager=dict(r.modes["eager"], host_state="slow")))
    e = r.modes["eager"]
    assert f"| eager | {e['median']:.2f} | {e['iqr']:.2f} | host in its slow state" in audit_report.render_markdown(slow)


def test_audit_refuses_before_measuring_when_the_sampler_cannot_start(monkeypatch):
    ran = []
    monkeypatch.setattr(audit, "_env", lambda ctx: ran.append("env") or {})
    got = {}

    def in_thread():
        try:
            audit.audit(lambda: ran.append("step"), ctx=types.SimpleNamespace(stream=None))
        except AuditInputError as e:
            got["e"] = str(e)
    th = threading.Thread(target=in_thread)
    th.start()
    th.join()
    assert got["e"].startswith("the line sampler runs on SIGALRM") and ran == []


def test_reprice_rerenders_lines_and_names_a_frontend_mismatch(tmp_path):
    from cudnn_hostbench.bench.measure.runfile.records import Record, run_document, write_run
    r = audit.price(_report(), None)
    src = tmp_path / "audit"
    audit_report.write_outputs(r, src)
    recs = [Record("execute", "generic", "256", "eager", samples=[14.0] * 5),
            Record("execute", "pinned", "256", "eager", samples=[11.0] * 5)]
    run = write_run(tmp_path / "run.json", run_document(recs, {"gpu_name": "Fake GPU", "cudnn_frontend": "1.31.0"}))
    out = tmp_path / "again"
    res = subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "reprice", str(src), "--run-file",
                          str(run), "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "the run measured frontend 1.31.0, the audit ran 1.32.0" in res.stdout
    assert {p.name for p in out.iterdir()} == {"audit.md", "audit.json", "flame.html"}
    assert "## Host time by source line" in (out / "audit.md").read_text()


# -- the committed H200 audits -------------------------------------------------------------------------------

REF = ROOT / "reports" / "reference" / "h200"
# (example with findings, its fixed version): the projection of the first against the second's measured step
# A pair that misses the 15 % target on the committed audits stays a strict xfail, so the day it holds
# the mark must go (issue 39 stays open; log 2026-12-02-1013). None misses on the committed audits
# (log 2026-12-04-1647, 2026-12-04-1814)
MISSED: dict = {}   # pair -> why its committed projection misses (a strict xfail)
PAIRS = [pytest.param(t, f, marks=pytest.mark.xfail(reason=MISSED[t], strict=True)) if t in MISSED else (t, f)
         for t, f in [("audit-naive", "audit-fixed"), ("audit-custom-op", "audit-direct-op"),
                      ("audit-sync-check", "audit-sync-check-fixed"), ("audit-library-op", "audit-library-op-fixed"),
                      ("audit-scheduler", "audit-scheduler-fixed"), ("audit-attn-proj", "audit-attn-proj-fixed")]]
SAMPLED = [d for d in sorted(REF.glob("audit-*")) if json.loads((d / "audit.json").read_text()).get("sampling")]
PENDING = ("no sampled H200 audit of this pair committed yet: `scripts/audit_examples.sh reports/reference/h200 "
           "reports/reference/h200/run.json` on an H200 measures them")


def _load(name):
    return audit.AuditReport.from_dict(json.loads((REF / name / "audit.json").read_text(encoding="utf-8")))




@pytest.mark.parametrize("trap, fixed", PAIRS)
def test_projection_against_the_fixed_example_on_the_h200(trap, fixed):
    """Through reprice (price from audit.json alone): the trap's projection against its fixed
    version's plain loop, timed in the same rounds of the trap's audit (--fixed); for audits from
    before that, the fixed audit's own loop (another process), else its eager figure."""
    if not ((REF / trap).is_dir() and (REF / fixed).is_dir() and _load(trap).sampling.get("stacks")):
        pytest.skip(PENDING)
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    r = audit.price(_load(trap), load_run(REF / "run.json"))
    same = (_load(trap).modes.get("fixed_loop") or {}).get("median")
    if same is None:
        # a projection is checked against a step timed in the same host state (both recorded, or neither)
        assert _load(trap).modes["eager"].get("host_state") == _load(fixed).modes["eager"].get("host_state")
    else:
        assert r.projection["fixed_us"] == same and _load(trap).modes["fixed_loop"]["target"].startswith(
            f"examples/{fixed.removeprefix('audit-').replace('-', '_')}_integration.py")
    done = _load(fixed).modes
    measured = same or (done.get("loop") or {}).get("median") or done["eager"]["median"]
    off = audit_lines.against(r.projection, measured)
    assert abs(off) <= 0.15, (r.projection, measured)


@pytest.mark.parametrize("folder", SAMPLED, ids=lambda d: d.name)
def test_committed_audits_render_from_their_json(folder):
    """audit.md and flame.html re-render from audit.json alone (what `hostbench reprice` does)."""
    r = _load(folder.name)
    assert (folder / "audit.md").read_text(encoding="utf-8") == audit_report.render_markdown(r)
    assert (folder / "flame.html").read_text(encoding="utf-8") == flame.render_html(
        flame.tree(r.sampling), f"hostbench audit: {r.target}")
    t = r.lines
    assert t.get("error") or t.get("verdict") or t["note"] or abs(t["coverage"] - 1) <= audit_lines.MAX_GAP


# -- the counting pass: views and layout reads by the user's own code, and the line of every count ------------------

def test_views_and_stride_reads_counted_at_their_lines_and_wrappers_restored():
    from cudnn_hostbench.bench.audit import count as audit_count
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    before = {n: getattr(torch.Tensor, n) for n in ("t", "unsqueeze", "__getitem__", "stride", "shape")}

    def step():
        key = (tuple(x.shape), tuple(x.stride()), x.dtype)
        v = w.t().unsqueeze(0)
        torch.nn.functional.linear(x, w)       # torch's own Python may make views: not the user's
        return key, v[0]

    first = step.__code__.co_firstlineno
    c = audit_count.count_step(step, 3, cudnn=None, torch=torch, device_type="cpu")
    assert c["tensor_views"] == 3 and c["stride_reads"] == 1 and c["shape_reads"] == 1
    assert c["lines"]["stride_reads"] == {f"tests/test_audit_lines.py:{first + 1}": 1.0}
    assert c["lines"]["tensor_views"] == {f"tests/test_audit_lines.py:{first + 2}": 2.0,
                                          f"tests/test_audit_lines.py:{first + 4}": 1.0}
    assert {n: getattr(torch.Tensor, n) for n in before} == before and "shape" not in vars(torch.Tensor)
    f = {x.rule: x for x in cost.evaluate(c, None)}
    assert {"views", "metadata"} <= set(f) and "3 views" in f["views"].evidence


# -- syncs: the time of a long call on its own line, the wait re-priced for a faster host ------------------

@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_a_long_call_is_charged_to_its_own_line_not_the_next(monkeypatch):
    """A long C call the interpreter takes no signal after (here an operator, `BIG @ BIG`; on a GPU a
    CUDA `.item()`) had its time charged to the next call (`torch.isfinite()`): timed, it lands on its line."""
    long_line, cheap_line = (f"{HERE}:{steps.line_of(m)}" for m in ("long-op", "cheap"))
    names = ["__matmul__", *(n for _, n, _, _ in sampler.long_calls())]
    before = {n: vars(torch.Tensor).get(n) for n in names}
    quick_sampling(monkeypatch)
    us = _alone(steps.long_then_cheap, 300)
    plain = sampler.sample_step(steps.long_then_cheap, lambda: None, us, timed=[])
    sampler.sample_step(steps.tiny_step, lambda: None, 1.0, rounds=1, min_s=0.0, chunk_s=0.001)   # long_calls()
    rows, t = _by_line(plain)
    # the deferred signal: the long op's time on the next call, not its own line
    assert rows[cheap_line]["us"] > 0.5 * t["sum_us"] > rows.get(long_line, {"us": 0})["us"], (us, t["sum_us"])
    s = sampler.sample_step(steps.long_then_cheap, lambda: None, us,
                            timed=[(torch.Tensor, "__matmul__", "operator @", callsite.OPERATOR)])
    rows, t = _by_line(s)
    assert rows[long_line]["us"] > 0.7 * t["sum_us"] and rows.get(cheap_line, {"us": 0})["us"] < 0.2 * t["sum_us"]
    assert [c["callee"] for c in rows[long_line]["callees"]][0] == "operator @"
    assert s["timed_calls"] == ["operator @"] and "deferred signal" in s["timed_how"]
    assert {n: vars(torch.Tensor).get(n) for n in names} == before             # every wrapper gone


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_the_samplers_own_time_is_charged_to_no_line_and_not_read_as_overhead(monkeypatch):
    """H200: a custom_op's execute, timed 14 frames deep, read as +120 % overhead at every interval
    (1-8 ms), so the interval doubled to 8 ms and the step kept too few samples to split by line.
    The wrapper's bookkeeping is the sampler's own time: off the round, charged to no line; and the
    stack above a timed call site is read on one call in WALK_EVERY (here, reading it every call
    read +155 % on this 10 µs step; now +14 %)."""
    timed = [(steps.FakeGraph, "execute", "….execute()", callsite.CUDNN)]
    quick_sampling(monkeypatch)

    def attempt():
        s = sampler.sample_step(steps.deep_step, lambda: None, _alone(steps.deep_step, 2000), timed=timed,
                                max_interval=1e-3)
        assert s["own_us"] > 0 and s["interval_us"] == 1000.0
        rows, t = _by_line(s)
        return abs((t["sum_us"] + t["loop_us"] + t["outside_us"]) / s["step_us_plain"] - 1), s, rows

    def holds(a) -> bool:
        return a[1]["overhead"] < 0.5 and a[0] <= 0.5

    # attempts until one holds both bounds, three at most (then the one with the least gap): load
    # only adds to a gap and to the overhead, and the failure this guards against is in every
    # attempt (on a 2-core CI box one run read 0.20, 0.50 and 0.71 in turn, overheads 0.20-0.54)
    tries: list = []
    while len(tries) < 3 and not any(holds(a) for a in tries):
        tries.append(attempt())
    gap, s, rows = next((a for a in tries if holds(a)), min(tries, key=lambda a: a[0]))
    assert s["overhead"] < 0.5, s
    # the failure this guards against read +155 %; two loaded cores put the sum 20-32 % off alone, and
    # CI's oldest-versions environment read a best of 0.35 (0.35, 0.44, ...): held at half the failure
    assert gap <= 0.5, [(a[0], a[1]["overhead"]) for a in tries]
    deep = rows[f"{HERE}:{steps.line_of('deep-execute')}"]
    assert [c["callee"] for c in deep["callees"]][0] == "….execute()"
    assert "execute" not in vars(steps.FakeGraph) or vars(steps.FakeGraph)["execute"].__name__ == "execute"


def _segments(**kw):
    return [dict({"line": "x.py:30", "sync": ".item()", "host_us": 40.0, "sync_us": 80.0, "fixed_us": 15.0}, **kw)]


def test_a_sync_waits_longer_when_the_host_gets_faster():
    from cudnn_hostbench.bench.audit import timeline
    seg = _segments()
    same = timeline.project_syncs(seg, 100.0, 40.0, 40.0)[0]
    assert same["wait_us"] == pytest.approx(65.0) and same["wait_proj_us"] == pytest.approx(65.0)   # r = 1: as now
    fast = timeline.project_syncs(seg, 100.0, 40.0, 10.0)[0]
    assert fast["wait_proj_us"] == pytest.approx(65.0 + 30 * (1 - 0.25) * 0 + 100 - 65 - (100 - 65) * 0.25, rel=1e-6)
    assert fast["wait_proj_us"] > same["wait_proj_us"] and fast["cost_proj_us"] == pytest.approx(15 + fast["wait_proj_us"])
    # a sync that did not wait starts to once the host is faster than the device's work
    idle = timeline.project_syncs(_segments(host_us=200.0, sync_us=15.0), 100.0, 200.0, 20.0)[0]
    assert idle["wait_us"] == 0 and idle["wait_proj_us"] == pytest.approx(80.0)
    # copy kernels a removed finding launched leave the device's work
    cut = timeline.project_syncs(seg, 100.0, 40.0, 40.0, device_cut_us=20.0)[0]
    assert cut["wait_proj_us"] == pytest.approx(45.0)


def test_a_sync_lines_own_calls_run_last_and_keep_their_length():
    """Issue 39, the H200 scheduler step: 115 µs of host before its float(), 22 of them the sync
    line's own y.abs().amax(), 22 µs of device work, a 2 µs wait. The findings shorten the rest of
    the step to 39 µs; the tail keeps its 22, so the device's busy tail (20 µs behind the sync)
    still lies inside it: the wait stays 2, where one ratio for the whole segment projected 11.4."""
    from cudnn_hostbench.bench.audit import timeline
    seg = _segments(host_us=114.8, sync_us=13.63, fixed_us=11.65, noise_us=0.34)
    uniform = timeline.project_syncs(seg, 22.1, 114.8, 61.3)[0]
    assert uniform["wait_proj_us"] == pytest.approx(11.4, abs=0.1)
    tail = timeline.project_syncs(seg, 22.1, 114.8, 61.3, tails=[(22.0, 22.0)])[0]
    assert tail["wait_proj_us"] == pytest.approx(tail["wait_us"]) and tail["host_proj_us"] == pytest.approx(61.3)
    # a tail the findings shorten too moves the device's busy start with it: the wait grows again
    short = timeline.project_syncs(seg, 22.1, 114.8, 50.3, tails=[(22.0, 11.0)])[0]
    at_once = timeline.project_syncs(seg, 22.1, 114.8, 50.3)[0]
    assert tail["wait_proj_us"] < short["wait_proj_us"] <= at_once["wait_proj_us"] + 1e-9
    # no tail: one ratio, as before
    assert timeline.project_syncs(seg, 22.1, 114.8, 61.3, tails=[None]) == [uniform]


def test_a_wait_inside_the_drained_syncs_spread_is_no_wait():
    """Issue 39, an unseen step on the H200: its sync ran 0.04 µs past its drained cost, read as a
    device busy right up to the sync; with the host 41 % faster that projected a 9.1 µs wait, and
    the hand-fixed step waited 0.0. A wait within the drained syncs' IQR is none."""
    from cudnn_hostbench.bench.audit import timeline
    seg = _segments(host_us=115.0, sync_us=12.296, fixed_us=12.252)
    old = timeline.project_syncs(seg, 22.1, 115.0, 67.6)[0]             # an audit.json without the spread
    assert old["wait_proj_us"] == pytest.approx(9.1, abs=0.1)
    quiet = timeline.project_syncs([dict(seg[0], noise_us=0.3)], 22.1, 115.0, 67.6)[0]
    assert quiet["wait_us"] == 0 and quiet["wait_proj_us"] == 0        # the device is done long before
    # a wait past the spread still counts, and still grows as the host gets faster
    busy = timeline.project_syncs(_segments(noise_us=0.3), 100.0, 40.0, 10.0)[0]
    assert busy["wait_us"] == pytest.approx(65.0) and busy["wait_proj_us"] > 65.0


def test_a_shrinking_wait_never_goes_below_zero_on_a_sync_line():
    """Issue 39, an unseen step on the H200: its sync, sampled below its timeline figure, lost the
    wait the removed copy kernels had caused in real µs and projected 12.2 fixed + -5.0 wait."""
    segs = [{"line": "x.py:30", "sync": ".item()", "host_us": 150.0, "sync_us": 98.5, "fixed_us": 12.2}]
    for k_now in (20.0, 60.0, 98.5, 150.0):          # the sync line's sampled µs, below and above the timeline's
        out = audit_lines.sync_projection(segs, 220.0, 150.0, 40.0, 160.0, {"x.py:30": k_now}, {}, {}, 1.0)
        row = out["sync_lines"][0]
        assert row["wait_proj_us"] >= 0 and row["cost_proj_us"] >= row["fixed_us"], (k_now, row)
        assert row["wait_proj_us"] <= row["wait_us"] + 1e-9        # the device work left is less than before


def test_the_timeline_records_the_drained_syncs_spread():
    from cudnn_hostbench.bench.audit import timeline
    assert timeline._iqr([1.0, 2.0, 3.0]) == 0.0                         # too few to say
    assert timeline._iqr([10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]) > 0


def test_the_timeline_pass_is_measured_again_until_it_lands_in_the_loops_host_state(monkeypatch):
    """Its drained syncs' fixed cost is host-paced: a pass with a slow sentinel on either side is
    measured again, and one that never lands says which state it ran in."""
    from cudnn_hostbench.bench.audit import timeline
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    passes = []
    held_by = {"pass": None}              # what the pass says of its drained chunks (None: not held)
    monkeypatch.setattr(timeline, "measure", lambda step, step_us, **kw: passes.append(kw.get("held")) or
                        {"segments": [{"line": "a.py:1", "sync": ".item()", "host_us": 5.0, "sync_us": 9.0,
                                       "fixed_us": 4.0}], "steps": 20, "syncs_per_step": 1,
                         **({} if held_by["pass"] is None else {"fixed_held": held_by["pass"]})})

    def host_reading(*seq):
        now = [0.0]                      # a clock the waits advance: no real sleeping

        def sleep(s):
            now[0] += s
        h = HostState(read=iter(seq).__next__, floor=1.0, clock=lambda: now[0], sleep=sleep)
        return h
    # each pass starts once the host reads fast; the first ends slow: measured again, the second kept
    got = audit._timeline(None, 100.0, host_reading(1.0, 2.0, 1.0, 1.0), "fast")
    assert (got["host_state"], got["tries"], len(passes)) == ("fast", 2, 2)
    passes.clear()
    got = audit._timeline(None, 100.0, host_reading(*[2.0] * 20000), "fast")   # never fast: waits run out
    assert (got["host_state"], got["tries"], len(passes)) == ("slow", audit.TIMELINE_TRIES, audit.TIMELINE_TRIES)
    assert all(callable(h) for h in passes)          # each pass was given the state to hold its drained syncs to
    # a pass whose drained syncs were held to the fast state is kept, whatever its ends read
    passes.clear()
    held_by["pass"] = True
    got = audit._timeline(None, 100.0, host_reading(1.0, 2.0, *[1.0] * 10), "fast")
    assert (got["host_state"], got["tries"], got["fixed_held"], len(passes)) == ("mixed", 1, True, 1)
    # the projection's sync model says so (the committed sync-check audit, its timeline marked)
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    d = json.loads((ROOT / "reports" / "reference" / "h200" / "audit-sync-check" / "audit.json").read_text())
    run = load_run(ROOT / "reports" / "reference" / "h200" / "run.json")
    assert "not the fast state" not in audit.price(audit.AuditReport.from_dict(d), run).projection["sync_model"]
    for k in ("fixed_held", "drained_steps"):   # as an audit from before the drained syncs were held
        d["timeline"].pop(k, None)
    d["timeline"].update(host_state="slow", want_state="fast", tries=3)
    model = audit.price(audit.AuditReport.from_dict(d), run).projection["sync_model"]
    assert "timeline pass ran in the host's slow state, not the fast state of the loop (3 tries)" in model
    d["timeline"].update(fixed_held=True, drained_steps=135)
    model = audit.price(audit.AuditReport.from_dict(d), run).projection["sync_model"]
    assert model.endswith("; fixed costs from 135 drained steps held to the host's fast state")
    d["timeline"].update(fixed_held=False)
    model = audit.price(audit.AuditReport.from_dict(d), run).projection["sync_model"]
    assert "the drained syncs could not be held to the host's fast state (3 tries)" in model


def test_the_drained_syncs_are_held_to_the_loops_host_state_chunk_by_chunk():
    """Issue 39: timeline passes in a mixed host state read an `.item()`'s fixed cost up to twice its
    fast figure (log 2026-12-04-1248). The drained steps now run in chunks, each
    kept only between two readings of the wanted state: here the host turns slow (+200 µs a sync)
    before two chunks of three, and the fixed cost is the fast chunks'."""
    from cudnn_hostbench.bench.audit import timeline
    host = {"slow": False, "checks": 0}

    def item():
        until = time.perf_counter() + (200e-6 if host["slow"] else 0.0)
        while time.perf_counter() < until:
            pass
        return 0.0
    dev = types.SimpleNamespace(item=item)

    def step():
        sum(range(100))
        return dev.item()

    def held(wait):
        if wait:                                   # the state the next chunk runs in
            host["checks"] += 1
            host["slow"] = host["checks"] % 3 != 0
        return not host["slow"]
    calls = [(dev, "item", ".item()", False)]
    tl = timeline.measure(step, 400.0, torch=torch, device_type="cpu", drain=lambda: None, calls=calls, held=held)
    assert tl["fixed_held"] is True and tl["drained_steps"] >= timeline.MIN_STEPS
    assert host["checks"] >= 3 * tl["drained_steps"] // timeline.DRAIN_CHUNK - 2   # two of three chunks left out
    assert tl["segments"][0]["fixed_us"] < 100                                     # not the slow chunks' 200 µs
    never = timeline.measure(step, 400.0, torch=torch, device_type="cpu", drain=lambda: None, calls=calls,
                             held=lambda wait: False)
    assert never["fixed_held"] is False and never["drained_steps"] > 0               # every chunk run, and said so
    plain = timeline.measure(step, 400.0, torch=torch, device_type="cpu", drain=lambda: None, calls=calls)
    assert "fixed_held" not in plain                                                # not asked: as before


def test_a_sync_line_never_projects_below_its_fixed_cost_and_projected_wait():
    """The invariant, over random timelines and lines: a sync line's projected cost ≥ its syncs'
    fixed cost + projected wait, and a sync's projected wait never shrinks as the host gets faster."""
    import random

    from cudnn_hostbench.bench.audit import timeline
    rnd = random.Random(39)
    for _ in range(400):
        segs = [{"line": f"x.py:{20 + k}", "sync": ".item()", "host_us": rnd.uniform(0, 300),
                 "sync_us": rnd.uniform(5, 200), "fixed_us": rnd.uniform(1, 20)} for k in range(rnd.randint(1, 3))]
        for s in segs:
            s["fixed_us"] = min(s["fixed_us"], s["sync_us"])
        dev, now, cut = rnd.choice([None, rnd.uniform(0, 600)]), sum(s["host_us"] for s in segs) + 1, rnd.uniform(0, 30)
        waits = [[x["wait_proj_us"] for x in timeline.project_syncs(segs, dev, now, now * f, cut)]
                 for f in (1.0, 0.7, 0.3, 0.0)]
        for slower, faster in zip(waits, waits[1:]):
            assert all(b >= a - 1e-9 for a, b in zip(slower, faster))
        stacks = [_stack(20 + k, "step", "….item()", callsite.TORCH, s["sync_us"]) for k, s in enumerate(segs)]
        stacks += [_stack(20, "step", "torch.isfinite()", callsite.TORCH, rnd.uniform(0, 50)),
                   _stack(40, "step", "….unsqueeze()", callsite.TORCH, rnd.uniform(0, 200))]
        s = dict(SAMPLING, loop_us=0.0, stacks=stacks)
        counts = {"syncs": len(segs), "tensor_views": 1,
                  "lines": {"syncs": {x["line"]: 1 for x in segs}, "tensor_views": {"x.py:40": 1}}}
        t = audit_lines.table(s, None)
        f = [_f("views", 3.0), _f("sync", None)]
        step = t["sum_us"]
        p = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t),
                                {"eager": {"median": step}, "loop": {"median": step}, "device": {"median": dev}},
                                timeline={"segments": segs})
        assert p["sync_lines"] and "x.py:40" in p["dropped"]
        for r in p["sync_lines"]:
            assert r["proj_us"] >= r["fixed_us"] + r["wait_proj_us"] - 1e-9
            assert r["cost_proj_us"] == pytest.approx(r["fixed_us"] + r["wait_proj_us"])


def _median_steady(attempt, want=3, tries=6):
    """The median attempt (by its first item, the miss) of `want` attempts that timed their steps in
    a steady state: each attempt's last item says so (its rounds within 10 % of each other). A
    2-core CI box shares its cores with other tests; an attempt timed through a burst of their load
    is taken again, up to `tries` in all (then the median of every attempt)."""
    done = []
    for _ in range(tries):
        done.append(attempt())
        steady = [a for a in done if a[-1]]
        if len(steady) >= want:
            break
    pool = sorted(steady if len(steady) >= want else done, key=lambda a: a[0])
    return pool[len(pool) // 2], done


def _steady(*series) -> bool:
    from cudnn_hostbench.bench.measure.runfile.stats import relative_spread
    return all((relative_spread(xs) or 0.0) <= 0.10 for xs in series)


def each_us(fn, n=400):
    """A plain loop timed step by step: its median is what a step costs when the (2-core, shared)
    CPU host is not preempting the loop, whose means a preemption of milliseconds would own."""
    import statistics
    clock, out = time.perf_counter, []
    for _ in range(n):
        t = clock()
        fn()
        out.append(clock() - t)
    return statistics.median(out) * 1e6


def _repriced(report, run_file, tmp_path):
    """The audit written and priced again by `hostbench reprice` (from audit.json alone), in this
    process (the command in its own: test_reprice_rerenders_lines_and_names_a_frontend_mismatch)."""
    from tests.helpers import hostbench_here
    audit_report.write_outputs(report, tmp_path / "audit")
    res = hostbench_here("reprice", tmp_path / "audit", "--run-file", run_file, "--out", tmp_path / "again")
    assert res.returncode == 0, res.stderr
    return audit.AuditReport.from_dict(json.loads((tmp_path / "again" / "audit.json").read_text(encoding="utf-8")))


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_projection_of_a_synced_step_on_cpu_lands_on_the_fixed_step(tmp_path, monkeypatch):
    """End to end on CPU with a device that is a queue on the host clock: the step launches 300 µs of
    device work, then makes a key and 80 views per call, then waits (`.item()`). Fixed, the host is
    faster and the sync waits the longer: the projection re-prices the wait from the timeline and
    lands on the fixed step's plain loop; taking the host's time off the step alone would not.
    Without a timeline (audits from before it) a sync keeps its sampled time."""
    import statistics

    from cudnn_hostbench.bench.audit import count as audit_count
    from cudnn_hostbench.bench.audit import timeline
    from cudnn_hostbench.bench.measure.runfile.records import Record, load_run, run_document, write_run

    def view():
        return steps.A.view(96, 96)

    quick_sampling(monkeypatch)
    for fn in (steps.synced_step, steps.synced_step_fixed):
        loop_us(fn, 100)
    sync_line = f"{HERE}:{steps.line_of('sync')}"
    c = audit_count.count_step(steps.synced_step, 10, cudnn=None, torch=torch, device_type="cpu")
    c["syncs"], c["sync_calls"] = 1.0, {".item()": 1.0}            # the fake device's sync, counted by hand
    c["lines"]["syncs"] = {sync_line: 1.0}
    item = [(steps.DEV, "item", "….item()", callsite.TORCH)]

    def attempt():
        rounds = [(each_us(steps.synced_step), each_us(steps.synced_step_fixed), loop_us(lambda: None, 3000),
                   loop_us(view, 3000)) for _ in range(5)]
        trap, fixed = (statistics.median(r[i] for r in rounds) for i in (0, 1))
        reuse, new_view = (statistics.median(r[i] for r in rounds) for i in (2, 3))
        recs = [Record("churn", v, "256", "eager", samples=[x] * 5) for v, x in (("reuse", reuse), ("new_view", new_view))]
        run = load_run(write_run(tmp_path / "run.json", run_document(recs, {})))
        s = sampler.sample_step(steps.synced_step, lambda: None, trap, timed=item)
        tl = timeline.measure(steps.synced_step, trap, torch=torch, device_type="cpu", drain=steps.DEV.item,
                              calls=[(steps.DEV, "item", ".item()", False)])
        assert tl["syncs_per_step"] == 1 and tl["segments"][0]["line"] == sync_line
        seg = tl["segments"][0]
        assert seg["fixed_us"] < 0.2 * seg["sync_us"] + 5            # drained: the call alone
        modes = {"eager": {"median": trap}, "loop": {"median": trap}, "device": {"median": steps.DEVICE_US}}
        r = _repriced(audit.price(_report(modes=modes, counts=c, sampling=s, timeline=tl, kernels=[]), None),
                      tmp_path / "run.json", tmp_path)
        p = r.projection
        assert "views" in {f.rule for f in r.findings} and p["sync_lines"][0]["line"] == sync_line
        assert p["syncs"][0]["wait_proj_us"] > p["syncs"][0]["wait_us"]   # a faster host waits longer
        return (abs(audit_lines.against(p, fixed)), fixed, trap, r, run, modes, s,
                _steady([x[0] for x in rounds], [x[1] for x in rounds]))

    # each attempt timed beside its own sampling and timeline; the median steady one must hold
    (miss, fixed, trap, r, run, modes, s, _), done = _median_steady(attempt)
    p = r.projection
    assert miss <= 0.15, [(t[0], t[3].projection["projected_us"], t[1], t[2], t[-1]) for t in done]
    host_only = p["base_us"] - (p["host_now_us"] - p["host_proj_us"])
    assert host_only / fixed - 1 < -0.15                                # the host's time taken off, the wait kept
    text = audit_report.render_text(r)
    assert "syncs (µs/step), each at its fixed cost (the timeline's drained syncs) + the device work still queued" in text
    assert f"{sync_line} .item(): now" in text
    assert "| line | sync | fixed | wait now |" in audit_report.render_markdown(r)
    old = audit.price(_report(modes=modes, counts=c, sampling=s, timeline={}, kernels=[]), run).projection
    assert old["sync_model"].startswith("kept at their sampled time") and old["sync_lines"][0]["fixed_us"] is None


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_projection_of_a_library_op_step_on_cpu_lands_on_the_direct_call(tmp_path, monkeypatch):
    """End to end on CPU: an op registered with torch.library (define + impl) reached through
    torch.ops twice per step, a torch.mm between; fixed, the same work called directly. Counted,
    sampled, re-priced through `hostbench reprice`: the op lines lose their dispatcher time."""
    import statistics

    from cudnn_hostbench.bench.audit import count as audit_count
    from cudnn_hostbench.bench.measure.runfile.records import Record, run_document, write_run

    quick_sampling(monkeypatch)
    for fn in (steps.op_step, steps.op_step_fixed):
        each_us(fn, 100)
    run = write_run(tmp_path / "run.json", run_document([Record("churn", "reuse", "256", "eager", samples=[0.1] * 5)], {}))
    c = audit_count.count_step(steps.op_step, 10, cudnn=None, torch=torch, device_type="cpu")
    assert c["dispatcher_calls"] == 2 and c["op_calls"] == {"hostbench_test::lin_relu (dispatcher)": 2.0}
    ops = {f"{HERE}:{steps.line_of(m)}" for m in ("op-1", "op-2")}
    # each attempt times trap and fixed right beside its own sampling; the median steady one must hold
    def attempt():
        rounds = [(each_us(steps.op_step), each_us(steps.op_step_fixed)) for _ in range(5)]
        trap, fixed = (statistics.median(r[i] for r in rounds) for i in (0, 1))
        s = sampler.sample_step(steps.op_step, lambda: None, trap)
        modes = {"eager": {"median": trap}, "loop": {"median": trap}}
        r = _repriced(audit.price(_report(modes=modes, counts=c, sampling=s, timeline={}, kernels=[]), None), run, tmp_path)
        p = r.projection
        split = "dispatcher" in {f.rule for f in r.findings} and ops <= set(p["reduced"])
        # a sampling pass starved of samples by another test's load splits no line: taken again
        return (abs(audit_lines.against(p, fixed)), p["projected_us"], fixed, trap, r.sampling["verdict"],
                split, split and _steady([x[0] for x in rounds], [x[1] for x in rounds]))

    (miss, _, fixed, trap, verdict, split, _), done = _median_steady(attempt)
    assert split, (verdict, done)                                       # the op lines lose their dispatcher time
    # the dispatcher alone: since the fixed step allocates as the trap does, a sixth of the step here
    # (CI, 2 cores: trap 28.1 against fixed 23.5 µs, 1.195x, three attempts alike)
    assert trap > 1.1 * fixed, done
    # this CPU's own speed flips within a test (op_step read 37 then 82 µs alone, its fixed step 29-50),
    # and the projection of one state is set against the other's fixed step: alone on 2 cores the
    # misses read 1-10 % in the fast state, up to 22 % in the slow one (a fixed step that also wrote
    # into buffers made once read 23-50 %: allocations the audit does not price; audit_line_steps.py).
    # So the CPU band (as test_projection_on_cpu_lands_on_the_fixed_step's),
    # and the projection must close at least half the trap's gap; the 15 % target is held on the
    # committed H200 audits (test_projection_against_the_fixed_example_on_the_h200).
    assert miss <= CPU_BAND and miss <= 0.5 * (trap / fixed - 1), done


def test_the_plain_loop_is_shown_beside_eager_and_a_gap_is_explained():
    """Issue 39 (H200): the audit's eager rounds read a fixed step at 57.1 µs, a plain loop 48.8."""
    modes = {"eager": {"median": 57.1, "iqr": 1.0, "calls": 35, "host_state": "fast"},
             "loop": {"median": 48.8, "iqr": 0.5, "calls": 2049, "host_state": "fast"},
             "graph": {"median": 20.0, "iqr": 0.1}, "device": {"median": 30.0, "iqr": 0.1}}
    note = audit.loop_note(modes)
    assert note.startswith("the plain loop (2049 steps between two syncs) ran 48.8 µs/step, the eager rounds "
                           "(35 steps each) 57.1 (+17%)") and "pays its sync and a cold first step, 291 µs per round" in note \
        and "device 30.0" in note
    assert "another" not in note and audit.loop_note(dict(modes, loop=dict(modes["loop"], median=55.0))) == ""
    other = audit.loop_note(dict(modes, loop=dict(modes["loop"], host_state="slow")))
    assert other.endswith("the loop ran in the host's slow state, the eager rounds in its fast state")
    r = audit.price(_report(modes=modes), None)
    assert r.notes[-1] == note and r.projection["base"] == "loop" and r.projection["base_us"] == 48.8
    assert "· loop 48.80 [IQR 0.50]" in audit_report.render_text(r)
    assert "| loop | 48.80 | 0.50 | plain loop: 2049 steps between two syncs; host in its fast state |" in \
        audit_report.render_markdown(r)
    again = audit.price(r, None)                                        # re-pricing keeps one note, not two
    assert again.notes.count(note) == 1


def test_a_loop_slower_than_eager_is_explained_only_by_what_was_measured():
    """H200 (S6): library-op's loop read 120.0 µs/step against eager 102.5 with the device at 14.4;
    "the steps queue behind the GPU" was said of it, and was not true. The host's sentinel says
    whether its pace moved; a GPU-bound step queues; else the note says it is not explained."""
    e = {"median": 102.5, "iqr": 1.0, "calls": 16, "host_state": "fast", "sentinel_us": 0.80}
    lp = {"median": 120.0, "iqr": 1.0, "calls": 939, "host_state": "fast", "sentinel_us": 0.80}
    dev = {"median": 14.4, "iqr": 0.1}
    note = audit.loop_note({"eager": e, "loop": lp, "device": dev})
    assert "queue behind the GPU" not in note and note.endswith(
        ": not explained by the host state (sentinel +0%) or the GPU (device 14.4 µs/step): the loop ran after "
        "the eager rounds, and the host's pace drifts within a state")
    slower = audit.loop_note({"eager": e, "loop": dict(lp, sentinel_us=0.92), "device": dev})
    assert slower.endswith(": the host ran 15% slower during the loop by its sentinel (0.920 against 0.800 µs), "
                           "in the same fast state")
    bound = audit.loop_note({"eager": e, "loop": lp, "device": dict(dev, median=110.0)})
    assert bound.endswith(": back to back, the steps queue behind the GPU (device 110.0 µs/step)")
    old = audit.loop_note({"eager": {k: v for k, v in e.items() if k != "sentinel_us"},
                           "loop": {k: v for k, v in lp.items() if k != "sentinel_us"}, "device": dev})
    assert old.endswith(": not explained by the host state or the GPU (device 14.4 µs/step): the loop ran after "
                        "the eager rounds, and the host's pace drifts within a state")


def test_the_timeline_times_each_sync_of_a_step_in_order():
    """Two syncs per step on the host-clock device: each one's segment, own time and fixed cost
    (the device drained first), and a step whose syncs vary is reported, not guessed."""
    from cudnn_hostbench.bench.audit import timeline
    dev = steps.FakeDevice()

    def two():
        dev.launch(400.0)
        dev.item()                                         # waits ~400 µs
        sum(range(2000))                                   # host work, the device idle
        dev.launch(20.0)
        return dev.item()                                  # waits ~20 µs, less the host's time since launch

    calls = [(dev, "item", ".item()", False)]
    tl = timeline.measure(two, 450.0, torch=torch, device_type="cpu", drain=dev.item, calls=calls)
    first, second = tl["segments"]
    line = two.__code__.co_firstlineno
    assert tl["syncs_per_step"] == 2
    assert (first["line"], second["line"]) == (f"tests/test_audit_lines.py:{line + 2}", f"tests/test_audit_lines.py:{line + 5}")
    assert first["sync_us"] > 300 and first["fixed_us"] < 20 and second["host_us"] > first["host_us"]
    assert all(s["fixed_us"] <= s["sync_us"] for s in tl["segments"]) and tl["steps"] > 0
    state = {"n": 0}

    def sometimes():
        state["n"] += 1
        if state["n"] % 2:
            dev.item()
    mixed = timeline.measure(sometimes, 5.0, torch=torch, device_type="cpu", drain=dev.item, calls=calls)
    assert mixed["error"].startswith("the step's syncs differ")
    assert timeline.measure(lambda: None, 1.0, torch=torch, device_type="cpu", calls=calls) == {}


def test_a_loop_projects_no_faster_than_its_device_work():
    """Fixed, a host-bound step can become device-bound: the projection stops at the device's µs
    per step, less the copy kernels a removed finding launched."""
    s = dict(SAMPLING, loop_us=0.0, stacks=[_stack(10, "call", "….unsqueeze()", callsite.TORCH, 80.0),
                                            _stack(12, "call", "torch.mm()", callsite.TORCH, 20.0)])
    counts = {"tensor_views": 1, "copies_transposed": 1,
              "lines": {"tensor_views": {"x.py:10": 1}, "copies_transposed": {"x.py:10": 1}}}
    t = audit_lines.table(s, 100.0)
    f = [_f("views", 1.0), _f("transpose", 5.0)]
    modes = {"eager": {"median": 100.0}, "device": {"median": 35.0}}
    p = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t), modes)
    assert p["projected_us"] == pytest.approx(30.0) and "device-bound" in p["device_bound"]
    assert "device-bound: held to the device's 30.00 µs/step" in report_lines._projection_text(p)[0]
    fast = audit_lines.project(f, counts, t, audit_lines.tie(f, counts, t), dict(modes, device={"median": 10.0}))
    assert fast["projected_us"] == pytest.approx(20.0) and "device_bound" not in fast


def test_a_loop_in_another_host_state_leaves_the_projection_on_the_eager_figure():
    """A plain loop timed in the slow host state against a fast eager figure compares two hosts: the
    projection stands on the eager rounds and says why; in one state it stands on the loop, the
    findings' eager-round prices taken at the loop's pace."""
    f = [_f("new_output", 6.0), _f("new_pack", 4.0)]
    slow = {"eager": {"median": 100.0, "host_state": "fast"}, "loop": {"median": 160.0, "host_state": "slow"}}
    p = audit_lines.project(f, COUNTS, {}, {}, slow)
    assert p["base"] == "eager" and p["loop_state_differs"] and p["loop_us"] == 160.0
    assert p["projected_us"] == pytest.approx(90.0)
    assert "ran in another host state" in " ".join(report_lines._projection_text(p))
    same = {"eager": {"median": 100.0, "host_state": "fast"}, "loop": {"median": 80.0, "host_state": "fast"}}
    q = audit_lines.project(f, COUNTS, {}, {}, same)
    assert q["base"] == "loop" and not q["loop_state_differs"]
    assert q["projected_us"] == pytest.approx(80.0 - 10.0 * 0.8)


def test_sampled_lines_stay_on_the_loop_they_were_matched_to_in_another_host_state():
    """The sampler keeps the rounds whose plain round matched the loop, and the fixed loop is held
    to the loop's state: with lines, a loop in another state than the eager rounds stays the base
    (H200, naive: lines scaled to a slow eager 15681 against a fast loop of 9012 µs/step)."""
    stacks = [_stack(20, "step", "torch.mm()", callsite.TORCH, 60.0), _stack(21, "step", "torch.relu()", callsite.TORCH, 40.0)]
    t = audit_lines.table(dict(SAMPLING, loop_us=0.0, stacks=stacks), 100.0)
    modes = {"eager": {"median": 160.0, "host_state": "slow"}, "loop": {"median": 100.0, "host_state": "fast"}}
    p = audit_lines.project([], {}, t, {}, modes)
    assert p["method"] == "lines" and p["base"] == "loop" and not p["loop_state_differs"]
    assert p["projected_us"] == pytest.approx(100.0)          # not 160: the slow eager rounds' scale
    q = audit_lines.project([], {}, {}, {}, modes)            # without lines the eager figure stands
    assert q["base"] == "eager" and q["loop_state_differs"]


def test_a_timeline_pass_in_a_slower_host_state_does_not_turn_the_loop_s_wait_into_fixed_cost():
    """H200, attn-proj (device-bound, 219.5 µs of device a step): the timeline pass ran its host at
    383 µs a step against 180 in the loop, so its sync never waited there (30 µs, all fixed); scaled
    to the sampled sync (77 µs) the whole sync read as fixed cost, and with the copy kernels removed
    the projection kept it: +76 % off the fixed step. Rebased on the sampled rounds, the sync is
    30 fixed + 47 wait, and the wait goes with the device work the fixes remove."""
    segs = [{"line": "x.py:20", "sync": ".item()", "host_us": 383.0, "sync_us": 29.7, "fixed_us": 29.7, "noise_us": 1.5}]
    (b,) = audit_lines.rebase(segs, {"x.py:20": 77.0}, 180.0, 1.0)
    assert (b["sync_us"], b["fixed_us"], b["host_us"]) == (77.0, 29.7, 180.0)
    out = audit_lines.sync_projection(segs, 219.5, 180.0, 94.0, 163.8, {"x.py:20": 77.0}, {}, {}, 1.0)
    (row,) = out["sync_lines"]
    assert row["fixed_us"] == pytest.approx(29.7) and row["wait_us"] == pytest.approx(47.3)
    assert row["wait_proj_us"] == 0.0 and row["cost_proj_us"] == pytest.approx(29.7)
    # a sync the sampler did not see keeps the pass's figures
    assert audit_lines.rebase(segs, {}, 180.0, 1.0) == segs
    # two syncs on one line share its sampled time as the pass shared it
    two = [dict(segs[0], sync_us=10.0, fixed_us=5.0), dict(segs[0], sync_us=30.0, fixed_us=5.0)]
    assert [x["sync_us"] for x in audit_lines.rebase(two, {"x.py:20": 80.0}, 100.0, 1.0)] == [20.0, 60.0]
    # a sync the sampler missed keeps its sync figures, but its host is rebased with the rest: the
    # pass's host (here twice the loop's) never sits beside the loop's in one timeline
    mixed = [dict(segs[0], host_us=300.0), dict(segs[0], line="x.py:30", host_us=100.0, sync_us=12.0, fixed_us=8.0)]
    seen, unseen = audit_lines.rebase(mixed, {"x.py:20": 77.0}, 200.0, 1.0)
    assert (seen["host_us"], unseen["host_us"]) == (150.0, 50.0)
    assert (unseen["sync_us"], unseen["fixed_us"]) == (12.0, 8.0)


def test_a_step_with_nothing_to_fix_projects_to_itself_whichever_pass_reads_its_sync_higher():
    """The timeline pass and the sampled rounds time a sync apart and can disagree by a quarter: its
    fixed cost and wait are taken in the sampled rounds' µs, so a step with no finding projects to
    its own figure, and the sync line stays at fixed cost + projected wait."""
    for timeline_us in (60.0, 100.0, 140.0):      # below, at and above the sampled 100 µs
        segs = [{"line": "x.py:20", "sync": ".item()", "host_us": 50.0, "sync_us": timeline_us, "fixed_us": 10.0}]
        stacks = [_stack(20, "step", "….item()", callsite.TORCH, 100.0), _stack(30, "step", "torch.mm()", callsite.TORCH, 50.0)]
        t = audit_lines.table(dict(SAMPLING, loop_us=0.0, stacks=stacks), None)
        counts = {"syncs": 1, "lines": {"syncs": {"x.py:20": 1}}}
        step = t["sum_us"]
        p = audit_lines.project([_f("sync", None)], counts, t, {}, {"eager": {"median": step}, "device": {"median": 120.0}},
                                timeline={"segments": segs})
        assert p["projected_us"] == pytest.approx(step, rel=1e-6), timeline_us
        (r,) = p["sync_lines"]
        assert r["cost_proj_us"] == pytest.approx(r["fixed_us"] + r["wait_proj_us"])


@pytest.mark.slow
@pytest.mark.newest_only
@pytest.mark.timed
def test_an_overhead_the_interval_does_not_move_keeps_the_short_intervals_lines(monkeypatch):
    """H200: custom-op's sampling overhead read +17.5, +20.7, +27, +13 % at 1-8 ms: not the
    signal's (its cost halves when the interval doubles), so raising the interval only lost samples
    (8 ms, 121 samples: no lines, the findings' prices stood in and read +39 %). It stops at the
    first try whose longer twin did not fall by a third, keeps that try's lines, and the projection
    carries the overhead in its error."""
    readings = iter([0.175, 0.207, 0.27, 0.13])
    real = sampler._try

    def fake_try(*a, **k):
        t, s = real(*a, **k)
        return dict(t, overhead=next(readings)), s

    monkeypatch.setattr(sampler, "_try", fake_try)
    # every pair kept whatever host state it ran in (this test is not about matching: a pass whose
    # host changed state after the step was timed kept 194 samples, under MIN_SAMPLES), and quick
    monkeypatch.setattr(sampler, "MATCH_TOL", 100.0)
    quick_sampling(monkeypatch)
    us = _alone(steps.step, 300)
    s = sampler.sample_step(steps.step, lambda: None, us)
    assert [t["interval_us"] for t in s["tries"]] == [1000.0, 2000.0] and s["interval_us"] == 1000.0
    assert s["overhead_not_signal"] and s["overhead"] == 0.175 and s["verdict"] == ""
    t = audit_lines.table(s, us)
    assert "did not fall with a longer interval" in report_lines.header(t)
    assert sampler.verdict(dict(s, overhead=0.25), us).startswith("sampling slowed the step by 25 %")
    assert sampler.verdict(dict(s, overhead_not_signal=False), us).startswith("sampling slowed the step by 18 %")
    wide = audit.price(_report(modes={"eager": {"median": us}, "loop": {"median": us}}, sampling=s,
                               counts={}, timeline={}, kernels=[]), None).projection
    narrow = audit.price(_report(modes={"eager": {"median": us}, "loop": {"median": us}},
                                 sampling=dict(s, overhead=0.0), counts={}, timeline={}, kernels=[]), None).projection
    assert wide["err_us"] >= narrow["err_us"]


def test_a_slow_step_is_sampled_over_enough_steps_that_one_sample_is_a_microsecond(monkeypatch):
    """H200, naive: 200 steps of a 9 ms step at 1 ms made each sample 5 µs/step, and one stray
    sample of Python moved the projection of a 12 µs fixed step by a third."""
    seen = []

    def fake_try(step, sync, steps, interval, rounds, min_s, want_us=None, timed=(), host=None, want_state=""):
        seen.append(steps * rounds)
        s = sampler._Sampler()
        return {"interval_us": interval * 1e6, "steps": steps * rounds, "wall_s": 1.0, "step_us_plain": want_us,
                "step_us_sampled": want_us, "own_us": 0.0, "overhead": 0.0, "samples": 0, "rounds": rounds,
                "rounds_other_state": 0, "state_note": ""}, s

    monkeypatch.setattr(sampler, "_try", fake_try)
    for step_us, least in ((9000.0, 1000), (15.0, 8000), (20_000.0, 600)):
        seen.clear()
        sampler.sample_step(lambda: None, lambda: None, step_us, timed=[])
        per_sample = sampler.INTERVAL_S * 1e6 / seen[-1]
        assert seen[-1] >= least and (per_sample <= sampler.SAMPLE_RESOLUTION_US
                                      or seen[-1] * step_us * 1e-6 >= sampler.MAX_RESOLVE_S * 0.99), (step_us, seen)


class _SlowHost(_FlippingHost):
    """A host whose sentinel never reads the fast state (a slow-host start)."""

    def read(self) -> float:
        _STATE["slow"] = False
        return 2.0


def test_a_host_never_fast_falls_back_to_the_step_time_not_to_too_few_samples(monkeypatch):
    """H200 slow-host start (fast state 18-47 % of readings): matching on the sentinel alone kept 3
    of 32 rounds of attn-proj, too few samples to split it by line, and the projection fell back
    to eager − priced findings (−56 % off its fixed step). Too few rounds in the state: the
    rounds are matched on the step's time, and the table says so."""
    _STATE.update(slow=False, n=0)
    us = _alone(steps.step, 1000)
    # every round on time: a CPU host drifts past 15 % (88 against 110 µs/step), which is the step's
    # time failing too, not the fallback this test is about
    monkeypatch.setattr(sampler, "MATCH_TOL", 100.0)
    s = sampler.sample_step(steps.step, lambda: None, us, chunk_s=0.02, rounds=4, host=_SlowHost(), host_state="fast")
    assert s["state_note"].startswith("too few sampled rounds in the fast state by the host's sentinel")
    assert s["matched_on"] == "plain-round time" and s["rounds_host_off"] == s["rounds"]
    assert s["samples"] > 0 and "too few samples" not in s["verdict"]
    assert "by their plain round's time" in report_lines.header(audit_lines.table(s, us)) or not s["rounds_other_state"]


def test_the_timeline_holds_its_drained_chunks_with_the_audits_host_watch(monkeypatch):
    """The `held` the audit gives the pass: a reading between chunks, and before a chunk a wait for
    the fast state (from the timeline's allowance) only when the host is not in it."""
    from cudnn_hostbench.bench.audit import timeline
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    asked = []

    def measure(step, step_us, held=None):
        asked.extend([held(True), held(False), held(True)])
        return {"segments": [{"line": "a.py:1", "sync": ".item()", "host_us": 5.0, "sync_us": 9.0, "fixed_us": 4.0}],
                "steps": 20, "syncs_per_step": 1, "fixed_held": True, "drained_steps": 20}
    monkeypatch.setattr(timeline, "measure", measure)
    now = [0.0]

    def sleep(s):
        now[0] += s
    # the try's own wait (1.0), then: fast before a chunk (1.0); slow after it (2.0); slow before
    # the next (2.0, 2.0), waited for until fast (1.0); the try's end (1.0)
    h = HostState(read=iter([1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0]).__next__, floor=1.0,
                  clock=lambda: now[0], sleep=sleep)
    got = audit._timeline(None, 100.0, h, "fast")
    assert asked == [True, False, True] and got["fixed_held"] and got["tries"] == 1
    assert h.focus_blocks == 2 and now[0] > 0      # the try's wait and the one chunk that waited
