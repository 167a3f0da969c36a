"""Order statistics over per-round samples, and round-by-round ratios.

Quartiles follow pytest-benchmark's own rule (Wikipedia's methods 2 and 3), so the IQR in a run
file's `stats` and the IQR our tables print are the same number for the same samples.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Summary:
    """Order statistics of one sample; `n == 0` (falsy, every figure None) when it was empty."""
    n: int = 0
    median: float | None = None
    q1: float | None = None
    q3: float | None = None
    iqr: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    stddev: float | None = None

    def __bool__(self) -> bool:
        return self.n > 0

    def with_median(self, median: float) -> "Summary":
        return dataclasses.replace(self, median=median)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) if self.n else {"n": 0}

    @classmethod
    def from_dict(cls, data: "dict | Summary | None") -> "Summary | None":
        if data is None or isinstance(data, Summary):
            return data
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def quartiles(xs: Sequence[float]) -> tuple[float, float]:
    """(q1, q3) of a sorted, non-empty sequence, exactly as pytest_benchmark.stats.Stats."""
    n = len(xs)
    if n == 1:
        return xs[0], xs[0]
    if n % 2 == 0:  # method 2: medians of the halves
        return statistics.median(xs[: n // 2]), statistics.median(xs[n // 2:])
    k, q = n // 4, n % 4  # method 3
    if q == 1:
        return 0.25 * xs[k - 1] + 0.75 * xs[k], 0.75 * xs[3 * k] + 0.25 * xs[3 * k + 1]
    return 0.75 * xs[k] + 0.25 * xs[k + 1], 0.25 * xs[3 * k + 1] + 0.75 * xs[3 * k + 2]


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def summarize(samples: Sequence[float]) -> Summary:
    """median, quartiles, IQR, min, max, mean, stddev and n of a sample (NaNs dropped)."""
    xs = sorted(x for x in samples if x is not None and not math.isnan(x))
    if not xs:
        return Summary()
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    q1, q3 = quartiles(xs)
    return Summary(n=n, median=statistics.median(xs), q1=q1, q3=q3, iqr=q3 - q1, min=xs[0], max=xs[-1],
                   mean=mean, stddev=math.sqrt(var))


def paired_ratios(num: Sequence[float], den: Sequence[float]) -> list[float]:
    """Round-by-round ratios num[i]/den[i]; both must come from the same interleaved rounds."""
    if len(num) != len(den):
        raise ValueError(f"paired ratios need equal rounds, got {len(num)} and {len(den)}")
    return [a / b for a, b in zip(num, den) if b and b > 0]


def ratio_summary(num: Sequence[float], den: Sequence[float]) -> Summary | None:
    """Summary of the paired ratios (median with IQR and min-max spread), or None if unpaired."""
    if not num or not den or len(num) != len(den):
        return None
    rs = paired_ratios(num, den)
    return summarize(rs) if rs else None


def relative_spread(values) -> float | None:
    """(max - min) / median of per-worker figures; None with fewer than two."""
    xs = sorted(v for v in values if v is not None and v == v)
    if len(xs) < 2:
        return None
    mid = statistics.median(xs)
    return (xs[-1] - xs[0]) / mid if mid else None
