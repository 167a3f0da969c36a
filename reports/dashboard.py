"""`hostbench dashboard RUN_OR_DIR... --out DIR`: a static HTML site over many runs.

Per GPU: a heat map of µs above the baseline (torch.mm) per probe/variant and run, per probe a
bar chart of the newest run by mode and a history of medians across runs with change points
(reports/changepoints.py), and every run's fingerprint. Plain HTML and PNG files, no scripts,
nothing fetched: it opens from file://.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
import warnings
from pathlib import Path

from . import changepoints, store
from .compare import KEY_FIELDS

TEMPLATES = Path(__file__).parent / "templates"
MODE_ORDER = ["eager", "graph", "device", "host"]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-") or "x"


def _plt():
    import matplotlib
    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> str:
    fig.savefig(path, dpi=90, bbox_inches="tight")
    _plt().close(fig)
    return f"img/{path.name}"


def bars(df, probe: str, path: Path) -> str:
    """Median µs per variant, one bar per mode, one panel per size; baseline variant first."""
    import seaborn as sns
    plt = _plt()
    d = df[(df.probe == probe) & df.median_us.notna()]
    sizes = list(dict.fromkeys(d["size"]))
    modes = [m for m in MODE_ORDER if m in set(d["mode"])] + sorted(set(d["mode"]) - set(MODE_ORDER))
    variants = list(dict.fromkeys(d.sort_values("is_baseline", ascending=False, kind="stable")["variant"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(4, 0.9 * len(variants) + 2) * len(sizes), 3.6),
                             squeeze=False)
    for ax, size in zip(axes[0], sizes):
        sns.barplot(data=d[d["size"] == size], x="variant", y="median_us", hue="mode", order=variants,
                    hue_order=modes, ax=ax)
        ax.set_title(f"{probe} [{size}]")
        ax.set_xlabel("")
        ax.set_ylabel("median µs")
        ax.tick_params(axis="x", rotation=30)
    return _save(fig, path)


def heatmap(df, runs: list[str], path: Path) -> str | None:
    """µs above the baseline, rows probe/variant (mode, size), columns runs in order."""
    import seaborn as sns
    plt = _plt()
    d = df[~df.is_baseline & df.above_us.notna()].copy()
    if d.empty:
        return None
    d["row"] = d.probe + "/" + d.variant + " · " + d["mode"] + " · " + d["size"]
    t = d.pivot_table(index="row", columns="run", values="above_us", aggfunc="median", sort=False)
    t = t[[r for r in runs if r in t.columns]]
    fig, ax = plt.subplots(figsize=(2.5 + 1.1 * t.shape[1], 1.2 + 0.32 * t.shape[0]))
    with warnings.catch_warnings():  # seaborn's own use of a deprecated matplotlib call
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        sns.heatmap(t, center=0, cmap="RdBu_r", annot=t.size <= 600, fmt=".1f", linewidths=0.5,
                    cbar_kws={"label": "µs above baseline (median − median)"}, ax=ax)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(axis="x", rotation=30)
    return _save(fig, path)


def history(df, probe: str, runs: list[str], path: Path) -> tuple[str, list[dict]]:
    """Medians across runs, one panel per mode, a line per variant/size; change points circled
    and returned as table rows."""
    plt = _plt()
    d = df[(df.probe == probe)]
    modes = [m for m in MODE_ORDER if m in set(d["mode"])] + sorted(set(d["mode"]) - set(MODE_ORDER))
    fig, axes = plt.subplots(1, len(modes), figsize=(max(4.5, 0.7 * len(runs) + 2.5) * len(modes), 3.4),
                             squeeze=False)
    steps = []
    for ax, mode in zip(axes[0], modes):
        for (variant, size), g in d[d["mode"] == mode].groupby(["variant", "size"], sort=False):
            by_run = dict(zip(g.run, g.median_us))
            ys = [float("nan") if by_run.get(r) is None else float(by_run[r]) for r in runs]
            if all(y != y for y in ys):  # never measured (unsupported): nothing to draw
                continue
            ax.plot(range(len(runs)), ys, marker="o", ms=3, label=f"{variant} · {size}")
            for s in changepoints.detect(ys):
                ax.plot([s.index], [ys[s.index]], "o", ms=11, mfc="none", mec="red", mew=1.5)
                ax.axvline(s.index - 0.5, color="red", ls=":", lw=0.8)
                steps.append({"series": f"{variant} · {mode} · {size}", "run": runs[s.index],
                              "before": s.before, "after": s.after, "change": s.change})
        ax.set_xticks(range(len(runs)), runs, rotation=30, ha="right")
        ax.set_ylabel("median µs")
        ax.set_title(f"{probe} · {mode}")
        ax.legend(fontsize=7)
    fig.suptitle("history across runs (red rings: change points)", fontsize=9)
    return _save(fig, path), steps


def fingerprints(runs, labels) -> list[dict]:
    """Rows of the fingerprint table: field, one value per run, and whether they differ."""
    keys = [k for k in KEY_FIELDS if any(k in r.fingerprint for r in runs)]
    keys += sorted({k for r in runs for k in r.fingerprint} - set(keys))
    rows = []
    for k in keys:
        vals = [r.fingerprint.get(k) for r in runs]
        text = ["" if v is None else (v if isinstance(v, str) else json.dumps(v, default=str)) for v in vals]
        rows.append({"field": k, "cells": text, "differ": len(set(text)) > 1})
    return rows


def build(runs, out: str | Path, errors=(), order: str = "date", title: str = "hostbench dashboard") -> Path:
    """Writes out/index.html and out/img/*.png; returns the index path."""
    import jinja2

    out = Path(out)
    img = out / "img"
    img.mkdir(parents=True, exist_ok=True)
    for old in img.glob("*.png"):  # a rebuilt site must not keep stale images
        old.unlink()
    sections = []
    for gpu, group in store.by_gpu(store.sort_runs(runs, order)).items():
        labels = store.unique_labels(group, order)
        df = store.records_frame(group, labels)
        g = _slug(gpu)
        sec = {"gpu": gpu, "runs": [{"label": l, "path": r.path, "datetime": (r.datetime or "")[:19].replace("T", " ")}
                                     for l, r in zip(labels, group)],
               "heatmap": heatmap(df, labels, img / f"{g}-heatmap.png"), "probes": [],
               "fingerprints": fingerprints(group, labels), "labels": labels}
        newest = df[df.run == labels[-1]]
        for probe in dict.fromkeys(df.probe):
            p = {"name": probe, "bars": None, "history": None, "steps": [],
                 "unmeasured": newest[(newest.probe == probe) & newest.median_us.isna()]
                 [["variant", "mode", "size", "status"]].to_dict("records")}
            if newest[(newest.probe == probe)].median_us.notna().any():
                p["bars"] = bars(newest, probe, img / f"{g}-{_slug(probe)}-bars.png")
            if len(group) > 1:
                p["history"], p["steps"] = history(df, probe, labels, img / f"{g}-{_slug(probe)}-history.png")
            sec["probes"].append(p)
        sections.append(sec)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    html = env.get_template("dashboard.html.j2").render(
        title=title, sections=sections, errors=[str(e) for e in errors], order=order,
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    index = out / "index.html"
    index.write_text(html, encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hostbench dashboard", description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", metavar="RUN_OR_DIR", help="run files or folders of them")
    ap.add_argument("--out", required=True, help="folder to write index.html and img/ into")
    ap.add_argument("--order", choices=["date", "version"], default="date",
                    help="order runs by date or by nvidia-cudnn-frontend version (default date)")
    ap.add_argument("--title", default="hostbench dashboard")
    args = ap.parse_args(argv)
    runs, errors = store.load_runs(args.paths, args.order)
    for e in errors:
        print(f"hostbench dashboard: skipped {e}", file=sys.stderr)
    if not runs:
        print("hostbench dashboard: no run could be loaded", file=sys.stderr)
        return 2
    index = build(runs, args.out, errors, args.order, args.title)
    print(f"wrote {index} ({len(runs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
