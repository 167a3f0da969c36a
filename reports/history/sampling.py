"""The part of an eager ratio's run-to-run noise that is its rounds' sampling error.

An eager ratio is the median over worker processes of each worker's median of paired per-round
ratios. On the H200 (runs A1-B3, 2026-12-01, 6 rounds a worker) one round's ratio varied 3-5 %,
rounds uncorrelated, and the workers' ratios differed by 2.0 %: what 6 rounds' sampling error
alone gives. Within a start, runs then differed by what their workers' spread predicts. So a
figure's sampling variance is known from its rounds and its workers: a run measured with more
rounds than its history is judged on the history's within-start variance less the sampling
variance the history's figures carried, plus its own (the noise of a row's mean when the
per-study variances are known, as in a random-effects meta-analysis).
"""
from __future__ import annotations

import json
import math
import statistics
from typing import Any

from . import noise


def rounds_of(run: dict) -> int | None:
    """Eager rounds per worker the run was measured with (its recorded options); None when unknown."""
    try:
        info = json.loads(run.get("info_json") or "{}")
    except (TypeError, ValueError):
        return None
    r = (info.get("options") or {}).get("rounds") if isinstance(info, dict) else None
    return int(r) if isinstance(r, (int, float)) and not isinstance(r, bool) and r >= 1 else None


def judged(f) -> bool:
    """Rows whose worker spread is their rounds' sampling error: eager ratios (not eager µs, whose
    workers also differ by each process's host speed)."""
    return f.mode == "eager" and bool(f.on_ratio)


def _var(f, rounds: int, unit: float) -> float:
    """A figure's sampling variance: a worker's at one round over its rounds, through the median of its workers."""
    return unit / rounds * noise.median_var(max(1, len(f.workers or ())))


def parts(mine: int | None, f, hist: list[tuple[int | None, Any]]) -> tuple[float, float] | None:
    """(the mean sampling variance of the history's figures, this run's figure's), in logs, from the
    run's rounds (`rounds_of`) and the history's (rounds, figure); None when the row is not judged
    so, a run's rounds are unknown, every run had the run's rounds, or fewer than two history
    figures show their workers' spread."""
    if not judged(f):
        return None
    known = [r for r, _ in hist]
    rs = [r for r in known if r is not None]
    if mine is None or len(rs) < len(known) or all(r == mine for r in rs):
        return None
    units = []
    for (_, g), n in zip(hist, rs):
        logs = [math.log(w) for w in (g.workers or ()) if w and w > 0]
        if len(logs) >= 2:
            units.append(statistics.variance(logs) * n)   # a worker's variance at one round
    if len(units) < 2:
        return None
    unit = statistics.fmean(units)
    return statistics.fmean(_var(g, n, unit) for (_, g), n in zip(hist, rs)), _var(f, mine, unit)
