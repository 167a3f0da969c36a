"""`hostbench ab-check`: the paired verdict validated on recorded A/A jobs.

    hostbench ab-check reports/reference/h100/ab/aa reports/reference/h200/ab/aa

Reads each job's pairs.json.gz (or the file itself), resamples its pairs into null jobs (each
pair's sign flipped at random; with --pairs-per-job N, N of its pairs drawn without replacement:
a long A/A job stands in for the many short jobs an adaptive question stops at, 3-6 pairs, which a
short job's own 2^(n-1) sign patterns cannot give 60 of) and plants changes of known size
(reports/judge/validate_ab.py). Prints the false-job rate with its 95 % bound, the share caught
at 1.2 × and 0.5 × the printed MDC, and the median MDC per class. With --check, exits 1 when the
bound is over 5 %, 1.2 × MDC catches under 80 % (any planting), or 0.5 × MDC planted into one row
catches over 10 % (the targets of issue 66). A row's MDC is the change it catches alone; a change
planted into a whole block or variant is easier to catch (Benjamini-Hochberg's level grows with
the discoveries), so 0.5 × there is printed, not held to 10 %.
"""
from __future__ import annotations

import sys
from pathlib import Path

MAX_FALSE_BOUND, MIN_POWER, MAX_HALF = 0.05, 0.80, 0.10


def add_parser(command) -> None:
    ap = command("ab-check", run, description=__doc__)
    ap.add_argument("jobs", nargs="+", metavar="JOB", help="A/A job folders or their pairs.json.gz")
    ap.add_argument("--resamples", type=int, default=60, help="null jobs per recorded comparison")
    ap.add_argument("--pairs-per-job", type=int, default=None, metavar="N",
                    help="each null job draws N of the recorded pairs (default: all of them)")
    ap.add_argument("--seed", type=int, default=None, help="the resampling's seed (default: fixed)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")


def run(args) -> int:
    from cudnn_hostbench.reports.judge import validate_ab as v
    if args.resamples < 1:
        print(f"{args.prog}: --resamples {args.resamples}: at least 1", file=sys.stderr)
        return 2
    if args.pairs_per_job is not None and args.pairs_per_job < v.paired.MIN_PAIRS:
        print(f"{args.prog}: --pairs-per-job {args.pairs_per_job}: at least {v.paired.MIN_PAIRS} (a verdict's least)",
              file=sys.stderr)
        return 2
    comparisons = []
    try:
        for job in args.jobs:
            comparisons += v.load_pairs(Path(job))
    except v.PairsFileError as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 2
    res = v.run(comparisons, args.resamples, v.SEED if args.seed is None else args.seed, args.pairs_per_job)
    if not res.jobs:
        print(f"{args.prog}: {' '.join(args.jobs)}: no comparison with a row of {v.paired.MIN_PAIRS} pairs to resample",
              file=sys.stderr)
        return 2
    print(v.report(res))
    if not args.check:
        return 0
    missed = []
    if v.bound(res.false_jobs, res.jobs) > MAX_FALSE_BOUND:
        missed.append(f"false-job bound over {MAX_FALSE_BOUND:.0%}")
    for kind in ("row", "block", "kernel"):
        hi, lo = res.rate(kind, 1.2), res.rate(kind, 0.5)
        if hi is not None and hi < MIN_POWER:
            missed.append(f"{kind} at 1.2× MDC caught under {MIN_POWER:.0%}")
        if kind == "row" and lo is not None and lo > MAX_HALF:
            missed.append(f"{kind} at 0.5× MDC caught over {MAX_HALF:.0%}")
    if missed:
        print("missed: " + "; ".join(missed))
    return 1 if missed else 0
