"""`hostbench verdict-check`: the verdict model validated out of sample on history exports
(reports/judge/validate.py), and the H200 store prior it ships with (reports/verdict/calibrate.py).

    hostbench verdict-check [EXPORT ...] [--runs N] [--jobs N] [--json OUT]
    hostbench verdict-check --write-prior | --check-prior
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from cudnn_hostbench.scripts.cli import alias, exit_with


def add_parser(command) -> None:
    p = command("verdict-check", run, description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("exports", nargs="*", type=Path, help="history exports (default: the committed H200 "
                   "history)")
    p.add_argument("--runs", type=int, default=None, help="judge only the first N folds (a quick look)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    p.add_argument("--jobs", type=int, default=None, help="processes that judge the folds (default: the CPUs, "
                   "at most 4); the figures do not depend on it")
    p.add_argument("--write-prior", action="store_true", help="write the H200 store prior from the committed export")
    p.add_argument("--check-prior", action="store_true", help="exit 1 if the shipped prior differs from the export's")


def _bad_input(args, paths: list) -> bool:
    """Say (one line) and True for a --runs or --jobs under 1, or an export that is missing."""
    for opt, value in (("--runs", args.runs), ("--jobs", args.jobs)):
        if value is not None and value < 1:
            print(f"hostbench verdict-check: {opt} must be at least 1", file=sys.stderr)
            return True
    for path in paths:
        if not path.is_file():
            print(f"hostbench verdict-check: {path}: no such export", file=sys.stderr)
            return True
    return False


def _prior(args, paths: list) -> int:
    """--write-prior / --check-prior: the store prior fitted from the exports, written or compared."""
    from cudnn_hostbench.reports.judge import validate
    from cudnn_hostbench.reports.verdict import calibrate, model
    try:
        runs, figs = validate.load(paths)
    except (OSError, ValueError) as e:
        print(f"hostbench verdict-check: {e}", file=sys.stderr)
        return 2
    text = calibrate.to_json(calibrate.fit(runs, figs), runs[-1]["gpu"], len(runs),
                             len({model.start_of(r) for r in runs}))
    if args.check_prior:
        same = calibrate.PRIOR.is_file() and calibrate.PRIOR.read_text() == text
        print(f"{calibrate.PRIOR}: {'matches' if same else 'differs from'} the export")
        return 0 if same else 1
    calibrate.PRIOR.write_text(text)
    print(f"wrote {calibrate.PRIOR}")
    return 0


def _write_json(path, res) -> None:
    """--json: the validation's figures."""
    from cudnn_hostbench.reports.judge import validate
    path.write_text(json.dumps({"runs": res.runs, "false_runs": res.false_runs, "false_rows": res.false_rows,
                                "bound": validate.bound(res.false_runs, res.runs),
                                "single": {" ".join(map(str, k)): v for k, v in res.single.items()},
                                "honesty": {str(k): v for k, v in res.honesty.items()},
                                "structured": dict(res.structured), "two_starts": dict(res.two),
                                "mdc": {" ".join(k): statistics.median(v) for k, v in res.mdc.items()}}, indent=1))


def run(args) -> int:
    from cudnn_hostbench.reports.judge import validate
    paths = args.exports or [validate.EXPORT]
    if _bad_input(args, paths):
        return 2
    if args.write_prior or args.check_prior:
        return _prior(args, paths)
    from cudnn_hostbench.bench.measure.core.progress import Counter
    counter: list = []

    def progress(index, total, judged):   # one line on a terminal, rewritten as the folds are judged
        if not counter:
            counter.append(Counter("verdict-check: judging run", total))
        counter[0](index + 1)
    try:
        res = validate.run(paths, args.runs, progress, jobs=args.jobs)
    except (OSError, ValueError) as e:
        if counter:
            counter[0].done()
        print(f"hostbench verdict-check: {e}", file=sys.stderr)
        return 2
    if counter:
        counter[0].done()
    print(validate.report(res))
    if args.json:
        _write_json(args.json, res)
    return 0


main = alias("verdict-check")

if __name__ == "__main__":
    exit_with(main())
