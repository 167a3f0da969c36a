"""`hostbench engines RUN`: the engine probe's plans per size (reports/engines.py renders them)."""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.files import ready_dir
from cudnn_hostbench.reports import engines as report


def add_parser(command) -> None:
    p = command("engines", run, description=report.__doc__)
    p.add_argument("run", help="a run file with the engine probe's rows")
    p.add_argument("--out", help="folder for engines.md (default: print only)")


def run(args) -> int:
    try:
        loaded = records.load_run(args.run)
    except records.RunFileError as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 2
    if not report.plans(loaded):
        print(f"{args.prog}: no engine probe rows in {args.run} (run -k engine)", file=sys.stderr)
        return 2
    problem = args.out and ready_dir(args.out, ["engines.md"])   # before the report: a bad --out prints nothing
    if problem:
        print(f"{args.prog}: --out {args.out}: {problem}", file=sys.stderr)
        return 2
    md = report.markdown(loaded)
    print(md)
    if args.out:
        try:
            (Path(args.out) / "engines.md").write_text(md, encoding="utf-8")
        except OSError as e:
            print(f"{args.prog}: cannot write to {args.out}: {e}", file=sys.stderr)
            return 2
    return 0
