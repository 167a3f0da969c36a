"""The table: µs per call by mode, kernels per call, ratio to torch.mm with its spread, host overhead.

Rows are probe / variant / size; built from a run's records only.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from bench import records as rec_mod

MODES = ("eager", "graph", "device")


def _fmt(x, digits=2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def _ratio_text(r: dict | None) -> str:
    if not r or not r.get("n"):
        return "–"
    return f"{r['median']:.2f} [{r['q1']:.2f}–{r['q3']:.2f}]"


def build_table(run: rec_mod.Run) -> pd.DataFrame:
    """One row per (probe, variant, size); numeric medians plus display strings."""
    rows = {}
    order = []
    for r in run.records:
        key = (r.probe, r.variant, r.size)
        if key not in rows:
            order.append(key)
            rows[key] = {"probe": r.probe, "variant": r.variant, "size": r.size, "role": r.role,
                         "unit": r.unit, "status": "ok", "label": r.label}
        row = rows[key]
        if r.mode == "host":  # build-time probes: host milliseconds
            row["host"] = r.summary().get("median") if r.ok else None
            row["unit"] = r.unit
        elif r.mode in MODES:
            s = r.summary() if r.ok else {}
            row[r.mode] = s.get("median")
            row[f"{r.mode}_iqr"] = s.get("iqr")
            row[f"{r.mode}_ratio"] = (r.ratio or {}).get("median")
            row[f"{r.mode}_ratio_q1"] = (r.ratio or {}).get("q1")
            row[f"{r.mode}_ratio_q3"] = (r.ratio or {}).get("q3")
            row[f"{r.mode}_ratio_min"] = (r.ratio or {}).get("min")
            row[f"{r.mode}_ratio_max"] = (r.ratio or {}).get("max")
            if r.mode == "device":
                row["kernels_per_call"] = r.kernels_per_call
                row["kernels"] = "; ".join(r.kernel_names[:4])
        if not r.ok and row["status"] == "ok":
            row["status"] = f"{r.mode}: {r.status}"
    df = pd.DataFrame([rows[k] for k in order])
    for col in [*MODES, *(f"{m}_ratio" for m in MODES), "kernels_per_call", "host"]:
        if col not in df:
            df[col] = float("nan")
    df["host_overhead"] = df["eager"] - df["device"]
    return df


def display_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The human table: medians with ratio to the baseline [IQR of round-by-round ratios]."""
    out = pd.DataFrame({"probe": df["probe"], "variant": df["variant"], "size": df["size"], "unit": df["unit"]})
    for m in MODES:
        out[m] = df[m].map(_fmt)
        out[f"{m} ×base"] = [
            _ratio_text({"n": 1, "median": r, "q1": a, "q3": b}) if r == r and r is not None else "–"
            for r, a, b in zip(df[f"{m}_ratio"], df.get(f"{m}_ratio_q1", df[f"{m}_ratio"]),
                               df.get(f"{m}_ratio_q3", df[f"{m}_ratio"]))]
    out["kern/call"] = df["kernels_per_call"].map(lambda x: _fmt(x, 1))
    out["host ovh"] = df["host_overhead"].map(_fmt)
    if df["host"].notna().any():  # build-time rows: ms, or the row's own unit when it says otherwise
        out["host"] = [f"{_fmt(h)} {u}" if h == h and h is not None and u != "ms" else _fmt(h)
                       for h, u in zip(df["host"], df["unit"])]
    out["status"] = df["status"].map(lambda s: "" if s == "ok" else s[:70])
    return out


def render_text(df: pd.DataFrame) -> str:
    return display_frame(df).to_string(index=False)


def render_markdown(df: pd.DataFrame, title: str = "") -> str:
    d = display_frame(df)
    lines = [f"### {title}", ""] if title else []
    lines.append("| " + " | ".join(d.columns) + " |")
    lines.append("|" + "|".join("---" for _ in d.columns) + "|")
    for _, row in d.iterrows():
        lines.append("| " + " | ".join(str(v).replace("|", "/") for v in row) + " |")
    return "\n".join(lines) + "\n"


def caption(run: rec_mod.Run) -> str:
    fp = run.fingerprint
    be = fp.get("cudnn_backend")
    return (f"{fp.get('gpu_name', '?')} · cuDNN {be} · frontend {fp.get('cudnn_frontend', '?')} · "
            f"torch {fp.get('torch', '?')} (CUDA {fp.get('cuda', '?')}) · driver {fp.get('driver', '?')} · "
            f"{fp.get('cpu_model', '?')} · {run.datetime}")


def write_outputs(run: rec_mod.Run, out_dir: str | Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    df = build_table(run)
    csv_path = out_dir / "table.csv"
    md_path = out_dir / "table.md"
    df.to_csv(csv_path, index=False, float_format="%.4g")
    md = (f"Run: `{Path(run.path).name}` — {caption(run)}\n\n"
          "Medians of per-round µs/call (µs/op where the unit says so; build-time rows: host ms in "
          "`host`); `×base` is the median of round-by-round ratios to the probe's baseline (torch.mm "
          "unless the probe names another: autotune's is the heuristic's pick, interleave's torch_only) "
          "of the same size and mode, [IQR]. host ovh = eager − device.\n\n" + render_markdown(df))
    md_path.write_text(md, encoding="utf-8")
    return csv_path, md_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hostbench table", description=__doc__)
    ap.add_argument("run", help="run file (run.json, a --benchmark-json file, or a partial records.jsonl)")
    ap.add_argument("--out", help="also write table.csv and table.md into this folder")
    ap.add_argument("--probe", help="only rows of this probe")
    ap.add_argument("--markdown", action="store_true", help="print Markdown instead of text")
    a = ap.parse_args(argv)
    try:
        run = rec_mod.load_run(a.run)
    except rec_mod.RunFileError as e:
        print(f"hostbench table: {e}", file=sys.stderr)
        return 2
    df = build_table(run)
    if a.probe:
        df = df[df["probe"] == a.probe]
    print(caption(run))
    print(render_markdown(df) if a.markdown else render_text(df))
    if a.out:
        for p in write_outputs(run, a.out):
            print(f"wrote {p}")
    return 0
