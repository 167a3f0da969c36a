"""A row class's noise, learned from the rows of the history it is judged against.

A row has a few runs and starts of its own; its class (model.row_class) has hundreds of rows. Each
row's variances borrow from its class:

- within a start (runs) and between processes: moderated variances, a scaled inverse-chi-square
  prior fitted to the class's rows (Smyth 2004, limma's eBayes): where the rows are alike the prior
  weighs much, where they are not it weighs little and sits at the typical row;
- between starts: the class's mean, with PRIOR_DF degrees of freedom of weight;
- tails: a Student-t fitted to the class's leave-one-start-out z scores (each start's mean against
  the other starts' on the row's own components): its degrees of freedom `nu` and the scale `s` by
  which the components understate what a new start does (at least 1: never narrower than they say);
  against the same GPU, another fitted to leave-one-run-out z scores within starts.

Where the store holds few rows of a class the store's prior (prior.py) stands in: the committed
H200 history for an H200, a wide generic one otherwise, weighted by the degrees of freedom behind
each.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

PRIOR_DF = 4.0        # weight of the class mean in a row's between-start variance, in degrees of freedom
MIN_MODERATED = 8     # rows with a variance of their own a class needs before its prior is fitted
MAX_PRIOR_DF = 100.0  # a fitted prior's weight where the class's rows look alike
MIN_Z = 30            # z scores a class needs before its tails are fitted
MIN_CLASS_Z = 1000    # ... before they are fitted on the class alone, not on its mode's classes pooled
NU_RANGE = (2.5, 100.0)
SCALE_RANGE = (1.0, 3.0)


@dataclass
class Pool:
    s0w: float = 0.0      # within-start prior variance and its weight (df)
    d0w: float = 0.0
    sb2: float = 0.0      # between-start class mean
    s0b: float = 0.0      # prior of the variance of start means, and its weight
    d0b: float = 0.0
    s0p: float = 0.0      # process prior variance and its weight
    d0p: float = 0.0
    nu: float = 30.0      # t degrees of freedom against the fleet (leave-one-start-out z scores)
    scale: float = 1.0    # sd multiplier from those z scores
    nu_same: float = 30.0     # ... and against the same GPU (leave-one-run-out z scores within starts)
    scale_same: float = 1.0
    rows: int = 0
    runs: int = 0
    starts: int = 0
    source: str = "store"
    tails_own: bool = False   # tails fitted on this store's z scores (they hold its estimation error already)

    @property
    def sp2(self) -> float:
        return self.s0p

    def moderated_w(self, variance: float, dof: float) -> float:
        w = self.d0w + dof
        return (self.d0w * self.s0w + dof * variance) / w if w else 0.0

    def moderated_p(self, variance: float, dof: float) -> float:
        w = self.d0p + dof
        return (self.d0p * self.s0p + dof * variance) / w if w else 0.0

    def between(self, parts, sw2: float) -> float:
        """A row's between-start variance: the variance of its start means, moderated, less what its
        (moderated) within-start variance puts into them."""
        return self.between_of(parts.vb, parts.dfb, parts.hm, sw2)

    def between_of(self, start_var: float, dfb: float, runs_per_start: float, sw2: float) -> float:
        """between() from a row's figures (the variance of its start means, its df, harmonic runs per start)."""
        w = self.d0b + dfb
        start_var = (self.d0b * self.s0b + dfb * start_var) / w if w else 0.0
        return max(0.0, start_var - sw2 / runs_per_start) if dfb else self.sb2


def fit_prior(own: list[tuple[float, float]], max_df: float = MAX_PRIOR_DF) -> tuple[float, float]:
    """(s0², d0) of the scaled inverse-chi-square prior of rows' variances (s², df), by the moments
    of their logs (Smyth 2004, limma's fitFDist); d0 at most `max_df`."""
    from scipy.special import digamma
    e = [math.log(s2) - _digamma(d / 2) + math.log(d / 2) for s2, d in own]
    excess = statistics.variance(e) - statistics.fmean(_trigamma(d / 2) for _, d in own)
    d0 = max_df if excess <= 0 else min(max_df, 2 * _trigamma_inverse(excess))
    return math.exp(statistics.fmean(e) + digamma(d0 / 2) - math.log(d0 / 2)), d0


@functools.lru_cache(maxsize=None)
def _digamma(value: float):
    """scipy's digamma of a half degree of freedom, kept: a class's rows share a few df values."""
    from scipy.special import digamma
    return digamma(value)


@functools.lru_cache(maxsize=None)
def _trigamma(value: float) -> float:
    from scipy.special import polygamma
    return float(polygamma(1, value))


def _trigamma_inverse(value: float) -> float:
    """y with trigamma(y) = value (Newton's method, as limma's trigammaInverse)."""
    from scipy.special import polygamma
    if value > 1e7:
        return 1 / math.sqrt(value)
    if value < 1e-6:
        return 1 / value
    y = 0.5 + 1 / value
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / value) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def _moderate(own: list[tuple[float, float]]) -> tuple[float, float]:
    """The class prior (s0², d0) of one component: fitted where enough rows have one, else pooled."""
    pos = [(s2, d) for s2, d in own if d and s2 > 0]
    if len(pos) >= MIN_MODERATED:
        return fit_prior(pos)
    df = sum(d for _, d in own)
    return (sum(s2 * d for s2, d in own) / df, float(min(df, PRIOR_DF))) if df else (0.0, 0.0)


TAIL_U = 2.576        # z scores past this (a hundredth of a normal's) fit the tails


def tails(zscores: list[float]) -> tuple[float, float] | None:
    """(nu, scale) of the Student-t that a class's z scores follow: the scale from their median
    (robust, never under 1), nu by maximum likelihood of the exceedances past TAIL_U given the
    scale (the tail alone: the bulk of a scale mixture of normals looks like a t, its far tail
    need not, and the far tail is what a run of 700 rows is judged in). None when there are too few
    z scores, or too few past TAIL_U, to say (never a normal by default)."""
    if len(zscores) < MIN_Z:
        return None
    import numpy as np
    from scipy import stats
    a = np.abs(np.asarray(zscores, dtype=float))
    scale = min(max(float(np.median(a)) / 0.6745, SCALE_RANGE[0]), SCALE_RANGE[1])
    x = a[a / scale > TAIL_U] / scale
    if len(x) < 10:
        return None
    grid = np.exp(np.linspace(math.log(NU_RANGE[0]), math.log(NU_RANGE[1]), 60))
    ll = np.sum(stats.t.logpdf(x[:, None], grid[None, :]), axis=0) - len(x) * np.log(stats.t.sf(TAIL_U, grid))
    return float(grid[int(np.argmax(ll))]), scale


def fit(parts: list, z_fleet: list[float], runs: int, starts: int, z_same: list[float] | None = None,
        z_all: tuple[list[float], list[float]] = ([], [])) -> Pool:
    """A class's pool from its rows' components (model.Parts), leave-one-start-out z scores (`z_fleet`) and
    leave-one-run-out z scores within starts (`z_same`); where those cannot say the tails, the store's
    z scores of every class (`z_all`: the two kinds) do."""
    s0w, d0w = _moderate([(p.sw2, p.dfw) for p in parts])
    s0p, d0p = _moderate([(p.sp2, p.dfp) for p in parts])
    s0b, d0b = _moderate([(p.vb, p.dfb) for p in parts])
    bs = [p.sb2 for p in parts if p.dfb]
    fleet = tails(z_fleet) or tails(z_all[0])
    same = tails(z_same or []) or tails(z_all[1]) or fleet
    nu, scale = fleet or (NU_RANGE[1], 1.0)      # nothing to learn from: the prior's (with_prior), else normal
    nu_same, scale_same = same or (NU_RANGE[1], 1.0)
    return Pool(s0w, d0w, statistics.fmean(bs) if bs else 0.0, s0b, d0b, s0p, d0p, nu, scale, nu_same, scale_same,
                len(parts), runs, starts, tails_own=fleet is not None)


def with_prior(own: Pool | None, prior: Pool | None) -> Pool:
    """The store's class pool leaning on the store prior by the weight behind each: within and process
    variances by their prior degrees of freedom, between starts by starts, tails by z scores seen."""
    if own is None:
        return prior or Pool(source="none")
    if prior is None:
        return own

    def mix(own_value: float, own_weight: float, prior_value: float, prior_weight: float) -> float:
        weight = own_weight + prior_weight
        return (own_value * own_weight + prior_value * prior_weight) / weight if weight else 0.0
    wst, pst = max(0, own.starts - 1), (PRIOR_DF if prior.starts > 1 and prior.rows else 0.0)
    own_tails = own.tails_own and own.starts >= prior.starts
    return Pool(mix(own.s0w, own.d0w, prior.s0w, min(prior.d0w, PRIOR_DF)), own.d0w + min(prior.d0w, PRIOR_DF),
                mix(own.sb2, wst, prior.sb2, pst),
                mix(own.s0b, own.d0b, prior.s0b, min(prior.d0b, PRIOR_DF)), own.d0b + min(prior.d0b, PRIOR_DF),
                mix(own.s0p, own.d0p, prior.s0p, min(prior.d0p, PRIOR_DF)), own.d0p + min(prior.d0p, PRIOR_DF),
                own.nu if own_tails else min(own.nu, prior.nu),
                own.scale if own_tails else max(own.scale, prior.scale),
                own.nu_same if own_tails else min(own.nu_same, prior.nu_same),
                own.scale_same if own_tails else max(own.scale_same, prior.scale_same),
                own.rows, own.runs, own.starts, "store + prior", own_tails)
