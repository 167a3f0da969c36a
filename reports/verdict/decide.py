"""One run judged against its history with the verdict model (model.py, pool.py).

Every measured row is judged: its change against the model's prediction, as a z score on a
Student-t of its class's tails, a two-sided p-value, and Benjamini-Hochberg over the run's rows
at false discovery rate Q. Then:

- SLOWER / FASTER: discovered (KERNEL CHANGED when its device kernels differ from the history's and
  its plan rule is fixed; PICK CHANGED, information only, when the plan is a timing race);
- SAME: not discovered, and the row had the power to see its class's practical threshold
  (its MDC, the change caught with 80 % probability, is within it);
- UNSURE: not discovered, and its variance is too wide to see that threshold (it says which part).

Structure is reported, not absorbed: the run's machine factors and kernel terms each get a z
against the history's runs, and those past the same FDR become findings. A finding seen on the
run's own GPU's history, confirmed by a run of another start, or between versions, is a
regression; one seen on one start of a GPU new to the history is information about that GPU.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cudnn_hostbench.reports.verdict import model
from cudnn_hostbench.reports.verdict import pool as pools

Q = 0.01             # false discovery rate over a run's rows (and, apart, over its findings)
POWER = 0.8          # the MDC is the change caught with this probability
DEFAULT_LAST = 30    # history runs per row
MIN_OWN = 2          # runs of its own GPU a row needs before it is judged against them (a cold first run is no location)
CONFIRM_LOOKAHEAD = 5
PARTIAL = 0.5        # a run holding under this share of the key's probes is partial
# the smallest change worth a verdict per class: a row whose MDC is past it is UNSURE, not SAME
PRACTICAL = {"graph": 0.04, "device": 0.04, "graph heavy": 0.08, "eager": 0.08, "host": 0.5}
CHANGED = ("SLOWER", "FASTER", "KERNEL CHANGED")
PARTNER_Z = 2.0      # a variant's other GPU mode moved with it: nominally significant, the same way
ROW_PRIOR_DF = 10.0  # a store prior's row components weigh at most this many degrees of freedom
# FINDING: a row that moved as part of a finding (its variant's GPU work), reported once there


def practical_text() -> str:
    """The practical thresholds as the docs quote them."""
    return ", ".join(f"{cls} {t * 100:g} %" for cls, t in PRACTICAL.items())


def practical(fig) -> float:
    return PRACTICAL.get(f"{fig.mode} {model.size_class(fig)}", PRACTICAL.get(fig.mode, 0.08))


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
    mdc: float | None    # the change caught with 80 % probability (relative)
    n: int               # runs in the history
    verdict: str
    state: str = ""      # confirmed / replicated / suspect / new, for SLOWER/FASTER/KERNEL CHANGED
    note: str = ""
    on_ratio: bool = False
    host_state: str = ""
    scale: str = ""      # 'same GPU' or 'fleet'
    processes: int = 0
    z: float | None = None
    p: float | None = None
    # what the run's structure took off the figure before it was judged (docs/history.md, "The model"):
    # the log offset and the terms it came from ('machine factor', then model.LEVELS' names); `change`
    # is the adjusted figure's, raw_change the figure's own against the same location
    adjust: float = 0.0
    adjusted_by: tuple = ()

    @property
    def row(self) -> tuple:
        return (self.probe, self.variant, self.size, self.mode)

    @property
    def raw_change(self) -> float:
        """The change before the run's structure was taken off (the figure against the same location)."""
        return (1 + self.change) * math.exp(self.adjust) - 1 if self.adjust else self.change


@dataclass
class Finding:
    """A machine factor or kernel term of the run, against the history's runs."""
    kind: str            # 'machine' or 'kernel'
    name: str            # the group ('graph heavy') or the kernel set
    change: float        # relative
    z: float
    p: float
    rows: int
    scale: str           # 'same GPU' or 'fleet'
    status: str = ""     # 'regression' / 'information' / '' (not past the FDR)
    state: str = ""      # confirmed / replicated / new
    ref: tuple = (0.0, 0.0, 1.0)   # (history mean, sd, df) another run's term is tested against

    def line(self) -> str:
        what = {"machine": f"this GPU runs {self.name} rows", "kernel": f"kernel {self.name} ({self.rows} rows)",
                "block": f"eager block {self.name} ({self.rows} ratios: their baseline's host time)",
                "gpu block": f"block {self.name} ({self.rows} rows)",
                "host": (f"GPU-paced {self.name.replace(model.GPU_PACED + ' ', '')} rows ({self.rows})"
                         if model.GPU_PACED in self.name
                         else f"the host's speed: {self.name} rows ({self.rows})"),
                "variant": f"variant {self.name} (graph and device)"}.get(self.kind, f"{self.kind} {self.name}")
        return (f"{what} {self.change * 100:+.1f} % on this run (z {self.z:+.1f} against the {self.scale}"
                f"{'' if not self.status else ': ' + self.status}{'' if not self.state else ', ' + self.state})")


@dataclass
class Judged:
    target: dict
    verdicts: list[Verdict]
    findings: list[Finding] = field(default_factory=list)


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


def bh(pvalues: list[float], fdr: float) -> list[bool]:
    """Benjamini-Hochberg discoveries at false discovery rate fdr."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    m, cut = len(pvalues), -1
    for rank, i in enumerate(order, 1):
        if pvalues[i] <= fdr * rank / m:
            cut = rank
    out = [False] * m
    for rank, i in enumerate(order, 1):
        out[i] = rank <= cut
    return out


def _or_mode(zscores: dict[str, list[float]], cls: str) -> list[float]:
    """A class's z scores, or where it has few its mode's classes' pooled (size classes, races, host states)."""
    if len(zscores.get(cls, ())) >= pools.MIN_CLASS_Z:
        return zscores[cls]
    return [x for c, xs in zscores.items() if c.split()[0] == cls.split()[0] for x in xs]


def _with_partner(row: tuple, start: str, zscore: float, z_by_row: dict) -> bool:
    """Whether a GPU row's variant moved on `start` in its other mode too (the same way, |z| past PARTNER_Z)."""
    if row[3] not in model.GPU_MODES:
        return False
    other = z_by_row.get((*row[:3], "device" if row[3] == "graph" else "graph"), {}).get(start)
    return other is not None and other * zscore > 0 and abs(other) >= PARTNER_Z and abs(zscore) >= PARTNER_Z


@dataclass
class RunLayout:
    """What a run's structure takes of its figures, whatever history it is judged against."""
    logs: dict      # structured row -> log figure, where it has one
    races: list     # (row, figure) of race rows that name their kernels
    rows: dict      # model.layout


_LAYOUTS: dict[int, tuple[dict, RunLayout]] = {}   # id(figures) -> (figures, layout), newest used last
MAX_LAYOUTS = 256


def run_layout(figures: dict) -> RunLayout:
    """A run's RunLayout, kept for the figures object: every fold and history model of verdict-check
    reads the same runs' figures (figures are replaced, never changed in place: validate._scaled)."""
    got = _LAYOUTS.pop(id(figures), None)
    if got is None or got[0] is not figures:
        logs = {row: math.log(g.value) for row, g in figures.items()
                if g.status == "ok" and (g.value or 0) > 0 and model.structured(g)}
        races = [(row, g) for row, g in figures.items() if model.race(g) and g.kernels]
        got = (figures, RunLayout(logs, races, model.layout(figures)))
        if len(_LAYOUTS) >= MAX_LAYOUTS:
            del _LAYOUTS[next(iter(_LAYOUTS))]
    _LAYOUTS[id(figures)] = got
    return got[1]


class Model:
    """The history of one key around a target run: structure, components, pools."""

    def __init__(self, target: dict, before: list[dict], figs: dict, last: int = DEFAULT_LAST,
                 prior: Any = None, min_own: int = MIN_OWN, row_last: int | None = None):
        self.target, self.last, self.min_own = target, last, min_own
        self.row_last = row_last or last          # history runs per row (two starts: one fewer than `last`)
        self.prior = prior if prior is not None else {}
        self.before = before[-2 * last:]
        self.figs = figs
        self.most = max(len((r.get("probes") or "").split(",")) for r in [*self.before, target])
        self.rounds = {r["id"]: rounds_of(r) for r in [*self.before, target]}
        self._partials: dict[int, bool] = {}
        self.ref, self.ref_kernels = self._references(figs)
        self.struct = {r["id"]: self._structure(r["id"]) for r in self.before}
        self.rows: dict[tuple, tuple] = {}       # row -> (values, groups, workers, rounds, hist runs)
        self._pred: dict[tuple, model.Prediction | None] = {}
        self._two: tuple | None = None     # (previous run id, its Model): two-start evidence, built once
        self._kern: dict[tuple, str] = {}
        self._procs: dict[int, int] = {}
        self._terms: dict[tuple, dict] = {}    # (another run's id, kind) -> terms_of
        self._row_hist: dict[tuple, model.RowHistory] = {}
        self._seen: dict[int, list] = {}      # run id -> [(its figures, their structure)]: structure_seen
        self._terms_hist: tuple | None = None  # _findings' history, and per term its values there
        self._past: dict[tuple, tuple] = {}
        self._hist_procs: tuple | None = None  # (that history, its processes' median variance, _term_processes')
        self._groups: tuple | None = None      # (the target's figures, their GPU rows per machine group)
        self.parts: dict[tuple, model.Parts] = {}
        by_class = self._row_parts(figs[target["id"]])
        self.pools: dict[str, pools.Pool] = {}
        self._fit_pools(by_class)

    def _references(self, figs: dict) -> tuple[dict, dict]:
        """(each row's median log figure over the history, each race row's most common kernels there)."""
        ref_logs: dict[tuple, list[float]] = {}
        for r in self.before:
            for row, x in run_layout(figs[r["id"]]).logs.items():
                ref_logs.setdefault(row, []).append(x)
        picks: dict[tuple, Counter] = {}        # a race row's kernels over the history
        for r in self.before:
            for row, g in run_layout(figs[r["id"]]).races:
                picks.setdefault(row, Counter())[g.kernels] += 1
        return ({row: statistics.median(xs) for row, xs in ref_logs.items()},
                {row: c.most_common(1)[0][0] for row, c in picks.items()})

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
                row_parts = model.parts(*got[:4])
                prior_row = self.prior.row(f) if hasattr(self.prior, "row") else None
                self.parts[row] = (model.pooled(row_parts, prior_row, ROW_PRIOR_DF) if prior_row is not None
                                   else row_parts)
                by_class.setdefault(model.row_class(f), []).append(row)
        return by_class

    def _fit_pools(self, by_class: dict[str, list]) -> None:
        """Each class's pool (its rows' parts, their out-of-sample z scores, the prior) into
        self.pools; the z scores into z_fleet and z_same."""
        starts = len({model.start_of(r) for r in self.before})
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

    def structure_of(self, run_id: int) -> model.Structure:
        """A run's structure against this history, computed once (later runs, for confirmation)."""
        if run_id not in self.struct:
            self.struct[run_id] = self._structure(run_id)
        return self.struct[run_id]

    def structure_seen(self, run_id: int) -> model.Structure:
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

    def _structure(self, run_id: int, figures: dict | None = None) -> model.Structure:
        figures = self.figs[run_id] if figures is None else figures
        run = run_layout(figures)
        # a race row that picked another kernel than its history's most common one ran other work
        # (a race's pick can change the kernel between two runs of one start: log 2026-12-02-1013);
        # it sets no term
        apart = {row for row, g in run.races if self.ref_kernels.get(row, g.kernels) != g.kernels}
        return model.structure(run.logs, self.ref, figures, apart, run.rows)

    def gpu_processes(self, run_id: int) -> int:
        """The processes a run's GPU rows stand on (the median over them; one when none say)."""
        if run_id not in self._procs:
            ns = [max(1, len(g.workers or ())) for g in self.figs.get(run_id, {}).values() if model.is_gpu_row(g)]
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
        groups = [model.start_of(r) for r, _ in hist]
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
        by = model.group_sums(values, groups)
        if len(by) < 4:
            return {}
        out = {}
        cs, ms, sss = [c for c, _, _ in by.values()], [m for _, m, _ in by.values()], [ss for *_, ss in by.values()]
        for j, (g, (n_g, mean_g, _)) in enumerate(by.items()):
            # model.one_way of the other starts
            n, sw2, loc, vb, hm = model.moments(cs[:j] + cs[j + 1:], ms[:j] + ms[j + 1:], sss[:j] + sss[j + 1:])
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

    def row_history(self, row: tuple) -> model.RowHistory:
        """The history's structures of `row`, kept: the history is fixed, the target's figures are not."""
        got = self._row_hist.get(row)
        if got is None:
            got = self._row_hist[row] = model.RowHistory(row, self.history_structures(row))
        return got

    def lost_levels(self, row: tuple) -> set:
        """The level terms its history adjusted `row` by that this run could not set (model.lost_levels)."""
        return set(self.row_history(row).lost(self.struct[self.target["id"]])[1])

    def adjust_excess(self, row: tuple) -> float:
        """The target's adjustment of `row` past its history's typical uncertainty (model.adjust_excess)."""
        return self.row_history(row).excess(self.struct[self.target["id"]])

    def predict(self, row: tuple, fig) -> model.Prediction | None:
        """The row's prediction (kept: it depends on the history and the figure's workers, not its value)."""
        key = (row, len(fig.workers or ()))
        if key not in self._pred:
            self._pred[key] = self._predict(row, fig)
        return self._pred[key]

    def _predict(self, row: tuple, fig) -> model.Prediction | None:
        got = self.rows.get(row)
        if not got:
            return None
        values, groups, _, _, hist = got
        mine = [model.same_gpu(r, self.target) for r, _ in hist]
        pl = self.pools[model.row_class(fig)]
        rounds = self._round_factor(self.target, fig)
        return model.predict(values, groups, mine, self.parts[row], pl, len(fig.workers or ()) or 1, rounds,
                             fig.median_us or fig.value, fig.mode, self.min_own)


def _verdict(fig, value: float | None, location: float | None, change: float, runs: int, verdict: str,
             **kw) -> Verdict:
    return Verdict(fig.probe, fig.variant, fig.size, fig.mode, f"x {fig.baseline}" if fig.on_ratio else "us", value, location,
                   change, None, runs, verdict, on_ratio=fig.on_ratio, host_state=fig.host_state, processes=fig.processes, **kw)


def _kernels_of(hist: list, target: dict) -> str:
    own = [g.kernels for r, g in hist if model.same_gpu(r, target) and g.kernels]
    if own:
        return own[-1]
    ks = Counter(g.kernels for _, g in hist if g.kernels)
    return ks.most_common(1)[0][0] if ks else ""


MDC_SHOWN = 10.0   # an MDC past +1000 % (a heavy-tailed class with few runs) says only that it sees nothing


def mdc_text(change: float, sep: str = " ") -> str:
    return f"{change * 100:.1f}{sep}%" if change < MDC_SHOWN else f"> {MDC_SHOWN * 100:.0f}{sep}%"


def mdc(std_dev: float, dof: float, tests: int, fdr: float = Q) -> float:
    """The relative change caught with POWER probability at BH's first-rank threshold fdr/tests."""
    return math.exp(std_dev * _reach(dof, tests, fdr)) - 1


_REACH: dict[tuple, float] = {}


def _reach(dof: float, tests: int, fdr: float) -> float:
    """The z a change must have to be caught with POWER probability at BH's first-rank threshold fdr/tests."""
    key = (round(dof, 3), tests, fdr)
    if key not in _REACH:
        from scipy import stats
        # from the key's dof, not the caller's: else the first caller of a key set it for every later
        # one, and a figure depended on what ran before it in the process (a dashboard's MDC 201.1
        # or 201.2 % by the tests run before it)
        _REACH[key] = float(stats.t.isf(fdr / (2 * max(tests, 1)), key[0]) + stats.t.ppf(POWER, key[0]))
    return _REACH[key]


def stdev(values: list[float]) -> float:
    """The sample standard deviation in floats (statistics.stdev sums exact fractions: a fifth of
    the validation's time)."""
    m = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((x - m) ** 2 for x in values) / (len(values) - 1))


def t_sf(score, dof):
    """The t distribution's upper tail (scipy.stats.t.sf) as the bare ufunc: one call for arrays
    of scores and degrees of freedom alike, without rv_continuous's per-call checks."""
    import numpy as np
    from scipy import special
    return special.stdtr(dof, -np.asarray(score, dtype=float))


def _pvalues(scores: list[float], dofs: list[float]) -> list[float]:
    """Two-sided p-values of t scores."""
    import numpy as np
    return (2 * t_sf(np.abs(np.asarray(scores, dtype=float)), np.asarray(dofs, dtype=float))).tolist()


ADJUSTED_BY = {"machine factor": "the machine factor", "kernel": "its kernel's other rows",
               "gpu block": "its block's other rows", "block": "its block's baseline (the other ratios)",
               "host": "the host's speed"}


def adjusted_by(structure, row: tuple, fig) -> tuple:
    """The structure terms that adjusted `row` on a run of structure `structure` (a machine factor, then
    model.LEVELS' names in their order): what its judged change is net of."""
    got = ("machine factor",) if model.is_gpu_row(fig) and model.group_of(fig) in structure.factors else ()
    names = structure.levels.get(row) or ()
    return got + tuple(n for n, *_ in model.LEVELS if n in names)


def adjusted_text(names) -> str:
    """What a change is adjusted for, in words ('' when nothing adjusted it)."""
    return ", ".join(ADJUSTED_BY.get(n, n) for n in names)


DECIDED = ("SAME", "SLOWER", "FASTER", "KERNEL CHANGED", "PICK CHANGED", "FINDING")   # a verdict that judged the row


def finding_json(finding: Finding) -> dict:
    return {"kind": finding.kind, "name": finding.name, "change": finding.change, "z": finding.z, "p": finding.p,
            "rows": finding.rows, "scale": finding.scale, "status": finding.status, "state": finding.state}


def report_json(command: str, passed: bool, counts: dict, findings: list, rows: list[dict], **extra) -> str:
    """The one JSON shape `compare --json` and `history check --json` write (docs/history.md): `pass`
    (no regression under the command's --fail-on-regression gate), the verdict counts, how many rows a
    verdict decided (SAME or a change: not UNSURE, NO HISTORY, UNMEASURED, ...), the findings past the
    FDR (a term that was not found is no finding), every row (`change`: the figure the verdict judged;
    `raw_change`: before the run's structure was taken off; `adjusted_by`: the terms between them),
    then what is the command's own."""
    return json.dumps({"command": command, "pass": bool(passed), "counts": counts,
                       "decided": sum(n for k, n in counts.items() if k in DECIDED),
                       "rows_total": len(rows), "findings": [finding_json(f) for f in findings if f.status],
                       "rows": rows, **extra}, indent=1, default=str)


ZERO_NOTE = "a zero figure (no such time in the step): a change on the log scale is undefined"


def _row_verdict(history: Model, target: dict, figs: dict, row: tuple, fig, judged: list, widened: set,
                 unsettled: set) -> Verdict:
    """One row's first verdict: UNMEASURED, NO HISTORY, UNSURE (noise unknown), or SAME with its
    deviation appended to `judged` (row, figure, prediction, d, sd, nu) for the tests over the rows."""
    if fig.status != "ok" or not fig.value or fig.value <= 0:
        zero = fig.status == "ok" and fig.value is not None and fig.value == 0
        return _verdict(fig, None, None, float("nan"), 0, "UNMEASURED", note=ZERO_NOTE if zero else fig.status[:120])
    pred = history.predict(row, fig)
    if pred is None:
        return _verdict(fig, fig.value, None, float("nan"), 0, "NO HISTORY",
                        note="no earlier run on this key measured this row")
    if pred.var <= 0:      # nothing known of its noise: no spread in its history, its workers or a prior
        return _verdict(fig, fig.value, None, float("nan"), pred.n, "UNSURE",
                        note="its noise is unknown (no history spread, worker spread or prior for its class)")
    struct = history.struct[target["id"]]
    x = math.log(fig.value) - struct.adjust.get(row, 0.0)
    paced = model.paced_var(fig, figs[target["id"]], struct.terms)
    loose = history.adjust_excess(row)
    d, sd = x - pred.location, math.sqrt(pred.var + paced + loose)
    judged.append((row, fig, pred, d, sd, pred.df))
    if paced:
        widened.add(row)
    if loose > pred.var:
        unsettled.add(row)
    raw = figs[target["id"]][row].value
    return _verdict(fig, raw, raw / math.exp(d), math.exp(d) - 1, pred.n, "SAME", scale=pred.scale,
                    adjust=math.log(fig.value) - x, adjusted_by=adjusted_by(struct, row, fig))


def _label(history: Model, row: tuple, verdict: Verdict, fig, pred, deviation: float, hit: bool, row_mdc: float,
           notes: list) -> None:
    """Name a judged row's verdict from its discovery, kernels and MDC; add its notes."""
    kern = history.kernels_of(row)
    other_kernels = bool(kern and fig.kernels and kern != fig.kernels)
    if hit:
        if other_kernels and model.race(fig):
            verdict.verdict = "PICK CHANGED"
            notes.append(f"autotune pick changed (information): history {kern}; this run {fig.kernels}")
        elif other_kernels:
            verdict.verdict = "KERNEL CHANGED"
            notes.append(f"kernels: history {kern}; this run {fig.kernels}")
        else:
            verdict.verdict = "SLOWER" if deviation > 0 else "FASTER"
    elif row_mdc > practical(fig):
        verdict.verdict = "UNSURE"
        big = max(pred.parts, key=pred.parts.get)
        notes.append(f"too noisy to see {practical(fig) * 100:g} % (its mdc is past it, largest part: {big})")
    elif other_kernels:
        notes.append(f"kernels: history {kern}; this run {fig.kernels}")


def _unsettled_note(history: Model, row: tuple) -> str:
    """Why a row whose adjusting rows disagree on this run was widened."""
    lost = history.lost_levels(row)
    return (f"its history's {', '.join(sorted(lost))} term{'s' if len(lost) > 1 else ''} could not be set "
            "on this run (too few of its rows): widened by the history's adjustments" if lost else
            "the rows it is adjusted by (its kernel, its block) disagree on this run: widened by that")


def _test_rows(history: Model, target: dict, out: dict, judged: list, widened: set, unsettled: set, fdr: float) -> None:
    """Each judged row's z, p and MDC, Benjamini-Hochberg over the rows at `fdr`, its verdict and notes."""
    pvalues = _pvalues([d / sd for _, _, _, d, sd, _ in judged], [nu for *_, nu in judged])
    found = bh(pvalues, fdr)
    tests = len(judged)
    partial = history.partial(target)
    for (row, fig, pred, d, sd, nu), pvalue, hit in zip(judged, pvalues, found):
        verdict = out[row]
        row_mdc = mdc(sd, nu, tests, fdr)
        verdict.z, verdict.p, verdict.mdc = d / sd, pvalue, row_mdc
        notes = []
        if fig.processes < 3:
            notes.append(f"{fig.processes} process{'es' if fig.processes > 1 else ''}: "
                         "widened by the process component")
        if pred.scale == "fleet" and partial:
            notes.append("a partial run")
        _label(history, row, verdict, fig, pred, d, hit, row_mdc, notes)
        if row in widened:
            notes.append("variant and baseline paced apart (GPU, host): widened by the host's speed")
        if row in unsettled:
            notes.append(_unsettled_note(history, row))
        verdict.note = "; ".join(notes)


def _history_facts(history: Model, target: dict) -> None:
    """What the judgement stood on, into `target`: its history's runs, starts, factors and pools."""
    own = [r for r in history.before if model.same_gpu(r, target)]
    target.update(same_gpu_runs=len(own), history_runs=len(history.before),
                  history_starts=len({model.start_of(r) for r in history.before}), partial=history.partial(target),
                  partial_runs=[r["id"] for r in history.before if history.partial(r)],
                  machine_factors={g: f[0] for g, f in history.struct[target["id"]].factors.items()},
                  pools={c: p for c, p in history.pools.items()})


def judge_run(target: dict, before: list[dict], after: list[dict], figs: dict, last: int = DEFAULT_LAST,
              prior: Any = None, fdr: float = Q, history: Model | None = None, min_own: int = MIN_OWN,
              curves: bool = False) -> Judged:
    """The verdicts and findings of `target` against `before` (oldest first); `after`: later runs of
    the key, for confirmation. `history`: the Model of this target's history, built once for several
    judgements of its figures (the validation's injections: `figs[target id]` changed, nothing else).
    `curves`: also the calibration z scores and power curves per class (the dashboard's figures)."""
    history = history or Model(target, before, figs, last, prior, min_own)
    fs = figs[target["id"]]
    history.figs = figs
    history.struct[target["id"]] = history._structure(target["id"], fs)
    judged: list[tuple] = []   # (row, f, prediction, d, sd, nu)
    widened: set = set()       # eager ratios whose variant and baseline keep different paces
    unsettled: set = set()     # rows whose structure's other rows disagree on this run (model.adjust_excess)
    out: dict[tuple, Verdict] = {row: _row_verdict(history, target, figs, row, fig, judged, widened, unsettled)
                                 for row, fig in fs.items()}
    _test_rows(history, target, out, judged, widened, unsettled, fdr)
    _two_starts(history, out, judged, fdr)
    findings = _findings(history, fdr) + _variants(history, out)
    for v in out.values():
        if v.verdict in CHANGED and not v.state:
            v.state = _state(history, after, v, fs[v.row])
    for fd in findings:
        if fd.status:
            _finding_state(history, after, fd)
    _history_facts(history, target)
    if curves:
        target.update(calibration={c: (history.z_fleet.get(c, []), history.pools[c].nu) for c in history.pools},
                      power=power(judged, len(judged), fdr))
    return Judged(target, list(out.values()), findings)


POWER_CHANGES = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32)


def previous_start(history: Model) -> dict | None:
    """The run just before the judged one when it ran on another start, like it (full or partial):
    last night's GPU, whose rows a change made in between moves too."""
    if not history.before:
        return None
    p = history.before[-1]
    if model.start_of(p) == model.start_of(history.target) or history.partial(p) != history.partial(history.target):
        return None
    return p


def pair_t(z_target, z_previous, rho):
    """One t of two runs' mean deviation from a prediction, from their t scores and the share `rho`
    of the prediction's variance that is its location's. Both share the location and the variance
    estimate, so their t scores are not independent: two t's summed as if they were (Stouffer)
    overstate the evidence: two moderate t's summed as independent read past a run's FDR (log
    2026-12-03-0826)."""
    import numpy as np
    a, b, r = np.asarray(z_target, dtype=float), np.asarray(z_previous, dtype=float), np.asarray(rho, dtype=float)
    return (a + b) / 2 / np.sqrt((1 - r) / 2 + r)


def _two_starts(history: Model, out: dict, judged: list[tuple], fdr: float) -> None:
    """Evidence over two starts: a fleet-judged row not called on this run alone is judged again
    with the previous run of another start, both against the history before them (pair_t: one t of
    their mean deviation, on the prediction's own degrees of freedom). A change made between the
    history and the two runs moves both; a GPU that runs a row apart moves one. Benjamini-Hochberg
    over those rows at Q; a discovery is SLOWER or FASTER, "confirmed by two starts"."""
    prev = previous_start(history)
    if prev is None:
        return
    rest = history.before[:-1]
    if len({model.start_of(r) for r in rest}) < 2:
        return
    if history._two is None or history._two[0] != prev["id"]:
        # the history this run was judged on, less the previous run: one run fewer per row, else each
        # row's window reaches one run further back, and one older run's spread processes can set a
        # row's process variance in the two-start model alone
        history._two = (prev["id"], Model(history.target, rest, history.figs, history.last, history.prior,
                                          history.min_own, row_last=max(1, history.row_last - 1)))
    m2 = history._two[1]
    m2.figs = history.figs
    st_t, st_p = m2._structure(history.target["id"], history.figs[history.target["id"]]), m2.structure_seen(prev["id"])
    cand, zt, zp, dfs, rho = [], [], [], [], []
    for row, f, *_ in judged:
        v, g = out[row], history.figs[prev["id"]].get(row)
        if v.verdict not in ("SAME", "UNSURE") or not usable(g, f):
            continue
        if (model.paced_var(f, history.figs[history.target["id"]], st_t.terms)
                or model.paced_var(g, history.figs[prev["id"]], st_p.terms)):
            continue   # paced apart on either run: the host's speed moves it, two starts confirm nothing
        pr = m2.predict(row, f)
        if pr is None or pr.scale != "fleet" or pr.var <= 0:
            continue
        # each run's adjustment widens its own z as far as it is looser than the history's (decide's rule)
        hist = m2.row_history(row)
        sd_t = math.sqrt(pr.var + hist.excess(st_t))
        sd_p = math.sqrt(pr.var + hist.excess(st_p))
        cand.append(row)
        zt.append((math.log(f.value) - st_t.adjust.get(row, 0.0) - pr.location) / sd_t)
        zp.append((math.log(g.value) - st_p.adjust.get(row, 0.0) - pr.location) / sd_p)
        dfs.append(pr.df)
        rho.append(pr.parts.get("location", 0.0) / max(sum(pr.parts.values()), 1e-300))
    if not cand:
        return
    import numpy as np
    zs = pair_t(zt, zp, rho)
    ps = [float(x) for x in 2 * t_sf(np.abs(zs), np.asarray(dfs))]
    for row, t_, p_, p, hit in zip(cand, zt, zp, ps, bh(ps, fdr)):
        if hit and t_ * p_ > 0:
            v = out[row]
            v.verdict = "SLOWER" if t_ > 0 else "FASTER"
            v.state = "confirmed by two starts"
            kept = [x for x in v.note.split("; ") if x and not x.startswith("too noisy")]
            v.note = "; ".join([*kept, f"with run {prev['id']} of another start (z {p_:+.1f}): two starts, p {p:.1e}"])


def power(judged: list[tuple], tests: int, fdr: float = Q, changes: tuple = POWER_CHANGES) -> dict[str, list[float]]:
    """Per row class (mode and size class or figure), the mean chance that a slowdown of each of
    `changes` is caught alone (BH's first-rank threshold, each row's own t): the power curve that
    verdict-check's injections hold the printed MDC to."""
    import numpy as np
    from scipy import stats
    by: dict[str, list[list[float]]] = {}
    for _, f, _, _, sd, nu in judged:
        crit = stats.t.isf(fdr / (2 * max(tests, 1)), nu)
        shift = np.log1p(np.asarray(changes)) / sd
        got = stats.t.sf(crit - shift, nu) + stats.t.cdf(-crit - shift, nu)
        by.setdefault(power_class(f), []).append([float(x) for x in got])
    return {c: [float(x) for x in np.mean(v, axis=0)] for c, v in sorted(by.items())}


def power_class(fig) -> str:
    if fig.mode in model.GPU_MODES:
        return f"{fig.mode} {model.size_class(fig)}"
    if fig.mode == "eager":
        return f"eager {'ratio' if fig.on_ratio else 'µs'}"
    return fig.mode


def terms_of(history: Model, run_id: int, kind: str) -> dict:
    if run_id != history.target["id"]:     # another run's structure is computed once: so are its terms
        key = (run_id, kind)
        if key not in history._terms:
            history._terms[key] = _terms_of(history.struct[run_id], kind)
        return history._terms[key]
    return _terms_of(history.struct[run_id], kind)


def _terms_of(structure: model.Structure, kind: str) -> dict:
    if kind == "machine":
        return {g: (f[0], f[2]) for g, f in structure.factors.items()}
    return {k: (t[0], len(t[1])) for (lvl, k), t in structure.terms.items() if lvl == kind}


def _term_rows(history: Model, kind: str, name: str) -> list[tuple]:
    """The target run's rows in a term (the machine: its group of GPU rows)."""
    if kind == "machine":
        fs = history.figs[history.target["id"]]
        if history._groups is None or history._groups[0] is not fs:   # every group's rows in one pass over the run
            groups: dict[str, list] = {}
            for r, f in fs.items():
                if model.is_gpu_row(f):
                    groups.setdefault(model.group_of(f), []).append(r)
            history._groups = (fs, groups)
        return history._groups[1].get(name, [])
    return history.struct[history.target["id"]].terms.get((kind, name), (0.0, []))[1]


def _member_noise(history: Model, kind: str, name: str) -> tuple[float, float]:
    """(sd, df) of the median prediction of the target's rows in a term (the machine: its group)."""
    fs, rows = history.figs[history.target["id"]], _term_rows(history, kind, name)
    got = [p for p in (history.predict(r, fs[r]) for r in rows if r in history.rows) if p is not None and p.var > 0]
    if not got:
        return 0.0, 0.0
    return statistics.median(math.sqrt(p.var) for p in got), statistics.median(p.df for p in got)


def _term_processes(history: Model, kind: str, name: str, hist: list[dict]) -> float:
    """The variance a term's value carries from its processes, in the target run and in the mean of
    `hist`: rows of one term share a process (its clocks, its memory), so their process offsets are
    taken as one (the median of the member rows' per-process variance). A history measured on three
    processes a run says little of a run measured on one: without this, a kernel term of one-process
    rows reads a tiny move between two runs of one start as significant."""
    fs, rows = history.figs[history.target["id"]], _term_rows(history, kind, name)
    if history._hist_procs is None or history._hist_procs[0] is not hist:   # the same history for every term
        hist_n = [history.gpu_processes(r["id"]) for r in hist]
        history._hist_procs = (hist, model.median_var(int(statistics.median(hist_n))) if hist_n else model.median_var(1), {})
    _, h, kept = history._hist_procs
    # the rows' predictions are the model's (per row and workers): the term's figure is kept per
    # its rows and their workers, the same in most judgements of the model
    key = (tuple(rows), tuple(len(fs[r].workers or ()) for r in rows))
    if key not in kept:
        one, procs = [], []
        for r in rows:
            f = fs[r]
            p = history.predict(r, f) if r in history.rows else None
            n = max(1, len(f.workers or ()))
            if p is not None and p.parts.get("processes"):
                one.append(p.parts["processes"] / model.median_var(n))
                procs.append(n)
        kept[key] = (statistics.median(one) * (model.median_var(int(statistics.median(procs))) + h / max(1, len(hist)))
                     if one else 0.0)
    return kept[key]


def _terms_history(history: Model) -> tuple[str, list[dict], bool]:
    """(scale, history runs, whether full and partial runs are mixed in them) that the run's terms
    are judged against: the same for every judgement of one model, so kept."""
    if history._terms_hist is None:
        own = [r for r in history.before if model.same_gpu(r, history.target)]
        scale, hist = ("same GPU", own) if len(own) >= history.min_own else ("fleet", history.before)
        # like with like: a partial run's GPU state differs from a full run's (docs/history.md)
        alike = [r for r in hist if history.partial(r) == history.partial(history.target)]
        mixed = len(alike) < 2
        history._terms_hist = (scale, hist if mixed else alike, mixed)
    return history._terms_hist


def _past_terms(history: Model, hist: list[dict], kind: str, name: str) -> tuple[list[float], tuple | None, float]:
    """A term's values over `hist` (_terms_history's), their (sd, df) where three or more, and their
    mean: kept per model, as the history's structures are."""
    key = (kind, name)
    if key not in history._past:
        xs = [p[name][0] for p in (terms_of(history, r["id"], kind) for r in hist) if name in p]
        history._past[key] = (xs, (stdev(xs), len(xs) - 1.0) if len(xs) >= 3 else None,
                              statistics.fmean(xs) if xs else 0.0)
    return history._past[key]


def _findings(history: Model, fdr: float) -> list[Finding]:
    """The run's machine factors and kernel terms, each against the history runs' own: the same GPU's
    where it has MIN_OWN runs, else the fleet (every run), on a t with the runs' degrees of freedom."""
    tid = history.target["id"]
    scale, hist, mixed = _terms_history(history)
    cands = []
    for kind in ("machine", *(lvl[0] for lvl in model.LEVELS)):
        for name, (x, n) in terms_of(history, tid, kind).items():
            xs, spread, mean = _past_terms(history, hist, kind, name)
            known = history.prior.terms.get(f"{kind}|{name}") if hasattr(history.prior, "terms") else None
            if spread:
                # against the same GPU: its runs' spread; against the fleet: every history run's
                sd, df = spread
            elif known and xs:   # a short history: how much the store prior's runs varied
                sd, df = (known[2], known[3]) if scale == "same GPU" else (known[0], known[1])
            elif xs:
                # nothing known of the term's own noise: at most as quiet as one of its rows (never
                # absorbed unseen: a shift the rows cannot show is judged as the rows would be)
                sd, df = _member_noise(history, kind, name)
            else:
                continue
            sd = math.sqrt(sd ** 2 * (1 + 1 / len(xs)) + _term_processes(history, kind, name, hist))
            if sd <= 0 or df < 1:
                continue
            z = (x - mean) / sd
            p = float(2 * t_sf(abs(z), df))
            cands.append(Finding(kind, name, math.exp(x - mean) - 1, z, p, n, scale, ref=(mean, sd, df)))
    for fd, hit in zip(cands, bh([c.p for c in cands], fdr)):
        if hit and mixed and history.partial(history.target):
            fd.status = "information (a partial run against full runs: the GPU state may differ)"
        elif hit and fd.kind == "host" and model.GPU_PACED in fd.name:
            fd.status = "information (eager rows the GPU paces on this run: see their device rows)"
        elif hit and fd.kind == "host":
            # one history key holds one set of versions: its rows in host µs moving together is the host
            fd.status = "information (the host's speed on this run)"
        elif hit:
            fd.status = "regression" if scale == "same GPU" else "information (one start of a GPU new to the history)"
    return sorted(cands, key=lambda c: (not c.status, -abs(c.z)))


def _variants(history: Model, out: dict) -> list[Finding]:
    """A graph or device row called SLOWER or FASTER whose variant's other GPU mode moved the same way
    (|z| past PARTNER_Z) is one finding for the variant, not two regressions: the variant's GPU work
    moved, as a GPU that runs it apart (or a kernel change) moves it in both modes; a change of one
    mode alone (a replay's host gaps, a timer) stays a row verdict."""
    found = []
    own = [r for r in history.before if model.same_gpu(r, history.target)]
    scale = "same GPU" if len(own) >= history.min_own else "fleet"
    for v in out.values():
        if v.verdict not in ("SLOWER", "FASTER") or v.mode not in model.GPU_MODES or v.on_ratio:
            continue
        other = out.get((v.probe, v.variant, v.size, "device" if v.mode == "graph" else "graph"))
        if other is None or other.z is None or other.z * v.z <= 0 or abs(other.z) < PARTNER_Z:
            continue
        if other.verdict == "FINDING":
            continue
        for x in (v, other):
            _as_finding(x, f"moved with its {('graph', 'device')[x.mode == 'graph']} row: one finding for the variant")
        zs = sorted((v.z, other.z), key=abs)
        # the wider of the two rows' scales is what another run's variant term is tested against
        sd = max(abs(math.log1p(x.change) / x.z) for x in (v, other) if x.z)
        found.append(Finding("variant", f"{v.probe}/{v.variant}/{v.size}", (v.change + other.change) / 2, zs[0],
                             min(v.p or 1.0, other.p or 1.0), 2, scale,
                             "regression" if scale == "same GPU" else "information (one start of a GPU new to the history)",
                             ref=(0.0, sd, 30.0)))
    return found


def _as_finding(verdict: Verdict, why: str) -> None:
    """A row reported once, in the finding it moved with: its verdict FINDING, the note says which."""
    verdict.verdict, verdict.state = "FINDING", ""
    verdict.note = "; ".join(n for n in (verdict.note, why) if n)


def torch_only(fig) -> bool:
    """A block's torch baseline (torch.mm, torch's unfused ops): cuBLAS and torch kernels, no cuDNN."""
    return fig is not None and fig.role == "baseline" and fig.variant.startswith("torch")


def environment(judged: Judged, figs: dict) -> None:
    """Between runs whose cuDNN or frontend alone differ: a GPU block whose torch baseline moved
    with it (the same way, |z| past PARTNER_Z, its change within two of its sd of the block term's)
    is the GPU during that block, not the version, which never reaches torch's kernels: the block is
    a finding of that (past the FDR or not: its baseline alone was past PARTNER_Z) and the baseline's
    verdict is reported once, there. A block whose baseline stayed keeps its status.
    A GPU-wide move shows on the cuDNN rows and torch.mm's alike between versions (log
    2026-12-04-1018)."""
    for fd in judged.findings:
        if fd.kind != "gpu block":
            continue
        with_it = []
        for v in judged.verdicts:
            # the block's name is model.gpu_block's without " baseline": the rows of one probe x size x mode
            if (f"{v.probe} {v.size} {v.mode}" != fd.name or not torch_only(figs.get(v.row)) or not v.z
                    or v.z * fd.z <= 0 or abs(v.z) < PARTNER_Z):
                continue
            sd = abs(math.log1p(v.change) / v.z)
            if abs(math.log1p(v.change) - math.log1p(fd.change)) <= 2 * sd:
                with_it.append(v)
        if not with_it:
            continue
        names = ", ".join(f"{v.variant} {v.change * 100:+.1f} %" for v in with_it)
        fd.status = (f"information (the GPU during this block: its torch baseline moved with it, {names}; "
                     "no cuDNN or frontend change reaches torch's kernels)")
        for v in with_it:
            if v.verdict in ("SLOWER", "FASTER"):
                _as_finding(v, f"moved with its block {fd.name}: one finding, the GPU's")


def _shows(history: Model, run: dict, verdict: Verdict, fig) -> bool | None:
    g = history.figs.get(run["id"], {}).get(verdict.row)
    if not usable(g, fig) or verdict.location is None or verdict.mdc is None:
        return None
    st = history.struct.get(run["id"])
    adj = st.adjust.get(verdict.row, 0.0) if st else 0.0
    c = (g.value / math.exp(adj)
         / (verdict.location / math.exp(history.struct[history.target["id"]].adjust.get(verdict.row, 0.0))) - 1)
    return abs(c) > verdict.mdc and (c > 0) == (verdict.change > 0)


def _state(history: Model, after: list[dict], verdict: Verdict, fig) -> str:
    """confirmed / suspect by the first later run of another start (the newest run: by the newest
    earlier run of another start); replicated when only a run of the same start shows it; else new."""
    me = model.start_of(history.target)
    for r in after:
        if r["id"] in history.figs:
            history.structure_of(r["id"])
    later = [r for r in after if _shows(history, r, verdict, fig) is not None]
    other = [r for r in later if model.start_of(r) != me]
    if other:
        return "confirmed" if _shows(history, other[0], verdict, fig) else "suspect"
    earlier = [r for r, _ in history.rows[verdict.row][4] if model.start_of(r) != me]
    if not later and earlier and _shows(history, earlier[-1], verdict, fig):
        return "confirmed"
    twins = [r for r in [*later, *(r for r, _ in history.rows[verdict.row][4])] if model.start_of(r) == me and r.get("start")]
    if any(_shows(history, r, verdict, fig) for r in twins):
        return "replicated"
    return "suspect" if later else "new"


def _variant_term(history: Model, run: dict, name: str) -> tuple | None:
    """Another run's offset of a variant's GPU rows from the history's locations (their mean)."""
    probe, variant, size = name.split("/", 2)
    st, fs, xs = history.struct[run["id"]], history.figs.get(run["id"], {}), []
    for mode in model.GPU_MODES:
        row, g = (probe, variant, size, mode), fs.get((probe, variant, size, mode))
        if g is not None and g.status == "ok" and (g.value or 0) > 0 and row in history.ref:
            xs.append(math.log(g.value) - st.adjust.get(row, 0.0) - history.ref[row])
    return (sum(xs) / len(xs), len(xs)) if xs else None


def _finding_state(history: Model, after: list[dict], finding: Finding, fdr: float = Q) -> None:
    """A finding of a GPU new to the history becomes a regression once a run of another start shows it
    too: the same way, and past the level fdr on its own (a replication); the first later run of
    another start, or for the newest run the newest earlier one."""
    if finding.kind == "host":
        finding.state = "this host"
        return
    if finding.scale == "same GPU":
        finding.state = "own GPU"
        return
    me = model.start_of(history.target)
    others = [r for r in after if model.start_of(r) != me and r["id"] in history.figs][:1]
    if not others:
        others = [r for r in history.before if model.start_of(r) != me][-1:]
    mean, sd, df = finding.ref
    for r in others:
        history.structure_of(r["id"])
        t = (_variant_term(history, r, finding.name) if finding.kind == "variant"
             else terms_of(history, r["id"], finding.kind).get(finding.name))
        if t is None or sd <= 0:
            continue
        z = (t[0] - mean) / sd
        if z * finding.z > 0 and 2 * t_sf(abs(z), max(df, 1.0)) <= fdr:
            finding.status, finding.state = "regression", "confirmed by another start"
            return
    finding.state = "new"
