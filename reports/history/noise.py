"""A row's noise between machine starts and within one, learned from the history grouped by start.

On the H200 fleet the runs of one machine start move together: GPU-bound rows (graph and device,
20 µs or more per call) of one start sit 0.5-1.7 % off the others, all of them at once, while two
runs of one start agree within 0.5 %. So:

- every run gets a *machine factor*: the median, over its GPU-bound rows, of its log figure
  against the history's; GPU-bound figures are divided by their run's factor before they are
  compared, and the new run's factor is reported once ("this GPU runs GPU-bound rows 1.9 %
  slower than the history median") instead of as many regressions; rows that share a kernel take
  its factor beyond that (GPU-bound rows by kernel, heavy ones per mode; light device rows by
  kernel and size, where three or more share it);
- each row's log figures (factor removed) are split, one-way random effects by start, into a
  within-start variance and a between-start variance (method of moments, Kalibera & Jones'
  nested levels); a row borrows from its class (mode, size class, kernel family): its between-start
  variance with PRIOR_DF degrees of freedom of weight, its within-start one from the class's
  pooled variance the same way; judged against its own GPU, a graph or device row's within-start
  variance borrows instead from a prior fitted to the class's rows (moderated variances, `pool`);
- a run whose GPU (or start) has history on the key is judged against that history on the
  within-start scale ("same GPU", tight: graph and device rows only, check.py judges them there
  as paired ratios); any other row against the fleet, the median over starts, on the
  between-start scale plus the within ("fleet").

A run of unknown start (an old run) is a start of its own. Figures are logs throughout: a relative
scale, symmetric for slower and faster.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from . import plans

GPU_BOUND_US = 20.0        # graph/device rows at or above this many µs per call follow the GPU's speed
HEAVY_US = 100.0           # ... and at or above this, run power-capped
MIN_FACTOR_ROWS = 10       # a machine factor needs this many GPU-bound rows in common (a partial run has few)
KERNEL_ROWS = 3            # a kernel's own factor needs this many rows on it: one changed row cannot move it
PRIOR_DF = 4.0             # weight of the class's pooled variance in a row's own, in degrees of freedom
FLOOR_SD = 0.001           # no row is quieter than 0.1 % between two runs


def start_of(run: dict) -> str:
    """The run's start, or a start of its own when unknown (runs stored before machine identity)."""
    return run.get("start") or f"unknown start of run {run['id']}"


def same_machine(a: dict, b: dict) -> bool:
    """Same physical GPU: the same known GPU UUID, or the same known start."""
    return bool((a.get("gpu_uuid") and a.get("gpu_uuid") == b.get("gpu_uuid"))
                or (a.get("start") and a.get("start") == b.get("start")))


def gpu_bound(f) -> bool:
    return f.mode in ("graph", "device") and not f.on_ratio and (f.median_us or 0.0) >= GPU_BOUND_US


def light_kernel(f) -> bool:
    """A light device row (under GPU_BOUND_US): no machine factor, but a kernel factor of its own
    where KERNEL_ROWS or more rows of one size run its kernels."""
    return f.mode == "device" and not f.on_ratio and bool(f.kernels) and 0.0 < (f.median_us or 0.0) < GPU_BOUND_US


def factored(f) -> bool:
    """Rows a run's factors are learned from and removed from."""
    return gpu_bound(f) or light_kernel(f)


def family(kernels: str) -> str:
    k = kernels.lower()
    if "cudnn" in k:
        return "cudnn"
    if any(x in k for x in ("nvjet", "cublas", "xmma", "gemm")):
        return "cublas"
    return "torch" if "at::native" in k else "none"


def size_class(f) -> str:
    us = f.median_us or 0.0
    return "heavy" if us >= HEAVY_US else "gpu-bound" if us >= GPU_BOUND_US else "light"


def row_class(f) -> tuple:
    """The rows a row borrows noise from: same mode and judged figure (µs or a ratio), size class,
    kernel family; a plan picked by a race (autotune) moves with its pick, so such rows keep to themselves."""
    race = "race" if plans.is_race(f.plan_rule) else ""
    if f.mode == "eager":
        return ("eager", "ratio" if f.on_ratio else "us", f.host_state, race)
    if f.mode == "host":
        return ("host",)
    return (f.mode, size_class(f), family(f.kernels), "ratio" if f.on_ratio else "", race)


def machine_factors(logs: dict, locs: dict) -> dict:
    """A run's machine factors: the median log offset of its GPU-bound rows from the history's,
    over all of them ('all') and per size class ('gpu-bound', 'heavy': power-capped work follows
    the GPU's power limit more than lighter work does); a class with too few rows takes 'all', and
    a run with too few GPU-bound rows in common (a partial run) has none. Then, per kernel set
    that KERNEL_ROWS or more rows of the run share, what that kernel's rows keep in common beyond
    their class's factor (one GPU ran transpose's 70 µs cuBLAS kernel 5 % slower than the others,
    every row of it, in both its runs): ('kernels', name) -> factor. logs: row (probe, variant,
    size, mode) -> (size class, kernels, log figure); a class's graph and device rows also get a
    factor each, (mode, class), where they have enough rows."""
    d: dict = {}
    for r, (cls, _, x) in logs.items():
        if r in locs and cls != "light":
            d.setdefault(cls, []).append(x - locs[r])
            d.setdefault("all", []).append(x - locs[r])
            d.setdefault((r[-1], cls), []).append(x - locs[r])
    if len(d.get("all", ())) < MIN_FACTOR_ROWS:
        return {}
    out: dict = {"all": statistics.median(d["all"])}
    for cls in ("gpu-bound", "heavy"):
        xs = d.get(cls, [])
        out[cls] = statistics.median(xs) if len(xs) >= MIN_FACTOR_ROWS else out["all"]
        for mode in ("graph", "device"):
            # heavy graph replays follow the GPU's power state, its profiled kernels less so (H200,
            # 2026-12-01: one run replayed every heavy graph row about 3 % above its history, its
            # device rows did not move; one factor for both judged a device row 2.6 % FASTER)
            ys = d.get((mode, cls), [])
            if len(ys) >= MIN_FACTOR_ROWS:
                out[(mode, cls)] = statistics.median(ys)
    by: dict = {}
    for r, (cls, kern, x) in logs.items():
        if r in locs and kern and cls == "light":
            by.setdefault(light_key(kern, r[2], r[-1]), []).append(x - locs[r])
        elif r in locs and kern:
            by.setdefault(kernel_key(kern, r[-1], cls), []).append(x - locs[r] - class_factor(out, r[-1], cls))
    out.update({k: statistics.median(xs) for k, xs in by.items() if len(xs) >= KERNEL_ROWS})
    return out


def kernel_key(kernels: str, mode: str, cls: str) -> tuple:
    """The factor key of a kernel set's rows: heavy rows per mode, as their class factors are (H200,
    start A, 2026-12-01: transpose t4096's two heavy graph rows and one device row ran 2.4-3.8 %
    above their history, its torch.mm device row +0.3 %; one factor for the four took 3.0 % off
    that row and judged it 3.4 % FASTER)."""
    return ("kernels", kernels, mode) if cls == "heavy" else ("kernels", kernels)


def light_key(kernels: str, size: str, mode: str) -> tuple:
    """A light device row's factor key: its kernels at one size (GPU B, 2026-12-01, ran engine
    plan_1's kernel 4.7 % faster at 256 and 4.6 % slower at 1024)."""
    return ("light kernels", kernels, size, mode)


def class_factor(factors: dict, mode: str, cls: str) -> float:
    """A size class's factor for rows of `mode`: the mode's own where it had enough rows, else the class's."""
    return factors.get((mode, cls), factors.get(cls, 0.0))


def offset(factors: dict, f) -> float:
    """The log offset a run's machine puts on a figure (0 for rows that do not follow the GPU)."""
    if factors and light_kernel(f):
        return factors.get(light_key(f.kernels, f.size, f.mode), 0.0)
    if not factors or not gpu_bound(f):
        return 0.0
    cls = size_class(f)
    return class_factor(factors, f.mode, cls) + factors.get(kernel_key(f.kernels, f.mode, cls), 0.0)


@dataclass
class Parts:
    """One row's sums of squares by start: within (ssw, dfw) and between (sb2 estimate, dfb)."""
    ssw: float = 0.0
    dfw: int = 0
    sb2: float = 0.0
    dfb: int = 0


def parts(values: list[float], groups: list[str]) -> Parts:
    """One-way random effects by group, method of moments (unbalanced: harmonic group size)."""
    by: dict[str, list[float]] = {}
    for v, g in zip(values, groups):
        by.setdefault(g, []).append(v)
    ssw = sum(sum((x - statistics.fmean(xs)) ** 2 for x in xs) for xs in by.values())
    dfw = len(values) - len(by)
    p = Parts(ssw, dfw)
    if len(by) >= 2:
        means = [statistics.fmean(xs) for xs in by.values()]
        # the spread of the start means, less what the within-start noise puts into them
        hm = len(by) / sum(1.0 / len(xs) for xs in by.values())
        msb = statistics.variance(means)
        msw = ssw / dfw if dfw else 0.0
        p.sb2, p.dfb = max(0.0, msb - msw / hm), len(by) - 1
    return p


@dataclass
class Pool:
    """A class's pooled variances; `dfw`: the weight, in degrees of freedom, of sw2 in a row's own."""
    sw2: float
    sb2: float
    dfw: float = PRIOR_DF
    pooled: float | None = None   # the plain pooled within-start variance, where sw2 is a fitted prior


MIN_MODERATED = 8      # rows with a within-start variance a class needs before its prior is fitted
MAX_PRIOR_DF = 100.0   # a fitted prior's weight where the class's rows look alike


def pool(rows: list[Parts], moderate: bool = False) -> Pool:
    """A class's between-start variance (the mean of its rows') and its within-start one: pooled, or
    (`moderate`) a prior fitted to the spread of its rows' own variances (Smyth's moderated
    variances, limma's eBayes): where a class's rows are unlike, as light graph rows are (a few
    noisy 2.7 µs replays among quiet ones), the prior weighs little and sits at the typical row,
    so a quiet row is no longer judged on the pooled variance its few noisiest set."""
    bs = [p.sb2 for p in rows if p.dfb]
    sb2 = statistics.fmean(bs) if bs else 0.0
    ssw, dfw = sum(p.ssw for p in rows), sum(p.dfw for p in rows)
    pooled = ssw / dfw if dfw else 0.0
    own = [(p.ssw / p.dfw, p.dfw) for p in rows if p.dfw and p.ssw > 0]
    if not moderate or len(own) < MIN_MODERATED:
        return Pool(pooled, sb2)
    s02, d0 = fit_prior(own)
    return Pool(s02, sb2, d0, pooled)


def fit_prior(own: list[tuple[float, int]]) -> tuple[float, float]:
    """(s0², d0) of the scaled inverse-chi-square prior of rows' variances (s², df), by the moments
    of their logs (Smyth 2004, limma's fitFDist)."""
    from scipy.special import digamma, polygamma
    e = [math.log(s2) - digamma(d / 2) + math.log(d / 2) for s2, d in own]
    excess = statistics.variance(e) - statistics.fmean(float(polygamma(1, d / 2)) for _, d in own)
    d0 = MAX_PRIOR_DF if excess <= 0 else min(MAX_PRIOR_DF, 2 * _trigamma_inverse(excess))
    return math.exp(statistics.fmean(e) + digamma(d0 / 2) - math.log(d0 / 2)), d0


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (Newton's method, as limma's trigammaInverse)."""
    from scipy.special import polygamma
    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def blend(own: float, df: float, prior: float, prior_df: float = PRIOR_DF) -> float:
    return (own * df + prior * prior_df) / (df + prior_df)


@dataclass
class Scale:
    """What a row's change is judged on."""
    kind: str            # 'same GPU' or 'fleet'
    location: float      # the history's figure (factor removed), linear
    sd: float            # relative sd of (new run - location)
    n: int               # history runs behind the location
    starts: int          # starts among them


def median_var(n: int) -> float:
    """Variance of the median of n draws, in draws' variances (a mean up to 2; pi/2n beyond)."""
    return 1.0 / n if n <= 2 else math.pi / (2 * n)


def resampled(sw2: float, hist: float, new: float) -> float:
    """A within-start variance whose sampling part (the history's `hist`, at most all of it: the
    workers' spread says it with 2 degrees of freedom a figure) becomes `new`."""
    if hist <= 0.0:
        return sw2
    return sw2 - min(sw2, hist) * (1.0 - new / hist)


# Fewer earlier runs of the run's own GPU than this: judged against the fleet. One run is no location:
# on the H200 (2026-12-01, start S5) the second run of a fresh start was judged against its first,
# cold run alone and raised 3 false FASTER on light graph rows (-4.2 to -4.8 %) and 1 false SLOWER.
MIN_OWN = 2


def predict(logs: list[float], groups: list[str], mine: list[bool], row: Parts, prior: Pool,
            sampling: tuple[float, float] | None = None) -> Scale:
    """The scale a new run's row is judged on: against its own GPU's history where it has one
    (`mine`) on the within-start scale, else against the median over starts on the between-start
    scale; where the own history is so short that the fleet predicts the run better, the fleet.
    `sampling`: (the history figures' mean sampling variance, the new figure's) where they differ
    (sampling.parts): the new run's within-start variance swaps the one for the other (`resampled`)."""
    # the fleet's within-start part from the pooled variance: across GPUs it also covers a kernel
    # that one GPU runs a few % off the rest, which the moderated one did not (H200, start P1, a
    # GPU new to the history: 3 false SLOWER on 3-6 µs device rows at +2.7-3.2 %, none pooled)
    own_sw2 = row.ssw / row.dfw if row.dfw else 0.0     # with no degrees of freedom it weighs nothing
    sw2 = blend(own_sw2, row.dfw, prior.sw2 if prior.pooled is None else prior.pooled)
    sb2 = blend(row.sb2, row.dfb, prior.sb2)
    by: dict[str, list[float]] = {}
    for x, g in zip(logs, groups):
        by.setdefault(g, []).append(x)
    k = len(by)
    per_start = min(len(xs) for xs in by.values())
    mine_w2 = sw2 if sampling is None else resampled(sw2, *sampling)
    var = sb2 + mine_w2 + median_var(k) * (sb2 + sw2 / per_start)
    fleet = Scale("fleet", math.exp(statistics.median(statistics.median(xs) for xs in by.values())),
                  max(FLOOR_SD, math.sqrt(var)), len(logs), k)
    own = [x for x, m in zip(logs, mine) if m]
    if len(own) < MIN_OWN:
        return fleet
    same = blend(own_sw2, row.dfw, prior.sw2, prior.dfw)
    sd = max(FLOOR_SD, math.sqrt(same * (1 + median_var(len(own)))))
    return Scale("same GPU", math.exp(statistics.median(own)), sd, len(logs), k) if sd <= fleet.sd else fleet


# What the committed H200 history (measurement 1: 12 full runs on 6 starts) says of each class's
# noise, as relative sds (within a start, between starts after the machine factors; race rows left
# out). A store with few starts of its own leans on these: scripts/loso_check.fleet_noise() measures
# them, and tests/test_loso.py holds this table to it.
FLEET = {
    ("device", "gpu-bound"): (0.0033, 0.0041),
    ("device", "heavy"): (0.0020, 0.0038),
    ("device", "light"): (0.0061, 0.0061),
    ("eager", "ratio"): (0.0178, 0.0151),
    ("eager", "us"): (0.0368, 0.0309),
    ("graph", "gpu-bound"): (0.0043, 0.0040),
    ("graph", "heavy"): (0.0069, 0.0045),
    ("graph", "light"): (0.0064, 0.0085),
    ("host", "*"): (0.1724, 0.0907),
}


def fleet_of(cls: tuple) -> tuple[float, float]:
    """The committed fleet's (within, between) sd for a class: by mode and size class, eager by host state."""
    return FLEET.get(cls[:2]) or FLEET.get(cls[:1] + ("*",)) or (0.0, 0.0)


def prior(cls: tuple, own: Pool, starts: int) -> Pool:
    """A class's pool, its between-start part leaning on the fleet's where the store has few starts."""
    w, b = fleet_of(cls)
    return Pool(own.sw2 if own.sw2 else w * w, blend(own.sb2, max(0, starts - 1), b * b), own.dfw, own.pooled)
