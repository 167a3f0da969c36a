"""A run's structure: what moves its rows together, learned from the run itself against its
history (docs/history.md, "The model"): per GPU group a machine factor m_r[g], then the level terms
k_r[K] and h_r[H] (LEVELS: a kernel set, a block, an eager block, the host's speed), each row
adjusted by the median of the *other* rows of its key. The first step of the verdict model
(judge.py): the rows' classes and keys (layout) and each history run's structure (reference) are
made here, before model.py fits the rows' components against them.
"""
from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field

GPU_MODES = ("graph", "device")
LIGHT_US, HEAVY_US = 20.0, 100.0   # size classes of GPU rows: per-call µs (heavy: power-capped work)
MIN_FACTOR_ROWS = 10               # a machine factor needs this many rows of its group
KERNEL_ROWS = 4                    # a structure term needs this many rows (three others a row)
# variance of the median of n draws, in draws' variances (normal; exact for n <= 5, then pi/2n)
_MEDIAN_VAR = {1: 1.0, 2: 0.5, 3: 0.449, 4: 0.343, 5: 0.287}


def median_var(draws: int) -> float:
    return _MEDIAN_VAR.get(draws, math.pi / (2 * draws)) if draws >= 1 else 1.0


def size_of(us: float) -> str:
    """A GPU row's size class from its per-call µs: the history check and the A/B job share it."""
    return "heavy" if us >= HEAVY_US else "gpu-bound" if us >= LIGHT_US else "light"


def size_class(fig) -> str:
    return size_of(fig.median_us or 0.0)


def is_gpu_row(fig) -> bool:
    """Graph and device rows in µs: they follow the GPU (machine factors, kernel terms)."""
    return fig.mode in GPU_MODES and not fig.on_ratio


def race(fig) -> bool:
    return _race_rule(fig.plan_rule or "")


@functools.lru_cache(maxsize=None)
def _race_rule(rule: str) -> bool:
    # imported here: history imports this module
    from cudnn_hostbench.bench.measure.runfile import plan_rules
    return plan_rules.is_race(rule)


def group_of(fig) -> str:
    """A GPU row's machine-factor group."""
    return f"{fig.mode} {size_class(fig)}"


@dataclass
class Structure:
    """A run's structure terms (logs) and what each row's figure is adjusted by."""
    factors: dict = field(default_factory=dict)       # machine group -> (factor, its variance, rows)
    terms: dict = field(default_factory=dict)         # (level, key) -> (term over all its rows, rows)
    adjust: dict = field(default_factory=dict)        # row -> log offset removed from its figure
    adjust_var: dict = field(default_factory=dict)    # row -> sampling variance of its terms' adjustment
    levels: dict = field(default_factory=dict)        # row -> names of the level terms that adjusted it


def is_eager_ratio(fig) -> bool:
    return fig.mode == "eager" and bool(fig.on_ratio)


def is_host_row(fig) -> bool:
    """Rows in host µs (build times, the waterfall's host parts, eager µs): the host's speed moves
    them all. The waterfall's gpu and gpu_exposed parts are GPU time stored as host rows."""
    if fig.mode == "host":
        return not (fig.probe == "waterfall" and fig.variant.rsplit(".", 1)[-1] in ("gpu", "gpu_exposed"))
    return fig.mode == "eager" and not fig.on_ratio


GPU_BOUND_SHARE = 0.8   # an eager µs row whose device time is this share of its eager time or more
GPU_PACED = "gpu-bound"  # in a host term's key: its eager µs rows are paced by the GPU


def host_key(fig, figs: dict | None = None) -> str:
    """A host term's rows: build times, the waterfall's host parts (µs per call, differences of two
    timings: their own noise) and eager µs each move with the host apart. Eager µs rows move with
    it per host state, and only where the host sets the pace: a row whose device time is most of
    its eager time (the GPU's queue holds) stays where the GPU puts it: host-bound rows move with
    the host's pace, GPU-bound ones hardly (log 2026-12-03-1219)."""
    if fig.mode != "host":
        bound = f"{GPU_PACED} " if gpu_bound_eager(fig, figs or {}) else ""
        return f"eager µs {bound}{fig.host_state or ''}".rstrip()
    return "waterfall host part" if fig.probe == "waterfall" else "build-time"


def gpu_bound_eager(fig, figs: dict) -> bool:
    """An eager row whose device figure (same run, same variant) is GPU_BOUND_SHARE of its eager µs."""
    d = figs.get((fig.probe, fig.variant, fig.size, "device"))
    dev, us = getattr(d, "median_us", None), fig.median_us
    return bool(dev and us and dev >= GPU_BOUND_SHARE * us)


def structured(fig) -> bool:
    """Rows a run's structure is learned from and removed from."""
    return is_gpu_row(fig) or is_eager_ratio(fig) or is_host_row(fig)


def gpu_block(fig) -> str:
    apart = fig.role == "baseline" and fig.mode == "graph"
    return f"{fig.probe} {fig.size} {fig.mode}{' baseline' if apart else ''}"


# The levels below the machine factor: (name, rows it applies to, their key (of a figure and its run's
# figures), least rows). Each row is
# adjusted by the median of the *other* rows of its key (at least 3 of them, so one changed row
# moves no other row's adjustment), and the key's term over all its rows is what a finding reports.
LEVELS = (
    ("kernel", lambda f: is_gpu_row(f) and bool(f.kernels), lambda f, _: f.kernels, KERNEL_ROWS),
    # a block's GPU rows are timed together, one after another: a GPU state (clocks, power) during it moves them all
    # (in graph replay its baseline apart: torch's launch path is other work than the cuDNN variants',
    # and the cuDNN variants' graph rows move more than torch.mm's between starts: log 2026-12-03-0826.
    # Device rows time kernels alone, the baseline's with the rest)
    ("gpu block", is_gpu_row, lambda f, _: gpu_block(f), KERNEL_ROWS),
    # an eager block's ratios share their baseline's eager time: the host's speed on it moves them all
    ("block", is_eager_ratio, lambda f, _: f"{f.probe} {f.size} {f.host_state}", KERNEL_ROWS),
    # a VM's vCPU runs a whole run fast or slow: every row in host µs moves with it (on a slow-host
    # start the build-time rows move together: log 2026-12-02-1013)
    ("host", is_host_row, host_key, KERNEL_ROWS),
)


def layout(figs: dict) -> dict:
    """What structure() reads of a run's figures besides their values, per structured row: its
    machine group (None for a row that is no GPU row) and its key on each of LEVELS (None where
    the level does not take it). The same for every history a run is judged in: kept by callers."""
    out = {}
    for row, f in figs.items():
        if structured(f):
            out[row] = (group_of(f) if is_gpu_row(f) else None,
                        tuple(key(f, figs) if applies(f) else None for _, applies, key, _ in LEVELS))
    return out


def structure(logs: dict, ref: dict, figs: dict, apart: set | frozenset = frozenset(),
              lay: dict | None = None) -> Structure:
    """A run's structure from its log figures `logs` against reference locations `ref`; the rows
    `apart` (a race row whose pick changed) are adjusted by it but never set it. `lay`: the
    figures' layout(), where the caller keeps it."""
    lay = layout(figs) if lay is None else lay
    st = Structure()
    res = {row: x - ref[row] for row, x in logs.items() if row in ref and row in lay}
    sets = {row for row in res if row not in apart}
    by_group: dict[str, list] = {}
    for row, d in res.items():
        g = lay[row][0]
        if g is not None and row in sets:
            by_group.setdefault(g, []).append(d)
    for g, ds in by_group.items():
        if len(ds) >= MIN_FACTOR_ROWS:
            st.factors[g] = (statistics.median(ds), median_var(len(ds)) * mad2(ds), len(ds))
    for row in res:
        g = lay[row][0]
        m = st.factors.get(g, (0.0, 0.0, 0))[0] if g is not None else 0.0
        res[row] -= m
        st.adjust[row] = m
    for lvl, (name, _, _, least) in enumerate(LEVELS):
        by: dict[str, list] = {}
        for row in res:
            k = lay[row][1][lvl]
            if k is not None:
                by.setdefault(k, []).append(row)
        step = {}
        for k, rows in by.items():
            setters = [r for r in rows if r in sets]
            if len(setters) < least:
                continue
            # sorted by value alone: rows of equal values are interchangeable in median_without
            order = sorted(setters, key=res.__getitem__)
            xs = [res[r] for r in order]
            at = {r: i for i, r in enumerate(order)}
            med = median_without(xs, None)   # statistics.median of the sorted xs
            st.terms[(name, k)] = (med, setters)
            # the median of the other rows is known to within their spread: where they disagree (one
            # kernel's graph rows +4 to +7 %, its device rows +1 %) the adjustment is that uncertain
            v = median_var(len(xs) - 1) * mad2(xs, med)
            others = medians_without(xs)
            for row in rows:
                i = at.get(row)
                step[row] = med if i is None else others[i]
                st.adjust_var[row] = st.adjust_var.get(row, 0.0) + v
                st.levels.setdefault(row, set()).add(name)
        for row, x in step.items():
            res[row] -= x
            st.adjust[row] += x
    return st


def median_without(values: list[float], skip: int | None) -> float:
    """The median of the sorted `values` without its element `skip` (all of them when None), in O(1): a
    structure term adjusts each of its rows by the median of the *other* rows."""
    n = len(values) - (skip is not None)

    def at(pos: int) -> float:
        return values[pos + 1] if skip is not None and pos >= skip else values[pos]
    h = n // 2
    return at(h) if n % 2 else (at(h - 1) + at(h)) / 2


def medians_without(values: list[float]) -> list[float]:
    """median_without(values, skip) for every skip of the sorted `values` (three or more), as one list:
    it takes two values (or three), by where skip falls against the middle."""
    n = len(values) - 1
    h = n // 2
    if n % 2:
        return [values[h + 1]] * (h + 1) + [values[h]] * (n - h)
    return ([(values[h] + values[h + 1]) / 2] * h + [(values[h - 1] + values[h + 1]) / 2]
            + [(values[h - 1] + values[h]) / 2] * (n - h))


def mad2(values: list[float], med: float | None = None) -> float:
    """A robust variance (1.4826 MAD, squared); `med`: the median of values, where the caller has it."""
    med = statistics.median(values) if med is None else med
    return (1.4826 * statistics.median([abs(x - med) for x in values])) ** 2


@dataclass
class RunLayout:
    """What a run's structure takes of its figures, whatever history it is judged against."""
    logs: dict      # structured row -> log figure, where it has one
    races: list     # (row, figure) of race rows that name their kernels
    rows: dict      # layout


_LAYOUTS: dict[int, tuple[dict, RunLayout]] = {}   # id(figures) -> (figures, layout), newest used last
MAX_LAYOUTS = 256


def run_layout(figures: dict) -> RunLayout:
    """A run's RunLayout, kept for the figures object: every fold and history model of verdict-check
    reads the same runs' figures (figures are replaced, never changed in place: validate._scaled)."""
    got = _LAYOUTS.pop(id(figures), None)
    if got is None or got[0] is not figures:
        logs = {row: math.log(g.value) for row, g in figures.items()
                if g.status == "ok" and (g.value or 0) > 0 and structured(g)}
        races = [(row, g) for row, g in figures.items() if race(g) and g.kernels]
        got = (figures, RunLayout(logs, races, layout(figures)))
        if len(_LAYOUTS) >= MAX_LAYOUTS:
            del _LAYOUTS[next(iter(_LAYOUTS))]
    _LAYOUTS[id(figures)] = got
    return got[1]


@dataclass
class Reference:
    """What a history's runs are adjusted against: each row's median log figure over them, each
    race row's most common kernels there, and each run's structure (run id -> Structure)."""
    logs: dict
    kernels: dict
    struct: dict = field(default_factory=dict)


def reference(before: list[dict], figs: dict) -> Reference:
    """The Reference of the history `before` (oldest first), its runs' structures in it."""
    ref_logs: dict[tuple, list[float]] = {}
    for r in before:
        for row, x in run_layout(figs[r["id"]]).logs.items():
            ref_logs.setdefault(row, []).append(x)
    picks: dict[tuple, Counter] = {}        # a race row's kernels over the history
    for r in before:
        for row, g in run_layout(figs[r["id"]]).races:
            picks.setdefault(row, Counter())[g.kernels] += 1
    ref = Reference({row: statistics.median(xs) for row, xs in ref_logs.items()},
                    {row: c.most_common(1)[0][0] for row, c in picks.items()})
    ref.struct = {r["id"]: of_run(figs[r["id"]], ref) for r in before}
    return ref


def of_run(figures: dict, ref: Reference) -> Structure:
    """A run's structure from its figures against a history's Reference."""
    run = run_layout(figures)
    # a race row that picked another kernel than its history's most common one ran other work
    # (a race's pick can change the kernel between two runs of one start: log 2026-12-02-1013);
    # it sets no term
    apart = {row for row, g in run.races if ref.kernels.get(row, g.kernels) != g.kernels}
    return structure(run.logs, ref.logs, figures, apart, run.rows)
