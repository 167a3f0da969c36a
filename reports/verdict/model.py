"""The verdict model: what a row's log figure is made of, and what a new run's figure should be.

For a row i of run r on machine start s (docs/history.md, "The model"):

    log y_ri = mu_i + m_r[g] + k_r[K] + h_r[H] + b_is + w_r + p_r + t

- mu_i: the row's location (the mean of its start means, structure removed);
- m_r[g]: the run's machine factor for its group g of GPU rows (graph or device, by size class):
  the median offset of those rows from their locations;
- k_r[K]: the run's structure terms (structure.LEVELS): the GPU rows that run one kernel set, the
  GPU rows of one block, the eager ratios of one block (four or more rows): for each row, the median
  offset of the *other* rows of K, so a row's own change never moves its adjustment;
- h_r[H]: the host's speed on the run's rows in host µs (build times, the waterfall's host parts,
  eager µs per host state, host- and GPU-paced apart), adjusted the same way (a VM's vCPU runs a
  whole run fast or slow);
- b_is: the row's own offset on start s (between starts), w_r: one run within its start,
  p_r: process sampling (the median of n workers' figures), t: the timer's resolution.

Variance components are learned per row from the history it is judged against, moderated towards
its class (pool.py), so a store of any GPU learns its own. Everything is a log: relative,
symmetric for slower and faster.

The run's structure (m_r, k_r, h_r) is structure.py's, made before this module. Model fits one
key's history around a target run; Model.fit_run fits the target's figures in one pass and hands
decide.py the result as data (Fitted). The predictions come last: they read the class pools
(pool.py), the step after this module.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cudnn_hostbench.reports.verdict import pool as pools
from cudnn_hostbench.reports.verdict import structure

# the timer's resolution per call, µs: CUDA events (0.5 µs) over at least 16 replayed calls; the
# profiler's and the host clock's are nanoseconds
RESOLUTION_US = {"graph": 0.5 / 16, "device": 0.001, "eager": 0.001, "host": 0.001}
def row_class(fig) -> str:
    """The rows a row borrows noise from: mode, judged figure, size class or host state, race."""
    tail = " race" if structure.race(fig) else ""
    if fig.mode == "eager":
        return f"eager {'ratio' if fig.on_ratio else 'us'} {fig.host_state or 'unknown'}{tail}"
    if fig.mode == "host":
        return f"host {fig.host_state or 'unknown'}"
    if fig.mode in structure.GPU_MODES:
        return f"{fig.mode} {structure.size_class(fig)}{' ratio' if fig.on_ratio else ''}{tail}"
    return fig.mode


def start_of(run: dict) -> str:
    """The run's machine start; an unknown start (runs stored before machine identity) is its own."""
    return run.get("start") or f"unknown start of run {run['id']}"


def same_gpu(run: dict, other: dict) -> bool:
    return bool((run.get("gpu_uuid") and run.get("gpu_uuid") == other.get("gpu_uuid"))
                or (run.get("start") and run.get("start") == other.get("start")))


def adjust_excess(row: tuple, now: structure.Structure, history: list[structure.Structure]) -> float:
    """How much more uncertain a row's adjustment is on this run than on its history's runs (the
    history's figures already hold their typical adjustment noise): the variance it widens by.
    A row its history's runs were adjusted on, which this run could not adjust (too few rows set
    the term: a partial run), keeps the whole term in its figure: it widens by the mean square of
    the history's adjustments: a partial run with no host term was read FASTER against
    host-adjusted history without it (log 2026-12-03-1030)."""
    return RowHistory(row, history).excess(now)


class RowHistory:
    """A row's history structures, with what adjust_excess and lost_levels take of them kept: one
    history judges many runs (verdict-check judges each run and ~50 injected variants of it)."""

    def __init__(self, row: tuple, history: list[structure.Structure]):
        self.row, self.history = row, history
        self._lost: dict[frozenset, tuple[float | None, set]] = {}
        self._typical: float | None = None

    def lost(self, now: structure.Structure) -> tuple[float | None, set]:
        """(the mean square of the adjustments the history's runs lost on `now`, None unless half
        of them or more lost one; the level terms lost), per the levels that adjusted the row on `now`."""
        mine = frozenset(now.levels.get(self.row, ()))
        got = self._lost.get(mine)
        if got is None:
            # per history run, the level terms that adjusted the row there and not on this run
            gone = [h.levels.get(self.row, set()) - mine for h in self.history]
            if _mostly(gone):
                lost = [h.adjust.get(self.row, 0.0) for h, g in zip(self.history, gone) if g]
                got = (sum(a * a for a in lost) / len(lost), set().union(*gone))
            else:
                got = (None, set())
            self._lost[mine] = got
        return got

    def typical(self) -> float:
        """The history's median adjustment variance of the row."""
        if self._typical is None:
            self._typical = (statistics.median(h.adjust_var.get(self.row, 0.0) for h in self.history)
                             if self.history else 0.0)
        return self._typical

    def excess(self, now: structure.Structure) -> float:
        """adjust_excess of the row on a run with structure `now`."""
        lost = self.lost(now)[0]
        if lost is not None:
            return lost
        mine = now.adjust_var.get(self.row, 0.0)
        if not mine:
            return 0.0
        return max(0.0, mine - self.typical())


def _mostly(gone: list[set]) -> bool:
    """Half the history's runs or more lost a term on this run."""
    return bool(gone) and 2 * sum(1 for g in gone if g) >= len(gone)


def paced_var(fig, figs: dict, terms: dict) -> float:
    """The variance an eager ratio takes on when the GPU paces its variant and the host its baseline
    (or the other way): the host's speed then moves the ratio by the two host terms' difference, as
    far as each side is paced as classed (near the crossover, partly). The square of that
    difference widens the row; it never moves it. Near the crossover a ratio's two sides are paced
    differently, so a change of the host's pace moves it (log 2026-12-03-1219)."""
    if not structure.is_eager_ratio(fig) or not fig.baseline:
        return 0.0
    b = figs.get((fig.probe, fig.baseline, fig.size, "eager"))
    if b is None or structure.gpu_bound_eager(fig, figs) == structure.gpu_bound_eager(b, figs):
        return 0.0
    h = (terms.get(("host", structure.host_key(fig, figs)), (0.0,))[0]
         - terms.get(("host", structure.host_key(b, figs)), (0.0,))[0])
    return h * h


@dataclass
class Parts:
    """One row's variance components from its history, in logs."""
    sw2: float = 0.0     # between runs of one start (process sampling included)
    dfw: float = 0
    sb2: float = 0.0     # between starts
    dfb: float = 0
    vb: float = 0.0      # variance of the start means (dfb degrees of freedom)
    hm: float = 1.0      # harmonic mean of runs per start
    sp2: float = 0.0     # between worker processes of one run, one round (eager) or as measured
    dfp: float = 0
    hist_c: float = 1.0  # the history's mean median_var(workers) x round factor: sampling in sw2


def process_terms(workers: list[list[float]], rounds: list[float]) -> list[tuple[float | None, int, float]]:
    """Per run: its workers' log variance over the median of its chi-square (None under two workers),
    that variance's degrees of freedom, and the sampling term of its median (hist_c's share)."""
    out: list[tuple[float | None, int, float]] = []
    for ws, r in zip(workers, rounds):
        lw = [math.log(w) for w in ws if w and w > 0]
        e, d = None, 0
        if len(lw) >= 2:
            m = sum(lw) / len(lw)
            d = len(lw) - 1
            # a run's workers' variance over the median of its chi-square: one run whose worker hit a
            # hiccup (a profiler stall, a slow-state round) would set a pooled mean alone
            e = sum((x - m) ** 2 for x in lw) / d * r / (_CHI2.get(d) or _chi2_median(d))
        out.append((e, d, structure.median_var(max(1, len(lw))) / r))
    return out


def group_sums(values: list[float], groups: list[str]) -> dict[str, tuple[int, float, float]]:
    """Each start's (runs, mean, sum of squares about its mean), starts in order of first appearance."""
    by: dict[str, list[float]] = {}
    for v, g in zip(values, groups):
        by.setdefault(g, []).append(v)
    out = {}
    for g, xs in by.items():
        m = sum(xs) / len(xs)
        out[g] = (len(xs), m, sum((x - m) ** 2 for x in xs))
    return out


def one_way(by_start: dict[str, tuple[int, float, float]]) -> Parts:
    """One-way random effects by start (method of moments, unbalanced: harmonic group size) from
    each start's group_sums: leaving one start out costs its starts, not its runs."""
    sums = by_start.values()
    n, sw2, _, vb, hm = moments([c for c, _, _ in sums], [m for _, m, _ in sums], [ss for *_, ss in sums])
    k = len(sums)
    p = Parts(sw2, n - k)
    if k >= 2:
        p.vb, p.hm, p.dfb = vb, hm, k - 1
        p.sb2 = max(0.0, p.vb - p.sw2 / p.hm)
    return p


def moments(counts: list[int], means: list[float], sss: list[float]) -> tuple[int, float, float, float, float]:
    """one_way's figures of starts' group_sums (their runs, means and sums of squares, as lists), without
    a Parts (a row's leave-one-start-out takes them once per start): (runs, within-start variance,
    mean of the start means, their variance, harmonic mean of runs per start); the last three 0.0
    under two starts."""
    n, k = sum(counts), len(counts)
    sw2 = sum(sss) / (n - k) if n > k else 0.0
    if k < 2:
        return n, sw2, 0.0, 0.0, 0.0
    mm = sum(means) / k
    return n, sw2, mm, sum([(m - mm) ** 2 for m in means]) / (k - 1), k / sum([1.0 / c for c in counts])


def parts(values: list[float], groups: list[str], workers: list[list[float]], rounds: list[float]) -> Parts:
    """One-way random effects by start (one_way), and the process component from the workers'
    spread; `rounds` scales an eager worker's variance to one round."""
    p = one_way(group_sums(values, groups))
    terms = process_terms(workers, rounds)
    each = [e for e, _, _ in terms if e is not None]
    p.sp2, p.dfp = (statistics.median(each), sum(d for e, d, _ in terms if e is not None)) if each else (0.0, 0)
    p.hist_c = sum(c for *_, c in terms) / len(terms) if terms else 1.0
    return p


_CHI2: dict[int, float] = {}


def _chi2_median(dof: int) -> float:
    """The median of chi-square(dof) / dof: what the median of sample variances with dof degrees of freedom is of the variance."""
    if dof not in _CHI2:
        from scipy import stats
        _CHI2[dof] = float(stats.chi2.median(dof)) / dof
    return _CHI2[dof]


def pooled(own: Parts, prior: Parts, most: float) -> Parts:
    """A row's components with a prior's for the same row (another history of it) pooled in, each of
    the prior's weighing at most `most` degrees of freedom."""
    def mix(own_value: float, own_dof: float, prior_value: float, prior_dof: float) -> tuple[float, float]:
        prior_dof = min(prior_dof, most)
        dof = own_dof + prior_dof
        return ((own_value * own_dof + prior_value * prior_dof) / dof, dof) if dof else (0.0, 0.0)
    sw2, dfw = mix(own.sw2, own.dfw, prior.sw2, prior.dfw)
    vb, dfb = mix(own.vb, own.dfb, prior.vb, prior.dfb)
    sp2, dfp = mix(own.sp2, own.dfp, prior.sp2, prior.dfp)
    hm = own.hm if own.dfb else prior.hm
    return Parts(sw2, dfw, max(0.0, vb - sw2 / hm) if dfb else 0.0, dfb, vb, hm, sp2, dfp,
                 own.hist_c if own.dfp else prior.hist_c)


@dataclass
class Prediction:
    """What a new run's row is judged on."""
    scale: str           # 'fleet' or 'same GPU'
    location: float      # log
    var: float           # variance of (new log figure - location)
    n: int               # history runs behind the location
    starts: int
    df: float            # degrees of freedom of the t it is judged with
    parts: dict = field(default_factory=dict)   # component -> variance, for the report


def predict(values: list[float], groups: list[str], mine: list[bool], row: Parts, pool,
            n_workers: int, rounds: float, value_us: float, mode: str, min_own: int) -> Prediction:
    """The prediction for a new run's row: against the fleet (mean of start means, every component)
    or, where its own GPU has `min_own` runs in the history and that predicts better, against those."""
    sw2 = pool.moderated_w(row.sw2, row.dfw)
    sb2 = pool.between(row, sw2)
    sp2 = pool.moderated_p(row.sp2, row.dfp)
    # the run component: what runs of one start differ by beyond their processes' sampling
    run2 = max(0.0, sw2 - sp2 * row.hist_c) if row.dfp or pool.sp2 else sw2
    new_sampling = sp2 * structure.median_var(max(1, n_workers)) / rounds
    res2 = (RESOLUTION_US.get(mode, 0.001) / max(value_us, 1e-9)) ** 2 / 12
    by: dict[str, list[float]] = {}
    for x, g in zip(values, groups):
        by.setdefault(g, []).append(x)
    k = len(by)
    per = len(values) / k
    loc = statistics.fmean(statistics.fmean(xs) for xs in by.values())
    loc_var = (sb2 + sw2 / per) / k
    # the structure a row is adjusted by is estimated alike in every run, so the components learned
    # from the adjusted history already hold its noise
    parts_ = {"between starts": sb2, "run": run2, "processes": new_sampling, "location": loc_var,
              "resolution": res2}
    # degrees of freedom behind each component (its class prior's and the row's own)
    dfs = {"between starts": pool.d0b + row.dfb, "run": pool.d0w + row.dfw, "processes": pool.d0p + row.dfp,
           "location": pool.d0b + row.dfb, "resolution": math.inf}
    fleet = Prediction("fleet", loc, sum(parts_.values()) * pool.scale ** 2, len(values), k,
                       combined_df(pool.nu, parts_, None if pool.tails_own else dfs), parts_)
    own = [x for x, m in zip(values, mine) if m]
    if len(own) < min_own:
        return fleet
    own_parts = {"run": run2, "processes": new_sampling, "location": sw2 / len(own), "resolution": res2}
    same = Prediction("same GPU", statistics.fmean(own), sum(own_parts.values()) * pool.scale_same ** 2, len(values),
                      k, combined_df(pool.nu_same, own_parts, None if pool.tails_own else {**dfs, "location": dfs["run"]}),
                      own_parts)
    # the scale that predicts the run better: the one that detects less (its reach, tails included)
    return same if same.var ** 0.5 * reach(same.df) <= fleet.var ** 0.5 * reach(fleet.df) else fleet


def combined_df(tail_dof: float, parts: dict, dfs: dict | None) -> float:
    """The t a prediction is judged on: its class's tails (`tail_dof`) and the uncertainty of its variance
    estimate (Satterthwaite's degrees of freedom of the sum of components), as 1/df = 1/tail_dof + 1/satt.
    Tails fitted on the store's own leave-one-out z scores already hold that uncertainty (`dfs` None)."""
    if dfs is None:
        return tail_dof
    total = sum(parts.values())
    den = sum(v * v / dfs[k] for k, v in parts.items() if v > 0 and dfs[k] > 0 and dfs[k] != math.inf)
    satt = total * total / den if den > 0 else math.inf
    return max(1.0, 1.0 / (1.0 / tail_dof + 1.0 / satt))


_REACH: dict[float, float] = {}


def reach(dof: float) -> float:
    """A t's 99.9th percentile: how far a scale reaches, its tails included (to choose between two)."""
    key = round(dof, 2)
    if key not in _REACH:
        from scipy import stats
        _REACH[key] = float(stats.t.isf(0.001, key))
    return _REACH[key]


DEFAULT_LAST = 30    # history runs per row
MIN_OWN = 2          # runs of its own GPU a row needs before it is judged against them (a cold first run is no location)
PARTIAL = 0.5        # a run holding under this share of the key's probes is partial
PARTNER_Z = 2.0      # a variant's other GPU mode moved with it: nominally significant, the same way
ROW_PRIOR_DF = 10.0  # a store prior's row components weigh at most this many degrees of freedom


def usable(fig, like) -> bool:
    """Whether history figure `fig` can predict `like`: the same figure, and for rows timed on the
    host's clock (eager, build times, the waterfall's parts) the same host state. A slow-state row is
    judged against slow-state history, never against a fast one: slow-state build times run tens of
    per cent over fast history, and the waterfall's gpu parts (differences of two host timings) move
    with the state too (log 2026-12-03-0826)."""
    return (fig is not None and fig.status == "ok" and fig.value is not None and fig.value > 0
            and fig.on_ratio == like.on_ratio
            and (like.mode not in ("eager", "host") or fig.host_state == like.host_state))


def rounds_of(run: dict) -> int | None:
    """Eager rounds per worker the run was measured with (its recorded options); None when unknown."""
    try:
        info = json.loads(run.get("info_json") or "{}")
    except (TypeError, ValueError):
        return None
    r = (info.get("options") or {}).get("rounds") if isinstance(info, dict) else None
    return int(r) if isinstance(r, (int, float)) and not isinstance(r, bool) and r >= 1 else None


def _or_mode(zscores: dict[str, list[float]], cls: str) -> list[float]:
    """A class's z scores, or where it has few its mode's classes' pooled (size classes, races, host states)."""
    if len(zscores.get(cls, ())) >= pools.MIN_CLASS_Z:
        return zscores[cls]
    return [x for c, xs in zscores.items() if c.split()[0] == cls.split()[0] for x in xs]


def _with_partner(row: tuple, start: str, zscore: float, z_by_row: dict) -> bool:
    """Whether a GPU row's variant moved on `start` in its other mode too (the same way, |z| past PARTNER_Z)."""
    if row[3] not in structure.GPU_MODES:
        return False
    other = z_by_row.get((*row[:3], "device" if row[3] == "graph" else "graph"), {}).get(start)
    return other is not None and other * zscore > 0 and abs(other) >= PARTNER_Z and abs(zscore) >= PARTNER_Z


@dataclass
class Fitted:
    """One judgement's model side (Model.fit_run), per target row with a figure: its prediction, the
    variance its pacing (paced_var) and its adjustment (adjust_excess) add, the level terms it lost,
    its history's kernels; per history run its GPU processes and whether it is partial; the
    two-start evidence (Model._two_start_rows) with the previous run it stands on."""
    pred: dict = field(default_factory=dict)
    paced: dict = field(default_factory=dict)
    loose: dict = field(default_factory=dict)
    lost: dict = field(default_factory=dict)
    kernels: dict = field(default_factory=dict)
    procs: dict = field(default_factory=dict)
    partial: dict = field(default_factory=dict)
    prev: dict | None = None
    two: list = field(default_factory=list)


def previous_start(history: Model) -> dict | None:
    """The run just before the judged one when it ran on another start, like it (full or partial):
    last night's GPU, whose rows a change made in between moves too."""
    if not history.before:
        return None
    p = history.before[-1]
    if start_of(p) == start_of(history.target) or history.partial(p) != history.partial(history.target):
        return None
    return p


class Model:
    """The history of one key around a target run: structure, components, pools."""

    def __init__(self, target: dict, before: list[dict], figs: dict, last: int = DEFAULT_LAST,
                 prior: Any = None, min_own: int = MIN_OWN, row_last: int | None = None,
                 prior_rows: dict | None = None, *, reference: structure.Reference):
        """`prior_rows`: the store prior's components of the target's rows (calibrate.Prior.rows_for);
        `reference`: the history's structure (structure.reference). Both are made before the model
        (judge.fit): each step is entered once, in order."""
        self.target, self.last, self.min_own = target, last, min_own
        self.prior_rows = prior_rows or {}
        self.row_last = row_last or last          # history runs per row (two starts: one fewer than `last`)
        self.prior = prior if prior is not None else {}
        self.before = before[-2 * last:]
        self.figs = figs
        self.most = max(len((r.get("probes") or "").split(",")) for r in [*self.before, target])
        self.rounds = {r["id"]: rounds_of(r) for r in [*self.before, target]}
        self._partials: dict[int, bool] = {}
        self.reference = reference
        self.ref = reference.logs
        self.struct = dict(reference.struct)
        self.rows: dict[tuple, tuple] = {}       # row -> (values, groups, workers, rounds, hist runs)
        self._pred: dict[tuple, Prediction | None] = {}
        self._two: tuple | None = None     # (previous run id, its Model): two-start evidence, built once
        self._kern: dict[tuple, str] = {}
        self._procs: dict[int, int] = {}
        self._terms: dict[tuple, dict] = {}    # (another run's id, kind) -> terms_of
        self._row_hist: dict[tuple, RowHistory] = {}
        self._seen: dict[int, list] = {}      # run id -> [(its figures, their structure)]: structure_seen
        self._terms_hist: tuple | None = None  # _findings' history, and per term its values there
        self._past: dict[tuple, tuple] = {}
        self._hist_procs: tuple | None = None  # (that history, its processes' median variance, _term_processes')
        self._groups: tuple | None = None      # (the target's figures, their GPU rows per machine group)
        self.parts: dict[tuple, Parts] = {}
        self.now = Fitted()                     # the latest judgement's model side (fit_run)
        by_class = self._row_parts(figs[target["id"]])
        self.pools: dict[str, pools.Pool] = {}
        self._fit_pools(by_class)

    def fit_run(self, figs: dict, after: list[dict]) -> Fitted:
        """The target's figures `figs[target id]` through the model in one pass, into self.now: what
        decide.py judges them by, handed on as data (it calls nothing of the model back). The
        predictions come last: they read the class pools (pool.py), the step after the model."""
        self.figs, tid = figs, self.target["id"]
        fs = figs[tid]
        self.struct[tid] = self._structure(tid, fs)
        for r in after:        # later runs' structures: what confirms a change (decide._state)
            if r["id"] in figs:
                self.structure_of(r["id"])
        now = Fitted(procs={r["id"]: self.gpu_processes(r["id"]) for r in self.before},
                     partial={r["id"]: self._partial_of(r) for r in [*self.before, self.target]})
        ok = {row: f for row, f in fs.items() if f.status == "ok" and f.value and f.value > 0}
        for row, f in ok.items():
            now.paced[row] = paced_var(f, fs, self.struct[tid].terms)
            if row in self.rows:
                now.loose[row], now.lost[row] = self.adjust_excess(row), self.lost_levels(row)
                now.kernels[row] = self.kernels_of(row)
        two = self._two_start_model()
        if two is not None:
            now.prev, now.two = two[0], self._two_start_rows(two)
        # every row with a history too: a term's member rows are predicted whatever their figure (decide._findings)
        now.pred = {row: self.predict(row, f) for row, f in fs.items() if row in ok or row in self.rows}
        self.now = now
        return now

    def _two_start_model(self) -> tuple | None:
        """(the previous run of another start, the model of the history before it, the target's and
        that run's structures in it): two-start evidence (decide._two_starts); None without one."""
        prev = previous_start(self)
        if prev is None:
            return None
        rest = self.before[:-1]
        if len({start_of(r) for r in rest}) < 2:
            return None
        if self._two is None or self._two[0] != prev["id"]:
            # the history this run was judged on, less the previous run: one run fewer per row, else each
            # row's window reaches one run further back, and one older run's spread processes can set a
            # row's process variance in the two-start model alone
            self._two = (prev["id"], Model(self.target, rest, self.figs, self.last, self.prior, self.min_own,
                                           row_last=max(1, self.row_last - 1), prior_rows=self.prior_rows,
                                           reference=structure.reference(rest, self.figs)))
        m2 = self._two[1]
        m2.figs = self.figs
        return prev, m2, m2._structure(self.target["id"], self.figs[self.target["id"]]), m2.structure_seen(prev["id"])

    def _two_start_rows(self, two: tuple) -> list[tuple]:
        """Per row that the two-start model judges on the fleet scale and neither run paces apart: (row,
        its t on the target, on the previous run, df, the location's share); decide takes the judged ones."""
        prev, m2, st_t, st_p = two
        fs, fp, out = self.figs[self.target["id"]], self.figs[prev["id"]], []
        for row, f in fs.items():
            g = fp.get(row)
            if f.status != "ok" or not f.value or f.value <= 0 or not usable(g, f):
                continue
            if paced_var(f, fs, st_t.terms) or paced_var(g, fp, st_p.terms):
                continue   # paced apart on either run: the host's speed moves it, two starts confirm nothing
            pr = m2.predict(row, f)
            if pr is None or pr.scale != "fleet" or pr.var <= 0:
                continue
            # each run's adjustment widens its own z as far as it is looser than the history's (decide's rule)
            hist = m2.row_history(row)
            sd_t = math.sqrt(pr.var + hist.excess(st_t))
            sd_p = math.sqrt(pr.var + hist.excess(st_p))
            out.append((row, (math.log(f.value) - st_t.adjust.get(row, 0.0) - pr.location) / sd_t,
                        (math.log(g.value) - st_p.adjust.get(row, 0.0) - pr.location) / sd_p, pr.df,
                        pr.parts.get("location", 0.0) / max(sum(pr.parts.values()), 1e-300)))
        return out

    def _row_parts(self, target_figs: dict) -> dict[str, list]:
        """Each measured target row's history and variance parts (with the prior's row, where it has
        one) into self.rows and self.parts; the rows with a history, by class."""
        by_class: dict[str, list] = {}
        for row, f in target_figs.items():
            if f.status != "ok" or not f.value or f.value <= 0:
                continue
            got = self.history(row, f)
            if got[0]:
                self.rows[row] = got
                row_parts = parts(*got[:4])
                prior_row = self.prior_rows.get(row)
                self.parts[row] = (pooled(row_parts, prior_row, ROW_PRIOR_DF) if prior_row is not None
                                   else row_parts)
                by_class.setdefault(row_class(f), []).append(row)
        return by_class

    def _fit_pools(self, by_class: dict[str, list]) -> None:
        """Each class's pool (its rows' parts, their out-of-sample z scores, the prior) into
        self.pools; the z scores into z_fleet and z_same."""
        starts = len({start_of(r) for r in self.before})
        zs: dict[tuple, dict[str, float]] = {}
        zw: dict[str, list[float]] = {}
        for cls, rows in by_class.items():
            base = pools.fit([self.parts[r] for r in rows], [], len(self.before), starts)
            with_prior = pools.with_prior(base, self._prior_of(cls))
            for r in rows:
                zs[r] = self._loso_z(r, with_prior)
                zw.setdefault(cls, []).extend(self._loro_z(r, with_prior))
        # the tails of the rows that get row verdicts: a start on which a variant's graph and device
        # rows moved together is a variant finding (_variants), not two row verdicts
        z = {cls: [x for r in rows for g, x in zs[r].items() if not _with_partner(r, g, x, zs)]
             for cls, rows in by_class.items()}
        everything = ([x for xs in z.values() for x in xs], [x for xs in zw.values() for x in xs])
        for cls, rows in by_class.items():
            # a class with few z scores takes its mode's tails (its size classes, races, host states pooled)
            own = pools.fit([self.parts[r] for r in rows], _or_mode(z, cls), len(self.before), starts, _or_mode(zw, cls),
                            everything)
            self.pools[cls] = pools.with_prior(own, self._prior_of(cls))
        self.z_fleet, self.z_same = z, zw     # out-of-sample z scores per class (the dashboard's calibration)

    def _prior_of(self, cls: str):
        """The store prior's pool of a class, or of the nearest class it has (same mode and figure)."""
        got = self.prior.get(cls)
        if got is not None or not hasattr(self.prior, "classes"):
            return got
        near = [c for c in self.prior.classes if c.split()[:2] == cls.split()[:2]]
        return self.prior.get(near[0]) if near else None

    def structure_of(self, run_id: int) -> structure.Structure:
        """A run's structure against this history, computed once (later runs, for confirmation)."""
        if run_id not in self.struct:
            self.struct[run_id] = self._structure(run_id)
        return self.struct[run_id]

    def structure_seen(self, run_id: int) -> structure.Structure:
        """A run's structure from its figures as they are now, kept for its first figures and its
        latest (verdict-check changes the previous run's figures in some injections, not in most)."""
        fs = self.figs[run_id]
        seen = self._seen.setdefault(run_id, [])
        for got, st in seen:
            if got is fs:
                return st
        st = self._structure(run_id, fs)
        seen[1:] = [(fs, st)]
        return st

    def _structure(self, run_id: int, figures: dict | None = None) -> structure.Structure:
        return structure.of_run(self.figs[run_id] if figures is None else figures, self.reference)

    def gpu_processes(self, run_id: int) -> int:
        """The processes a run's GPU rows stand on (the median over them; one when none say)."""
        if run_id not in self._procs:
            ns = [max(1, len(g.workers or ())) for g in self.figs.get(run_id, {}).values() if structure.is_gpu_row(g)]
            self._procs[run_id] = int(statistics.median(ns)) if ns else 1
        return self._procs[run_id]

    def partial(self, run: dict) -> bool:
        return len((run.get("probes") or "").split(",")) < PARTIAL * self.most

    def _partial_of(self, run: dict) -> bool:
        """partial(), kept per run id: history() asks it of every run for every row."""
        got = self._partials.get(run["id"])
        if got is None:
            got = self._partials[run["id"]] = self.partial(run)
        return got

    def history(self, row: tuple, fig) -> tuple:
        hist = [(r, self.figs[r["id"]].get(row)) for r in self.before]
        hist = [(r, g) for r, g in hist if usable(g, fig)][-self.row_last:]
        mine = self._partial_of(self.target)
        alike = [(r, g) for r, g in hist if self._partial_of(r) == mine]
        if len(alike) >= 2:
            hist = alike    # a partial run's GPU state may differ from a full run's: like with like
        values = [math.log(g.value) - self.struct[r["id"]].adjust.get(row, 0.0) for r, g in hist]
        groups = [start_of(r) for r, _ in hist]
        workers = [list(g.workers or []) for _, g in hist]
        rounds = [self._round_factor(r, fig) for r, _ in hist]
        return values, groups, workers, rounds, hist

    def _round_factor(self, run: dict, fig) -> float:
        """Eager ratios' process spread is their rounds' sampling error: scaled to one round."""
        if fig.mode != "eager" or not fig.on_ratio:
            return 1.0
        r = self.rounds.get(run["id"]) or self.rounds.get(self.target["id"]) or 1
        return float(r)

    def _loso_z(self, row: tuple, pool: pools.Pool) -> dict[str, float]:
        """Each start's mean of the row against the other starts', on components learned without it:
        what a start new to the history does, out of sample."""
        values, groups, *_ = self.rows[row]
        by = group_sums(values, groups)
        if len(by) < 4:
            return {}
        out = {}
        cs, ms, sss = [c for c, _, _ in by.values()], [m for _, m, _ in by.values()], [ss for *_, ss in by.values()]
        for j, (g, (n_g, mean_g, _)) in enumerate(by.items()):
            # one_way of the other starts
            n, sw2, loc, vb, hm = moments(cs[:j] + cs[j + 1:], ms[:j] + ms[j + 1:], sss[:j] + sss[j + 1:])
            k = len(cs) - 1
            sw2 = pool.moderated_w(sw2, n - k)
            sb2 = pool.between_of(vb, k - 1, hm, sw2)
            var = sb2 + sw2 / n_g + (sb2 + sw2 / (n / k)) / k
            if var > 0:
                out[g] = (mean_g - loc) / math.sqrt(var)
        return out

    def kernels_of(self, row: tuple) -> str:
        if row not in self._kern:
            self._kern[row] = _kernels_of(self.rows[row][4], self.target)
        return self._kern[row]

    def _loro_z(self, row: tuple, pool: pools.Pool) -> list[float]:
        """Each run of a start with two or more against the mean of that start's other runs, on the
        row's within-start components: what a GPU's next run does against its own history."""
        values, groups, *_ = self.rows[row]
        p = self.parts[row]
        sw2 = pool.moderated_w(p.sw2, p.dfw)
        if sw2 <= 0:
            return []
        by: dict[str, list[float]] = {}
        for x, g in zip(values, groups):
            by.setdefault(g, []).append(x)
        out = []
        for xs in by.values():
            if len(xs) < 3:     # a start's first run is often cold: judged against two or more, as MIN_OWN
                continue
            for i, x in enumerate(xs):
                rest = xs[:i] + xs[i + 1:]
                out.append((x - sum(rest) / len(rest)) / math.sqrt(sw2 * (1 + 1 / len(rest))))
        return out

    def history_structures(self, row: tuple) -> list:
        """The structures of the history's runs that measured `row`."""
        return [self.struct[r["id"]] for r, _ in self.rows[row][4]] if row in self.rows else []

    def row_history(self, row: tuple) -> RowHistory:
        """The history's structures of `row`, kept: the history is fixed, the target's figures are not."""
        got = self._row_hist.get(row)
        if got is None:
            got = self._row_hist[row] = RowHistory(row, self.history_structures(row))
        return got

    def lost_levels(self, row: tuple) -> set:
        """The level terms its history adjusted `row` by that this run could not set (lost_levels)."""
        return set(self.row_history(row).lost(self.struct[self.target["id"]])[1])

    def adjust_excess(self, row: tuple) -> float:
        """The target's adjustment of `row` past its history's typical uncertainty (adjust_excess)."""
        return self.row_history(row).excess(self.struct[self.target["id"]])

    def predict(self, row: tuple, fig) -> Prediction | None:
        """The row's prediction (kept: it depends on the history and the figure's workers, not its value)."""
        key = (row, len(fig.workers or ()))
        if key not in self._pred:
            self._pred[key] = self._predict(row, fig)
        return self._pred[key]

    def _predict(self, row: tuple, fig) -> Prediction | None:
        got = self.rows.get(row)
        if not got:
            return None
        values, groups, _, _, hist = got
        mine = [same_gpu(r, self.target) for r, _ in hist]
        pl = self.pools[row_class(fig)]
        rounds = self._round_factor(self.target, fig)
        return predict(values, groups, mine, self.parts[row], pl, len(fig.workers or ()) or 1, rounds,
                             fig.median_us or fig.value, fig.mode, self.min_own)


def _kernels_of(hist: list, target: dict) -> str:
    own = [g.kernels for r, g in hist if same_gpu(r, target) and g.kernels]
    if own:
        return own[-1]
    ks = Counter(g.kernels for _, g in hist if g.kernels)
    return ks.most_common(1)[0][0] if ks else ""
