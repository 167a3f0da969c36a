"""The trust marks, defined once: each kind's letter, its words and whether it lowers trust.

A record carries the kinds that apply to its figure in `flags` (trust.flags_for sets them when it
is measured or merged); `Record.badge` and `Run.mark_counts` read them with this table, so a
renderer takes a figure's mark from the figure, never from a second pass over the run. This module
imports nothing of the run file: records.py and trust.py both read it.
"""
from __future__ import annotations

from typing import NamedTuple


class Mark(NamedTuple):
    letter: str          # shown after ⚑ next to a figure
    meaning: str         # the legend's words
    lowers_trust: bool   # only these mark a figure; the others are counted in the summary line
    short: str           # a few words, for prose (README, docs)


# Every mark, defined once: the table, compare, the dashboard, the README figures and the audit
# read it from here. A record's `flags` keep every kind (the record is the full account); a figure
# shows only the kinds that make what was kept less trustworthy.
MARKS = {
    "discarded": Mark("d", "some rounds were discarded (slow host state or clock drop) and redone", False,
                      "rounds discarded and redone"),
    "clock_drop": Mark("c", "the GPU clock dropped below 95 % of its usual clock on kept rounds", True,
                       "clock dropped on kept rounds"),
    "host_unstable": Mark("h", "no steady host state: every round kept; not comparable", True,
                          "no steady host state"),
    "slow_host": Mark("s", "eager figure timed in the host's slow state; compared only with slow-state figures",
                      True, "timed in the slow host state"),
    "wide_spread": Mark("w", "worker processes disagree by more than 10 %", True, "workers disagree"),
    "few_processes": Mark("p", "eager figure on fewer than 3 worker processes; the verdict widens it", True,
                          "fewer than 3 processes"),
}
FLAGS = {k: (m.letter, m.meaning) for k, m in MARKS.items()}   # flag -> (letter, meaning), in order
SHOWN = tuple(k for k, m in MARKS.items() if m.lowers_trust)
# the legend's line of each shown kind, e.g. '⚑c  the GPU clock dropped ...' (at most 100 characters)
LEGEND_LINES = {k: f"⚑{MARKS[k].letter}  {MARKS[k].meaning}" for k in SHOWN}


def shown_of(flags) -> list[str]:
    """The trust-lowering kinds among `flags`, in MARKS order."""
    have = set(flags or ())
    return [k for k in SHOWN if k in have]


def badge_of(flags) -> str:
    """'' or e.g. '⚑cw' for the trust-lowering kinds among `flags`, in MARKS order."""
    letters = "".join(MARKS[k].letter for k in shown_of(flags))
    return f"⚑{letters}" if letters else ""
