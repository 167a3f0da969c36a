"""Renders a crossover records file (scripts/crossover.py): per trap, the share of the step's GPU
time the trap adds at each size, and the size from which it stays under the threshold; one plot
per GPU. Reads the records file only.

    hostbench crossover-plot CROSSOVER.json... [--out DIR]
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def gpu(doc: dict) -> str:
    return str((doc.get("fingerprint") or {}).get("gpu_name") or "unknown GPU")


def summary(doc: dict) -> str:
    th = doc.get("threshold", 0.05)
    lines = [f"Crossover on {gpu(doc)}: the size from which a trap's extra eager µs/call stays under "
             f"{th:.0%} of the step's GPU time"]
    for trap, e in doc.get("traps", {}).items():
        ok = [p for p in e.get("points", []) if p.get("status") == "ok"]
        where = (f"from {e['crossover']} ({e.get('size_means', 'size')})" if e.get("crossover")
                 else f"not reached up to {ok[-1]['size']}" if ok else "nothing measured")
        lines.append(f"- {trap} ({e['trap']} vs {e['fix']}): {where}"
                     + (f"; {e['truncated']}" if e.get("truncated") else "")
                     + "".join(f"; {p['size']}: {p['status']}" for p in e.get("points", []) if p.get("status") != "ok"))
    return "\n".join(lines)


def _x(size: str) -> float:
    """A number to place a size on the x axis: the cube side or the token count."""
    m = re.match(r"t?(\d+)", size)
    return float(m.group(1)) if m else float("nan")


def plot(doc: dict, out: Path) -> Path:
    """Per trap, its share of the step's GPU time by size (seaborn lines, log-log), matmul sizes
    left and token counts right; legends under the panels, where they cover no line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns
    from matplotlib import ticker
    sns.set_theme(style="whitegrid", context="paper")
    th = doc.get("threshold", 0.05)
    rows = []
    for trap, e in doc.get("traps", {}).items():
        label = f"{trap}" + (f" (from {e['crossover']})" if e.get("crossover") else " (not reached)")
        for p in e.get("points", []):
            if p.get("status") == "ok":
                rows.append({"panel": "tokens" if e.get("size_means") == "tokens" else "matmul M=N=K",
                             "trap": label, "x": _x(p["size"]), "share %": max(p["share"] * 100, 1e-3)})
    df = pd.DataFrame(rows, columns=["panel", "trap", "x", "share %"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for ax, title in zip(axes, ("matmul M=N=K", "tokens")):
        sub = df[df.panel == title]
        if len(sub):
            sns.lineplot(data=sub, x="x", y="share %", hue="trap", marker="o", ax=ax)
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
        ax.axhline(th * 100, color="black", linestyle="--", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))   # 4096, not 2^12
        ax.set_yscale("log")
        ax.set_xlabel(title)
    axes[0].set_ylabel("trap's extra eager µs, % of the step's GPU time")
    fig.suptitle(f"Where each trap stops mattering: {gpu(doc)} (dashed: {th:.0%})")
    fig.tight_layout()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", gpu(doc)).strip("-") or "gpu"
    path = Path(out) / f"crossover-{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def load(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable crossover file ({type(e).__name__}: {e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "crossover" or not isinstance(doc.get("traps"), dict):
        raise ValueError(f"{path}: not a crossover records file (no kind 'crossover' / traps)")
    return doc


if __name__ == "__main__":   # a report imports no scripts (tests/test_layers.py): the command is the way in
    print("python -m cudnn_hostbench.reports.crossover_report: run `hostbench crossover-plot` instead", file=sys.stderr)
    sys.exit(2)
