"""Renders the waterfall probe's records: a table of each path's parts and a stacked bar chart, one
bar per (path, frontend version) when several runs are given (a version matrix). Reads records only.

    hostbench waterfall RUN_OR_DIR... [--out DIR]

Writes DIR/waterfall.md and DIR/waterfall.png (default: beside the first run); bad input prints one
line naming it and exits 2.
"""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.bench.measure.core.waterfall import PARTS, TOLERANCE
from cudnn_hostbench.reports import fmt, store

PROBE = "waterfall"
PATHS = ("torch_mm", "generic", "pinned", "ordered", "naive_wrapper", "fixed_wrapper")
PART_LABELS = {"integration": "integration Python", "frontend": "frontend Python",
               "engine": "engine host (raw-pointer floor)", "gpu_exposed": "GPU not hidden"}
COLORS = {"integration": "#d62728", "frontend": "#ff7f0e", "engine": "#1f77b4", "gpu_exposed": "#2ca02c"}


def rows(runs: list) -> list[dict]:
    """One row per (run, path) with the median of each figure; paths that were not measured are
    left out (their status is in the run's table)."""
    out = []
    labels = store.unique_labels(runs, order="version") if len(runs) > 1 else [""]
    for run, lab in zip(runs, labels):
        for path in PATHS:
            med = {}
            for fig in ("eager", "host", "gpu", *PARTS):
                r = next((x for x in run.records if x.probe == PROBE and x.variant == f"{path}.{fig}" and x.ok), None)
                if r is None:
                    break
                med[fig] = r.summary().median
            else:
                total = sum(med[p] for p in PARTS)
                out.append({"run": lab, "fe_version": store.frontend_version(run), "path": path, **med,
                            "sum": total, "share": total / med["eager"] if med["eager"] else float("nan")})
    return out


def markdown(rows: list[dict]) -> str:
    head = ["run", "path", "eager", *[PART_LABELS[p] for p in PARTS], "sum of parts", "sum / eager", "GPU (replay)"]
    body = []
    for r in rows:
        ok = abs(r["share"] - 1) <= TOLERANCE
        body.append([r["run"] or f"frontend {r['fe_version']}", r["path"], fmt.num(r["eager"]), *[fmt.num(r[p]) for p in PARTS],
                     fmt.num(r["sum"]), f"{r['share'] * 100:.1f} %" + ("" if ok else " ⚑ outside 10 %"),
                     fmt.num(r["gpu"])])
    return ("µs per call at 256³ bf16 matmul; parts from the same interleaved rounds "
            "(bench/measure/core/waterfall.py).\n\n" + fmt.md_table(head, body) + "\n")


def chart(rows: list[dict], path: Path) -> Path:
    import matplotlib.pyplot as plt
    fig = figure(rows)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def figure(rows: list[dict]):
    """Stacked bars of the parts (seaborn.objects), the measured eager figure as a black tick;
    the legend sits right of the plot, where it covers no bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns
    import seaborn.objects as so
    sns.set_theme(style="whitegrid", context="paper")
    names = [f"{r['path']}" + (f" [{r['run']}]" if r["run"] else "") for r in rows]
    long = pd.DataFrame([{"path": n, "part": PART_LABELS[p], "µs": max(0.0, r[p])}
                         for n, r in zip(names, rows) for p in PARTS])
    fig = plt.figure(figsize=(10, 0.42 * len(rows) + 1.6))
    (so.Plot(long, x="µs", y="path", color="part")
     .add(so.Bar(width=0.7, edgewidth=0), so.Stack())
     .scale(color=so.Nominal({PART_LABELS[p]: COLORS[p] for p in PARTS}, order=[PART_LABELS[p] for p in PARTS]),
            y=so.Nominal(order=names))
     .label(x="µs per call (black tick: the measured eager figure)", y="", color="",
            title="Where one eager call's µs go (256³ bf16 matmul)")
     .on(fig).plot())
    ax = fig.axes[0]
    ax.scatter([r["eager"] for r in rows], range(len(rows)), marker="|", s=300, color="black", zorder=3)
    return fig


if __name__ == "__main__":   # a report imports no scripts (tests/test_layers.py): the command is the way in
    print("python -m cudnn_hostbench.reports.waterfall_report: run `hostbench waterfall` instead", file=sys.stderr)
    sys.exit(2)
