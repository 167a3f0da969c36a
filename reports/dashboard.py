"""`hostbench dashboard RUN_OR_DIR... --out DIR`: a static HTML page over many runs.

Per GPU: the runs with their trust summary; a heat map of every per-call figure as a ratio to its
probe's baseline (rows probe/variant · size, columns mode × run, the ratio written in each cell,
colour on a log scale capped at 1/CAP and CAP, diverging around 1.0); host/build-time rows (ms) in
a section of their own; per probe the newest run's medians and the history across runs, one panel
per size and mode, with change points (reports/changepoints.py); the fingerprints. Plain HTML and
PNG files, no scripts, nothing fetched: it opens from file://. No image is wider than WIDTH_PX.

The output folder holds a manifest (MANIFEST) of the files the dashboard wrote; a rebuild only
ever replaces or removes files it lists, and a non-empty folder without one is refused.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shutil
import struct
import tempfile
from pathlib import Path

from cudnn_hostbench.bench.measure import trust
from cudnn_hostbench.bench.measure.files import write_text_atomic
from cudnn_hostbench.bench.measure.records import CALL_MODES

from . import changepoints, fmt, store
from .compare import KEY_FIELDS

TEMPLATES = Path(__file__).parent / "templates"
MANIFEST = ".hostbench-dashboard"
DPI = 100
WIDTH_PX = 1300          # widest image; the page itself is laid out for a 1400 px window
CAP = 3.0                # heat-map colour saturates at 1/CAP x and CAP x; the number stays exact
HEAT_ROWS = 40           # rows per heat-map image, so its column heads stay on screen
HEAT_RUNS = 8            # newest runs shown in the heat map (the history shows all)
MODE_COLOURS = {"eager": "#4c72b0", "graph": "#dd8452", "device": "#55a868"}
ROLE_COLOURS = {"trap": "#c44e52", "fixed": "#55a868", "baseline": "#8c8c8c", "floor": "#8172b3",
                "info": "#64b5cd"}


class OutError(Exception):
    """The --out folder cannot be used; the message names it and says why."""


# -- small helpers ----------------------------------------------------------------------------
def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-") or "x"


def _num(x) -> float | None:
    return None if fmt.missing(x) else float(x)


def _plt():
    import matplotlib
    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt
    return plt


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's header."""
    with open(path, "rb") as fh:
        head = fh.read(24)
    return struct.unpack(">II", head[16:24])


def _save(fig, path: Path) -> dict:
    fig.savefig(path, dpi=DPI)  # no tight bbox: the pixel size is the figure size we chose
    _plt().close(fig)
    w, h = png_size(path)
    return {"src": f"img/{path.name}", "width": w, "height": h}


def _fig(width_in: float, height_in: float):
    return _plt().figure(figsize=(min(width_in, WIDTH_PX / DPI), height_in), dpi=DPI, layout="constrained")


def _ordered(values) -> list:
    return list(dict.fromkeys(values))


def _variants(d) -> list[str]:
    """Variant names, baseline first, then in the order the run holds them."""
    return _ordered(d.sort_values("is_baseline", ascending=False, kind="stable")["variant"])


def _log_y_if_wide(ax, values, span=30.0):
    """A log axis when one panel spans more than `span`x (a trap 600x its baseline)."""
    vals = [v for v in values if v and v > 0]
    if vals and max(vals) / min(vals) > span:
        ax.set_yscale("log")


# -- heat map of ratios -----------------------------------------------------------------------
def heat_blocks(df, runs: list[str]) -> list[tuple[list, list[str]]]:
    """Per-call rows split into blocks of about HEAT_ROWS rows at probe boundaries; each block is
    ([(probe, size, variant), ...], the runs that measured any of them, newest HEAT_RUNS)."""
    d = df[df["mode"] != "host"]
    probes = _ordered(d.probe)
    seen = {p: frozenset(d[(d.probe == p) & d.median_us.notna()].run) for p in probes}
    # probes measured in more runs first; a block holds probes seen in as many runs (its columns)
    probes.sort(key=lambda p: -len(seen[p]))
    blocks, rows, last = [], [], None
    for p in probes:
        dp = d[d.probe == p]
        prow = [(p, s, v) for s in _ordered(dp["size"]) for v in _variants(dp[dp["size"] == s])]
        if rows and (len(rows) + len(prow) > HEAT_ROWS or len(seen[p]) != last):
            blocks.append(rows)
            rows = []
        rows += prow
        last = len(seen[p])
    if rows:
        blocks.append(rows)
    out = []
    for rows in blocks:
        keys = {(p, s) for p, s, _ in rows}
        inside = [(p, s) in keys for p, s in zip(d.probe, d["size"])]
        has = d[d.median_us.notna().to_numpy() & inside]
        cols = [r for r in runs if r in set(has.run)][-HEAT_RUNS:]
        if cols:
            out.append((rows, cols))
    return out


def heatmap(df, rows: list, runs: list[str], ticks: dict, path: Path) -> dict:
    """One heat-map image: cells are ratios to the probe's baseline (baseline rows: its µs)."""
    import matplotlib.colors as mcolors
    from matplotlib.cm import ScalarMappable
    from matplotlib.patches import Rectangle

    cmap = _plt().get_cmap("RdBu_r")
    d = df[df["mode"] != "host"]
    cells = {(x.probe, x.size, x.variant, x.mode, x.run): x for x in d.itertuples()}
    modes = [m for m in CALL_MODES if m in set(df["mode"])]
    modes += sorted(set(df["mode"]) - set(modes) - {"host"})
    cols = [(m, r) for m in modes for r in runs]
    labels = []
    for p, s, v in rows:
        sub = df[(df.probe == p) & (df["size"] == s) & (df.variant == v)]
        base = bool(sub.is_baseline.any())
        unit = fmt.unit_text(sub.unit.iloc[0]) if len(sub) else ""
        labels.append(f"{p}/{v} · {s}" + (f"  (baseline, {unit})" if base else ""))
    label_in = 0.4 + 0.068 * max(len(t) for t in labels)
    cell_in = 0.62 if len(runs) > 1 else 0.95  # one run: a column per mode, its name the head
    fig = _fig(label_in + cell_in * len(cols) + 1.2, 1.6 + 0.24 * len(rows))
    ax = fig.add_subplot()
    rgba = [[(1, 1, 1, 1)] * len(cols) for _ in rows]
    for i, (p, s, v) in enumerate(rows):
        for j, (m, r) in enumerate(cols):
            rec = cells.get((p, s, v, m, r))
            if rec is None:
                continue
            med, ratio = _num(rec.median_us), _num(rec.ratio)
            badge = rec.badge or ""
            if med is None:
                rgba[i][j] = mcolors.to_rgba("#f2f2f2")
                ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="#999")
                continue
            # a flagged figure: hatched and outlined, its number on a patch of the cell's colour
            box = dict(boxstyle="square,pad=0.15", lw=0) if badge else None
            if rec.is_baseline or ratio is None:
                rgba[i][j] = mcolors.to_rgba("#e6e6e6")
                t = ax.text(j, i, fmt.value(med) + badge, ha="center", va="center", fontsize=7,
                            color="#444", style="italic", bbox=box, zorder=3)
            else:
                x = max(-1.0, min(1.0, math.log(ratio) / math.log(CAP))) if ratio > 0 else -1.0
                rgba[i][j] = cmap(0.5 + 0.5 * x)
                t = ax.text(j, i, fmt.ratio(ratio) + badge, ha="center", va="center", fontsize=7.5,
                            color="white" if abs(x) > 0.62 else "#111", bbox=box, zorder=3)
            if badge:
                t.get_bbox_patch().set_facecolor(rgba[i][j])
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////",
                                       edgecolor="#222", lw=1.5, alpha=0.5, zorder=2))
    ax.imshow(rgba, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    for t, _row in zip(ax.get_yticklabels(), rows):
        if "(baseline" in t.get_text():
            t.set_color("#666")
    if len(runs) > 1:
        ax.set_xticks(range(len(cols)), [ticks.get(r, r) for _, r in cols], fontsize=7.5, rotation=40,
                      ha="left", rotation_mode="anchor")
    else:
        ax.set_xticks(range(len(cols)), [f"{m}\n× baseline" for m in modes], fontsize=9, fontweight="bold")
        ax.set_title(f"run {ticks.get(runs[0], runs[0])}", fontsize=9)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for k in range(1, len(modes)):  # mode groups
        ax.axvline(k * len(runs) - 0.5, color="#333", lw=2)
    for i in range(1, len(rows)):  # probes (and sizes, thinner)
        if rows[i][0] != rows[i - 1][0]:
            ax.axhline(i - 0.5, color="#333", lw=1.4)
        elif rows[i][1] != rows[i - 1][1]:
            ax.axhline(i - 0.5, color="#999", lw=0.8)
    ax.set_xticks([x - 0.5 for x in range(1, len(cols))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(rows))], minor=True)
    ax.grid(which="minor", color="white", lw=0.6)
    ax.tick_params(which="minor", length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    if len(runs) > 1:  # mode heads above the rotated run names
        longest = max(len(ticks.get(r, r)) for r in runs)
        sec = ax.secondary_xaxis("top")
        sec.set_xticks([k * len(runs) + (len(runs) - 1) / 2 for k in range(len(modes))],
                       [f"{m}  (× baseline)" for m in modes], fontsize=9, fontweight="bold")
        sec.tick_params(length=0, pad=6 + 4.4 * longest * 0.64)
        for s in sec.spines.values():
            s.set_visible(False)
    tick_vals = [1 / CAP, 0.5, 2 / 3, 1, 1.5, 2, CAP]
    cb = fig.colorbar(ScalarMappable(mcolors.Normalize(-1, 1), cmap), ax=ax, location="right",
                      shrink=min(1.0, 3.2 / (0.24 * len(rows) + 0.5)), anchor=(0, 1), aspect=16,
                      ticks=[math.log(t) / math.log(CAP) for t in tick_vals])
    cb.ax.set_yticklabels([("≤" if t == 1 / CAP else "≥" if t == CAP else "") + f"{t:.2g}×" for t in tick_vals],
                          fontsize=7.5)
    cb.set_label("× baseline, log colour", fontsize=8)
    return _save(fig, path)


# -- per-probe bars and history ---------------------------------------------------------------
def bars(d, probe: str, run: str, path: Path) -> dict:
    """Median per variant, one bar per mode, one panel per size (own y axis); baseline first."""
    d = d[d.median_us.notna() & (d["mode"] != "host")]
    sizes = _ordered(d["size"])
    modes = [m for m in CALL_MODES if m in set(d["mode"])] + sorted(set(d["mode"]) - set(CALL_MODES))
    ncol = min(3, len(sizes))
    nrow = math.ceil(len(sizes) / ncol)
    nvar = max(len(set(d[d["size"] == s].variant)) for s in sizes)
    panel = max(3.2, min(0.25 * nvar * len(modes) + 1.2, (WIDTH_PX / DPI - 1.3) / ncol))
    title = f"{probe}: median per call by mode, run {run}"
    fig = _fig(max(panel * ncol + 1.3, 0.085 * len(title) + 2.6), 2.7 * nrow + 0.5)
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    width = 0.8 / len(modes)
    for ax, size in zip(axes, sizes):
        ds = d[d["size"] == size]
        variants = _variants(ds)
        for k, mode in enumerate(modes):
            dm = ds[ds["mode"] == mode].set_index("variant")
            xs = [i for i, v in enumerate(variants) if v in dm.index]
            ys = [float(dm.loc[v, "median_us"]) for v in variants if v in dm.index]
            flagged = [bool(dm.loc[v, "badge"]) for v in variants if v in dm.index]
            bs = ax.bar([x - 0.4 + width * (k + 0.5) for x in xs], ys, width, color=MODE_COLOURS.get(mode),
                        label=mode)
            for b, f in zip(bs, flagged):
                if f:
                    b.set_hatch("////")
                    b.set_edgecolor("#222")
        _log_y_if_wide(ax, ds.median_us)
        ax.set_xticks(range(len(variants)), variants, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"size {size}", fontsize=9)
        ax.set_ylabel(f"median {'/'.join(sorted(set(fmt.unit_text(u) for u in ds.unit)))}", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", color="#eee")
        ax.set_axisbelow(True)
    for ax in axes[len(sizes):]:
        ax.set_visible(False)
    handles = [_plt().Rectangle((0, 0), 1, 1, color=MODE_COLOURS.get(m)) for m in modes]
    fig.legend(handles, modes, loc="outside right upper", fontsize=8, title="mode", title_fontsize=8)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def history(df, probe: str, runs: list[str], ticks: dict, path: Path) -> tuple[dict | None, list[dict], list[str]]:
    """Medians across runs, one panel per (size, mode), a line per variant, change points ringed.
    Returns (image or None, change-point rows, sizes left out because one run measured them)."""
    d = df[(df.probe == probe) & (df["mode"] != "host") & df.median_us.notna()]
    runs = [r for r in runs if r in set(d.run)]
    counts = d.groupby(["size", "mode", "variant"]).run.nunique()
    sizes = [s for s in _ordered(d["size"]) if (counts.loc[s] > 1).any()]
    single = [s for s in _ordered(d["size"]) if s not in sizes]
    if not sizes:
        return None, [], single
    modes = [m for m in CALL_MODES if m in set(d["mode"])] + sorted(set(d["mode"]) - set(CALL_MODES))
    variants = _variants(d)
    colours = {v: _plt().get_cmap("tab10")(i % 10) for i, v in enumerate(variants)}
    panel_w = min(4.2, (WIDTH_PX / DPI - 1.9) / len(modes))
    fig = _fig(panel_w * len(modes) + 1.9, 2.5 * len(sizes) + 0.9)
    axes = fig.subplots(len(sizes), len(modes), squeeze=False)
    steps = []
    for row, size in zip(axes, sizes):
        for ax, mode in zip(row, modes):
            dm = d[(d["size"] == size) & (d["mode"] == mode)]
            for v in _ordered(dm.variant):
                g = dm[dm.variant == v]
                by_run = dict(zip(g.run, g.median_us))
                ys = [float(by_run[r]) if r in by_run else float("nan") for r in runs]
                ax.plot(range(len(runs)), ys, marker="o", ms=3, lw=1.2, color=colours[v])
                for x, r in enumerate(runs):
                    if r in by_run and g[g.run == r].badge.iloc[0]:  # flagged figure: square outline
                        ax.plot([x], [ys[x]], "s", ms=8, mfc="none", mec="#222", mew=1)
                for s in changepoints.detect(ys):
                    ax.plot([s.index], [ys[s.index]], "o", ms=11, mfc="none", mec="red", mew=1.5)
                    ax.axvline(s.index - 0.5, color="red", ls=":", lw=0.8)
                    steps.append({"series": f"{v} · {mode} · {size}", "run": runs[s.index],
                                  "before": s.before, "after": s.after, "change": s.change})
            _log_y_if_wide(ax, dm.median_us)
            ax.set_xticks(range(len(runs)), [ticks.get(r, r) for r in runs], rotation=30, ha="right", fontsize=7)
            ax.tick_params(axis="y", labelsize=7.5)
            ax.set_ylabel(f"median {'/'.join(sorted(set(fmt.unit_text(u) for u in dm.unit)))}", fontsize=8)
            ax.set_title(f"{mode} · size {size}", fontsize=9)
            ax.grid(color="#eee")
            ax.set_xlim(-0.5, len(runs) - 0.5)
    handles = [_plt().Line2D([], [], color=colours[v], marker="o", ms=3) for v in variants]
    fig.legend(handles, variants, loc="outside right upper", fontsize=8, title="variant", title_fontsize=8)
    fig.suptitle(f"{probe}: medians across runs (red rings: change points)", fontsize=10)
    return _save(fig, path), steps, single


# -- host / build-time rows ------------------------------------------------------------------
def host_chart(d, run: str, unit: str, path: Path) -> dict:
    """Host-mode medians of one run in one unit, log axis, coloured by role, value at each bar."""
    d = d[d.median_us.notna()]
    rows = []
    for p in _ordered(d.probe):
        dp = d[d.probe == p]
        for s in _ordered(dp["size"]):
            ds = dp[dp["size"] == s]
            rows += [ds[ds.variant == v].iloc[0] for v in _variants(ds)]
    vals = [r.median_us / store.to_us(1.0, unit) for r in rows]
    labels = [f"{r.probe}/{r.variant} · {r['size']}" for r in rows]
    fig = _fig(0.068 * max(map(len, labels)) + 8.5, 0.9 + 0.23 * len(rows))
    ax = fig.add_subplot()
    y = list(range(len(rows)))
    bs = ax.barh(y, vals, color=[ROLE_COLOURS.get(r.role, "#bbb") for r in rows], height=0.7)
    for b, r, v in zip(bs, rows, vals):
        if r.badge:
            b.set_hatch("////")
            b.set_edgecolor("#222")
        ax.text(v * 1.06, b.get_y() + b.get_height() / 2, f"{fmt.value(v)} {fmt.unit_text(unit)}{r.badge}",
                va="center", fontsize=7.5)
    ax.set_xscale("log")
    ax.set_xlim(min(vals) / 2, max(vals) * 5)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    for i in range(1, len(rows)):
        if rows[i].probe != rows[i - 1].probe:
            ax.axhline(i - 0.5, color="#999", lw=0.8)
    ax.set_xlabel(f"median {fmt.unit_text(unit)} (log scale)", fontsize=8)
    ax.grid(axis="x", color="#eee")
    ax.set_axisbelow(True)
    roles = [r for r in ROLE_COLOURS if r in {x.role for x in rows}]
    fig.legend([_plt().Rectangle((0, 0), 1, 1, color=ROLE_COLOURS[r]) for r in roles], roles,
               loc="outside right upper", fontsize=8, title="role", title_fontsize=8)
    fig.suptitle(f"host-side time ({fmt.unit_text(unit)}), run {run}", fontsize=10)
    return _save(fig, path)


def host_table(d, runs: list[str]) -> dict:
    """Host rows as a table: one column per run that has them, the newest ratio to the baseline."""
    runs = [r for r in runs if r in set(d.run[d.median_us.notna()])]
    out = []
    for key, g in d.groupby(["probe", "size", "variant"], sort=False):
        cells = []
        for r in runs:
            x = g[g.run == r]
            med = _num(x.median_us.iloc[0]) if len(x) else None
            unit = x.unit.iloc[0] if len(x) else ""
            cells.append("" if med is None else
                         f"{fmt.value(med / store.to_us(1.0, unit))} {fmt.unit_text(unit)}{x.badge.iloc[0]}")
        last = g[g.run == runs[-1]] if runs else g.iloc[:0]
        ratio = _num(last.ratio.iloc[0]) if len(last) else None
        vs = "" if ratio is None or bool(last.is_baseline.iloc[0]) else f"{fmt.ratio(ratio)} {last.baseline.iloc[0]}"
        out.append({"name": f"{key[0]}/{key[2]} · {key[1]}", "role": g.role.iloc[0], "cells": cells, "vs": vs})
    return {"runs": runs, "rows": out}


# -- page parts -------------------------------------------------------------------------------
def fingerprints(runs) -> tuple[list[dict], list[dict]]:
    """(fields that differ between runs: a value per run, fields that are the same: one value)."""
    keys = [k for k in KEY_FIELDS if any(k in r.fingerprint for r in runs)]
    keys += sorted({k for r in runs for k in r.fingerprint} - set(keys))
    differ, same = [], []
    for k in keys:
        vals = [r.fingerprint.get(k) for r in runs]
        text = ["" if v is None else (v if isinstance(v, str) else json.dumps(v, default=str)) for v in vals]
        if len(set(text)) > 1:
            differ.append({"field": k, "cells": text})
        else:
            same.append({"field": k, "value": text[0]})
    return differ, same


def tick_labels(group, labels: list[str], order: str) -> dict:
    """Column names for charts: with --order date and several frontends, the version is added."""
    versions = [store.frontend_version(r) for r in group]
    if order == "version":
        return {lab: lab for lab in labels}
    days = {lab[:11] for lab in labels}
    short = {lab: lab[11:] if len(days) == 1 and re.match(r"\d{4}-\d\d-\d\d ", lab) else lab for lab in labels}
    if len(set(versions)) < 2:
        return short
    return {lab: f"{short[lab]} · fe {v}" if v else short[lab] for lab, v in zip(labels, versions)}


def gpu_section(gpu: str, group, order: str, img: Path, g: str) -> dict:
    """Everything shown for one GPU; its images are named `g`-*.png."""
    labels = store.unique_labels(group, order)
    ticks = tick_labels(group, labels, order)
    df = store.records_frame(group, labels)
    sec = {"gpu": gpu, "slug": g, "probes": [], "heatmaps": [], "host": [], "host_table": None,
           "runs": [{"label": ticks[lab], "path": r.path, "frontend": store.frontend_version(r),
                     "datetime": (r.datetime or "")[:19].replace("T", " "), "summary": trust.summary_line(r)}
                    for lab, r in zip(labels, group)]}
    sec["differ"], sec["same"] = fingerprints(group)
    sec["labels"] = [ticks[lab] for lab in labels]
    sec["heat_cut"] = len(labels) > HEAT_RUNS
    flagged = df[df.badge.astype(bool)]
    sec["flagged"] = [{"run": ticks[x.run], "name": f"{x.probe}/{x.variant} · {x.size} · {x.mode}",
                       "value": "" if _num(x.median_us) is None else
                       f"{fmt.value(x.median_us / store.to_us(1.0, x.unit))} {fmt.unit_text(x.unit)}",
                       "badge": x.badge} for x in flagged.itertuples()]
    for k, (rows, cols) in enumerate(heat_blocks(df, labels)):
        name = f"{g}-heatmap.png" if k == 0 else f"{g}-heatmap-{k + 1}.png"
        pic = heatmap(df, rows, cols, ticks, img / name)
        pic["probes"] = _ordered(p for p, _, _ in rows)
        sec["heatmaps"].append(pic)
    host = df[df["mode"] == "host"]
    if not host.empty:
        measured = host[host.median_us.notna()]
        if not measured.empty:
            newest = [r for r in labels if r in set(measured.run)][-1]
            for unit in _ordered(measured[measured.run == newest].unit):
                part = measured[(measured.run == newest) & (measured.unit == unit)]
                pic = host_chart(part, ticks[newest], unit, img / f"{g}-host-{_slug(unit)}.png")
                pic["unit"] = fmt.unit_text(unit)
                sec["host"].append(pic)
        sec["host_table"] = host_table(host, labels)
        sec["host_table"]["runs"] = [ticks[r] for r in sec["host_table"]["runs"]]
    calls = df[df["mode"] != "host"]
    for probe in _ordered(calls.probe):
        dp = calls[calls.probe == probe]
        measured_runs = [r for r in labels if r in set(dp[dp.median_us.notna()].run)]
        p = {"name": probe, "bars": None, "history": None, "steps": [], "single": [], "unmeasured": []}
        if measured_runs:
            newest = measured_runs[-1]
            p["newest"] = ticks[newest]
            p["bars"] = bars(dp[dp.run == newest], probe, ticks[newest], img / f"{g}-{_slug(probe)}-bars.png")
            nd = dp[dp.run == newest]
            p["unmeasured"] = nd[nd.median_us.isna()][["variant", "mode", "size", "status"]].to_dict("records")
        if len(measured_runs) > 1:
            p["history"], p["steps"], p["single"] = history(df, probe, labels, ticks,
                                                            img / f"{g}-{_slug(probe)}-history.png")
            for c in p["steps"]:
                c["run"] = ticks[c["run"]]
        sec["probes"].append(p)
    return sec


def render(runs, folder: Path, errors=(), order: str = "date", title: str = "hostbench dashboard") -> list[str]:
    """Writes index.html and img/*.png into `folder`; returns the paths written, relative to it."""
    import jinja2

    img = folder / "img"
    img.mkdir(parents=True, exist_ok=True)
    sections, slugs = [], set()
    for gpu, group in store.by_gpu(store.sort_runs(runs, order)).items():
        g = _slug(gpu)
        while g in slugs:  # two GPU names that differ only in punctuation keep their own images
            g += "-2"
        slugs.add(g)
        sections.append(gpu_section(gpu, group, order, img, g))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    html = env.get_template("dashboard.html.j2").render(
        title=title, sections=sections, errors=[str(e) for e in errors], order=order, cap=f"{CAP:g}×",
        legend=trust.LEGEND if any(s["flagged"] for s in sections) else "",
        heat_runs=HEAT_RUNS, manifest=MANIFEST,
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    (folder / "index.html").write_text(html, encoding="utf-8")
    return sorted(f"img/{p.name}" for p in img.glob("*.png")) + ["index.html"]


# -- the output folder: write only into our own, remove only what we wrote ------------------
def _existing_ancestor(p: Path) -> Path:
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def previous_files(out: Path) -> set[str]:
    """Files an earlier build wrote into `out` (its manifest); raises OutError when `out` cannot
    be used: a file, under a file, unwritable, or a non-empty folder without a manifest."""
    if out.exists() and not out.is_dir():
        raise OutError(f"{out}: --out names a file, not a folder")
    up = _existing_ancestor(out)
    if not up.is_dir():
        raise OutError(f"{out}: {up} is a file, not a folder")
    if not os.access(up, os.W_OK | os.X_OK):
        raise OutError(f"{out}: cannot write in {up}")
    if not out.exists():
        return set()
    man = out / MANIFEST
    if not man.is_file():
        if any(out.iterdir()):
            raise OutError(f"{out}: folder is not empty and has no {MANIFEST} manifest (not written by "
                           "hostbench dashboard); refusing to write into it, choose a new or empty folder")
        return set()
    names = set()
    for line in man.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        # only plain relative paths below `out`: a damaged manifest must not reach elsewhere
        if line and not line.startswith("#") and not Path(line).is_absolute() and ".." not in Path(line).parts:
            names.add(line)
    return names


def publish(stage: Path, out: Path, written: list[str], old: set[str]) -> None:
    """Moves the staged files into `out`, writes the manifest, removes files only the old one listed."""
    for name in written:
        target = out / name
        parent = target.parent
        while parent != out and parent != parent.parent:  # e.g. img is a user's file
            if parent.exists() and not parent.is_dir():
                raise OutError(f"{parent}: is a file, the dashboard needs a folder there")
            parent = parent.parent
        if (target.exists() or target.is_symlink()) and name not in old:
            raise OutError(f"{target}: exists and was not written by hostbench dashboard; "
                           "move it or choose another --out")
    for name in sorted(written, key=lambda n: n == "index.html"):  # the page last: its images first
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / name, out / name)
    write_text_atomic(out / MANIFEST, "# files written by hostbench dashboard; a rebuild replaces them and removes "
                      "those it no longer writes, and touches nothing else\n" + "\n".join(written) + "\n")
    for name in sorted(old - set(written)):
        p = out / name
        if p.is_file() or p.is_symlink():
            p.unlink()


def build(runs, out: str | Path, errors=(), order: str = "date", title: str = "hostbench dashboard") -> Path:
    """Renders into a staging folder beside `out`, then moves the files in: a failure leaves `out`
    as it was. Returns the index path; raises OutError when `out` cannot be used."""
    out = Path(out)
    old = previous_files(out)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=_existing_ancestor(out.parent)))
    try:
        written = render(runs, stage, errors, order, title)
        out.mkdir(parents=True, exist_ok=True)
        publish(stage, out, written, old)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"
