"""Number and Markdown formatting shared by every report (table, compare, audit, dashboard,
version matrix, README figures)."""
from __future__ import annotations

import math

DASH = "–"   # a figure that is missing


def missing(x) -> bool:
    """None or NaN (pandas turns missing values into NaN)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, digits: int = 2, dash: str = DASH) -> str:
    return dash if missing(x) else f"{x:.{digits}f}"


def median_iqr(m: dict | None) -> str:
    """A summary {median, iqr} as `1.23 [IQR 0.04]`."""
    if not m or "median" not in m:
        return DASH
    return f"{m['median']:.2f} [IQR {m.get('iqr', 0):.2f}]"


def ratio_range(r) -> str:
    """A ratio Summary as `1.23 [1.20–1.25]` (its median [q1–q3])."""
    if not r:
        return DASH
    return f"{r.median:.2f} [{r.q1:.2f}–{r.q3:.2f}]"


def ratio(x: float) -> str:
    if x < 0.1:  # a small share of a total keeps two digits
        return f"{x:.2g}×"
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×" if x < 100 else f"{x:.0f}×"


def value(x: float) -> str:
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}" if abs(x) < 1000 else f"{x:.0f}"


def unit_text(unit: str) -> str:
    return (unit or "").replace("us", "µs")


def md_cell(x) -> str:
    """A table cell: `|` escaped as Markdown reads it, one line."""
    return str(x).replace("|", "\\|").replace("\n", " ")


def md_table(headers, rows) -> str:
    lines = ["| " + " | ".join(map(md_cell, headers)) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows])


def term_width(default: int = 120) -> int:
    """Columns to fit: $COLUMNS, else the terminal's, else `default`; never under 60 (reports/fit.py)."""
    from cudnn_hostbench.reports.fit import term_width as width
    return width(default)
