"""Renders the README's figure sections from committed runs, so no figure is typed in by hand.

    python -m scripts.readme_figures          # rewrite the sections between the markers
    python -m scripts.readme_figures --check  # exit 1 if README is out of date
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import records
from reports import table

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REFERENCE = ROOT / "reports" / "reference" / "h200" / "run.json"

# The guide's B200 figures (cuDNN 9.26, 256^3 bf16): quoted from the guide for comparison, not ours.
GUIDE_B200 = {"torch.mm": 7.6, "pinned plan": 8.4, "generic execute": 13.2, "naive wrapper": 21.0}
HEADLINE = [  # (row label, probe, variant)
    ("torch.mm", "execute", "torch_mm"),
    ("pinned plan", "execute", "pinned"),
    ("generic execute", "execute", "generic"),
    ("naive wrapper", "wrapper", "naive"),
    ("fixed wrapper", "wrapper", "fixed"),
    ("ordered tensor_uids, pinned", "execute", "ordered_pinned"),
    ("private raw-pointer floor", "execute", "raw_floor"),
]


def _cell(run, probe, variant, size, mode) -> str:
    r = run.find(probe, variant, size, mode)
    if r is None:
        return "–"
    if not r.ok:
        return r.status.split(":")[0]
    med = r.summary()["median"]
    ratio = f" ({r.ratio['median']:.2f}×)" if r.ratio else ""
    return f"{med:.2f}{ratio}"


def headline(run) -> str:
    lines = [
        "### Headline: 256³ bf16 matmul, µs/call (× the same round's torch.mm)",
        "",
        f"Measured: {table.caption(run)}. Reference column: the guide's B200 figures (cuDNN 9.26).",
        "",
        "| path | eager | graph | device | guide, B200 eager |",
        "|---|---|---|---|---|",
    ]
    for label, probe, variant in HEADLINE:
        cells = [_cell(run, probe, variant, "256", m) for m in ("eager", "graph", "device")]
        lines.append(f"| {label} (`{probe}/{variant}`) | " + " | ".join(cells) + f" | {GUIDE_B200.get(label, '–')} |")
    lines += ["", "Each probe's trap against its fix, first size, eager mode (median µs, × baseline):", ""]
    lines += probe_headlines(run)
    cal = run.fingerprint.get("calibration_us", {})
    floor = run.find("noop", "noop", "-", "eager")
    lines += ["", "Budgets, measured in this run: "
              f"suite wall time {run.fingerprint.get('suite_wall_s', float('nan')):.0f} s; "
              f"eager no-op floor {floor.summary()['median'] if floor and floor.ok else float('nan'):.3f} µs/call; "
              f"CPU-only calibration {cal.get('before', float('nan')):.2f} µs before the profiler phase, "
              f"{cal.get('after', float('nan')):.2f} µs after it."]
    return "\n".join(lines)


def probe_headlines(run) -> list[str]:
    df = table.build_table(run)
    out = ["| probe | size | variant (role) | eager | graph | device | kern/call |", "|---|---|---|---|---|---|---|"]
    for probe, g in df.groupby("probe", sort=False):
        size = g["size"].iloc[0]
        for _, row in g[g["size"] == size].iterrows():
            if row["role"] not in ("trap", "fixed", "baseline", "floor", "private"):
                continue
            def c(m):
                v = row.get(m)
                if v != v or v is None:
                    return row["status"].split(":")[1].strip() if ":" in row["status"] else "–"
                r = row.get(f"{m}_ratio")
                return f"{v:.2f}" + (f" ({r:.2f}×)" if r == r and r is not None else "")
            host = row.get("host")
            eager = f"{host:.2f} ms" if host == host and host is not None else c("eager")
            kpc = row.get("kernels_per_call")
            out.append(f"| {probe} | {size} | {row['variant']} ({row['role']}) | {eager} | {c('graph')} | "
                       f"{c('device')} | {'' if kpc != kpc or kpc is None else f'{kpc:g}'} |")
    return out


def sections() -> dict:
    out = {}
    if REFERENCE.exists():
        out["headline"] = headline(records.load_run(REFERENCE))
    return out


def render(text: str, secs: dict) -> str:
    for name, body in secs.items():
        begin, end = f"<!-- BEGIN:{name} -->", f"<!-- END:{name} -->"
        if begin not in text:
            continue
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    old = README.read_text(encoding="utf-8")
    new = render(old, sections())
    if a.check:
        return 0 if new == old else 1
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
