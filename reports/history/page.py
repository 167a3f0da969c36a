"""The dashboard's content, read from a store: per GPU, the newest run's verdicts against its
history first (regressions and improvements, then counts of unsure and noise-limited rows), trust
marks as counts by kind that expand, then trends (inline SVG: eager figures as ratios to their
baseline, graph and device figures in µs, each run's worker range, the history band, dates on the
x axis with frontend/cuDNN/torch changes marked), the version view (newest run per frontend), and
the runs. No scripts, nothing fetched.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import math
from collections import Counter
from pathlib import Path

from cudnn_hostbench.bench.measure import trust

from .. import fmt
from . import check, db

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
MAX_CHARTS = 36
CHART_W, CHART_H = 320, 150
COLOURS = {"eager": "#4c72b0", "graph": "#dd8452", "device": "#55a868", "host": "#8172b3"}
VERSION_FIELDS = (("frontend", "fe"), ("cudnn_backend", "cuDNN"), ("torch", "torch"), ("driver", "driver"))


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _when(s: str) -> float:
    try:
        return _dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _pct(x) -> str:
    return fmt.DASH if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:+.1f} %"


def _fig_text(v, unit: str) -> str:
    if v is None:
        return fmt.DASH
    return f"{v:.3f}×" if unit.startswith("x") else f"{fmt.value(v)} µs"


def chart(title: str, runs: list[dict], figs: dict, row: tuple, band: tuple | None, newest_id: int) -> str:
    """One trend: a dot per run at its judged figure, a line over its worker range, the history
    band (location ± minimum detectable change), dashed lines where versions change."""
    pts = []
    for r in runs:
        f = figs[r["id"]].get(row)
        if f is None or f.value is None:
            continue
        pts.append((r, f))
    if len(pts) < 2:
        return ""
    t = [_when(r["started_at"]) for r, _ in pts]
    ys = [y for _, f in pts for y in ([f.value] + list(f.workers or []))]
    if band:
        ys += [band[0] * (1 - band[1]), band[0] * (1 + band[1])]
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.02 or 1.0
    lo, hi = lo - pad, hi + pad
    L, R, T, B = 46, 8, 18, 30
    w, h = CHART_W - L - R, CHART_H - T - B
    t0, t1 = min(t), max(t)
    span = (t1 - t0) or 1.0
    # runs hours apart and runs days apart both stay apart: x by rank, ticks by date
    xs = [L + w * (i / max(len(pts) - 1, 1)) for i in range(len(pts))] if span < 3600 * len(pts) else \
        [L + w * (ti - t0) / span for ti in t]

    def Y(v):
        return T + h * (1 - (v - lo) / (hi - lo))
    out = [f'<svg class="chart" width="{CHART_W}" height="{CHART_H}" viewBox="0 0 {CHART_W} {CHART_H}" '
           f'role="img" aria-label="{_esc(title)}"><title>{_esc(title)}</title>']
    if band:
        y1, y2 = Y(band[0] * (1 + band[1])), Y(band[0] * (1 - band[1]))
        out.append(f'<rect x="{L}" y="{y1:.1f}" width="{w}" height="{max(y2 - y1, 1):.1f}" fill="#e8eef8"/>')
        out.append(f'<line x1="{L}" x2="{L + w}" y1="{Y(band[0]):.1f}" y2="{Y(band[0]):.1f}" stroke="#9ab" '
                   'stroke-dasharray="2 2"/>')
    out.append(f'<line x1="{L}" x2="{L}" y1="{T}" y2="{T + h}" stroke="#999"/>'
               f'<line x1="{L}" x2="{L + w}" y1="{T + h}" y2="{T + h}" stroke="#999"/>')
    for v in (lo + pad, hi - pad):
        out.append(f'<text x="{L - 3}" y="{Y(v) + 4:.1f}" text-anchor="end" class="tick">{_esc(fmt.value(v))}</text>')
    prev, label_x = None, -1e9
    for x, (r, _f) in zip(xs, pts):
        if prev is not None:
            changed = [f"{lab} {r[k]}" for k, lab in VERSION_FIELDS if r[k] != prev[k]]
            if changed:
                out.append(f'<line x1="{x - 1:.1f}" x2="{x - 1:.1f}" y1="{T}" y2="{T + h}" stroke="#c44" '
                           f'stroke-dasharray="3 2"><title>{_esc(", ".join(changed))}</title></line>')
                if x - label_x > 60:   # labels that would overlap keep only their line (and its tooltip)
                    out.append(f'<text x="{x - 2:.1f}" y="{T - 4}" text-anchor="end" class="mark">'
                               f'{_esc(changed[0])}</text>')
                    label_x = x
            elif r["commit_id"] != prev["commit_id"]:
                out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{T + h}" y2="{T + h + 4}" stroke="#666">'
                           f'<title>commit {_esc(r["commit_id"][:7])}</title></line>')
        prev = r
    colour = COLOURS.get(row[3], "#444")
    for x, (r, f) in zip(xs, pts):
        if f.workers and len(f.workers) > 1:
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{Y(max(f.workers)):.1f}" y2="{Y(min(f.workers)):.1f}" '
                       f'stroke="{colour}" stroke-opacity=".45" stroke-width="3"/>')
        big = r["id"] == newest_id
        ring = ' stroke="#000"' if big else ""
        out.append(f'<circle cx="{x:.1f}" cy="{Y(f.value):.1f}" r="{3.5 if big else 2.2}" fill="{colour}"'
                   f'{ring}><title>{_esc(r["started_at"][:16])} · '
                   f'{_esc(_fig_text(f.value, "x" if f.on_ratio else "us"))}</title></circle>')
    first, last = pts[0][0]["started_at"][:10], pts[-1][0]["started_at"][:10]
    out.append(f'<text x="{L}" y="{CHART_H - 10}" class="tick">{_esc(first)}</text>')
    if last != first:
        out.append(f'<text x="{L + w}" y="{CHART_H - 10}" text-anchor="end" class="tick">{_esc(last)}</text>')
    out.append(f'<text x="{L}" y="{T - 6}" class="tick">{len(pts)} runs</text></svg>')
    return "".join(out)


def _newest_full(runs: list[dict]) -> dict:
    """The newest run with at least half the rows of the largest run (a version-matrix part
    measures a few probes only; the version view shows those)."""
    most = max(r["n_figures"] for r in runs)
    return max((r for r in runs if r["n_figures"] >= most / 2 and not r["excluded"]),
               key=lambda r: (r["started_at"], r["id"]), default=runs[-1])


def _trend_rows(verdicts: list[check.Verdict], roles: dict) -> list[check.Verdict]:
    """Changed rows first, then per (probe, mode) one row: a trap if it has one, else a non-baseline."""
    changed = [v for v in verdicts if v.verdict in ("SLOWER", "FASTER", "KERNEL CHANGED")]
    picked, seen = list(changed[:12]), {v.row for v in changed[:12]}
    per: dict = {}
    for v in verdicts:
        if v.value is None or v.n == 0 or v.row in seen:
            continue
        role = roles.get(v.row, "")
        score = (role == "trap", v.on_ratio or v.mode != "eager", v.n, -len(v.size))
        k = (v.probe, v.mode)
        if k not in per or score > per[k][0]:
            per[k] = (score, v)
    order = {"eager": 0, "graph": 1, "device": 2, "host": 3}
    rest = sorted((s[1] for s in per.values()), key=lambda v: (order.get(v.mode, 9), v.probe))
    return (picked + rest)[:MAX_CHARTS]


def gpu_section(store: db.Store, gpu: str, runs: list[dict], last: int) -> dict:
    runs = runs[-last:]
    newest = _newest_full(runs)
    most = max(r["n_figures"] for r in runs)
    full = [r for r in runs if r["n_figures"] >= most / 2]   # trends: full runs (matrix parts: version view)
    target, verdicts = check.check(store, newest["id"])
    figs = store.figures([r["id"] for r in runs])
    mine = figs[newest["id"]]
    roles = {row: f.role for row, f in mine.items()}
    changed = sorted((v for v in verdicts if v.verdict in ("SLOWER", "KERNEL CHANGED", "FASTER")),
                     key=lambda v: (check.ORDER[v.verdict], -abs(v.change)))
    unsure = [v for v in verdicts if v.verdict == "UNSURE"]
    noise = [v for v in verdicts if v.verdict == "SAME" and v.mdc and v.mdc > 2 * check.MIN_EFFECT.get(v.mode, 0.05)]
    little = [v for v in verdicts if v.verdict == "NO HISTORY" or "too little history" in v.note]
    # only marks that lower trust (trust.SHOWN): discarded-and-redone rounds are the harness at work
    flags = Counter(fl for f in mine.values() for fl in (f.flags.split(",") if f.flags else []) if fl in trust.SHOWN)
    flagged = {k: sorted("/".join(row) for row, f in mine.items() if k in (f.flags or "").split(","))
               for k in flags}
    charts = []
    for v in _trend_rows(verdicts, roles):
        band = (v.location, v.mdc) if v.location and v.mdc and v.n >= check.MIN_HISTORY else None
        unit = f"× {v.unit[2:]}" if v.on_ratio else "µs"
        svg = chart(f"{v.probe}/{v.variant}/{v.size}/{v.mode}", full, figs, v.row, band, newest["id"])
        if svg:
            f = mine.get(v.row)
            sub = f"now {_fig_text(v.value, v.unit)}"
            if v.on_ratio and f is not None and f.median_us:
                sub += f" ({fmt.value(f.median_us)} µs)"
            charts.append({"svg": svg, "name": f"{v.probe}/{v.variant}/{v.size}", "mode": v.mode, "unit": unit,
                           "sub": sub, "verdict": v.verdict})
    return {
        "gpu": gpu, "slug": "".join(c if c.isalnum() else "-" for c in gpu), "newest": newest, "target": target,
        "counts": check.counts(verdicts), "changed": changed, "unsure": unsure, "noise": noise, "little": little,
        "mdc": {k: x for k, x in check.median_mdc(verdicts).items() if k != "other"},
        "flags": [(k, trust.FLAGS.get(k, ("?", k)), n, flagged[k]) for k, n in flags.most_common()],
        "history_n": max((v.n for v in verdicts), default=0), "charts": charts,
        "versions": version_view(store, runs), "runs": runs[::-1],
    }


def version_view(store: db.Store, runs: list[dict]) -> dict:
    """The newest run at each frontend version (of this GPU), and the rows two or more measured."""
    newest: dict = {}
    for r in runs:
        if not r["excluded"]:
            newest[r["frontend"]] = r
    from .. import store as runstore
    vers = sorted(newest, key=runstore.version_key)
    if len(vers) < 2:
        return {"versions": vers, "rows": []}
    figs = store.figures([newest[v]["id"] for v in vers])
    rows: dict = {}
    for i, v in enumerate(vers):
        for row, f in figs[newest[v]["id"]].items():
            if f.value is not None:
                rows.setdefault(row, [None] * len(vers))[i] = f
    out = []
    for row, cells in rows.items():
        if sum(c is not None for c in cells) < 2:
            continue
        ref = next(c for c in reversed(cells) if c is not None)
        out.append({"name": "/".join(row), "unit": f"× {ref.baseline}" if ref.on_ratio else "µs",
                    "cells": [None if c is None else (_fig_text(c.value, "x" if c.on_ratio else "us"),
                                                      c.value / ref.value - 1 if ref.value else 0.0) for c in cells]})
    out.sort(key=lambda x: x["name"])
    return {"versions": vers, "rows": out}


def render(store: db.Store, title: str, last: int = 100, errors=(), generated: str | None = None) -> str:
    """The page's HTML."""
    import jinja2
    by: dict = {}
    for r in store.runs():
        by.setdefault(r["gpu"], []).append(r)
    sections = [gpu_section(store, g, rs, last) for g, rs in sorted(by.items())]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = _pct
    env.filters["fig"] = lambda v: _fig_text(v.value, v.unit)
    env.filters["json"] = lambda x: json.dumps(x)
    return env.get_template("dashboard.html.j2").render(
        title=title, sections=sections, errors=list(errors),
        generated=generated or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        min_effect=check.MIN_EFFECT, k=check.K, last=last, check_last=check.DEFAULT_LAST)
