"""Number and Markdown formatting shared by every report (table, compare, audit, dashboard,
version matrix, README figures)."""
from __future__ import annotations

import math

DASH = "–"   # a figure that is missing


def missing(figure) -> bool:
    """None or NaN (pandas turns missing values into NaN)."""
    return figure is None or (isinstance(figure, float) and math.isnan(figure))


def num(number, digits: int = 2, dash: str = DASH) -> str:
    return dash if missing(number) else f"{number:.{digits}f}"


def median_iqr(summary: dict | None) -> str:
    """A summary {median, iqr} as `1.23 [IQR 0.04]`."""
    if not summary or "median" not in summary:
        return DASH
    return f"{summary['median']:.2f} [IQR {summary.get('iqr', 0):.2f}]"


def ratio_range(summary) -> str:
    """A ratio Summary as `1.23 [1.20–1.25]` (its median [q1–q3])."""
    if not summary:
        return DASH
    return f"{summary.median:.2f} [{summary.q1:.2f}–{summary.q3:.2f}]"


def ratio(factor: float) -> str:
    if factor < 0.1:  # a small share of a total keeps two digits
        return f"{factor:.2g}×"
    return f"{factor:.2f}×" if factor < 10 else f"{factor:.1f}×" if factor < 100 else f"{factor:.0f}×"


def value(number: float) -> str:
    return f"{number:.2f}" if abs(number) < 10 else f"{number:.1f}" if abs(number) < 1000 else f"{number:.0f}"


def unit_text(unit: str) -> str:
    return (unit or "").replace("us", "µs")


def md_cell(cell) -> str:
    """A table cell: `|` escaped as Markdown reads it, one line."""
    return str(cell).replace("|", "\\|").replace("\n", " ")


def md_table(headers, rows) -> str:
    lines = ["| " + " | ".join(map(md_cell, headers)) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows])


def term_width(default: int = 120) -> int:
    """Columns to fit: $COLUMNS, else the terminal's, else `default`; never under 60 (reports/fit.py)."""
    from cudnn_hostbench.reports.fit import term_width as width
    return width(default)
