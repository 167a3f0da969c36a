"""Host µs per extra tensor in a variant pack, per call form: the least-squares slope of the
pack-size probe's median µs/call against the pack's tensor count (bench.audit.packs), for one run
(README, `markdown`) and per frontend version (`matrix_section`, used by scripts/version_matrix.py).
Only measured rows enter a fit; a form with fewer than two pack sizes has no slope."""
from __future__ import annotations

from cudnn_hostbench.bench.audit import packs
from cudnn_hostbench.reports.fmt import DASH, md_table, num


def rows(run, modes=("eager", "graph")) -> list[list]:
    """[form, mode, µs/tensor, µs at the smallest pack, µs at the largest, packs] per fitted form."""
    out = []
    for mode in modes:
        for form, f in packs.fits(run, mode).items():
            (n0, y0), (n1, y1) = f.points[0], f.points[-1]
            out.append([form, mode, num(f.slope_us, 3) + f.range_text(), f"{num(y0)} @{n0}", f"{num(y1)} @{n1}",
                        len(f.points)])
    return out


def markdown(run, modes=("eager", "graph")) -> str:
    body = rows(run, modes)
    if not body:
        return f"No {packs.PROBE} rows at two or more pack sizes in this run."
    return md_table(["call form", "mode", "µs per extra tensor", "µs/call (smallest pack)",
                     "µs/call (largest pack)", "packs"], body)


def matrix_section(runs, labels, mode: str = "eager") -> list[str]:
    """Markdown lines: µs per extra tensor, one row per call form, one column per version."""
    per = [packs.fits(r, mode) for r in runs]
    forms = [f for f in packs.FORMS if any(f in p for p in per)]
    if not forms:
        return []
    def cell(p, form):
        return num(p[form].slope_us, 3) + p[form].range_text(count=False) if form in p else DASH
    body = [[form, *(cell(p, form) for p in per)] for form in forms]
    return [f"## µs per extra tensor in the variant pack ({packs.PROBE}, {mode}, least-squares slope "
            "and the min–max of the same slope per worker process)", "",
            md_table(["call form", *labels], body), ""]
