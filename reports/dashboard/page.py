"""The dashboard's content, read from a store: per GPU, the led run's verdicts against its history
first (lead.py says which run; regressions and improvements, then counts of unsure and
noise-limited rows), trust marks as counts by kind that expand, then the figures (charts.py):
trends of the led run's measurement version with the history band and version changes, every
variant's round ratios from a run file at hand, the version heatmap (each version's newest full
run), and the runs. Before the GPUs, the A/B jobs the store holds (abpage.py): each night's paired
change per row and the newest job whole. No scripts, nothing fetched.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from collections import Counter
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import trust
from cudnn_hostbench.reports import fmt
from cudnn_hostbench.reports.dashboard import abpage, charts
from cudnn_hostbench.reports.history import db, where
from cudnn_hostbench.reports.judge import check, lead
from cudnn_hostbench.reports.verdict import decide

TEMPLATES = Path(__file__).resolve().parent / "templates"
ROOT = Path(__file__).resolve().parents[2]
MAX_CHARTS = 36
VERSION_FIELDS = (("frontend", "fe"), ("cudnn_backend", "cuDNN"), ("torch", "torch"), ("driver", "driver"))


def _pct(fraction) -> str:
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return fmt.DASH
    return f"{fraction * 100:+.1f} %"


def _fig_text(value, unit: str) -> str:
    if value is None:
        return fmt.DASH
    return f"{value:.3f}×" if unit.startswith("x") else f"{fmt.value(value)} µs"


VERSION_RULE = ("the newest frontend version's newest full run (--order version: runs in version order, "
                "as a version matrix is)")


def _newest_full(runs: list[dict], order: str = "date") -> dict:
    """The run this GPU's section leads with (reports/judge/lead.py; every run excluded: the newest).
    With `order` 'version' (a version matrix), the newest full run of the newest frontend version."""
    if order == "version":
        from cudnn_hostbench.reports import store as runstore
        per = lead.per_version(runs)
        if per:
            return per[max(per, key=runstore.version_key)]
    return lead.led(runs) or runs[-1]


UNJUDGED = ("NO HISTORY", "UNMEASURED")   # verdicts that judged nothing


def file_state(run: dict, loaded: dict | None = None) -> tuple[str, str]:
    """(the run's file path as stored, '') while the file at that path has the bytes that were
    stored (its sha256), else ('', why not): the runs table names only a file that is the run."""
    src = run.get("source_path") or ""
    if not src:
        return "", "not recorded"
    if src in (loaded or {}):
        return src, ""
    for path in (Path(src), ROOT / src):
        try:
            if path.is_file():
                return (src, "") if db.file_hash(path) == run.get("source_hash") else ("", "changed since stored")
        except OSError:
            continue
    return "", "not at hand"


def _mdc_range(rows) -> str:
    """'median 40.8 %, 4.8 % to > 1000 %': rows' minimum detectable changes as numbers."""
    import statistics
    xs = sorted(v.mdc for v in rows if v.mdc is not None and not math.isnan(v.mdc))
    if not xs:
        return "unknown"
    mid = check.mdc_text(statistics.median(xs))
    return mid if xs[0] == xs[-1] else f"median {mid}, {check.mdc_text(xs[0])} to {check.mdc_text(xs[-1])}"


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


def _trend_runs(runs: list[dict], newest: dict, last: int) -> tuple[list[dict], int]:
    """(the full runs of the judged run's measurement version, at most `last`, oldest first; how
    many runs of other measurement versions were left out)."""
    full = lead.full(runs)
    same = [r for r in full if r["measurement_version"] == newest["measurement_version"]]
    return same[-last:], len(full) - len(same)


def _ticks(runs: list[dict]) -> list[str]:
    return [r["started_at"][5:16].replace("T", " ") for r in runs]


def _version_marks(runs: list[dict]) -> list[tuple[int, str]]:
    out = []
    for i in range(1, len(runs)):
        changed = [f"{lab} {runs[i][k]}" for k, lab in VERSION_FIELDS if runs[i][k] != runs[i - 1][k]]
        if changed:
            out.append((i, changed[0]))
    return out


def trend_facets(verdicts, shown: list[dict], figs: dict, newest_id: int) -> list[dict]:
    """What charts.trends draws: per trend row, each shown run's figure and worker range."""
    out = []
    for v in verdicts:
        pts = []
        for i, r in enumerate(shown):
            f = figs[r["id"]].get(v.row)
            if f is None or f.value is None or f.on_ratio != v.on_ratio:
                continue
            ws = list(f.workers or [])
            pts.append((i, f.value, min(ws, default=f.value), max(ws, default=f.value), r["id"] == newest_id))
        if len(pts) < 2:
            continue
        band = (v.location, v.mdc) if v.location and v.mdc else None
        out.append({"title": f"{v.probe}/{v.variant}/{v.size} · {v.mode}", "mode": v.mode, "verdict": v.verdict,
                    "unit": f"× {v.unit[2:]}" if v.on_ratio else "µs", "points": pts, "band": band,
                    "history_n": v.n})
    return out


def _run_file(run: dict, loaded: dict):
    """The judged run's own file (rounds are not in the store): a run given to the dashboard, or
    the file at its stored path when its bytes still match."""
    if run["source_path"] in loaded:
        return loaded[run["source_path"]]
    from cudnn_hostbench.bench.measure.runfile import records
    for p in (Path(run["source_path"]), ROOT / run["source_path"]):
        try:
            if p.is_file() and db.file_hash(p) == run["source_hash"]:
                return records.load_run(p)
        except (OSError, ValueError):
            continue
    return None


def round_ratios(run) -> "object":
    """Per probe (its first size), every eager variant's per-round ratios to the probe's baseline."""
    import pandas as pd

    from cudnn_hostbench.reports.judge.compare import normalized
    rows: list = []
    first: dict = {}
    for rec in run.records:
        if rec.mode != "eager" or not rec.ok or not rec.baseline or rec.variant == rec.baseline:
            continue
        if first.setdefault(rec.probe, rec.size) != rec.size:
            continue
        ratios = normalized(run, rec) or []
        med = rec.ratio.median if rec.ratio else None
        for x in ratios:
            rows.append({"probe": rec.probe, "size": rec.size, "variant": rec.variant, "mode": rec.mode,
                         "baseline": rec.baseline, "ratio": x, "median": med if med else float("nan")})
    return pd.DataFrame(rows)


def _trust_flags(mine: dict) -> list:
    """The judged run's trust marks that lower trust (trust.SHOWN), most common first: (mark, its
    text, count, rows)."""
    # only marks that lower trust (trust.SHOWN): discarded-and-redone rounds are the harness at work
    flags = Counter(fl for f in mine.values() for fl in (f.flags.split(",") if f.flags else []) if fl in trust.SHOWN)
    flagged = {k: sorted("/".join(row) for row, f in mine.items() if k in (f.flags or "").split(","))
               for k in flags}
    return [(k, trust.FLAGS.get(k, ("?", k)), n, flagged[k]) for k, n in flags.most_common()]


def _rounds_source(newest: dict, shown: list[dict], loaded: dict | None) -> tuple:
    """(run file, its run) for the round ratios: the judged run's file, else the newest full run of
    its version whose file is at hand; (None, None) if none is."""
    for run in [newest] + [r for r in reversed(shown) if r["id"] != newest["id"]]:
        rounds_run = _run_file(run, loaded or {})
        if rounds_run is not None:
            return rounds_run, run
    return None, None


def _verdict_fields(verdicts: list) -> dict:
    """The section's verdict figures: counts, the changed, unsure and new rows, MDCs."""
    changed = sorted((v for v in verdicts if v.verdict in ("SLOWER", "KERNEL CHANGED", "FASTER")),
                     key=lambda v: (check.ORDER[v.verdict], -abs(v.change)))
    unsure = [v for v in verdicts if v.verdict == "UNSURE"]
    little = [v for v in verdicts if v.verdict == "NO HISTORY"]
    return {
        "counts": check.counts(verdicts), "judged": sum(1 for v in verdicts if v.verdict not in UNJUDGED),
        # an all-clear only over rows a verdict decided: SAME; UNSURE rows say nothing either way
        "same": sum(1 for v in verdicts if v.verdict == "SAME"),
        "unsure_mdc": _mdc_range(unsure),
        "rows": len(verdicts), "changed": changed, "unsure": unsure, "little": little,
    }


def _trend_fields(facets: list, shown: list[dict], other_mv) -> dict:
    """The trend charts' counts: charts, bands, full bands, runs shown."""
    return {"n_charts": len(facets), "bands": sum(1 for f in facets if f["band"]),
            "full_band": sum(1 for f in facets if f["band"] and f["history_n"] >= 2),
            "shown_runs": len(shown), "other_mv": other_mv}


def gpu_section(store: db.Store, gpu: str, runs: list[dict], last: int, loaded: dict | None = None,
                order: str = "date", progress=None) -> dict:
    def say(text: str) -> None:
        if progress is not None:
            progress(f"dashboard: {gpu}: {text}")
    newest = _newest_full(runs, order)
    shown, other_mv = _trend_runs(runs, newest, last)
    say(f"judging run {newest['id']} against its history")
    target, verdicts = check.check(store, newest["id"], curves=True)
    say(f"drawing the trends of {len(shown)} runs")
    figs = store.figures([r["id"] for r in shown] + ([newest["id"]] if newest not in shown else []))
    mine = figs[newest["id"]]
    roles = {row: f.role for row, f in mine.items()}
    flags = _trust_flags(mine)
    facets = trend_facets(_trend_rows(verdicts, roles), shown, figs, newest["id"])
    trends_svg = charts.trends(facets, _ticks(shown), _version_marks(shown))
    rounds_run, rounds_of = _rounds_source(newest, shown, loaded)
    say("drawing the round ratios, calibration, power and version view")
    rounds_svg = charts.rounds(round_ratios(rounds_run), "round ratios per probe") if rounds_run else ""
    calibration_svg = charts.calibration(target.get("calibration") or {})
    power_svg = charts.power(target.get("power") or {}, decide.POWER_CHANGES)
    return {
        "gpu": gpu, "slug": "".join(c if c.isalnum() else "-" for c in gpu), "newest": newest, "target": target,
        "lead_rule": VERSION_RULE if order == "version" else lead.RULE,
        "newer_partial": [r for r in lead.newer_than(newest, runs)
                          if order != "version" or r["frontend"] == newest["frontend"]],
        **_verdict_fields(verdicts),
        "findings": check.finding_lines(target),
        "mdc": {k: x for k, x in check.median_mdc(verdicts).items() if k != "other"},
        "flags": flags,
        "history_n": max((v.n for v in verdicts), default=0), "trends_svg": trends_svg,
        **_trend_fields(facets, shown, other_mv),
        "rounds_svg": rounds_svg, "rounds_of": rounds_of,
        "calibration_svg": calibration_svg, "power_svg": power_svg,
        "versions": version_view(store, runs, newest), "runs": runs[::-1],
        "files": {r["id"]: file_state(r, loaded) for r in runs},
    }


def _version_cells(store: db.Store, vers: list, newest: dict) -> dict:
    """Per row, its figure under each version (None where that version's run has none)."""
    figs = store.figures([newest[v]["id"] for v in vers])
    rows: dict = {}
    for index, version in enumerate(vers):
        for row, fig in figs[newest[version]["id"]].items():
            if fig.value is not None:
                rows.setdefault(row, [None] * len(vers))[index] = fig
    return rows


def _version_row(row: tuple, cells: list) -> dict:
    """One row of the version view: each version's figure as text and its change against the
    newest version's figure."""
    ref = next(c for c in reversed(cells) if c is not None)
    return {"name": "/".join(row), "unit": f"× {ref.baseline}" if ref.on_ratio else "µs",
            "cells": [None if c is None else (_fig_text(c.value, "x" if c.on_ratio else "us"),
                                              c.value / ref.value - 1 if ref.value else 0.0) for c in cells]}


def _version_rows(store: db.Store, vers: list, newest: dict) -> list[dict]:
    """The version view's rows: those two or more versions measured, by name."""
    out = [_version_row(row, cells) for row, cells in _version_cells(store, vers, newest).items()
           if sum(c is not None for c in cells) >= 2]
    out.sort(key=lambda x: x["name"])
    return out


def version_view(store: db.Store, runs: list[dict], newest: dict | None = None) -> dict:
    """Per frontend version (of this GPU, the judged run's measurement version), the newest run
    that is full among that version's runs, and the rows two or more of them measured."""
    mv = (newest or runs[-1])["measurement_version"]
    picked = lead.per_version([r for r in runs if r["measurement_version"] == mv])
    from cudnn_hostbench.reports import store as runstore
    vers = sorted(picked, key=runstore.version_key)
    newest = {v: picked[v] for v in vers}
    if len(vers) < 2:
        return {"versions": vers, "rows": [], "runs": newest, "svg": ""}
    out = _version_rows(store, vers, newest)
    ratios = [r for r in out if str(r["unit"]).startswith("×")]   # the heatmap: the ratios; µs rows in the table
    svg = charts.heatmap([f"{r['name']} ({r['unit']})" for r in ratios], vers,
                         [[float("nan") if c is None else c[1] for c in r["cells"]] for r in ratios],
                         [["" if c is None else c[0] for c in r["cells"]] for r in ratios])
    return {"versions": vers, "rows": out, "runs": newest, "svg": svg}


def render(store: db.Store, title: str, last: int = 100, errors=(), generated: str | None = None,
           loaded: dict | None = None, order: str = "date", progress=None) -> str:
    """The page's HTML. `loaded`: source path -> Run, run files already in memory (their rounds);
    `order` 'version': each GPU leads with its newest frontend version (a version matrix);
    `progress(text)`: called before each GPU's section (a line on a terminal)."""
    import jinja2
    by: dict = {}
    for r in store.runs():
        by.setdefault(r["gpu"], []).append(r)
    if progress is not None:
        progress("dashboard: A/B jobs")
    ab = abpage.view(store)
    sections = []
    for k, (g, rs) in enumerate(sorted(by.items())):
        if progress is not None:
            progress(f"dashboard: {g} ({k + 1}/{len(by)}, {len(rs)} runs)")
        sections.append(gpu_section(store, g, rs, last, loaded, order, progress))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = _pct
    env.filters["fig"] = lambda v: _fig_text(v.value, v.unit)
    env.filters["json"] = lambda x: json.dumps(x)
    env.filters["mdc"] = check.mdc_text        # past 1,000 %: "> 1000 %", as the check prints it
    env.filters["adjusted"] = decide.adjusted_text
    # a run's file as the page's reader finds it: inside its repository, not this machine's path
    env.filters["shown_path"] = lambda p: where.repo_relative(p) or p
    return env.get_template("dashboard.html.j2").render(
        title=title, sections=sections, errors=list(errors), ab=ab,
        generated=generated or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        min_history=2, last=last, check_last=check.DEFAULT_LAST,
        rule=VERSION_RULE if order == "version" else lead.RULE)
