"""`hostbench compare BASE NEW`: verdicts per benchmark between two runs (docs/compare.md)."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from cudnn_hostbench.scripts.args import bad, check_out_file

COMPARE_EPILOG = """the model: the history check's verdict model (docs/history.md#the-model) with a history of
one run, the new run judged against the base. Per row (probe, variant, size, mode), in logs: the
new figure (eager rows with a baseline: the paired ratio to it; --absolute: µs) against the base's,
net of the new run's structure (its machine factor, kernel, block and host terms, each reported as
a finding when it moved); its variance from the two runs' workers and the store prior (between
processes, runs and starts, heavy tails: a Student-t); z, a two-sided p, Benjamini-Hochberg at
--alpha over the rows; each row's MDC, the change caught with 80 % probability.
  SLOWER / FASTER  a discovery (and at least --threshold where given)
  KERNEL CHANGED   a discovery, on other device kernels under a fixed plan rule (both named)
  PICK CHANGED     the same, where the plan is an autotune race: information, never a regression
  FINDING          moved with its variant's other GPU mode, or (cuDNN or frontend alone differ)
                   a block's torch baseline that moved with its block: reported once, as that finding
  SAME             no discovery, and its MDC within its class's practical threshold (graph and
                   device 4 %, heavy graph 8 %, eager 8 %, host 50 %; --threshold sets one for all)
  UNSURE           no discovery, and its MDC past that threshold: the mdc column says how far
  ADDED / REMOVED  the row exists in one run only
  UNMEASURED       a side has no samples (unsupported, failed); the note says why
change: the figure the verdict judged; * marks it net of the new run's structure (the note names
the terms) and raw gives the printed figures' own change.

exit status: 0 compared (no regression, or no --fail-on-regression); 1 with --fail-on-regression:
a SLOWER row, a KERNEL CHANGED row that is slower (unless --allow-kernel-change), or a slower
finding that is a regression (a change of the versions that differ); 2 bad input
(an unreadable or empty run file, figures that cannot be measurements, a bad option, a --markdown
or --json path that cannot be written), runs from different GPUs (unless --allow-other-gpu), or runs with
no measured row in common (unless --allow-disjoint); 130 interrupted. Details: docs/compare.md"""


def add_parser(command) -> None:
    import argparse

    p = command("compare", run, epilog=COMPARE_EPILOG,
                description="`hostbench compare BASE NEW`: per-benchmark verdicts between two runs, "
                            "for people and CI: the history check's verdict model with a history of one run.")
    p.add_argument("base", help="run file (JSON, or partial JSONL) to compare against")
    p.add_argument("new", help="run file to judge")
    p.add_argument("--threshold", default=None,
                   help="minimum change, in percent, for a verdict on every row (default: each row class's practical "
                        "threshold: graph and device 4 %%, heavy graph 8 %%, eager 8 %%, host 50 %%)")
    p.add_argument("--alpha", type=float, default=0.01, help="false discovery rate over the rows (Benjamini-Hochberg)")
    p.add_argument("--min-samples", type=int, default=1,
                   help="fewer samples than this on a side give UNSURE; the model's variance already holds a "
                        "row's rounds and processes (default: 1)")
    p.add_argument("--normalize", action="store_true",
                   help="first divide every sample by the probe's baseline variant in the same run "
                        "(usually torch_mm), so a slower host cancels out")
    p.add_argument("--absolute", action="store_true",
                   help="judge eager rows on absolute µs, not on their ratio to the baseline")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when any row is SLOWER, or KERNEL CHANGED and slower (naming the kernels), or a "
                        "slower finding is a regression")
    p.add_argument("--allow-kernel-change", action="store_true",
                   help="with --fail-on-regression: a slower row on different kernels does not fail")
    p.add_argument("--allow-other-gpu", action="store_true",
                   help="compare runs from different GPUs (refused otherwise: exit 2); two GPU models are "
                        "compared on ratios to each run's own baseline alone, never on µs")
    p.add_argument("--allow-disjoint", action="store_true",
                   help="accept runs with no measured row in common (refused otherwise: exit 2)")
    p.add_argument("--json", metavar="OUT", help="also write the verdicts and findings as JSON (for CI; the shape "
                                                 "of history check --json, with \"pass\"); - for stdout")
    p.add_argument("--markdown", metavar="OUT.md",
                   help="also write the comparison as Markdown to this file (its folder must exist; "
                        "an old file is replaced); - for stdout")
    p.add_argument("--show-same", action="store_true", help="also print the SAME rows (the default prints the rest)")
    p.add_argument("--changes-only", action="store_true", help=argparse.SUPPRESS)   # the default now; kept for scripts
    p.add_argument("--wide", action="store_true",
                   help="notes inline and every column, however wide (default: fit $COLUMNS or the terminal)")


def _counts_lines(summary: str, width: int) -> list[str]:
    """The verdict counts, broken between counts (never inside '48 UNMEASURED')."""
    lines: list[str] = []
    for part in summary.split(", "):
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += ", " + part
        else:
            lines.append(part if not lines else "  " + part)
            if len(lines) > 1:
                lines[-2] += ","
    return lines


def _threshold(args) -> float | None:
    """--threshold as a fraction (None: each class's own); a bad value exits through the parser."""
    try:
        threshold = None if args.threshold is None else float(str(args.threshold).rstrip("%")) / 100
    except ValueError:
        args.parser.error(f"--threshold: not a percentage: {args.threshold!r}")
    if threshold is not None and not threshold >= 0:
        args.parser.error(f"--threshold: must be 0 or more: {args.threshold!r}")
    if not 0 < args.alpha < 1:
        args.parser.error(f"--alpha: must be between 0 and 1: {args.alpha!r}")
    if args.min_samples < 1:
        args.parser.error(f"--min-samples: must be 1 or more: {args.min_samples!r}")
    return threshold


def _out_problem(args) -> str | None:
    """Why --markdown or --json cannot be written (the line for bad()), or None."""
    if args.markdown == "-" and args.json == "-":
        return "--json - and --markdown -: only one of them can go to stdout"
    to_file = args.markdown if args.markdown != "-" else None
    problem = to_file and check_out_file(to_file)
    if to_file and not problem and any(Path(to_file).resolve() == Path(f).resolve() for f in (args.base, args.new)):
        problem = "is one of the run files being compared"
    if problem:
        return f"--markdown {args.markdown}: {problem}"
    problem = args.json and args.json != "-" and check_out_file(args.json)
    if problem:
        return f"--json {args.json}: {problem}"
    return None


def _write_outputs(args, df, markdown: str) -> str | None:
    """Write --markdown and --json to their files; why one could not be written, or None."""
    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    from cudnn_hostbench.reports.judge import compare

    if args.markdown and args.markdown != "-":
        try:
            write_text_atomic(args.markdown, markdown)
        except OSError as e:
            return f"--markdown {args.markdown}: cannot write ({e.strerror or e})"
    if args.json and args.json != "-":
        try:
            write_text_atomic(args.json, compare.to_json(df, not args.allow_kernel_change))
        except OSError as e:
            return f"--json {args.json}: cannot write ({e.strerror or e})"
    return None


def _print_report(args, df, diff: list) -> None:
    """The comparison for people: counts, machines and findings, versions, the table, environment."""
    from cudnn_hostbench.reports import fmt
    from cudnn_hostbench.reports.judge import compare

    width = fmt.term_width()
    wrap_width = 10**6 if args.wide else width
    print("\n".join(_counts_lines(compare.summary(df), wrap_width)))   # the verdict counts first
    for line in compare.machine_line(df).splitlines():   # where the runs ran, then each finding
        print("\n".join(textwrap.wrap(line, wrap_width, subsequent_indent="  ")))
    vers = compare.version_diff(diff)
    if vers:
        print("versions differ:")
        print("\n".join(compare.env_lines(vers, width)))
    shown = df if args.show_same else df[df["verdict"] != "SAME"]
    if len(shown):
        print(compare.text_table(shown, width, wide=args.wide))
    if not args.show_same and (df["verdict"] == "SAME").any():
        print(f"({(df['verdict'] == 'SAME').sum()} SAME row(s) not shown: --show-same lists them)")
    rest = [d for d in diff if d not in vers]
    if rest:
        print("environment differs:")
        print("\n".join(compare.env_lines(rest, width)))


def _print_regressions(args, df) -> int:
    """Each regression, wrapped; 1 when there is one."""
    from cudnn_hostbench.reports import fmt
    from cudnn_hostbench.reports.judge import compare

    width = fmt.term_width()
    failed = compare.regressions(df, kernel_change_fails=not args.allow_kernel_change)
    for line in failed:   # wrapped, never cut: the kernel names are the point
        print("\n".join(textwrap.wrap(f"regression: {line}", 10**6 if args.wide else width,
                                       subsequent_indent="    ", break_long_words=True)))
    return 1 if failed else 0


def run(args) -> int:
    from cudnn_hostbench.bench.measure.runfile import trust
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    from cudnn_hostbench.reports import store
    from cudnn_hostbench.reports.judge import compare

    threshold = _threshold(args)
    # every check before any work or output: bad input exits 2, never 1 (1 means a regression)
    try:
        base, new = load_run(args.base, need_records=True), load_run(args.new, need_records=True)
        trust.check_run(base)
        trust.check_run(new)
    except ValueError as e:   # RunFileError, or figures that cannot be measurements
        return bad(args.prog, str(e))
    problem = _out_problem(args)
    if problem:
        return bad(args.prog, problem)
    if store.gpu(base) != store.gpu(new) and not args.allow_other_gpu:
        return bad(args.prog, f"{args.base} is from {store.gpu(base)}, {args.new} from {store.gpu(new)}: not compared "
                            "(--allow-other-gpu compares them anyway)")
    models = store.gpu(base) != store.gpu(new)
    if models and args.absolute:
        return bad(args.prog, f"--absolute: {args.base} and {args.new} are from two GPU models, whose µs are not "
                            "compared; without it every row is judged on its ratio to its run's own baseline")
    if models:   # two GPU models: ratios to each run's own baseline, graph and device rows too, never µs
        args.normalize = True
    df = compare.compare(base, new, threshold, args.alpha, args.normalize, args.min_samples, args.absolute, ratios_only=models)
    if not compare.judged(df) and not args.allow_disjoint:
        return bad(args.prog, f"{args.base} and {args.new} have no measured row in common ({compare.summary(df)}): "
                            "nothing compared (--allow-disjoint accepts that)")
    for w in base.warnings + new.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if models:
        print(f"warning: different GPU models ({store.gpu(base)} vs {store.gpu(new)}): every row judged on its ratio "
              "to its run's own baseline (--normalize); µs figures are not compared (UNMEASURED)", file=sys.stderr)
    diff = compare.fingerprint_diff(base, new)
    failing = 1 if args.fail_on_regression and compare.regressions(df, not args.allow_kernel_change) else 0
    md = compare.markdown(df, base, new, diff, threshold, args.alpha, args.normalize) if args.markdown else ""
    problem = _write_outputs(args, df, md)
    if problem:
        return bad(args.prog, problem)
    if args.json == "-":
        print(compare.to_json(df, not args.allow_kernel_change))
        return failing
    if args.markdown == "-":   # stdout holds the Markdown alone, as --json - holds the JSON
        print(md)
        return failing
    _print_report(args, df, diff)
    if not args.fail_on_regression:
        return 0
    return _print_regressions(args, df)
