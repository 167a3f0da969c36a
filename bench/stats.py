"""Order statistics over per-round samples, and round-by-round ratios."""
from __future__ import annotations

import math
from typing import Sequence


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) of an already sorted sequence."""
    if not sorted_xs:
        raise ValueError("quantile of an empty sample")
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(samples: Sequence[float]) -> dict:
    """median, quartiles, IQR, min, max, mean, stddev and n of a sample (NaNs dropped)."""
    xs = sorted(x for x in samples if x is not None and not math.isnan(x))
    if not xs:
        return {"n": 0}
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    q1, q3 = quantile(xs, 0.25), quantile(xs, 0.75)
    return {
        "n": n,
        "median": quantile(xs, 0.5),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "min": xs[0],
        "max": xs[-1],
        "mean": mean,
        "stddev": math.sqrt(var),
    }


def paired_ratios(num: Sequence[float], den: Sequence[float]) -> list[float]:
    """Round-by-round ratios num[i]/den[i]; both must come from the same interleaved rounds."""
    if len(num) != len(den):
        raise ValueError(f"paired ratios need equal rounds, got {len(num)} and {len(den)}")
    return [a / b for a, b in zip(num, den) if b and b > 0]


def ratio_summary(num: Sequence[float], den: Sequence[float]) -> dict | None:
    """Summary of the paired ratios (median with IQR and min-max spread), or None if unpaired."""
    if not num or not den or len(num) != len(den):
        return None
    rs = paired_ratios(num, den)
    return summarize(rs) if rs else None


def rel_spread(s: dict) -> float:
    """IQR relative to the median: a quick noise figure for one summary."""
    if not s or not s.get("n") or not s.get("median"):
        return float("nan")
    return s["iqr"] / s["median"]
