"""Fitting text tables to a terminal: the one grid and fitter that `hostbench table`, `compare`,
`history check` and `history list` share.

A table is a header and rows of cells. `grid` lays them out: columns two spaces apart, names
left-aligned, figures right-aligned, a rule under the header; a figure column's trust marks
(`12.43 ⚑c`) go into a column of their own, so the digits of every figure line up whether or not
it carries a mark. `first_fit` takes the layouts a report offers, widest first, and keeps the first
whose every line fits; `cut` is the last resort ('…'), `left_out` the line that says what a narrow
layout left out and that --wide shows it.
"""
from __future__ import annotations

import shutil
import textwrap
from typing import Iterable, Sequence

MARK = "⚑"
GAP = "  "
WIDE = 10**6   # the width of --wide: nothing is fitted


def term_width(default: int = 120) -> int:
    """Columns to fit: $COLUMNS, else the terminal's, else `default`; never under 60."""
    return max(60, shutil.get_terminal_size((default, 24)).columns)


def split_mark(cell: str) -> tuple[str, str]:
    """('12.43', '⚑c') from '12.43 ⚑c'; a cell without a mark keeps it all."""
    text, sep, mark = str(cell).partition(" " + MARK)
    return (text, MARK + mark) if sep else (text, "")


def grid(head: Sequence[str], body: Iterable[Sequence], right: Iterable[int] = (),
         marked: Iterable[int] = (), gaps: Sequence[str] | None = None, rule: bool = True) -> list[str]:
    """Lines of a table: columns `right` right-aligned (figures), the rest left-aligned; columns
    `marked` keep their ⚑ marks in a column of their own, one space after the figure, so digits
    line up. `gaps[i]` goes before column i (default two spaces; none before the first)."""
    head = [str(h) for h in head]
    rows = [[str(c) for c in r] for r in body]
    right, marked = set(right), set(marked)
    gaps = list(gaps) if gaps is not None else ["" if i == 0 else GAP for i in range(len(head))]
    cols, marks = _grid_columns(head, rows, right, marked, gaps)
    return _grid_lines(cols, marks, len(rows), rule)


def _grid_columns(head: list[str], rows: list[list[str]], right: set, marked: set,
                  gaps: list[str]) -> tuple[list[tuple[str, bool, list[str]]], set[int]]:
    """(the grid's columns: (gap, right-aligned, cells with the header first), the mark columns)."""
    cols: list[tuple[str, bool, list[str]]] = []   # (gap, right-aligned, cells with the header first)
    marks: set[int] = set()                         # the mark columns: no rule under them
    for i, h in enumerate(head):
        cells = [r[i] if i < len(r) else "" for r in rows]
        if i in marked:
            parts = [split_mark(c) for c in cells]
            if any(m for _, m in parts):
                cols.append((gaps[i], i in right, [h, *(p for p, _ in parts)]))
                marks.add(len(cols))
                cols.append((" ", False, ["", *(m for _, m in parts)]))
                continue
        cols.append((gaps[i], i in right, [h, *cells]))
    return cols, marks


def _grid_lines(cols: list[tuple[str, bool, list[str]]], marks: set[int], n_rows: int, rule: bool) -> list[str]:
    """The grid's lines: the header, the rule under it (none under mark columns), the rows."""
    widths = [max(map(len, c)) for _, _, c in cols]
    out = []
    for k in range(n_rows + 1):
        out.append("".join(g + (c[k].rjust(w) if r else c[k].ljust(w))
                           for (g, r, c), w in zip(cols, widths)).rstrip())
    if rule:
        out.insert(1, "".join(g + (" " if k in marks else "-") * w
                              for k, ((g, _, c), w) in enumerate(zip(cols, widths)) if w).rstrip())
    return out


def widest(lines: Iterable[str]) -> int:
    return max(map(len, lines), default=0)


def first_fit(layouts: Iterable, width: int, key=lambda x: x):
    """(index, layout) of the first layout whose lines (`key(layout)`) all fit `width`; the last
    one offered when none does. Layouts are made only as far as needed (pass a generator)."""
    level, got = -1, None
    for level, got in enumerate(layouts):  # noqa: B007  (the level that fitted is returned)
        if widest(key(got)) <= width:
            break
    return level, got


def cut(lines: Iterable[str], width: int) -> list[str]:
    """Lines still wider than `width` (a name longer than the terminal) cut, marked with '…'."""
    return [x if len(x) <= width else x[:width - 1] + "…" for x in lines]


def wrap(text: str, width: int, indent: str = "", hang: str = "    ") -> list[str]:
    """A paragraph in lines of `width`, continued lines indented by `hang`; long words broken."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + hang,
                         break_long_words=True) or [indent.rstrip()]


def left_out(what: Sequence[str], width: int, extra: str = "", indent: str = "") -> list[str]:
    """'(X and Y left out to fit N columns; --wide shows every column)', wrapped."""
    if not what:
        return []
    names = ", ".join(what[:-1]) + (" and " if len(what) > 1 else "") + what[-1]
    return wrap(f"({names} left out to fit {width} columns{'; ' + extra if extra else ''}; "
                "--wide shows every column)", min(width, 100), indent, hang="  ")
