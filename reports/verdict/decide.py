"""The decisions on one run's fit against its history (model.Model.fit_run, read as data: nothing
here calls the model back; judge.py runs the steps in order).

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
from dataclasses import dataclass, field

from cudnn_hostbench.reports.verdict import model, structure

Q = 0.01             # false discovery rate over a run's rows (and, apart, over its findings)
POWER = 0.8          # the MDC is the change caught with this probability
CONFIRM_LOOKAHEAD = 5
# the smallest change worth a verdict per class: a row whose MDC is past it is UNSURE, not SAME
PRACTICAL = {"graph": 0.04, "device": 0.04, "graph heavy": 0.08, "eager": 0.08, "host": 0.5}
CHANGED = ("SLOWER", "FASTER", "KERNEL CHANGED")
# FINDING: a row that moved as part of a finding (its variant's GPU work), reported once there


def practical_text() -> str:
    """The practical thresholds as the docs quote them."""
    return ", ".join(f"{cls} {t * 100:g} %" for cls, t in PRACTICAL.items())


def practical(fig) -> float:
    return PRACTICAL.get(f"{fig.mode} {structure.size_class(fig)}", PRACTICAL.get(fig.mode, 0.08))


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
    # the log offset and the terms it came from ('machine factor', then structure.LEVELS' names); `change`
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
                "host": (f"GPU-paced {self.name.replace(structure.GPU_PACED + ' ', '')} rows ({self.rows})"
                         if structure.GPU_PACED in self.name
                         else f"the host's speed: {self.name} rows ({self.rows})"),
                "variant": f"variant {self.name} (graph and device)"}.get(self.kind, f"{self.kind} {self.name}")
        return (f"{what} {self.change * 100:+.1f} % on this run (z {self.z:+.1f} against the {self.scale}"
                f"{'' if not self.status else ': ' + self.status}{'' if not self.state else ', ' + self.state})")


@dataclass
class Judged:
    target: dict
    verdicts: list[Verdict]
    findings: list[Finding] = field(default_factory=list)


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


def _verdict(fig, value: float | None, location: float | None, change: float, runs: int, verdict: str,
             **kw) -> Verdict:
    return Verdict(fig.probe, fig.variant, fig.size, fig.mode, f"x {fig.baseline}" if fig.on_ratio else "us", value, location,
                   change, None, runs, verdict, on_ratio=fig.on_ratio, host_state=fig.host_state, processes=fig.processes, **kw)


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


def adjusted_by(struct, row: tuple, fig) -> tuple:
    """The structure terms that adjusted `row` on a run of structure `struct` (a machine factor, then
    structure.LEVELS' names in their order): what its judged change is net of."""
    got = ("machine factor",) if structure.is_gpu_row(fig) and structure.group_of(fig) in struct.factors else ()
    names = struct.levels.get(row) or ()
    return got + tuple(n for n, *_ in structure.LEVELS if n in names)


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


def _row_verdict(history: model.Model, target: dict, figs: dict, row: tuple, fig, judged: list, widened: set,
                 unsettled: set) -> Verdict:
    """One row's first verdict: UNMEASURED, NO HISTORY, UNSURE (noise unknown), or SAME with its
    deviation appended to `judged` (row, figure, prediction, d, sd, nu) for the tests over the rows."""
    if fig.status != "ok" or not fig.value or fig.value <= 0:
        zero = fig.status == "ok" and fig.value is not None and fig.value == 0
        return _verdict(fig, None, None, float("nan"), 0, "UNMEASURED", note=ZERO_NOTE if zero else fig.status[:120])
    pred = history.now.pred[row]
    if pred is None:
        return _verdict(fig, fig.value, None, float("nan"), 0, "NO HISTORY",
                        note="no earlier run on this key measured this row")
    if pred.var <= 0:      # nothing known of its noise: no spread in its history, its workers or a prior
        return _verdict(fig, fig.value, None, float("nan"), pred.n, "UNSURE",
                        note="its noise is unknown (no history spread, worker spread or prior for its class)")
    struct = history.struct[target["id"]]
    x = math.log(fig.value) - struct.adjust.get(row, 0.0)
    paced, loose = history.now.paced[row], history.now.loose[row]
    d, sd = x - pred.location, math.sqrt(pred.var + paced + loose)
    judged.append((row, fig, pred, d, sd, pred.df))
    if paced:
        widened.add(row)
    if loose > pred.var:
        unsettled.add(row)
    raw = figs[target["id"]][row].value
    return _verdict(fig, raw, raw / math.exp(d), math.exp(d) - 1, pred.n, "SAME", scale=pred.scale,
                    adjust=math.log(fig.value) - x, adjusted_by=adjusted_by(struct, row, fig))


def _label(history: model.Model, row: tuple, verdict: Verdict, fig, pred, deviation: float, hit: bool, row_mdc: float,
           notes: list) -> None:
    """Name a judged row's verdict from its discovery, kernels and MDC; add its notes."""
    kern = history.now.kernels[row]
    other_kernels = bool(kern and fig.kernels and kern != fig.kernels)
    if hit:
        if other_kernels and structure.race(fig):
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


def _unsettled_note(history: model.Model, row: tuple) -> str:
    """Why a row whose adjusting rows disagree on this run was widened."""
    lost = history.now.lost[row]
    return (f"its history's {', '.join(sorted(lost))} term{'s' if len(lost) > 1 else ''} could not be set "
            "on this run (too few of its rows): widened by the history's adjustments" if lost else
            "the rows it is adjusted by (its kernel, its block) disagree on this run: widened by that")


def _test_rows(history: model.Model, target: dict, out: dict, judged: list, widened: set, unsettled: set, fdr: float) -> None:
    """Each judged row's z, p and MDC, Benjamini-Hochberg over the rows at `fdr`, its verdict and notes."""
    pvalues = _pvalues([d / sd for _, _, _, d, sd, _ in judged], [nu for *_, nu in judged])
    found = bh(pvalues, fdr)
    tests = len(judged)
    partial = history.now.partial[target["id"]]
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


def _history_facts(history: model.Model, target: dict) -> None:
    """What the judgement stood on, into `target`: its history's runs, starts, factors and pools."""
    own = [r for r in history.before if model.same_gpu(r, target)]
    target.update(same_gpu_runs=len(own), history_runs=len(history.before),
                  history_starts=len({model.start_of(r) for r in history.before}),
                  partial=history.now.partial[target["id"]],
                  partial_runs=[r["id"] for r in history.before if history.now.partial[r["id"]]],
                  machine_factors={g: f[0] for g, f in history.struct[target["id"]].factors.items()},
                  pools={c: p for c, p in history.pools.items()})


def judge(history: model.Model, target: dict, after: list[dict], fdr: float = Q, curves: bool = False) -> Judged:
    """The verdicts and findings of `target` (the model's target, or a copy of it) from the model's fit
    of its figures (model.Model.fit_run: history.now, history.struct); `after`: later runs of the key,
    for confirmation. `curves`: also the calibration z scores and power curves per class (the
    dashboard's figures). Reads the fit as data: nothing here calls the model back."""
    figs = history.figs
    fs = figs[target["id"]]
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


def pair_t(z_target, z_previous, rho):
    """One t of two runs' mean deviation from a prediction, from their t scores and the share `rho`
    of the prediction's variance that is its location's. Both share the location and the variance
    estimate, so their t scores are not independent: two t's summed as if they were (Stouffer)
    overstate the evidence: two moderate t's summed as independent read past a run's FDR (log
    2026-12-03-0826)."""
    import numpy as np
    a, b, r = np.asarray(z_target, dtype=float), np.asarray(z_previous, dtype=float), np.asarray(rho, dtype=float)
    return (a + b) / 2 / np.sqrt((1 - r) / 2 + r)


def _two_starts(history: model.Model, out: dict, judged: list[tuple], fdr: float) -> None:
    """Evidence over two starts: a fleet-judged row not called on this run alone is judged again
    with the previous run of another start, both against the history before them (pair_t: one t of
    their mean deviation, on the prediction's own degrees of freedom; the model's two-start rows,
    model.Model._two_start_rows). A change made between the history and the two runs moves both; a
    GPU that runs a row apart moves one. Benjamini-Hochberg over those rows at Q; a discovery is
    SLOWER or FASTER, "confirmed by two starts"."""
    prev, rows = history.now.prev, {row for row, *_ in judged}
    cand = [c for c in history.now.two if c[0] in rows and out[c[0]].verdict in ("SAME", "UNSURE")]
    if prev is None or not cand:
        return
    import numpy as np
    zt, zp = [c[1] for c in cand], [c[2] for c in cand]
    zs = pair_t(zt, zp, [c[4] for c in cand])
    ps = [float(x) for x in 2 * t_sf(np.abs(zs), np.asarray([c[3] for c in cand]))]
    for (row, *_), t_, p_, p, hit in zip(cand, zt, zp, ps, bh(ps, fdr)):
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
    if fig.mode in structure.GPU_MODES:
        return f"{fig.mode} {structure.size_class(fig)}"
    if fig.mode == "eager":
        return f"eager {'ratio' if fig.on_ratio else 'µs'}"
    return fig.mode


def terms_of(history: model.Model, run_id: int, kind: str) -> dict:
    if run_id != history.target["id"]:     # another run's structure is computed once: so are its terms
        key = (run_id, kind)
        if key not in history._terms:
            history._terms[key] = _terms_of(history.struct[run_id], kind)
        return history._terms[key]
    return _terms_of(history.struct[run_id], kind)


def _terms_of(struct: structure.Structure, kind: str) -> dict:
    if kind == "machine":
        return {g: (f[0], f[2]) for g, f in struct.factors.items()}
    return {k: (t[0], len(t[1])) for (lvl, k), t in struct.terms.items() if lvl == kind}


def _term_rows(history: model.Model, kind: str, name: str) -> list[tuple]:
    """The target run's rows in a term (the machine: its group of GPU rows)."""
    if kind == "machine":
        fs = history.figs[history.target["id"]]
        if history._groups is None or history._groups[0] is not fs:   # every group's rows in one pass over the run
            groups: dict[str, list] = {}
            for r, f in fs.items():
                if structure.is_gpu_row(f):
                    groups.setdefault(structure.group_of(f), []).append(r)
            history._groups = (fs, groups)
        return history._groups[1].get(name, [])
    return history.struct[history.target["id"]].terms.get((kind, name), (0.0, []))[1]


def _member_noise(history: model.Model, kind: str, name: str) -> tuple[float, float]:
    """(sd, df) of the median prediction of the target's rows in a term (the machine: its group)."""
    rows = _term_rows(history, kind, name)
    got = [p for p in (history.now.pred.get(r) for r in rows if r in history.rows) if p is not None and p.var > 0]
    if not got:
        return 0.0, 0.0
    return statistics.median(math.sqrt(p.var) for p in got), statistics.median(p.df for p in got)


def _term_processes(history: model.Model, kind: str, name: str, hist: list[dict]) -> float:
    """The variance a term's value carries from its processes, in the target run and in the mean of
    `hist`: rows of one term share a process (its clocks, its memory), so their process offsets are
    taken as one (the median of the member rows' per-process variance). A history measured on three
    processes a run says little of a run measured on one: without this, a kernel term of one-process
    rows reads a tiny move between two runs of one start as significant."""
    fs, rows = history.figs[history.target["id"]], _term_rows(history, kind, name)
    if history._hist_procs is None or history._hist_procs[0] is not hist:   # the same history for every term
        hist_n = [history.now.procs[r["id"]] for r in hist]
        n = int(statistics.median(hist_n)) if hist_n else 1
        history._hist_procs = (hist, structure.median_var(n), {})
    _, h, kept = history._hist_procs
    # the rows' predictions are the model's (per row and workers): the term's figure is kept per
    # its rows and their workers, the same in most judgements of the model
    key = (tuple(rows), tuple(len(fs[r].workers or ()) for r in rows))
    if key not in kept:
        one, procs = [], []
        for r in rows:
            f = fs[r]
            p = history.now.pred.get(r) if r in history.rows else None
            n = max(1, len(f.workers or ()))
            if p is not None and p.parts.get("processes"):
                one.append(p.parts["processes"] / structure.median_var(n))
                procs.append(n)
        kept[key] = (statistics.median(one) * (structure.median_var(int(statistics.median(procs))) + h / max(1, len(hist)))
                     if one else 0.0)
    return kept[key]


def _terms_history(history: model.Model) -> tuple[str, list[dict], bool]:
    """(scale, history runs, whether full and partial runs are mixed in them) that the run's terms
    are judged against: the same for every judgement of one model, so kept."""
    if history._terms_hist is None:
        own = [r for r in history.before if model.same_gpu(r, history.target)]
        scale, hist = ("same GPU", own) if len(own) >= history.min_own else ("fleet", history.before)
        # like with like: a partial run's GPU state differs from a full run's (docs/history.md)
        alike = [r for r in hist if history.now.partial[r["id"]] == history.now.partial[history.target["id"]]]
        mixed = len(alike) < 2
        history._terms_hist = (scale, hist if mixed else alike, mixed)
    return history._terms_hist


def _past_terms(history: model.Model, hist: list[dict], kind: str, name: str) -> tuple[list[float], tuple | None, float]:
    """A term's values over `hist` (_terms_history's), their (sd, df) where three or more, and their
    mean: kept per model, as the history's structures are."""
    key = (kind, name)
    if key not in history._past:
        xs = [p[name][0] for p in (terms_of(history, r["id"], kind) for r in hist) if name in p]
        history._past[key] = (xs, (stdev(xs), len(xs) - 1.0) if len(xs) >= 3 else None,
                              statistics.fmean(xs) if xs else 0.0)
    return history._past[key]


def _findings(history: model.Model, fdr: float) -> list[Finding]:
    """The run's machine factors and kernel terms, each against the history runs' own: the same GPU's
    where it has MIN_OWN runs, else the fleet (every run), on a t with the runs' degrees of freedom."""
    tid = history.target["id"]
    scale, hist, mixed = _terms_history(history)
    cands = []
    for kind in ("machine", *(lvl[0] for lvl in structure.LEVELS)):
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
        if hit and mixed and history.now.partial[history.target["id"]]:
            fd.status = "information (a partial run against full runs: the GPU state may differ)"
        elif hit and fd.kind == "host" and structure.GPU_PACED in fd.name:
            fd.status = "information (eager rows the GPU paces on this run: see their device rows)"
        elif hit and fd.kind == "host":
            # one history key holds one set of versions: its rows in host µs moving together is the host
            fd.status = "information (the host's speed on this run)"
        elif hit:
            fd.status = "regression" if scale == "same GPU" else "information (one start of a GPU new to the history)"
    return sorted(cands, key=lambda c: (not c.status, -abs(c.z)))


def _variants(history: model.Model, out: dict) -> list[Finding]:
    """A graph or device row called SLOWER or FASTER whose variant's other GPU mode moved the same way
    (|z| past model.PARTNER_Z) is one finding for the variant, not two regressions: the variant's GPU work
    moved, as a GPU that runs it apart (or a kernel change) moves it in both modes; a change of one
    mode alone (a replay's host gaps, a timer) stays a row verdict."""
    found = []
    own = [r for r in history.before if model.same_gpu(r, history.target)]
    scale = "same GPU" if len(own) >= history.min_own else "fleet"
    for v in out.values():
        if v.verdict not in ("SLOWER", "FASTER") or v.mode not in structure.GPU_MODES or v.on_ratio:
            continue
        other = out.get((v.probe, v.variant, v.size, "device" if v.mode == "graph" else "graph"))
        if other is None or other.z is None or other.z * v.z <= 0 or abs(other.z) < model.PARTNER_Z:
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
    with it (the same way, |z| past model.PARTNER_Z, its change within two of its sd of the block term's)
    is the GPU during that block, not the version, which never reaches torch's kernels: the block is
    a finding of that (past the FDR or not: its baseline alone was past model.PARTNER_Z) and the baseline's
    verdict is reported once, there. A block whose baseline stayed keeps its status.
    A GPU-wide move shows on the cuDNN rows and torch.mm's alike between versions (log
    2026-12-04-1018)."""
    for fd in judged.findings:
        if fd.kind != "gpu block":
            continue
        with_it = []
        for v in judged.verdicts:
            # the block's name is structure.gpu_block's without " baseline": the rows of one probe x size x mode
            if (f"{v.probe} {v.size} {v.mode}" != fd.name or not torch_only(figs.get(v.row)) or not v.z
                    or v.z * fd.z <= 0 or abs(v.z) < model.PARTNER_Z):
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


def _shows(history: model.Model, run: dict, verdict: Verdict, fig) -> bool | None:
    g = history.figs.get(run["id"], {}).get(verdict.row)
    if not model.usable(g, fig) or verdict.location is None or verdict.mdc is None:
        return None
    st = history.struct.get(run["id"])
    adj = st.adjust.get(verdict.row, 0.0) if st else 0.0
    c = (g.value / math.exp(adj)
         / (verdict.location / math.exp(history.struct[history.target["id"]].adjust.get(verdict.row, 0.0))) - 1)
    return abs(c) > verdict.mdc and (c > 0) == (verdict.change > 0)


def _state(history: model.Model, after: list[dict], verdict: Verdict, fig) -> str:
    """confirmed / suspect by the first later run of another start (the newest run: by the newest
    earlier run of another start); replicated when only a run of the same start shows it; else new."""
    me = model.start_of(history.target)
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


def _variant_term(history: model.Model, run: dict, name: str) -> tuple | None:
    """Another run's offset of a variant's GPU rows from the history's locations (their mean)."""
    probe, variant, size = name.split("/", 2)
    st, fs, xs = history.struct[run["id"]], history.figs.get(run["id"], {}), []
    for mode in structure.GPU_MODES:
        row, g = (probe, variant, size, mode), fs.get((probe, variant, size, mode))
        if g is not None and g.status == "ok" and (g.value or 0) > 0 and row in history.ref:
            xs.append(math.log(g.value) - st.adjust.get(row, 0.0) - history.ref[row])
    return (sum(xs) / len(xs), len(xs)) if xs else None


def _finding_state(history: model.Model, after: list[dict], finding: Finding, fdr: float = Q) -> None:
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
        t = (_variant_term(history, r, finding.name) if finding.kind == "variant"
             else terms_of(history, r["id"], finding.kind).get(finding.name))
        if t is None or sd <= 0:
            continue
        z = (t[0] - mean) / sd
        if z * finding.z > 0 and 2 * t_sf(abs(z), max(df, 1.0)) <= fdr:
            finding.status, finding.state = "regression", "confirmed by another start"
            return
    finding.state = "new"
