"""Where an A/B job's eager noise lives, read from its processes' pass lines (a job run with
`hostbench ab --hb-eager-passes K`, bench/measure/core/passes.py). Three spreads of a row's eager
figure (its ratio to the block's baseline, else its µs), each one figure's spread: the robust
standard deviation (1.4826 × the median absolute deviation) of log differences, divided by √2,
then the median over a class's rows:

- moment: pass 2 against pass 1 of one process, the same built cases timed minutes apart (K ≥ 3);
- rebuilt: the last pass, on cases built anew, against the pass before it: the moment and the
  state a build leaves;
- process: the first pass of a pair's two processes: everything a process draws.

Every figure compared has the same rounds (a pass's) and the same host state as the one it is
compared with. A component whose spread comes near the process's is a replicate as good as a
process and cheaper; one far under it is not where the noise lives.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from cudnn_hostbench.bench.measure.core.passes import PASS_KIND
from cudnn_hostbench.reports.verdict.structure import mad2

COMPONENTS = ("moment", "rebuilt", "process")
MIN_DIFFS = 5    # differences a row needs for its spread: a median absolute deviation of fewer is noise


def read(path: Path) -> dict:
    """{row key: {pass number: its pass line}} of one process's records.jsonl ({} when unreadable)."""
    out: dict = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    for line in text.splitlines():
        if PASS_KIND not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:   # a line cut off by a crash
            continue
        if isinstance(obj, dict) and obj.get("kind") == PASS_KIND and isinstance(obj.get("key"), list):
            out.setdefault(tuple(obj["key"]), {})[obj.get("pass")] = obj
    return out


def log_diff(later: dict | None, earlier: dict | None) -> float | None:
    """log(later) - log(earlier) of two pass figures taken in the same host state, else None."""
    if not later or not earlier or later.get("host_state") != earlier.get("host_state"):
        return None
    a, b = (p.get("ratio") or p.get("median") for p in (later, earlier))
    return math.log(a / b) if a and b and a > 0 and b > 0 else None


def robust_sd(values: list) -> float | None:
    return math.sqrt(mad2(values)) if len(values) >= MIN_DIFFS else None


def row_diffs(key: tuple, by_proc: dict, pairs: list) -> dict:
    """The row's log differences per component, over the job's processes and pairs."""
    out: dict = {name: [] for name in COMPONENTS}
    for passes in (by_proc[i].get(key) for i in by_proc):
        if not passes:
            continue
        last = max(passes)
        if last >= 3:
            out["moment"].append(log_diff(passes.get(2), passes.get(1)))
        if last >= 2:
            out["rebuilt"].append(log_diff(passes.get(last), passes.get(last - 1)))
    for a, b in pairs:
        out["process"].append(log_diff(by_proc[b].get(key, {}).get(1), by_proc[a].get(key, {}).get(1)))
    return {name: [d for d in ds if d is not None] for name, ds in out.items()}


def spreads(classes: dict, by_proc: dict, pairs: list) -> dict:
    """{class: {component: (median spread over its rows, rows)}} of the eager rows in `classes`
    ({row key: class}); `by_proc` {process index: read()}, `pairs` [(index, index)]."""
    got: dict = {}
    for key, cls in classes.items():
        if key[3] != "eager":
            continue
        for name, diffs in row_diffs(key, by_proc, pairs).items():
            sd = robust_sd(diffs)
            if sd is not None:
                got.setdefault(cls, {}).setdefault(name, []).append(sd / math.sqrt(2))
    return {cls: {name: (statistics.median(v), len(v)) for name, v in comps.items()} for cls, comps in got.items()}


def of_job(comparisons: list, pairs: dict) -> dict:
    """The spreads of a judged job ({} when its processes wrote no pass lines); `pairs` is
    interleave.pairs() of its processes, every side's pairs pooled."""
    index = [(a, b) for plist in pairs.values() for a, b in plist]
    by_proc = {p.index: read(p.records) for pair in index for p in pair}
    if not any(by_proc.values()):
        return {}
    classes = {r.key: r.cls for c in comparisons for r in c.rows}
    return spreads(classes, by_proc, [(a.index, b.index) for a, b in index])


def markdown(found: dict) -> str:
    lines = ["# Where the eager noise lives", "",
             "One eager figure's spread per component (robust standard deviation of log differences ÷ √2), the "
             "median over the class's rows (how many in brackets). moment: the same built cases timed again "
             "minutes later in one process; rebuilt: cases built anew against the pass before; process: the "
             "first pass of a pair's two processes. A component near the process's is a replicate as good as "
             "a process; one far under it is not where the noise lives.", "",
             "| class | " + " | ".join(COMPONENTS) + " |", "|---|" + "---|" * len(COMPONENTS)]
    for cls in sorted(found):
        cells = [f"{found[cls][n][0] * 100:.2f} % ({found[cls][n][1]})" if n in found[cls] else "–"
                 for n in COMPONENTS]
        lines.append(f"| {cls} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
