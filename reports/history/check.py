"""The history gate: judge one run's rows against the runs on the same history key, knowing which
machine each run ran on (reports/history/noise.py).

Per row, the history is the judged figure of the last `last` (default 30) earlier runs on the same
key that measured it (eager rows: only those timed in the same host state; runs a person excluded
are left out). Every earlier run counts, never only the newest: with one earlier run the row falls
back to the pairwise gate (reports.gate.judge), and says so; with fewer than `minimum` the row's
noise is its class's, widened for the small history.

GPU-bound rows are first divided by their run's machine factor (the whole run's shift, reported
once). Where the run's GPU has history on the key, graph and device rows are judged against that
history on the within-start scale ("same GPU"), as paired ratios to their block's baseline
(paired.py); eager and host rows, and every row of a GPU without two runs of its own, against
the median over starts on the between-start scale ("fleet"). The smallest change a row can be judged on is
    mdc = max(minimum effect of the mode, K x max(that scale, the run's own standard error))
and a change past it is SLOWER/FASTER when every worker of the run lies on the same side (else
UNSURE). The pairwise gate's host rules stay: eager rows of a host-unstable run, timed in the slow
host state, or judged on absolute µs are UNSURE at most, and so is a figure of one process. Where
the device kernels differ from the history's: KERNEL CHANGED when the plan rule is fixed, "PICK
CHANGED" (information, never a regression) when the plan is a timing race (autotune).

A change is *confirmed* by a run from another start (another machine, or the same GPU after a
reboot) that shows it too: the next such run, or for the newest run the newest such run before
it; *suspect* when that run does not show it; *replicated* when only a run of the same start
shows it (a twin replicates, it does not confirm); *new* otherwise.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import textwrap
from collections import Counter
from dataclasses import dataclass

from cudnn_hostbench.bench.measure.records import MIN_PROCESSES

from .. import gate, robust
from . import db, noise, paired, plans, sampling

DEFAULT_LAST = 30
CONFIRM_LOOKAHEAD = 5   # later runs searched for the first that measured a changed row
MIN_HISTORY = 8         # fewer earlier runs: the row's noise is its class's alone
# Multipliers of the scale; set on the leave-one-start-out check of the committed history
# (scripts/loso_check.py, docs/measurements.md): the fewest that give no false verdict there
K = 3.0
# Eager trap ratios: heavy-tailed between hosts. On two H200 starts new to the history (P1, P2),
# rebuild's, set_stream's and engine's ratios moved 6.5-7.4 % with the host's speed on the torch.mm
# baseline (P1: torch.mm eager +10 %), 3.1-3.2 x their scale; a 7 % floor at K did not hold them
K_EAGER = 3.5
K_HOST = 4.0   # build-time rows: heavy-tailed between runs (up to 52 % between A/A runs)
# µs rows: a change under this many µs per call is not judged. On the newest machine start the
# 2.6 µs torch_mm device kernels moved by -0.07 and -0.08 µs (-2.5 %, -2.9 %) in both runs while
# every heavier row stayed: a machine's floor, not software
MIN_ABS_US = 0.1
# the least change worth a verdict when the history is quiet; host (build-time) rows keep the
# pairwise gate's floor, their run-to-run swings are large and not worth a finer rule
MIN_EFFECT = {"eager": 0.03, "graph": 0.015, "device": 0.015, "host": gate.THRESHOLD["host"]}
# Against the fleet (no history of the run's own GPU) graph and device rows need more: the
# committed fleet's start-level moves on them, factors removed, reached 1.9-2.1 % at p99.5 while
# their classes' sds say 0.3-0.5 % (scripts/loso_check.py, docs/measurements.md)
MIN_EFFECT_FLEET = {**MIN_EFFECT, "graph": 0.025, "device": 0.025}
# Modes whose rows' within-start variances, on the same-GPU scale, borrow from a prior fitted to
# their class (noise.pool) rather than the pooled variance; the fleet scale keeps the pooled one.
# Not eager ratios: heavy-tailed between processes, moderated they raised 4 false verdicts in the
# leave-one-start-out check of measurement 3 and 3 in measurement 1 (pooled: none and 3)
MODERATED = ("graph", "device")
PARTIAL = 0.5   # a run holding fewer than this share of the key's probes is a partial run


@dataclass
class Verdict:
    probe: str
    variant: str
    size: str
    mode: str
    unit: str            # 'us' or 'x <baseline>'
    value: float | None
    location: float | None
    change: float
    mdc: float | None    # minimum detectable change (relative)
    n: int               # runs in the history
    verdict: str
    state: str = ""      # confirmed / replicated / suspect / new, for SLOWER/FASTER/KERNEL CHANGED
    note: str = ""
    on_ratio: bool = False
    host_state: str = ""
    scale: str = ""      # what the MDC stands on: 'same GPU', 'fleet' or 'pairwise'
    processes: int = 0   # worker processes behind this run's figure

    @property
    def row(self) -> tuple:
        return (self.probe, self.variant, self.size, self.mode)


def _usable(f: db.Figure | None, like: db.Figure) -> bool:
    return (f is not None and f.status == "ok" and f.value is not None and f.value > 0
            and f.on_ratio == like.on_ratio and (like.mode != "eager" or f.host_state == like.host_state))


def _kernels_of(hist: list[tuple[dict, db.Figure]], me: dict) -> str:
    """The kernels the history ran: its own GPU's newest where it has run there, else the most common."""
    own = [f.kernels for r, f in hist if noise.same_machine(r, me) and f.kernels]
    if own:
        return own[-1]
    ks = Counter(f.kernels for _, f in hist if f.kernels)
    return ks.most_common(1)[0][0] if ks else ""


def _pairwise(f: db.Figure, old: db.Figure, run_unstable: bool) -> tuple[str, float, str]:
    ov, nv = old.workers or [old.value], f.workers or [f.value]
    change = statistics.median(nv) / statistics.median(ov) - 1 if statistics.median(ov) else float("nan")
    floor = gate.floor_of(f.probe, f.variant, f.mode, old.median_us or 0.0, f.median_us or 0.0,
                          (old.host_state, f.host_state))
    if abs(change) <= floor:
        # within the pairwise floor: SAME whatever the rank test says (it is not run: scipy
        # costs seconds to import, more than the rest of a check)
        return "SAME", change, "within the pairwise floor"
    a = gate.Side(ov, [], False, frozenset(old.kernels.split(";")) - {""}, old.host_state, old.median_us or 0.0,
                  probe=f.probe, variant=f.variant)
    b = gate.Side(nv, [], run_unstable, frozenset(f.kernels.split(";")) - {""}, f.host_state, f.median_us or 0.0,
                  probe=f.probe, variant=f.variant, race=plans.is_race(f.plan_rule))
    v, change, _, note = gate.judge(a, b, f.mode)
    if v == "UNSURE" and "too few samples" in note and abs(change) <= gate.THRESHOLD.get(f.mode, 0.05):
        v, note = "SAME", "one process a side: within the pairwise floor"
    if f.mode == "eager" and not f.on_ratio and v in ("SLOWER", "FASTER"):
        v, note = "UNSURE", "absolute eager µs (host-bound between processes)"
    return v, change, note


class History:
    """The earlier runs of a key and what they say about each row's noise and each run's machine."""

    def __init__(self, target: dict, before: list[dict], figs: dict, minimum: int, last: int = DEFAULT_LAST):
        self.target, self.before, self.figs, self.minimum, self.last = target, before, figs, minimum, last
        self.most = max(len((r.get("probes") or "").split(",")) for r in [*before, target])
        # eager rounds a worker, read once per run (sampling.parts weighs each row's history by them)
        self.rounds = {r["id"]: sampling.rounds_of(r) for r in [*before, target]}
        self.factors = self._factors()
        self.factor = self._target_factor()
        self.pools: dict[tuple, noise.Pool] = {}
        self.parts: dict[tuple, noise.Parts] = {}
        by_class: dict[tuple, list[noise.Parts]] = {}
        for row, f in figs[target["id"]].items():
            if f.status != "ok" or f.value is None:
                continue
            logs, groups, _ = self.logs(row, f)
            if len(logs) >= 2:
                p = self.parts[row] = noise.parts(logs, groups)
                by_class.setdefault(noise.row_class(f), []).append(p)
        starts = len({noise.start_of(r) for r in before})
        for cls, ps in by_class.items():
            self.pools[cls] = noise.prior(cls, noise.pool(ps, moderate=cls[0] in MODERATED), starts)

    def _factors(self) -> dict[int, dict]:
        """Each earlier run's machine factors (by GPU-bound size class) against all earlier runs'."""
        rows: dict[tuple, list[float]] = {}
        for r in self.before:
            for row, f in self.figs[r["id"]].items():
                if _factored(f):
                    rows.setdefault(row, []).append(math.log(f.value))
        locs = {row: statistics.median(xs) for row, xs in rows.items() if len(xs) >= 2}
        return {r["id"]: noise.machine_factors(self._gpu_logs(r["id"]), locs) for r in self.before}

    def _gpu_logs(self, run_id: int) -> dict[tuple, tuple[str, str, float]]:
        return {row: (noise.size_class(f), f.kernels, math.log(f.value)) for row, f in self.figs[run_id].items()
                if _factored(f)}

    def _target_factor(self) -> dict:
        """The judged run's machine factors against the history (factors removed), {} when unknown."""
        adj: dict[tuple, list[float]] = {}
        for r in self.before:
            for row, f in self.figs[r["id"]].items():
                if _factored(f):
                    adj.setdefault(row, []).append(math.log(f.value) - noise.offset(self.factors[r["id"]], f))
        locs = {row: statistics.median(xs) for row, xs in adj.items() if len(xs) >= 2}
        logs = self._gpu_logs(self.target["id"])
        self.factor_rows = len([r for r, (cls, _, _) in logs.items() if r in locs and cls != "light"])
        return noise.machine_factors(logs, locs)

    def logs(self, row: tuple, like: db.Figure) -> tuple[list[float], list[str], list[tuple[dict, db.Figure]]]:
        """The row's history: log figures (machine factor removed from GPU-bound rows), starts, runs."""
        hist = [(r, self.figs[r["id"]].get(row)) for r in self.before]
        hist = [(r, f) for r, f in hist if _usable(f, like)][-self.last:]
        alike = [(r, f) for r, f in hist if self.partial(r) == self.partial(self.target)]
        if len(alike) >= 2:
            hist = alike    # a partial run's GPU state may differ from a full run's: like with like
        logs = [math.log(f.value) - noise.offset(self.factors[r["id"]], f) for r, f in hist]
        return logs, [noise.start_of(r) for r, _ in hist], hist

    def partial(self, run: dict) -> bool:
        """A run holding under half the probes the key's fullest run held."""
        return len((run.get("probes") or "").split(",")) < PARTIAL * self.most

    def scale(self, row: tuple, f: db.Figure) -> tuple[noise.Scale, list[tuple[dict, db.Figure]]] | None:
        logs, groups, hist = self.logs(row, f)
        if len(logs) < 2:
            return None
        own = self.parts.get(row, noise.Parts())
        pool = self.pools.get(noise.row_class(f)) or noise.prior(noise.row_class(f), noise.Pool(0.0, 0.0), 0)
        if len(logs) < self.minimum:
            # a small history: the class's noise alone, pooled (a fitted prior is the typical row's,
            # which a noisy row with no history of its own would be judged on)
            own = noise.Parts()
            if pool.pooled is not None:
                pool = dataclasses.replace(pool, sw2=pool.pooled)
        # eager and host rows follow the host, not the GPU: within one start their runs differ as much
        # as between starts (eager ratios 1.8 and 1.5 %), and judged on two runs of its own start an
        # eager ratio of a new start's third run (H200, start A) was called SLOWER at +6.4 % (mdc 5.0 %)
        mine = [f.mode in paired.MODES and noise.same_machine(r, self.target) for r, _ in hist]
        parts = (sampling.parts(self.rounds[self.target["id"]], f, [(self.rounds[r["id"]], g) for r, g in hist])
                 if sampling.judged(f) else None)
        return noise.predict(logs, groups, mine, own, pool, parts), hist


def _factored(f: db.Figure) -> bool:
    """A measured row that a run's factors are learned from and removed from (noise.factored)."""
    return f.status == "ok" and (f.value or 0) > 0 and noise.factored(f)


def _judge(f: db.Figure, sc: noise.Scale, factor: float, run_unstable: bool, kernels: str) -> tuple[str, float, float, str]:
    k = K_HOST if f.mode == "host" else K_EAGER if f.mode == "eager" else K
    floor = (MIN_EFFECT_FLEET if sc.kind == "fleet" else MIN_EFFECT).get(f.mode, 0.05)
    # a probe's own between-process floor (gate.PROBE_THRESHOLD: decode SDPA's eager ratio follows
    # the host's speed by 21-30 %) holds here too: a class scale of few runs does not know it
    floor = max(floor, gate.row_threshold(f.probe, f.variant, f.mode, pairwise=False) or 0.0)
    mdc = max(floor, k * sc.sd,
              k * robust.run_error(f.spread, len(f.workers or ())))
    value = f.value / math.exp(factor)
    change = value / sc.location - 1
    workers = [w / math.exp(factor) for w in (f.workers or [])]
    picked = plans.is_race(f.plan_rule) and kernels and f.kernels and kernels != f.kernels
    pick = f"autotune pick changed (information): history {kernels}; this run {f.kernels}" if picked else ""
    if not abs(change) > mdc:
        return "SAME", change, mdc, pick
    if picked:      # the figure moved with the pick: information, never a regression
        return "PICK CHANGED", change, mdc, pick
    if not f.on_ratio and abs(value - sc.location) < MIN_ABS_US:
        return "SAME", change, mdc, f"under {MIN_ABS_US:g} µs per call"
    if f.processes < 2:
        return "UNSURE", change, mdc, "one process: never SLOWER or FASTER"
    if len(workers) >= 2 and not all((w > sc.location) == (change > 0) for w in workers):
        return "UNSURE", change, mdc, "workers straddle the history's median"
    if f.mode == "eager" and run_unstable:
        return "UNSURE", change, mdc, "host-unstable run: eager rows are not judged"
    if f.mode in ("eager", "host") and f.host_state == "slow":
        return "UNSURE", change, mdc, "slow host state: its eager figures drift between processes"
    if f.mode == "host" and not f.host_state:
        # build-time rows timed before runs recorded their host state (measurement 3's first three
        # runs and older): the slow state nearly doubles them (H200, one such run: +77 % against the
        # fleet on rebuild's build steps, its twin on the same start +1 %)
        return "UNSURE", change, mdc, "host state not recorded: build-time rows follow it"
    if gate.power_bound(f.mode, "clock_drop" in (f.flags or ""), f.median_us or 0.0):
        return "UNSURE", change, mdc, gate.POWER_NOTE
    if f.mode == "eager" and not f.on_ratio:
        return "UNSURE", change, mdc, "absolute eager µs (host-bound between processes)"
    if kernels and f.kernels and kernels != f.kernels:
        return "KERNEL CHANGED", change, mdc, f"kernels: history {kernels}; this run {f.kernels}"
    return ("SLOWER" if change > 0 else "FASTER"), change, mdc, ""


def _shows(g: db.Figure | None, like: db.Figure, loc: float, mdc: float, change: float, factor: float) -> bool | None:
    """Whether another run's figure shows the same change (None: it did not measure the row)."""
    if not _usable(g, like):
        return None
    c = g.value / math.exp(factor) / loc - 1
    return abs(c) > mdc and (c > 0) == (change > 0)


def _state(h: History, after: list[dict], hist: list[tuple[dict, db.Figure]], f: db.Figure,
           loc: float, mdc: float, change: float) -> str:
    """confirmed / suspect by the first later run of another start (for the newest run: confirmed
    when the newest earlier run of another start shows it); replicated when only a twin of the
    same start shows it; else new."""
    me = noise.start_of(h.target)

    def shows(r, g):
        return _shows(g, f, loc, mdc, change, noise.offset(h.factors.get(r["id"], {}), g))
    later = [(r, h.figs[r["id"]].get(f.row)) for r in after]
    later = [(r, g) for r, g in later if _usable(g, f)]
    other = [(r, g) for r, g in later if noise.start_of(r) != me]
    if other:
        return "confirmed" if shows(*other[0]) else "suspect"
    earlier = [(r, g) for r, g in hist if noise.start_of(r) != me]
    if not later and earlier and shows(*earlier[-1]):
        return "confirmed"
    twins = [(r, g) for r, g in [*later, *hist] if noise.start_of(r) == me and r.get("start")]
    if any(shows(r, g) for r, g in twins):
        return "replicated"
    return "suspect" if later else "new"


def check(store: db.Store, run_id: int, last: int = DEFAULT_LAST, minimum: int = MIN_HISTORY) -> tuple[dict, list[Verdict]]:
    """(the judged run's store row with what the check learned of its machine, one Verdict per row)."""
    everyone = [r for r in store.runs() if r["id"] == run_id]
    if not everyone:
        raise db.StoreError(f"{store.shown}: no run with id {run_id}")
    target = dict(everyone[0])
    same = [r for r in store.runs(key=target["history_key"]) if not r["excluded"] or r["id"] == run_id]
    pos = next(i for i, r in enumerate(same) if r["id"] == run_id)
    # twice `last` runs are read: rows that some runs skip (other host state, a partial run) still
    # find `last` values where there are
    before = same[max(0, pos - 2 * last):pos]
    after = same[pos + 1:pos + 1 + CONFIRM_LOOKAHEAD]
    figs = store.figures([r["id"] for r in before] + [run_id] + [r["id"] for r in after])
    return judge_run(target, before, after, figs, last, minimum)


def judge_run(target: dict, before: list[dict], after: list[dict], figs: dict, last: int = DEFAULT_LAST,
              minimum: int = MIN_HISTORY) -> tuple[dict, list[Verdict]]:
    """The check on runs already read: `before` and `after` are the key's runs around `target`."""
    h = History(target, before, figs, minimum, last)
    own = [r for r in before if noise.same_machine(r, target)]
    target.update(machine_factor=h.factor.get("all"), machine_factors=h.factor, factor_rows=h.factor_rows, same_gpu_runs=len(own),
                  history_runs=len(before), history_starts=len({noise.start_of(r) for r in before}),
                  partial=h.partial(target), partial_runs=[r["id"] for r in before if h.partial(r)])
    # against its own GPU, graph and device rows are judged as paired ratios to their baseline
    hp = History(target, before, paired.paired(figs), minimum, last) if len(own) >= noise.MIN_OWN else None
    out = []
    for row, f in figs[target["id"]].items():
        hh, got = h, None
        if hp is not None and paired.pairable(f) and (pf := hp.figs[target["id"]][row]).on_ratio:
            got = hp.scale(row, pf)
            if got is not None and got[0].kind == "same GPU":
                hh, f = hp, pf
            else:
                got = None
        unit = f"x {f.baseline}" if f.on_ratio else "us"
        base = dict(on_ratio=f.on_ratio, host_state=f.host_state, processes=f.processes)
        if f.status != "ok" or f.value is None:
            out.append(Verdict(*row, unit, None, None, float("nan"), None, 0, "UNMEASURED", note=f.status[:120]))
            continue
        hist_all = [(r, hh.figs[r["id"]].get(row)) for r in before]
        hist_all = [(r, g) for r, g in hist_all if _usable(g, f)][-last:]
        if not hist_all:
            out.append(Verdict(*row, unit, f.value, None, float("nan"), None, 0, "NO HISTORY",
                               note="no earlier run on this key measured this row", **base))
            continue
        fac = noise.offset(hh.factor, f)
        if got is None:
            got = h.scale(row, f) if len(hist_all) >= 2 else None
        if got is None:     # one earlier run: the pairwise gate, the only comparison there is
            old = hist_all[-1][1]
            v, change, note = _pairwise(f, old, bool(target["host_unstable"]))
            loc, mdc, n, kind, hist = old.value, gate.THRESHOLD.get(f.mode, 0.05), 1, "pairwise", hist_all
            note = f"one earlier run: pairwise gate; {note}".rstrip("; ")
            if v in ("SLOWER", "FASTER") and f.processes < 2:
                v, note = "UNSURE", note + "; one process: never SLOWER or FASTER"
        else:
            sc, hist = got
            v, change, mdc, note = _judge(f, sc, fac, bool(target["host_unstable"]), _kernels_of(hist, target))
            loc, n, kind = sc.location, len(hist), sc.kind
            if v in ("SLOWER", "FASTER") and any(h.partial(r) != h.partial(target) for r, _ in hist):
                # a partial run (a few probes) leaves the GPU in another state than a full run does:
                # the framework pair's rows sat up to 5 % under the full runs'
                v, note = "UNSURE", "; ".join(x for x in (note, "partial and full runs mixed: the GPU state may differ") if x)
            if n < minimum:
                note = "; ".join(x for x in (f"too little history ({n} < {minimum} runs) for its own noise: its class's, "
                                             "widened for the few runs", note) if x)
        if 1 < f.processes < MIN_PROCESSES or f.processes == 1:
            note = "; ".join(x for x in (note, f"{f.processes} process{'es' if f.processes > 1 else ''}") if x)
        state = ""
        if v in ("SLOWER", "FASTER", "KERNEL CHANGED"):
            state = _state(hh, after, hist, f, loc, mdc, change)
        out.append(Verdict(*row, unit, f.value, loc, change, mdc, n, v, state, note, scale=kind, **base))
    return target, _baseline_moved(_moved_with_baseline(out, h, hp, figs), figs[target["id"]])


def _moved_with_baseline(verdicts: list[Verdict], h: History, hp: History | None, figs: dict) -> list[Verdict]:
    """A graph or device row called against the fleet whose baseline row (its block's torch op,
    same run) moved the same way by half as much or more, and whose paired ratio to it stays
    within the ratio's own MDC, is UNSURE: that GPU runs the kernel they share a few % off the
    fleet (H200, 2026-12-01: one start ran serialize's 3.4 µs nvjet GEMM 3 % slow in both the
    cuDNN graph's row and torch.bmm's; the graph's was called SLOWER once two new GPUs moved the
    fleet's median down). `hp`: the run's paired History where judge_run built one (else built here, once)."""
    by = {v.row: v for v in verdicts}
    out = []
    for v in verdicts:
        f = figs[h.target["id"]].get(v.row)
        b = by.get((v.probe, f.baseline, v.size, v.mode)) if f is not None and paired.pairable(f) else None
        if (v.scale != "fleet" or v.verdict not in ("SLOWER", "FASTER") or b is None or v.on_ratio
                or not (b.change * v.change > 0 and abs(b.change) >= 0.5 * abs(v.change))):
            out.append(v)
            continue
        hp = hp or History(h.target, h.before, paired.paired(figs), h.minimum, h.last)
        pf = hp.figs[h.target["id"]].get(v.row)
        got = hp.scale(v.row, pf) if pf is not None and pf.on_ratio else None
        if got is None:
            out.append(v)
            continue
        verdict, change, mdc, _ = _judge(pf, got[0], 0.0, bool(h.target["host_unstable"]), "")
        if verdict != "SAME":
            out.append(v)
            continue
        note = (f"moved with its baseline {f.baseline} ({b.change * 100:+.1f} %); the paired ratio "
                f"{change * 100:+.1f} % is within its {mdc * 100:.1f} %: this GPU's kernel speed, not a change")
        out.append(dataclasses.replace(v, verdict="UNSURE", state="", note="; ".join(x for x in (v.note, note) if x)))
    return out


def _baseline_moved(verdicts: list[Verdict], figs: dict) -> list[Verdict]:
    """A graph or device ratio whose baseline row itself changed follows the baseline: UNSURE at most."""
    by = {v.row: v for v in verdicts}
    for v in verdicts:
        if v.on_ratio and v.mode in paired.MODES and v.verdict in ("SLOWER", "FASTER"):
            b = by.get((v.probe, figs[v.row].baseline, v.size, v.mode))
            if b is not None and b.verdict in ("SLOWER", "FASTER", "KERNEL CHANGED"):
                v.verdict, v.state = "UNSURE", ""
                v.note = "; ".join(x for x in (v.note, f"its baseline {b.variant} changed ({b.verdict}): "
                                               "the ratio follows it") if x)
    return verdicts


def mode_class(v: Verdict) -> str:
    """graph / device / eager trap ratio (fast state) / other: the classes the MDC is reported for."""
    if v.mode in ("graph", "device"):
        return v.mode
    if v.mode == "eager" and v.on_ratio and v.host_state == "fast":
        return "eager ratio (fast state)"
    return "other"


def median_mdc(verdicts: list[Verdict], minimum: int = 2) -> dict[str, float]:
    """Median minimum detectable change per class, over rows judged on a history of `minimum` runs or more."""
    by: dict[str, list[float]] = {}
    for v in verdicts:
        if v.mdc is not None and v.n >= minimum and v.scale != "pairwise" and not math.isnan(v.mdc):
            by.setdefault(mode_class(v), []).append(v.mdc)
    return {k: statistics.median(xs) for k, xs in sorted(by.items())}


ORDER = {"SLOWER": 0, "KERNEL CHANGED": 1, "FASTER": 2, "UNSURE": 3, "PICK CHANGED": 4, "NO HISTORY": 5,
         "UNMEASURED": 6, "SAME": 7}


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    c: dict[str, int] = {}
    for v in verdicts:
        c[v.verdict] = c.get(v.verdict, 0) + 1
    return dict(sorted(c.items(), key=lambda kv: ORDER.get(kv[0], 9)))


def machine_line(target: dict) -> str:
    """Where the run ran and what it is judged against, in one line."""
    start = target.get("start") or "unknown start"
    own = target.get("same_gpu_runs", 0)
    fleet = (f"judged against the fleet ({target.get('history_runs', 0)} runs on "
             f"{target.get('history_starts', 0)} starts, between-start scale)")
    if own >= noise.MIN_OWN:
        against = (f"graph and device rows judged against its own GPU's {own} earlier runs on this key (same GPU: "
                   "within-start scale, as ratios to their block's baseline); eager and host rows against the fleet")
    elif own:
        against = f"{own} earlier run(s) on this GPU, too few to judge by (needs {noise.MIN_OWN}): {fleet}"
    else:
        against = f"no earlier run on this GPU: {fleet}"
    return f"  machine: start {start}; {against}"


def factor_line(target: dict) -> str:
    f = target.get("machine_factor")
    if f is None:
        why = "a partial run" if target.get("partial") else "too few GPU-bound rows in common"
        return f"  machine factor: not known ({why}); GPU-bound rows judged as they are"
    pct = (math.exp(f) - 1) * 100
    return (f"  this GPU runs GPU-bound rows {abs(pct):.1f} % {'slower' if pct > 0 else 'faster'} than the "
            f"history median ({target.get('factor_rows', 0)} rows); rows count as changed only beyond that shift")


def new_gpu_line(target: dict, verdicts: list[Verdict]) -> str:
    """A caution where a GPU judged against the fleet moved graph or device rows both ways: some GPUs run
    a few kernels apart from every other (H200, 2026-12-01: of 13 GPUs, one ran transpose's GEMMs
    3-6 % slower, another pack_size's and two engine plans' kernels 4-5 % faster or slower), and
    one run cannot tell that from a change; the next run from another start can."""
    if target.get("same_gpu_runs", 0) >= noise.MIN_OWN:
        return ""
    moved = [v for v in verdicts if v.mode in paired.MODES and v.scale == "fleet" and v.verdict in ("SLOWER", "FASTER")]
    if not ({v.verdict for v in moved} >= {"SLOWER", "FASTER"}):
        return ""
    return (f"judged against the fleet, this GPU moved {len(moved)} graph/device rows both ways: a GPU that runs some "
            "kernels a few % apart from the others looks like this; only a run from another start confirms "
            "them (--fail-on-regression fails on confirmed SLOWER only)")


def _note_refs(rows: list[Verdict]) -> tuple[list[str], dict[str, int]]:
    """Each row's note parts as numbers ('1,3'), each distinct part numbered once."""
    parts: dict[str, int] = {}
    refs = []
    for v in rows:
        pieces: list[str] = []
        for x in v.note.split("; "):   # "kernels: base A; new B" is one part
            if pieces and x.startswith("new "):
                pieces[-1] += "; " + x
            elif x:
                pieces.append(x)
        ks = [parts.setdefault(x, len(parts) + 1) for x in pieces]
        refs.append(",".join(map(str, ks)))
    return refs, parts


def _grid(head: list[str], body: list[list[str]], right: set) -> list[str]:
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]

    def line(r):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [line(head), line(["-" * w for w in widths]), *map(line, body)]


def _table(rows: list[Verdict], refs: list[str], width: int) -> tuple[list[str], bool]:
    """(lines, unit column dropped): verdict, state, row, unit, change, mdc, runs, note numbers;
    to fit, probe and size move into heading lines, then the whole row name (and the unit goes).
    Nothing is cut."""
    # "on": the scale the MDC came from (same GPU, fleet, pairwise)
    head = ["verdict", "state", "row", "unit", "change", "mdc", "on", "runs", "note"]
    for level in range(3):
        cells = [[v.verdict, v.state, "/".join(v.row) if level == 0 else f"{v.variant}/{v.mode}",
                  "×" + v.unit[2:] if v.on_ratio else "µs", "" if math.isnan(v.change) else f"{v.change * 100:+.1f}%",
                  "" if v.mdc is None else f"{v.mdc * 100:.1f}%", v.scale, str(v.n), r] for v, r in zip(rows, refs)]
        keep = [i for i in range(len(head)) if not (level == 2 and i in (2, 3, 6))]
        body = [[c[i] for i in keep] for c in cells]
        right = {keep.index(i) for i in (4, 5, 7)}
        lines = _grid([head[i] for i in keep], body, right)
        if max(map(len, lines)) + 2 <= width:
            break
    if level == 0:
        return ["  " + x for x in lines], False
    out, last = ["  " + x for x in lines[:2]], None
    for v, line in zip(rows, lines[2:]):
        name = (v.probe, v.size) if level == 1 else (v.probe, v.size, v.variant, v.mode)
        if name != last:
            last = name
            out += textwrap.wrap(" · ".join(name) + (f" [{v.unit}], mdc on {v.scale}" if level == 2 else ""), width,
                                 subsequent_indent="    ", break_long_words=True)
        out.append("  " + line)
    return out, level == 2


def render(target: dict, verdicts: list[Verdict], show_all: bool = False, width: int | None = None,
           wide: bool = False, why: str = "") -> str:
    """Text for a terminal: the run (and `why` it is the one judged), counts, the changed rows
    first, each with its MDC. Rows without history, SAME and UNMEASURED rows are counted, listed
    only with `show_all`. Every line fits `width` (default $COLUMNS or the terminal) unless `wide`."""
    from .. import fmt
    width = 10**6 if wide else fmt.term_width() if width is None else width

    def wrap(text: str, indent: str = "") -> list[str]:
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_long_words=True)
    lines = wrap(f"run {target['id']} ({target['started_at'][:19]}, {target['gpu']}, frontend {target['frontend']}, "
                 f"commit {target['commit_id'][:7]}) against its history" + (f": {why}" if why else ""))
    c = counts(verdicts)
    lines += wrap(", ".join(f"{n} {k}" for k, n in c.items()), "  ")
    if "history_runs" in target:
        lines += wrap(machine_line(target).strip(), "  ") + wrap(factor_line(target).strip(), "  ")
        lines += wrap(new_gpu_line(target, verdicts), "  ")
        if target.get("partial"):
            lines += wrap(f"a partial run (probes {target.get('probes', '')}): its GPU state may differ from "
                          "a full run's; judged against partial runs where two measured the row, and a change "
                          "against full runs is UNSURE at most", "  ")
        elif target.get("partial_runs"):
            lines += wrap(f"{len(target['partial_runs'])} partial run(s) in the history left out where two full "
                          "runs measured the row (a few probes: the GPU state may differ)", "  ")
    noise_limited = sum(1 for v in verdicts if v.verdict == "SAME" and v.mdc and v.mdc > 2 * MIN_EFFECT.get(v.mode, 0.05))
    if noise_limited:
        lines += wrap(f"{noise_limited} SAME rows are noise-limited (detect only changes over twice the mode's "
                      "minimum effect)", "  ")
    mm = median_mdc(verdicts)
    if mm:
        lines += wrap("median minimum detectable change, rows with full history: "
                      + ", ".join(f"{k} {x * 100:.1f} %" for k, x in mm.items()), "  ")
    hidden = ("SAME", "UNMEASURED", "NO HISTORY")
    rows = sorted((v for v in verdicts if show_all or v.verdict not in hidden),
                  key=lambda v: (ORDER.get(v.verdict, 9), -abs(v.change) if not math.isnan(v.change) else 0))
    if not rows:
        return "\n".join(lines)
    refs, parts = _note_refs(rows)
    if wide:
        refs = [v.note for v in rows]
    table, dropped = _table(rows, refs, width)
    lines += table
    if not wide:
        for part, k in parts.items():
            lines += wrap(f"[{k}] {part}", "  ")
    no_history = c.get("NO HISTORY", 0)
    if no_history and not show_all:
        lines += wrap(f"({no_history} row(s) with no history on this key, not listed: no earlier run measured them; "
                      "--all lists them)", "  ")
    if dropped:
        lines += wrap(f"(row and unit in the heading lines to fit {width} columns; --wide shows every column)", "  ")
    return "\n".join(lines)
