"""`hostbench waterfall RUN...`: where one eager call's µs go, the waterfall probe's table and chart
(reports/waterfall_report.py renders them)."""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.reports import store
from cudnn_hostbench.reports import waterfall_report as report


def add_parser(command) -> None:
    p = command("waterfall", run, description=report.__doc__)
    p.add_argument("runs", nargs="+", help="run files (run.json, records.jsonl) or folders of them")
    p.add_argument("--out", help="output folder (default: the first run's folder)")


def run(args) -> int:
    runs, errors = store.load_runs(args.runs, order="version")
    if not runs:   # one line: what was wrong with the input
        why = "; ".join(map(str, errors)) or f"no run in {' '.join(args.runs)}"
        print(f"{args.prog}: {why}; nothing written", file=sys.stderr)
        return 2
    for e in errors:   # some inputs read: name the ones skipped
        print(f"{args.prog}: skipped {e}", file=sys.stderr)
    rs = report.rows(runs)
    if not rs:
        print(f"{args.prog}: no measured waterfall records in {' '.join(args.runs)} (run -k waterfall)", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(runs[0].path).parent
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "waterfall.md").write_text(report.markdown(rs), encoding="utf-8")
        report.chart(rs, out / "waterfall.png")
    except OSError as e:
        print(f"{args.prog}: cannot write to {out}: {e}", file=sys.stderr)
        return 2
    print(report.markdown(rs))
    print(f"wrote {out / 'waterfall.md'} and {out / 'waterfall.png'}")
    return 0
