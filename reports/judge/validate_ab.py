"""The paired verdict validated on recorded A/A jobs (`hostbench ab-check`): how often a job with
no change says SLOWER or FASTER anywhere, and what a planted change of a known size gets.

- False jobs: each resampled job keeps the recorded job's pairs and flips each pair's sign at
  random, one coin per pair for all its rows (on an A/A job which process is "A" is arbitrary, so
  a flip keeps the pair's noise and its correlation across rows: a randomization test's null).
  Pairs are not drawn with replacement: a pair drawn twice looks like agreement the job never had,
  and makes the null too quiet.
  A job is false when any row is SLOWER or FASTER; the rate gets a 95 % Clopper-Pearson bound.
- Power: into a resampled job, a change is planted at 1.2 × and 0.5 × the MDC the job printed for
  the row before it was planted, into one row, into one block (probe × size: every row of it), and
  into one variant's rows of every mode (a kernel's rows); and +2 % into every GPU row at once.
  Caught: the planted rows are SLOWER, or lean SLOWER (found by the t test on fewer pairs than
  the sign-flip test needs: `hostbench ab` pairs such a row on); the share found outright is
  printed beside it.
"""
from __future__ import annotations

import gzip
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from cudnn_hostbench.reports.verdict import paired

SEED = 20261206
FACTORS = (1.2, 0.5)


class PairsFileError(ValueError):
    """A pairs file that cannot be read; the message names it."""


def load_pairs(path: Path) -> list[list[paired.PairedRow]]:
    """The comparisons of a job's pairs.json.gz (or a job folder holding one): rows with the
    per-pair differences, aligned by pair (diffs[i] of every row is pair i, or None when left out)."""
    path = Path(path)
    if path.is_dir():
        path = path / "pairs.json.gz"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise PairsFileError(f"{path}: no such file (an A/B job folder writes pairs.json.gz)") from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PairsFileError(f"{path}: cannot read the pairs ({e})") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("comparisons"), list):
        raise PairsFileError(f"{path}: not an A/B pairs file")
    out = []
    for c in doc["comparisons"]:
        rows = []
        floors = list(c.get("floors") or [])     # files from before the floor covariate have none
        for r in c.get("rows", []):
            kernels = r.get("kernels") or [[], []]
            rows.append(paired.PairedRow(tuple(r["key"]), r["class"], [d for d in r["diffs"] if d is not None],
                                         r.get("level_us"), bool(r.get("on_ratio")), int(r.get("dropped", 0)),
                                         (tuple(kernels[0]), tuple(kernels[1])), bool(r.get("race")),
                                         aligned=list(r["diffs"]), no_figure=int(r.get("no_figure", 0)),
                                         us_diffs=list(r.get("us_diffs", [])), floors=floors))
        out.append(rows)
    return out


def pairs_doc(comparisons: list) -> dict:
    """pairs.json.gz's document from reports.judge.ab Comparisons (their rows' aligned differences)."""
    return {"kind": "hostbench ab pairs", "comparisons": [
        {"side": c.side, "reference": c.reference, "floors": c.rows[0].floors if c.rows else [],
         "rows": [{"key": list(r.key), "class": r.cls, "diffs": r.aligned, "level_us": r.level_us,
                   "on_ratio": r.on_ratio, "dropped": r.dropped, "kernels": [list(k) for k in r.kernels],
                   "race": r.race, "no_figure": r.no_figure, "us_diffs": r.us_diffs} for r in c.rows]}
        for c in comparisons]}


def draw(pairs: int, take: int | None, rng: random.Random) -> tuple[tuple, tuple]:
    """(pair indices, signs) of one null job: every recorded pair, or `take` of them drawn without
    replacement, each with a random sign. The sign of the whole job is fixed by its first pair: a
    job and its mirror image are one null job (an A/A's sides are interchangeable)."""
    picks = tuple(sorted(rng.sample(range(pairs), take))) if take and take < pairs else tuple(range(pairs))
    signs = [1.0 if rng.random() < 0.5 else -1.0 for _ in picks]
    if signs and signs[0] < 0:
        signs = [-s for s in signs]
    return picks, tuple(signs)


def distinct_jobs(pairs: int, take: int | None) -> int:
    """How many different null jobs `draw` can give: C(pairs, take) subsets × 2^(take-1) signs."""
    k = take if take and take < pairs else pairs
    return math.comb(pairs, k) * 2 ** max(k - 1, 0)


def _resampled(rows: list, picks: tuple, signs: tuple) -> list:
    """The rows of one null job: each picked pair's differences, its µs differences and its floor
    difference flipped with the pair's sign (an A/A's "A" is arbitrary for all three)."""
    floors = _flipped(rows[0].floors if rows else [], picks, signs)
    out = []
    for r in rows:
        got = r.aligned or r.diffs
        aligned = _flipped(got, picks, signs)
        us = r.us_diffs if len(r.us_diffs) == len(r.diffs) and r.aligned else []
        us_aligned = _flipped(_realigned(us, got), picks, signs) if us else []
        out.append(paired.PairedRow(r.key, r.cls, [d for d in aligned if d is not None], r.level_us, r.on_ratio,
                                    r.dropped, ((), ()), r.race, aligned=aligned,
                                    us_diffs=[d for d in us_aligned if d is not None], floors=floors))
    return out


def _flipped(values: list, picks: tuple, signs: tuple) -> list:
    """values[i] of each picked pair times its sign (None stays None, a pair past the list is None)."""
    return [None if i >= len(values) or values[i] is None else signs[j] * values[i] for j, i in enumerate(picks)]


def _realigned(values: list, aligned: list) -> list:
    """A row's per-usable-pair `values` placed at its usable pairs' indices (None elsewhere)."""
    it = iter(values)
    return [None if d is None else next(it) for d in aligned]


def _planted(rows: list, targets: set, shifts: dict) -> list:
    out = []
    for r in rows:
        if r.key not in targets:
            out.append(r)
            continue
        by = shifts.get(r.key, 0.0)
        out.append(paired.PairedRow(r.key, r.cls, [d + by for d in r.diffs], r.level_us, r.on_ratio, r.dropped,
                                    r.kernels, r.race, aligned=[None if d is None else d + by for d in r.aligned],
                                    us_diffs=r.us_diffs, floors=r.floors))
    return out


@dataclass
class Result:
    jobs: int = 0
    false_jobs: int = 0
    possible: int = 0              # different null jobs the recorded pairs can give, summed over comparisons
    caught: dict = field(default_factory=dict)     # (kind, factor) -> [caught, tried, found outright]
    gpu_2pct: list = field(default_factory=lambda: [0, 0])
    mdc: dict = field(default_factory=dict)        # class -> median MDC over resampled jobs

    def rate(self, kind: str, factor: float, outright: bool = False) -> float | None:
        c, n, found = self.caught.get((kind, factor), (0, 0, 0))
        return (found if outright else c) / n if n else None


def run(comparisons: list[list], resamples: int = 60, seed: int = SEED, take: int | None = None) -> Result:
    """`resamples` different null jobs per comparison (fewer where its pairs cannot give that many),
    each of `take` pairs (None: all), each also planted with each change (module docstring). A job
    drawn twice is one job: counted twice, it would narrow the bound with no new evidence."""
    rng = random.Random(seed)
    planting = random.Random(seed + 1)   # its own stream: the null jobs do not depend on what a judge found
    res = Result()
    mdcs: dict = {}
    for rows in comparisons:
        rows = [r for r in rows if len(r.diffs) >= paired.MIN_PAIRS]
        if not rows:
            continue
        n = max(len(r.aligned or r.diffs) for r in rows)
        possible = distinct_jobs(n, take)
        res.possible += possible
        seen: set = set()
        while len(seen) < min(resamples, possible):
            job = draw(n, take, rng)
            if job in seen:
                continue
            seen.add(job)
            null = _resampled(rows, *job)
            j = paired.judge(null)
            res.jobs += 1
            res.false_jobs += any(v.verdict in ("SLOWER", "FASTER") for v in j.rows)
            for v in j.rows:
                if v.mdc is not None:
                    mdcs.setdefault(v.cls, []).append(v.mdc)
            _power(null, j, planting, res)
    res.mdc = {c: sorted(v)[len(v) // 2] for c, v in mdcs.items()}
    return res


def _power(null: list, judgement: paired.Judgement, rng: random.Random, res: Result) -> None:
    """Plants changes into a null job (module docstring) and counts what it catches."""
    verdicts = {v.key: v for v in judgement.rows}
    judged = [r for r in null if verdicts[r.key].mdc is not None and verdicts[r.key].verdict == "SAME"]
    if not judged:
        return
    row = rng.choice(judged)
    block = {r.key for r in judged if r.key[0] == row.key[0] and r.key[2] == row.key[2]}
    kernel = {r.key for r in judged if r.key[:3] == row.key[:3]}
    for kind, targets in (("row", {row.key}), ("block", block), ("kernel", kernel)):
        for factor in FACTORS:
            by = {k: math.log1p(factor * verdicts[k].mdc) for k in targets}
            hit = res.caught.setdefault((kind, factor), [0, 0, 0])
            caught, found = _caught(null, targets, by)
            hit[0] += caught
            hit[1] += len(targets)
            hit[2] += found
    gpu = {r.key for r in null if r.key[3] in ("graph", "device")}
    if gpu:
        res.gpu_2pct[0] += _caught(null, gpu, {k: math.log(1.02) for k in gpu})[0]
        res.gpu_2pct[1] += len(gpu)


def _caught(null: list, targets: set, shifts: dict) -> tuple[int, int]:
    """(caught, found outright) of `targets` in a job with `shifts` planted into them: SLOWER or
    leaning SLOWER, and SLOWER."""
    got = {v.key: v for v in paired.judge(_planted(null, targets, shifts)).rows}
    found = sum(got[k].verdict == "SLOWER" for k in targets)
    return found + sum(got[k].leans == "SLOWER" for k in targets), found


def bound(k: int, n: int, level: float = 0.95) -> float:
    """The one-sided upper Clopper-Pearson bound of a rate k/n."""
    from scipy import stats
    return 1.0 if k >= n else float(stats.beta.ppf(level, k + 1, n - k))


def report(res: Result) -> str:
    lines = [f"false jobs: {res.false_jobs} of {res.jobs} different resampled A/A jobs "
             f"(95 % bound {bound(res.false_jobs, res.jobs) * 100:.1f} %; the pairs give {res.possible:,})"]
    for kind in ("row", "block", "kernel"):
        parts = []
        for factor in FACTORS:
            r = res.rate(kind, factor)
            found = res.rate(kind, factor, outright=True) or 0.0
            shown = "–" if r is None else f"{r * 100:.0f} % ({found * 100:.0f} % found outright)"
            parts.append(f"{factor:g}× MDC {shown}")
        lines.append(f"planted into one {kind}: caught at " + ", ".join(parts))
    c, n = res.gpu_2pct
    if n:
        lines.append(f"+2 % into every GPU row: {c / n * 100:.0f} % of {n} row-jobs caught")
    lines.append("median MDC per class: " + ", ".join(f"{k} {v * 100:.2f} %" for k, v in sorted(res.mdc.items())))
    return "\n".join(lines)
