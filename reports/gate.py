"""The regression gate: judges a change on process-level noise, not on rounds of one process.

Within one process the rounds are tight, so a rank test over rounds calls any between-process
offset significant. The unit of replication is the worker process (bench.measure.workers): per row each
run has one value per worker (the worker's median; for eager rows with a baseline, its median
paired ratio to the baseline, so a slower host moves both and cancels).

  SLOWER / FASTER  the change of the medians over workers exceeds the row's noise floor, which is
                   at least `threshold` and SPREAD_MULT x the larger between-worker spread of the
                   two runs, AND the workers agree: every new worker lies beyond every base worker
                   (complete separation) or a Mann-Whitney U test on worker values gives p < alpha;
  KERNEL CHANGED   would be SLOWER or FASTER, but the device kernels differ between the runs
                   under a fixed plan rule (PICK CHANGED, information only, where the plan is
                   a timing race: autotune may pick another near-tied kernel on any GPU);
  UNSURE           past the noise floor but the workers overlap; or an eager row of a run marked
                   host-unstable, or timed in another host state (fast vs slow) than its base;
  SAME             within the noise floor ("noise-limited: detects >= N %" when that floor is
                   above the threshold; eager rows timed in the slow host state have a floor of
                   at least SLOW_EAGER_THRESHOLD).
With one worker on one side only, the other side's between-worker spread sets the noise floor, and
a change must lie beyond all its workers and pass the per-round test; even then a side of one
process is never SLOWER or FASTER (UNSURE at most). Runs with one process on both sides fall back
to the per-round test, and say so.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from cudnn_hostbench.bench.measure import trust

# The floors come from four full runs on the H200 (two A/A pairs on two machine starts, compared
# pairwise: docs/measurements.md). Eager 7 %: fast-state trap ratios agreed to 5 %. Graph and
# device 4 %: p99 of the changes 3.6-4.5 %. Host (build-time) rows are timed without the host
# gate and moved by up to 52 % (p90 38 %): only a change of half again is judged.
THRESHOLD = {"eager": 0.07, "graph": 0.04, "device": 0.04, "host": 0.50}
# graph/device work of 100 µs or more per call runs power-capped, and its clock differs between
# machine starts: such rows moved by up to 5.1 % between sessions (ceiling/t256h4096i11008)
HEAVY_US, HEAVY_THRESHOLD = 100.0, 0.06
# eager rows timed in the host's slow state on either side: the slow state is not one level (its
# sentinel ranges 1.4-3x the floor), and such rows moved by up to 46 % (p99) between A/A runs
# with tight workers inside each run. Within this floor they are SAME; past it only UNSURE.
SLOW_EAGER_THRESHOLD = 0.12
SPREAD_MULT = 1.5
ALPHA = 0.01
# Probes added after that calibration, from their same-start pairs (aa/run1.json against run.json,
# and the framework pair in the history export; docs/compare.md "Floors per probe"): about 1.3x the
# largest change between the runs of one start, where that passes the mode's floor. Decode SDPA's
# eager ratio follows the host's speed: 21-30 % between fresh processes (torch's SDPA path is about
# twice as host-bound as cuDNN's), so it is judged only past 30 %.
PROBE_THRESHOLD = {("sdpa_decode", "eager"): 0.30, ("sdpa_decode", "graph"): 0.07,
                   ("pack_size", "eager"): 0.12, ("registration", "eager"): 0.10, ("registration", "graph"): 0.06}
# One run against one run only (compare, and the history's one-earlier-run fallback): the same rule
# on every same-start pair of measurement 3 with every eager row on 3 or more processes in the fast
# state on both sides (2026-12-01: S5's reference pair, S7's three runs, P1 and P2; docs/compare.md).
# Largest change: engine 8.8 % (plan_12 at 256, P2: 0.868-0.891x, then 0.784-0.824x), execute
# 10.6 %, set_stream 8.8 %, registration 7.6 %, wrapper 6.2 %. A history's median over many runs is
# steadier than one run: its check keeps the mode's floor and its own scale.
PAIRWISE_THRESHOLD = {**PROBE_THRESHOLD, ("engine", "eager"): 0.115, ("execute", "eager"): 0.14,
                      ("set_stream", "eager"): 0.115, ("wrapper", "eager"): 0.08}
# Rows whose eager ratio follows the host's and the GPU's speed at once (measurement 3, five runs on
# three machine starts, 15 processes: docs/measurements.md): ceiling's naive step (7 GEMMs of about
# 25 µs, each behind about 30 µs of wrapper Python) 1.04-1.43x torch_only; registration's graph replay
# of one call against torch.mm's eager call 0.25-0.32x. Calibrated on the runs it is checked on: a
# floor to re-derive as the history grows.
VARIANT_THRESHOLD = {("ceiling", "naive", "eager"): 0.25, ("registration", "graphed", "eager"): 0.25}
# The same rows between two machine starts (runs of measurement 3 on seven starts, fast state, 14
# runs: docs/measurements.md 2026-12-01 15:50-16:15): each start's host runs torch's Python at its own
# speed, and these ratios set a Python-heavy call against a lighter one. Largest change between any
# two runs: registration graphed 26.6 % (0.252-0.319x), ceiling naive 34.4 % (1.04-1.40x), decode
# SDPA 32.1 % (b16h8s1024d128 padded); within one start they moved 6-7 %. 1.3x that, as above,
# and only where the two runs are of different starts (compare.cross_floor).
CROSS_START_THRESHOLD = {("ceiling", "naive", "eager"): 0.45, ("registration", "graphed", "eager"): 0.35,
                         ("sdpa_decode", "*", "eager"): 0.42}


# a power-capped replay follows the GPU's power state (H200, one start, two runs: measurement/4096
# graph 179-190 µs, then 198-200 µs; its device rows 173.6 vs 174.0)
POWER_NOTE = "GPU clock dropped on kept rounds (⚑c): heavy replays follow the power state; the device row judges the kernels"


def power_bound(mode: str, clock_drop: bool, per_call_us: float) -> bool:
    """A heavy graph replay whose GPU clock dropped on kept rounds: UNSURE at most, in the pairwise
    gate and in the history check alike."""
    return mode == "graph" and clock_drop and per_call_us >= HEAVY_US


def cross_start_threshold(probe: str, variant: str, mode: str) -> float:
    """A row's floor between two machine starts where its eager ratio follows each host's speed, else 0."""
    return CROSS_START_THRESHOLD.get((probe, variant, mode), CROSS_START_THRESHOLD.get((probe, "*", mode), 0.0))


def row_threshold(probe: str, variant: str, mode: str, pairwise: bool = True) -> float | None:
    """A row's own floor (per variant, else per probe), or None for its mode's; `pairwise`: one run
    against one run (the wider per-probe floors), else against a history's median."""
    by_probe = PAIRWISE_THRESHOLD if pairwise else PROBE_THRESHOLD
    return VARIANT_THRESHOLD.get((probe, variant, mode), by_probe.get((probe, mode)))


def floors_text() -> str:
    """The default floors in words, for --help and the compare report."""
    return (", ".join(f"{m} {t * 100:g} %" for m, t in THRESHOLD.items())
            + f"; graph/device work of {HEAVY_US:g} µs or more {HEAVY_THRESHOLD * 100:g} %; "
            f"eager rows in the slow host state {SLOW_EAGER_THRESHOLD * 100:g} %, and never SLOWER/FASTER")


def probe_floors_text() -> str:
    """The per-probe floors in words (docs/compare.md quotes them)."""
    return ", ".join(f"{p} {m} {t * 100:g} %" for (p, m), t in PAIRWISE_THRESHOLD.items())


@dataclass
class Side:
    values: list          # worker-level values (one per worker), or [] when not measured
    rounds: list          # the raw per-round samples (or per-round ratios), for the fallback test
    host_unstable: bool = False
    kernels: frozenset = frozenset()
    host_state: str = ""      # eager: 'fast' or 'slow' host state of the kept rounds
    per_call_us: float = 0.0  # the record's own median, µs per call: tells heavy work apart
    probe: str = ""
    variant: str = ""
    race: bool = False        # its plan is a timing race (autotune): a kernel change is a pick, not cuDNN's
    processes: int = 0        # worker processes behind the figure (0: len(values))
    clock_drop: bool = False  # the GPU clock dropped below 95 % of its usual clock on kept rounds (⚑c)

    @property
    def spread(self) -> float:
        return trust.relative_spread(self.values) or 0.0


def floor_of(probe: str, variant: str, mode: str, us_a: float, us_b: float, states: tuple = ()) -> float:
    """The default pairwise floor of a row: its mode's, raised for slow-state eager rows and heavy work."""
    own = row_threshold(probe, variant, mode)
    floor = own if own is not None else THRESHOLD.get(mode, 0.05)
    if mode == "eager" and "slow" in states:
        return max(floor, SLOW_EAGER_THRESHOLD)
    if mode in ("graph", "device") and min(us_a, us_b) >= HEAVY_US:
        floor = max(floor, HEAVY_THRESHOLD)
    return floor


def _mwu(a, b) -> tuple[float, float]:
    from scipy.stats import mannwhitneyu
    r = mannwhitneyu(b, a, alternative="two-sided")
    return float(r.pvalue), float(r.statistic)


def _rounds_agree(a: Side, b: Side, change: float, alpha: float) -> tuple[float, bool]:
    """(p, significant in the direction of the change) of a rank test over the rounds."""
    p, u = _mwu(a.rounds, b.rounds)
    return p, p < alpha and (u > len(a.rounds) * len(b.rounds) / 2) == (change > 0)


def judge(a: Side, b: Side, mode: str, threshold: float | None = None, alpha: float = ALPHA,
          min_samples: int = 5, floor_min: float = 0.0) -> tuple[str, float, float, str]:
    """(verdict, relative change of the medians over workers, p, note) for base a and new b;
    `floor_min` raises the floor (runs of two machine starts: compare.cross_floor)."""
    if not a.values or not b.values:
        return "UNMEASURED", float("nan"), float("nan"), "no samples"
    own = row_threshold(b.probe, b.variant, mode)
    thr = (own if own is not None else THRESHOLD.get(mode, 0.05)) if threshold is None else threshold
    # build-time (host) rows are host-bound like eager ones, and say their host state since
    # measurement 3 (H200: deserialize 0.25 ms fast, 0.47 ms slow)
    slow = mode in ("eager", "host") and "slow" in (a.host_state, b.host_state)
    # the least change this row can be judged on
    floor = thr if threshold is not None else floor_of(b.probe, b.variant, mode, a.per_call_us, b.per_call_us,
                                                      (a.host_state, b.host_state))
    floor = max(floor, floor_min)
    ma, mb = statistics.median(a.values), statistics.median(b.values)
    change = mb / ma - 1 if ma else float("nan")
    if a.values == b.values and a.rounds == b.rounds:
        return "SAME", 0.0, 1.0, "identical samples"
    kern = ""
    if a.kernels and b.kernels and a.kernels != b.kernels:
        kern = f"kernels: base {', '.join(sorted(a.kernels))}; new {', '.join(sorted(b.kernels))}"
        if a.race or b.race:    # an autotune race picked another plan: information, not cuDNN's change
            kern = "autotune pick changed (information): " + kern
    # every new worker beyond every base worker, in the direction of the change
    beyond = min(b.values) > max(a.values) if change > 0 else max(b.values) < min(a.values)
    if len(a.values) >= 2 or len(b.values) >= 2:
        noise = max(floor, SPREAD_MULT * max(a.spread, b.spread))
    if len(a.values) >= 2 and len(b.values) >= 2:
        p, _ = _mwu(a.values, b.values)
        agree, how = beyond or p < alpha, "workers overlap"
    elif len(a.values) >= 2 or len(b.values) >= 2:
        # one process on one side: the other side's workers are what is known of the noise between
        # processes (rounds of one process are tight and would call any process offset significant);
        # a change needs both: beyond every worker of the other side, and the per-round test
        p, agree = float("nan"), False
        if beyond and len(a.rounds) >= min_samples and len(b.rounds) >= min_samples:
            p, agree = _rounds_agree(a, b, change, alpha)
        how = "one process on one side: not beyond the other side's workers, or the rounds overlap"
    else:  # one process a side: the per-round test is all there is
        if len(a.rounds) < min_samples or len(b.rounds) < min_samples:
            return "UNSURE", change, float("nan"), f"too few samples (< {min_samples} a side)"
        noise = floor
        p, agree = _rounds_agree(a, b, change, alpha)
        how = "single process: per-round test not significant"
    note = f"noise-limited: detects >= {noise * 100:.0f} %" if noise > thr else ""
    if not abs(change) > noise:
        return "SAME", change, p, "; ".join(x for x in (note, kern) if x)
    if kern and (a.race or b.race):
        return "PICK CHANGED", change, p, kern
    if mode == "eager" and (a.host_unstable or b.host_unstable):
        return "UNSURE", change, p, "host-unstable run: eager rows are not judged"
    if mode in ("eager", "host") and a.host_state and b.host_state and a.host_state != b.host_state:
        return "UNSURE", change, p, f"host state differs ({a.host_state} vs {b.host_state})"
    if not agree:
        return "UNSURE", change, p, "; ".join(x for x in (how, note) if x)
    if slow:
        return "UNSURE", change, p, "slow host state: its eager figures drift between processes; judge runs in the fast state"
    if power_bound(mode, a.clock_drop or b.clock_drop, min(a.per_call_us, b.per_call_us)):
        return "UNSURE", change, p, POWER_NOTE
    one = min(a.processes or len(a.values), b.processes or len(b.values))
    if one < 2:
        return "UNSURE", change, p, "one process on a side: never SLOWER or FASTER"
    if kern:
        return "KERNEL CHANGED", change, p, kern
    return ("SLOWER" if change > 0 else "FASTER"), change, p, note
