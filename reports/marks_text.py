"""The trust marks as words: the legend under a table, the README's short legend, and a run's
count of marked figures ('3 ⚑s, 1 ⚑w'). What each mark is and which figures carry it are
bench/measure/runfile/trust.py's (MARKS, flags_for, count_marks); this module only renders them.
"""
from __future__ import annotations

from cudnn_hostbench.bench.measure.runfile.trust import MARKS, SHOWN


def legend(kinds=SHOWN) -> list[str]:
    """One line per shown mark, e.g. '⚑c  the GPU clock dropped ...' (at most 100 characters each)."""
    return [f"⚑{MARKS[k].letter}  {MARKS[k].meaning}" for k in SHOWN if k in kinds]


def short_legend() -> str:
    """'c: clock dropped on kept rounds; h: ...' for the marks that mark a figure."""
    return "; ".join(f"{MARKS[k].letter}: {MARKS[k].short}" for k in SHOWN)


LEGEND = "; ".join(f"{MARKS[k].letter}: {MARKS[k].meaning}" for k in SHOWN)


def counts_text(counts: dict[str, int]) -> str:
    """'3 ⚑s, 1 ⚑w' for trust.count_marks()."""
    return ", ".join(f"{n} ⚑{MARKS[k].letter}" for k, n in counts.items())
