"""`hostbench crossover-plot CROSSOVER.json...`: a crossover records file summarized and plotted again
(reports/crossover_report.py renders it; `hostbench crossover` sweeps)."""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.reports import crossover_report as report


def add_parser(command) -> None:
    p = command("crossover-plot", run, description=report.__doc__)
    p.add_argument("files", nargs="+", metavar="CROSSOVER.json", help="records files `hostbench crossover` wrote")
    p.add_argument("--out", help="folder for the plots (default: beside each file)")


def run(args) -> int:
    for f in args.files:
        try:
            doc = report.load(Path(f))
            out = Path(args.out) if args.out else Path(f).parent
            out.mkdir(parents=True, exist_ok=True)
            print(report.summary(doc))
            print(f"wrote {report.plot(doc, out)}")
        except ValueError as e:
            print(f"{args.prog}: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            print(f"{args.prog}: cannot write the plot for {f}: {e}", file=sys.stderr)
            return 2
    return 0
