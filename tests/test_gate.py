"""The reproducibility machinery on CPU: host-state sentinel, worker merge, gate, KERNEL CHANGED."""
import contextlib
import random

import pytest

from cudnn_hostbench.bench.measure import hoststate, timing, trust
from cudnn_hostbench.bench.measure.gpustate import Clocks
from cudnn_hostbench.bench.measure.hoststate import HostState
from cudnn_hostbench.bench.measure.records import Record, Run
from cudnn_hostbench.bench.measure.workers import merge_fingerprints, merge_records
from cudnn_hostbench.reports import compare as cmp
from cudnn_hostbench.reports import gate


# -- sentinel ------------------------------------------------------------------------------------
class Bistable:
    """A synthetic host: fast (1.0 µs) or slow (2.0 µs) by a fixed schedule of state lengths."""

    def __init__(self, schedule, jitter=0.02, seed=0):
        self.schedule = schedule      # [(state, seconds), ...], repeated
        self.t = 0.0
        self.rng = random.Random(seed)
        self.jitter = jitter

    def state(self):
        period = sum(s for _, s in self.schedule)
        t = self.t % period
        for st, s in self.schedule:
            if t < s:
                return st
            t -= s
        return self.schedule[-1][0]

    def read(self):
        self.t += 0.001
        base = 1.0 if self.state() == "fast" else 2.0
        return base * (1 + self.rng.uniform(-self.jitter, self.jitter))

    def clock(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_warm_learns_the_fast_floor_and_waits_for_it():
    h = Bistable([("slow", 1.0), ("fast", 0.2), ("slow", 7.0), ("fast", 0.5)])
    hs = HostState(read=h.read, clock=h.clock, sleep=h.sleep, floor=None)
    said = []
    assert hs.warm(learn_s=1.5, hold_s=0.25, max_s=20, say=said.append)
    assert hs.floor == pytest.approx(1.0, rel=0.03) and h.state() == "fast"
    assert any("waiting for the fast state" in s for s in said)   # it said so while it waited
    assert not hs.unstable


def test_a_worker_with_a_known_floor_learns_briefly():
    """A later worker starts from the floor an earlier one learned: its warm-up does not spend
    seconds learning it again (on the H200 each later worker spent its whole 2.5 s)."""
    h = Bistable([("fast", 5.0)])
    hs = HostState(read=h.read, clock=h.clock, sleep=h.sleep, floor=1.0)
    assert hs.warm(learn_s=2.0, hold_s=0.25, max_s=1.0, say=lambda m: None)
    assert hs.waited_s < 0.6 and hs.floor <= 1.0


def test_a_host_that_never_holds_its_floor_says_so():
    h = Bistable([("slow", 1.0), ("fast", 0.05)])   # fast spells too short to hold 0.25 s
    hs = HostState(read=h.read, clock=h.clock, sleep=h.sleep, floor=None)
    said = []
    assert not hs.warm(learn_s=2.0, hold_s=0.25, max_s=5, say=said.append)
    assert hs.held is False and "never held its fast-state floor" in said[-1]
    assert hs.summary()["held_floor"] is False


def test_eager_cycles_in_the_slow_state_are_discarded_and_redone():
    h = Bistable([("fast", 0.1), ("slow", 0.05)])
    hs = HostState(read=h.read, clock=h.clock, sleep=h.sleep, floor=1.0)
    watch = timing.Watch(host=hs)
    slow_now = lambda: h.state() == "slow"  # noqa: E731
    # a variant that is 2x slower while the host is slow (as Python-heavy paths are)
    fns = {"a": lambda: None, "b": lambda: None}
    seen = {"a": [], "b": []}

    def fake_round(fn, n, sync, clock=None):
        h.t += 0.004
        return 2.0 if slow_now() else 1.0

    opt = timing.Options(rounds=10, warmup_rounds=1)
    orig = timing.eager_round
    timing.eager_round = fake_round
    try:
        res = timing.measure_eager(fns, lambda: None, opt, watch=watch)
    finally:
        timing.eager_round = orig
    for n in fns:
        seen[n] = res[n][0]
    meta = watch.meta()
    assert meta["discarded"].get("host_slow", 0) > 0
    assert len(seen["a"]) == 10 and all(x == pytest.approx(1e6) for x in seen["a"])
    assert not meta["fell_back"]


def test_a_host_stuck_in_its_slow_state_keeps_slow_cycles_and_says_so():
    hs = HostState(read=lambda: 2.0, floor=1.0)   # always slow
    watch = timing.Watch(host=hs)
    opt = timing.Options(rounds=4, warmup_rounds=0, max_round_factor=2)
    res = timing.measure_eager({"a": lambda: None}, lambda: None, opt, watch=watch)
    assert len(res["a"][0]) == 4 and watch.meta()["host_state"] == "slow" and not watch.meta()["fell_back"]


def test_too_few_clean_cycles_keep_all_and_say_so():
    seq = iter([1.0, 2.0] * 50)     # every cycle straddles a switch
    hs = HostState(read=lambda: next(seq), floor=1.0)
    watch = timing.Watch(host=hs)
    opt = timing.Options(rounds=4, warmup_rounds=0, max_round_factor=2)
    res = timing.measure_eager({"a": lambda: None}, lambda: None, opt, watch=watch)
    assert len(res["a"][0]) == 8 and watch.meta()["fell_back"]
    assert watch.meta()["discarded"]["mixed"] == 8


def _gated_run(h, budget, hs=None, focus_budget=None):
    hs = hs or HostState(read=h.read, clock=h.clock, sleep=h.sleep, floor=1.0)
    hs.gate_budget_s = budget
    watch = timing.Watch(host=hs)

    def fake_round(fn, n, sync, clock=None):
        h.t += 0.004
        return 2.0 if h.state() == "slow" else 1.0

    orig, timing.eager_round = timing.eager_round, fake_round
    try:
        if focus_budget is None:
            block = contextlib.nullcontext()
        else:
            hs.focus_budget_s = focus_budget
            block = hs.focused()
        with block:
            res = timing.measure_eager({"a": lambda: None, "b": lambda: None}, lambda: None,
                                       timing.Options(rounds=10, warmup_rounds=1), watch=watch)
    finally:
        timing.eager_round = orig
    return hs, watch.meta(), res


def test_a_mostly_slow_host_still_gives_fast_figures_when_cycles_wait_for_the_fast_state():
    slow_mostly = [("slow", 0.8), ("fast", 0.2)]
    hs, meta, res = _gated_run(Bistable(slow_mostly), budget=30.0)
    assert meta["host_state"] == "fast" and not meta["fell_back"]
    assert all(x == pytest.approx(1e6) for x in res["a"][0])
    assert 0 < hs.gate_s < 30 and hs.summary()["gate_s"] == round(hs.gate_s, 2)
    # without the gate the same host hands over its slow state
    hs0, meta0, res0 = _gated_run(Bistable(slow_mostly), budget=None)
    assert meta0["host_state"] == "slow" and hs0.gate_s == 0


def test_a_long_slow_stretch_rests_the_gate_instead_of_spending_its_budget():
    hs, meta, res = _gated_run(Bistable([("slow", 50.0), ("fast", 0.3)]), budget=10.0)
    assert hs.gate_timeouts >= 1 and hs.gate_s < 10.0   # waited max_s, then rested
    assert meta["host_state"] == "slow" and len(res["a"][0]) == 10


def test_a_focus_block_waits_through_a_slow_stretch_that_rests_the_plain_gate():
    # a 2.5 s slow stretch: the plain gate gives up after 1 s and rests, timing the block slow;
    # a focus block (a headline size) waits it out from its own budget and is timed fast
    stretch = [("slow", 2.5), ("fast", 0.5)]
    hs, meta, _ = _gated_run(Bistable(stretch), budget=10.0)
    assert meta["host_state"] == "slow" and hs.gate_timeouts == 1
    hs, meta, res = _gated_run(Bistable(stretch), budget=10.0, focus_budget=12.0)
    assert meta["host_state"] == "fast" and all(x == pytest.approx(1e6) for x in res["a"][0])
    s = hs.summary()
    assert s["gate_s"] == 0 and 2.0 < s["focus_s"] < 2.6 and s["focus_blocks"] == 1 and s["focus_timeouts"] == 0
    assert hs.gating() and hs.gate_timeouts == 0   # outside the block: the plain gate, unspent, not resting


def test_a_focus_block_waits_at_most_its_share_and_the_budget_bounds_them_all():
    h = Bistable([("slow", 100.0), ("fast", 0.5)])
    hs = HostState(read=h.read, clock=h.clock, sleep=h.sleep, floor=1.0)
    _, meta, res = _gated_run(h, budget=None, hs=hs, focus_budget=6.0)
    assert hs.focus_s == pytest.approx(hoststate.FOCUS_BLOCK_S, abs=0.05) and hs.focus_timeouts == 1
    assert meta["host_state"] == "slow" and len(res["a"][0]) == 10   # timed anyway, and says so
    _gated_run(h, budget=None, hs=hs, focus_budget=6.0)               # the second gets what is left
    assert hs.focus_s == pytest.approx(6.0, abs=0.05) and hs.focus_blocks == 2
    _gated_run(h, budget=None, hs=hs, focus_budget=6.0)               # the third does not wait
    assert hs.focus_s == pytest.approx(6.0, abs=0.05) and hs.focus_timeouts == 2


def test_a_spent_gate_budget_stops_waiting():
    h = Bistable([("slow", 0.9), ("fast", 0.1)])
    hs, meta, res = _gated_run(h, budget=0.5)
    assert hs.gate_s == pytest.approx(0.5, abs=0.01) and not hs.gating()
    assert len(res["a"][0]) == 10


class FakeClocks(Clocks):
    def __init__(self, seq):
        self.seq, self.top, self.error = list(seq), 0, None

    def sm_mhz(self):
        mhz = self.seq.pop(0) if self.seq else self.seq_end
        self.top = max(self.top, mhz)
        return mhz

    seq_end = 1980


def _graph_with(clocks, rounds=4):
    watch = timing.Watch(clocks=clocks)
    orig = timing.replay_us
    timing.replay_us = lambda cap, stream, during=None: (during(), 2.0)[1]
    try:
        res = timing.measure_graph({"a": object()}, None, timing.Options(rounds=rounds, warmup_rounds=0), watch=watch)
    finally:
        timing.replay_us = orig
    return res, watch.meta()


def test_graph_rounds_with_a_clock_drop_during_the_work_are_discarded():
    res, meta = _graph_with(FakeClocks([1980, 1980, 1500, 1980, 1700, 1980]))
    assert len(res["a"]) == 4 and meta["discarded"] == {"clock_drop": 2}
    assert min(meta["sm_mhz"]) == 1980


def test_heavy_work_that_runs_power_capped_is_not_a_clock_drop():
    # a 4096^3 matmul on the H200 runs at ~1890 MHz throughout; small work earlier reached 1980
    clocks = FakeClocks([1890] * 8)
    clocks.top = 1980
    res, meta = _graph_with(clocks)
    assert len(res["a"]) == 4 and not meta["discarded"] and not meta["fell_back"]


# -- worker merge --------------------------------------------------------------------------------
def _worker_records(seed, host=1.0, ratio=1.5, kernel="nvjet_tst", rounds=10, flags=()):
    rng = random.Random(seed)
    drift = [rng.uniform(0.97, 1.03) for _ in range(rounds)]
    out = []
    for mode in ("eager", "graph", "device"):
        h = host if mode == "eager" else 1.0
        base = [10.0 * h * d * rng.uniform(0.99, 1.01) for d in drift]
        trap = [b * ratio * rng.uniform(0.99, 1.01) for b in base]
        kn = [f"{kernel} x1"] if mode == "device" else []
        out.append(Record("execute", "torch_mm", "256", mode, role="baseline", samples=base, baseline="torch_mm",
                          kernel_names=["nvjet x1"] if mode == "device" else [], flags=list(flags)))
        out.append(Record("execute", "generic", "256", mode, role="trap", samples=trap, baseline="torch_mm",
                          kernel_names=kn, rounds_discarded={"host_slow": 2} if mode == "eager" else {},
                          flags=list(flags)))
    return out


def _run(seed, hosts=(1.0, 1.0, 1.0), unstable=False, **kw):
    per = [_worker_records(seed * 10 + i, host=h, **kw) for i, h in enumerate(hosts)]
    fps = [{"gpu_name": "NVIDIA H200", "host_state": {"floor_us": 1.0 + 0.01 * i, "unstable": unstable}}
           for i in range(len(hosts))]
    fp = merge_fingerprints(fps, wall_s=100.0)
    return Run(f"run{seed}.json", fp, merge_records(per, fp["host_state"]["unstable"]))


def test_merge_keeps_each_workers_median_and_ratio_and_reports_the_median_over_workers():
    run = _run(1, hosts=(1.0, 1.3, 1.0))
    r = run.find("execute", "generic", "256", "eager")
    assert len(r.workers) == 3 and len(r.samples) == 30
    assert r.ratio.median == pytest.approx(1.5, rel=0.02)      # host speed cancels in ratios
    assert r.summary().median == pytest.approx(sorted(w["median"] for w in r.workers)[1])
    assert r.rounds_discarded == {"host_slow": 6} and "discarded" in r.flags
    assert r.spread == pytest.approx(trust.relative_spread([w["ratio"] for w in r.workers]))
    tm = run.find("execute", "torch_mm", "256", "eager")
    assert tm.spread > 0.2 and "wide_spread" in tm.flags   # absolute µs: one worker's host was slow
    assert run.fingerprint["workers"] == 3 and run.fingerprint["host_state"]["floor_us"] == 1.0


def test_merge_names_workers_that_ran_different_kernels():
    per = [_worker_records(1), _worker_records(2), _worker_records(3, kernel="sm90_xmma")]
    merged = {r.key: r for r in merge_records(per)}
    d = merged[("execute", "generic", "256", "device")]
    assert d.kernel_names == ["nvjet_tst x1"] and "workers ran different kernels" in d.note


# -- the gate --------------------------------------------------------------------------------
def test_a_a_between_processes_with_a_host_offset_is_all_same():
    # what the sentinel leaves: a few % between processes
    a = _run(1, hosts=(1.0, 1.03, 1.0))
    b = _run(2, hosts=(1.02, 1.0, 1.04))
    df = cmp.compare(a, b)
    assert set(df.verdict) == {"SAME"}, df.to_string()
    eager_trap = df[(df.variant == "generic") & (df["mode"] == "eager")].iloc[0]
    assert eager_trap.unit == "x torch_mm" and eager_trap.base_abs > 0


def test_a_slower_host_moves_only_the_baselines_absolute_eager_figure():
    a = _run(1, hosts=(1.0, 1.03, 1.0))
    b = _run(2, hosts=(1.6, 1.5, 1.7))   # a slower host in every worker of the second run
    df = cmp.compare(a, b)
    judged = df[df.verdict != "SAME"]
    assert list(zip(judged.variant, judged["mode"], judged.verdict)) == [("torch_mm", "eager", "UNSURE")]
    assert "absolute eager" in judged.note.iloc[0]
    df = cmp.compare(a, b, absolute=True)
    judged = df[df.verdict != "SAME"]
    assert list(zip(judged.variant, judged["mode"], judged.verdict)) == [
        ("torch_mm", "eager", "SLOWER"), ("generic", "eager", "SLOWER")]


@pytest.mark.parametrize("mode,factor", [("graph", 1.05), ("device", 1.05), ("eager", 1.16)])
def test_an_injected_slowdown_is_caught_alone(mode, factor):
    a, b = _run(1), _run(2)
    r = b.find("execute", "generic", "256", mode)
    r.samples = [x * factor for x in r.samples]
    for w in r.workers:
        w["median"] *= factor
        if w["ratio"] is not None:
            w["ratio"] *= factor
    df = cmp.compare(a, b)
    bad = df[df.verdict.isin(["SLOWER", "FASTER", "UNSURE", "KERNEL CHANGED"])]
    assert list(zip(bad.variant, bad["mode"], bad.verdict)) == [("generic", mode, "SLOWER")], df.to_string()


def test_noise_limited_rows_say_what_they_can_detect():
    a = _run(1, hosts=(1.0, 1.0, 1.0))
    b = _run(2, hosts=(1.0, 1.0, 1.0))
    for run in (a, b):
        r = run.find("execute", "generic", "256", "graph")
        for w, f in zip(r.workers, (0.9, 1.0, 1.1)):
            w["median"] *= f
    v, change, p, note = gate.judge(
        gate.Side([1.0, 1.1, 0.9], []), gate.Side([1.08, 1.12, 1.0], []), "graph")
    assert v == "SAME" and note.startswith("noise-limited: detects >= 30 %")
    df = cmp.compare(a, b)
    row = df[(df.variant == "generic") & (df["mode"] == "graph")].iloc[0]
    assert row.verdict == "SAME" and "noise-limited" in row.note


def test_one_process_against_several_is_judged_on_their_spread_not_on_rounds():
    # the reference pair's decode-SDPA row: one worker (0.383) against three (0.398-0.449), with
    # tight rounds inside each process; the rounds alone called +13.8 % SLOWER
    tight = [0.383 * (1 + 0.002 * i) for i in range(10)]
    one, three = gate.Side([0.383], tight), gate.Side([0.398, 0.436, 0.449], [x * 1.14 for x in tight])
    v, change, p, note = gate.judge(one, three, "eager")
    assert v == "SAME" and 0.13 < change < 0.14 and note.startswith("noise-limited: detects >= 18 %")
    # a change past that spread, beyond every worker of the other side: a side of one process is
    # never SLOWER or FASTER (issue 25), UNSURE at most
    v, _, _, note = gate.judge(gate.Side([0.30], tight), three, "eager")
    assert v == "UNSURE" and "one process on a side" in note
    # a single value inside the other side's workers is never a change
    v, change, _, _ = gate.judge(gate.Side([0.40], tight), gate.Side([0.36, 0.46, 0.47], []), "eager")
    assert v == "SAME" and change > 0.07


def test_a_kernel_change_under_a_race_rule_is_an_autotune_pick_not_a_kernel_change():
    a = gate.Side([1.0, 1.01, 1.0], [], kernels=frozenset({"knob_41"}), race=True)
    b = gate.Side([1.2, 1.21, 1.2], [], kernels=frozenset({"knob_36"}), race=True)
    v, _, _, note = gate.judge(a, b, "device")
    assert v == "PICK CHANGED" and note.startswith("autotune pick changed (information)")
    v, *_ = gate.judge(gate.Side(a.values, [], kernels=a.kernels), gate.Side(b.values, [], kernels=b.kernels), "device")
    assert v == "KERNEL CHANGED"


def test_floors_of_the_probes_added_since_the_calibration():
    # decode SDPA's eager ratio follows the host's speed (21-30 % between fresh processes)
    assert gate.floor_of("sdpa_decode", "cudnn_padded", "eager", 20, 20) == 0.30
    three = lambda x: gate.Side([x, x * 1.01, x * 0.99], [], probe="sdpa_decode")  # noqa: E731
    assert gate.judge(three(0.40), three(0.40 * 1.25), "eager")[0] == "SAME"
    assert gate.judge(three(0.40), three(0.40 * 1.40), "eager")[0] == "SLOWER"
    assert gate.floor_of("pack_size", "pinned", "eager", 10, 10) == 0.12     # fw pair: p5 pinned +9.0 %
    assert gate.floor_of("churn", "reuse", "eager", 10, 10) == gate.THRESHOLD["eager"]
    # same-start pairs of measurement 3 (P2: engine plan_12 256 moved 8.8 % with every worker apart)
    assert gate.floor_of("engine", "plan_12", "eager", 10, 10) == 0.115
    assert gate.floor_of("execute", "generic", "eager", 10, 10) == 0.14
    # against a history's median the check keeps the mode's floor for these
    assert gate.row_threshold("engine", "plan_12", "eager", pairwise=False) is None
    assert gate.row_threshold("sdpa_decode", "cudnn_padded", "eager", pairwise=False) == 0.30


def test_a_host_unstable_run_judges_no_eager_row():
    a = _run(1)
    b = _run(2, unstable=True)
    r = b.find("execute", "generic", "256", "eager")
    for w in r.workers:
        w["ratio"] *= 1.3
    df = cmp.compare(a, b)
    row = df[(df.variant == "generic") & (df["mode"] == "eager")].iloc[0]
    assert row.verdict == "UNSURE" and "host-unstable" in row.note
    assert "host_unstable" in r.flags


def test_kernel_changed_instead_of_slower():
    a = _run(1)
    b = _run(2, kernel="sm90_xmma_gemm")
    r = b.find("execute", "generic", "256", "device")
    for w in r.workers:
        w["median"] *= 1.3
    df = cmp.compare(a, b)
    row = df[(df.variant == "generic") & (df["mode"] == "device")].iloc[0]
    assert row.verdict == "KERNEL CHANGED"
    assert "nvjet_tst" in row.note and "sm90_xmma_gemm" in row.note


def test_identical_runs_are_same_even_with_single_samples():
    rec = Record("kernel_cache", "no_cache", "n8", "host", unit="ms", samples=[4.7])
    run = Run("r.json", {}, [rec])
    df = cmp.compare(run, run)
    assert list(df.verdict) == ["SAME"]


def test_trust_flags_and_summary_line():
    run = _run(1, hosts=(1.0, 1.4, 1.0))
    line = trust.summary_line(run)
    assert "3 worker(s)" in line and "discarded (6 host slow" in line and "flagged" in line
    flagged = run.find("execute", "torch_mm", "256", "eager")
    assert trust.badge(flagged) == "⚑w"


def test_records_judged_against_a_stale_floor_are_flagged_at_merge():
    from cudnn_hostbench.bench.measure.workers import merge_runs
    runs = []
    for i, sentinel in enumerate((1.9, 1.0, 1.02)):   # worker 1 learned its floor while slow
        recs = _worker_records(i)
        for r in recs:
            r.sentinel_us = sentinel if r.mode == "eager" else None
            r.host_state = "fast" if r.mode == "eager" else ""
        runs.append(Run(f"w{i}", {"host_state": {"floor_us": sentinel, "unstable": False}}, recs))
    merged, fp = merge_runs(runs)
    r = next(m for m in merged if m.key == ("execute", "generic", "256", "eager"))
    assert "host_unstable" not in r.flags      # one stale worker of three: the majority is clean
    runs[1].records = [Record(**{**vars(x), "sentinel_us": 1.9}) if x.mode == "eager" else x for x in runs[1].records]
    merged, _ = merge_runs(runs)
    r = next(m for m in merged if m.key == ("execute", "generic", "256", "eager"))
    assert "host_unstable" in r.flags


def test_one_host_state_per_figure_and_compare_only_like_with_like():
    per = [_worker_records(i) for i in range(3)]
    for i, recs in enumerate(per):
        for r in recs:
            if r.mode == "eager":
                r.host_state = "slow" if i == 2 else "fast"
    merged = {r.key: r for r in merge_records(per)}
    g = merged[("execute", "generic", "256", "eager")]
    assert g.host_state == "fast" and len(g.workers) == 2 and "workers [3]" in g.note
    assert g.rounds_discarded["worker_other_host_state"] == 1
    for i, recs in enumerate(per):   # one fast worker of three is enough for a fast figure
        for r in recs:
            if r.mode == "eager":
                r.host_state = "fast" if i == 2 else "slow"
    g = {r.key: r for r in merge_records(per)}[("execute", "generic", "256", "eager")]
    assert g.host_state == "fast" and [w["worker"] for w in g.workers] == [3] and "workers [1, 2]" in g.note
    a, b = _run(1), _run(2)
    for r in b.records:
        if r.mode == "eager":
            r.host_state = "slow"
            r.flags = trust.flags_for(r)
    for r in a.records:
        if r.mode == "eager":
            r.host_state = "fast"
    r = b.find("execute", "generic", "256", "eager")
    assert "slow_host" in r.flags and trust.badge(r).endswith("s")
    for w in r.workers:
        w["ratio"] *= 1.2
    df = cmp.compare(a, b)
    row = df[(df.variant == "generic") & (df["mode"] == "eager")].iloc[0]
    assert row.verdict == "UNSURE" and "host state differs (fast vs slow)" in row.note


def test_slow_state_eager_rows_are_same_or_unsure_never_slower():
    a = gate.Side([1.50, 1.52, 1.51], [], host_state="slow")
    b = gate.Side([1.80, 1.82, 1.81], [], host_state="slow")    # +20 %, workers separate
    v, change, _, note = gate.judge(a, b, "eager")
    assert v == "UNSURE" and "slow host state" in note and change == pytest.approx(0.2, abs=0.01)
    v, _, _, note = gate.judge(a, gate.Side([1.60, 1.61, 1.62], [], host_state="slow"), "eager")
    assert v == "SAME" and "detects >= 12 %" in note                # within the slow floor
    fast = gate.Side([1.50, 1.52, 1.51], [], host_state="fast")
    assert gate.judge(fast, gate.Side([1.65, 1.66, 1.67], [], host_state="fast"), "eager")[0] == "SLOWER"


def test_heavy_power_capped_rows_have_a_wider_floor_than_light_ones():
    light = lambda xs: gate.Side(xs, [], per_call_us=2.5)     # noqa: E731
    heavy = lambda xs: gate.Side(xs, [], per_call_us=200.0)   # noqa: E731
    base, new = [200.0, 200.5, 201.0], [210.0, 210.5, 211.0]     # +5 %, workers separate
    assert gate.judge(light(base), light(new), "graph")[0] == "SLOWER"
    v, _, _, note = gate.judge(heavy(base), heavy(new), "graph")
    assert v == "SAME" and "detects >= 6 %" in note
    assert gate.judge(heavy(base), heavy([x * 1.08 for x in base]), "device")[0] == "SLOWER"


def test_build_time_rows_are_judged_only_past_half_again():
    base = gate.Side([10.0, 10.2, 10.1], [])
    assert gate.judge(base, gate.Side([13.0, 13.1, 13.2], []), "host")[0] == "SAME"       # +30 %
    assert gate.judge(base, gate.Side([20.0, 20.1, 20.2], []), "host")[0] == "SLOWER"     # 2x


def test_a_worker_without_a_steady_host_state_is_left_out_when_most_had_one():
    per = [_worker_records(i) for i in range(3)]
    for i, recs in enumerate(per):
        for r in recs:
            if r.mode == "eager":
                r.host_state = "fast" if i else ""
                if i == 0:
                    r.flags = ["host_unstable"]
                    r.samples = [x * 1.3 for x in r.samples]
    merged = merge_records(per)
    r = next(m for m in merged if m.key == ("execute", "generic", "256", "eager"))
    assert [w["worker"] for w in r.workers] == [2, 3] and "host_unstable" not in r.flags
    assert r.rounds_discarded.get("worker_no_host_state") == 1 and "found no steady host state" in r.note


def test_a_heavy_replay_whose_clock_dropped_and_a_build_row_in_another_host_state_are_unsure():
    """Measured on one H200 start: measurement/4096 graph 179-190 µs in one run, 198-200 µs in the
    next (⚑c: the clock dropped on kept rounds), its device rows 173.6 and 174.0; build-time rows
    say their host state since measurement 3, and one timed slow is not compared with one fast."""
    from cudnn_hostbench.reports.gate import Side, judge
    a = Side([179.4, 190.4, 181.5], [180.0] * 16, per_call_us=181.5, clock_drop=True)
    b = Side([199.9, 198.1, 200.1], [199.0] * 25, per_call_us=199.9, clock_drop=True)
    verdict, change, _, note = judge(a, b, "graph")
    assert verdict == "UNSURE" and change > 0.09 and "clock dropped" in note
    assert judge(Side([179.4, 190.4, 181.5], [180.0] * 16, per_call_us=181.5),
                 Side([199.9, 198.1, 200.1], [199.0] * 25, per_call_us=199.9), "graph")[0] == "SLOWER"
    fast = Side([0.25, 0.24, 0.25], [0.25] * 24, host_state="fast")
    slow = Side([0.47, 0.52, 0.50], [0.5] * 24, host_state="slow")
    assert judge(fast, slow, "host")[0] == "UNSURE"
    assert judge(Side([0.25, 0.24, 0.25], [0.25] * 24), Side([0.47, 0.52, 0.50], [0.5] * 24), "host")[0] == "SLOWER"
