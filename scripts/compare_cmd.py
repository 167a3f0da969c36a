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
                   help="compare runs from different GPUs (refused otherwise: exit 2)")
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


def run(a) -> int:
    from cudnn_hostbench.bench.measure import trust
    from cudnn_hostbench.bench.measure.files import write_text_atomic
    from cudnn_hostbench.bench.measure.records import load_run
    from cudnn_hostbench.reports import compare, fmt, store

    try:
        threshold = None if a.threshold is None else float(str(a.threshold).rstrip("%")) / 100
    except ValueError:
        a.parser.error(f"--threshold: not a percentage: {a.threshold!r}")
    if threshold is not None and not threshold >= 0:
        a.parser.error(f"--threshold: must be 0 or more: {a.threshold!r}")
    if not 0 < a.alpha < 1:
        a.parser.error(f"--alpha: must be between 0 and 1: {a.alpha!r}")
    if a.min_samples < 1:
        a.parser.error(f"--min-samples: must be 1 or more: {a.min_samples!r}")
    # every check before any work or output: bad input exits 2, never 1 (1 means a regression)
    try:
        base, new = load_run(a.base, need_records=True), load_run(a.new, need_records=True)
        trust.check_run(base)
        trust.check_run(new)
    except ValueError as e:   # RunFileError, or figures that cannot be measurements
        return bad(a.prog, str(e))
    if a.markdown == "-" and a.json == "-":
        return bad(a.prog, "--json - and --markdown -: only one of them can go to stdout")
    to_file = a.markdown if a.markdown != "-" else None
    problem = to_file and check_out_file(to_file)
    if to_file and not problem and any(Path(to_file).resolve() == Path(f).resolve() for f in (a.base, a.new)):
        problem = "is one of the run files being compared"
    if problem:
        return bad(a.prog, f"--markdown {a.markdown}: {problem}")
    problem = a.json and a.json != "-" and check_out_file(a.json)
    if problem:
        return bad(a.prog, f"--json {a.json}: {problem}")
    if store.gpu(base) != store.gpu(new) and not a.allow_other_gpu:
        return bad(a.prog, f"{a.base} is from {store.gpu(base)}, {a.new} from {store.gpu(new)}: not compared "
                            "(--allow-other-gpu compares them anyway)")
    df = compare.compare(base, new, threshold, a.alpha, a.normalize, a.min_samples, a.absolute)
    if not compare.judged(df) and not a.allow_disjoint:
        return bad(a.prog, f"{a.base} and {a.new} have no measured row in common ({compare.summary(df)}): "
                            "nothing compared (--allow-disjoint accepts that)")
    for w in base.warnings + new.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if store.gpu(base) != store.gpu(new):
        print(f"warning: different GPUs ({store.gpu(base)} vs {store.gpu(new)})", file=sys.stderr)
    diff = compare.fingerprint_diff(base, new)
    failing = 1 if a.fail_on_regression and compare.regressions(df, not a.allow_kernel_change) else 0
    md = compare.markdown(df, base, new, diff, threshold, a.alpha, a.normalize) if a.markdown else ""
    if a.markdown and a.markdown != "-":
        try:
            write_text_atomic(a.markdown, md)
        except OSError as e:
            return bad(a.prog, f"--markdown {a.markdown}: cannot write ({e.strerror or e})")
    if a.json:
        text = compare.to_json(df, not a.allow_kernel_change)
        if a.json == "-":
            print(text)
            return failing
        try:
            write_text_atomic(a.json, text)
        except OSError as e:
            return bad(a.prog, f"--json {a.json}: cannot write ({e.strerror or e})")
    if a.markdown == "-":   # stdout holds the Markdown alone, as --json - holds the JSON
        print(md)
        return failing
    width = fmt.term_width()
    print("\n".join(_counts_lines(compare.summary(df), 10**6 if a.wide else width)))   # the verdict counts first
    for line in compare.machine_line(df).splitlines():   # where the runs ran, then each finding
        print("\n".join(textwrap.wrap(line, 10**6 if a.wide else width, subsequent_indent="  ")))
    vers = compare.version_diff(diff)
    if vers:
        print("versions differ:")
        print("\n".join(compare.env_lines(vers, width)))
    shown = df if a.show_same else df[df["verdict"] != "SAME"]
    if len(shown):
        print(compare.text_table(shown, width, wide=a.wide))
    if not a.show_same and (df["verdict"] == "SAME").any():
        print(f"({(df['verdict'] == 'SAME').sum()} SAME row(s) not shown: --show-same lists them)")
    rest = [d for d in diff if d not in vers]
    if rest:
        print("environment differs:")
        print("\n".join(compare.env_lines(rest, width)))
    if not a.fail_on_regression:
        return 0
    failed = compare.regressions(df, kernel_change_fails=not a.allow_kernel_change)
    for line in failed:   # wrapped, never cut: the kernel names are the point
        print("\n".join(textwrap.wrap(f"regression: {line}", 10**6 if a.wide else width,
                                       subsequent_indent="    ", break_long_words=True)))
    return 1 if failed else 0
