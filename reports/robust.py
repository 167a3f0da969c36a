"""Robust location and scale of a series of run-level figures, and the smallest change they let a
check detect. One place for this math: the history gate uses it, and compare or the dashboard can.

The scale is the median absolute deviation times 1.4826 (the normal consistency constant), so
one odd run in a history of ten barely moves it; a history of n runs predicts the next run with
that scale widened by sqrt(1 + pi/(2n)), as a prediction interval about a median does.
"""
from __future__ import annotations

import math
import statistics
from typing import Iterable

MAD_TO_SIGMA = 1.4826


def clean(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def location(values: Iterable[float | None]) -> float | None:
    xs = clean(values)
    return statistics.median(xs) if xs else None


def scale(values: Iterable[float | None]) -> float | None:
    """MAD x 1.4826: the standard deviation's robust stand-in (None with fewer than two values)."""
    xs = clean(values)
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    return MAD_TO_SIGMA * statistics.median(abs(x - m) for x in xs)


def relative_scale(values: Iterable[float | None]) -> float | None:
    """scale / |location|: the run-to-run noise as a fraction (a robust CV)."""
    xs = clean(values)
    loc, s = location(xs), scale(xs)
    if loc is None or s is None or loc == 0:
        return None
    return s / abs(loc)


def predictive(rel_scale: float, n: int) -> float:
    """The relative scale of (next run - the history's median), from a history of n runs: the
    median of n values has about pi/2 times the variance of their mean."""
    return rel_scale * math.sqrt(1 + math.pi / (2 * max(n, 1)))


# expected range of w normal draws in standard deviations (d2 of control charts): turns a
# between-worker spread (max-min) into a standard deviation
RANGE_D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847}


def run_error(spread: float | None, workers: int) -> float:
    """The relative standard error of a run's figure (a median over `workers` processes) from its
    between-worker spread; 0 for a single process (nothing to learn it from)."""
    if not spread or workers < 2:
        return 0.0
    sigma = spread / RANGE_D2.get(workers, 3.0)
    return 1.2533 * sigma / math.sqrt(workers)   # the median's efficiency: sqrt(pi/2)


def detectable(rel_scale: float, n: int, k: float, min_effect: float, spread: float | None = None,
               workers: int = 0) -> float:
    """The smallest relative change a check can call: k times the noise of (new run - history
    median), and at least the row's minimum effect. That noise is the history's predictive scale,
    or the run's own standard error where it is wider: each history value is a run-level figure
    that already carries its run's sampling error, so adding a typical run's error on top would
    count it twice; a run whose workers spread more than usual widens its own floor."""
    noise = max(predictive(rel_scale, n), run_error(spread, workers))
    return max(min_effect, k * noise)
