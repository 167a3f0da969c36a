"""The trust marks as words: the legend under a table and the README's short legend (a run's
count of marked figures, '3 ⚑s, 1 ⚑w', is run_summary.counts_text). What each mark is and which figures carry it are
bench/measure/runfile/marks.py's (MARKS, the legend's lines) and trust.py's (flags_for); this module
only renders them.
"""
from __future__ import annotations

from cudnn_hostbench.bench.measure.runfile.marks import LEGEND_LINES, MARKS, SHOWN


def legend(kinds=SHOWN) -> list[str]:
    """One line per shown mark, e.g. '⚑c  the GPU clock dropped ...' (at most 100 characters each)."""
    return [LEGEND_LINES[k] for k in SHOWN if k in kinds]


def short_legend() -> str:
    """'c: clock dropped on kept rounds; h: ...' for the marks that mark a figure."""
    return "; ".join(f"{MARKS[k].letter}: {MARKS[k].short}" for k in SHOWN)


LEGEND = "; ".join(f"{MARKS[k].letter}: {MARKS[k].meaning}" for k in SHOWN)

