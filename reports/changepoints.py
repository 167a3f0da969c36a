"""Step detection on a series of per-run medians (ordered by date or version).

A piecewise-constant fit with an L1 cost, in the spirit of asv's step detection:
  1. optimal partitioning (dynamic programming) minimizing the sum over segments of the absolute
     deviations from each segment's median, plus a penalty per segment of `penalty` times the
     noise (robust scatter of run-to-run differences), every segment at least `min_size` runs
     long (default 2, so one odd run is never called a step);
  2. neighbouring segments whose medians differ by less than `min_step` (default 5 %, relative
     to the earlier one) or by less than the penalty are merged, smallest difference first.
What is left are the steps. A change in the newest run shows up once a second run confirms it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass
class Step:
    index: int        # index (into the input) of the first run at the new level
    before: float     # median of the segment before
    after: float      # median of the segment after

    @property
    def change(self) -> float:
        return self.after / self.before - 1 if self.before else float("nan")


def _segments(xs: np.ndarray, min_size: int, beta: float) -> list[tuple[int, int]]:
    n = len(xs)
    cost = np.full((n + 1, n + 1), np.inf)
    for i in range(n):
        for j in range(i + min_size, n + 1):
            seg = xs[i:j]
            cost[i, j] = np.abs(seg - np.median(seg)).sum()
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    prev = np.zeros(n + 1, dtype=int)
    for j in range(min_size, n + 1):
        totals = best[:j] + cost[:j, j] + beta
        i = int(np.argmin(totals))
        best[j], prev[j] = totals[i], i
    bounds, j = [], n
    while j > 0:
        bounds.append((int(prev[j]), j))
        j = prev[j]
    return bounds[::-1]


def detect(values: Sequence[float], min_step: float = 0.05, min_size: int = 2,
           penalty: float = 3.0) -> list[Step]:
    """Steps in `values`; None/NaN entries are skipped, indices still refer to the input."""
    idx = [i for i, v in enumerate(values) if v is not None and not math.isnan(v)]
    xs = np.array([float(values[i]) for i in idx])
    if len(xs) < 2 * min_size:
        return []
    # run-to-run scatter; a few steps barely move the median of the differences
    sigma = 1.4826 * float(np.median(np.abs(np.diff(xs)))) / math.sqrt(2)
    beta = penalty * sigma + 1e-9 * float(np.mean(np.abs(xs)))
    segs = _segments(xs, min_size, beta)

    def med(s):
        return float(np.median(xs[s[0]:s[1]]))

    while len(segs) > 1:
        gaps = [abs(med(b) - med(a)) for a, b in zip(segs, segs[1:])]
        small = [g < max(min_step * abs(med(a)), beta) for g, a in zip(gaps, segs)]
        if not any(small):
            break
        k = min((g, k) for k, (g, s) in enumerate(zip(gaps, small)) if s)[1]
        segs[k:k + 2] = [(segs[k][0], segs[k + 1][1])]
    return [Step(idx[b[0]], med(a), med(b)) for a, b in zip(segs, segs[1:])]
