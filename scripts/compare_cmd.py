"""`hostbench compare BASE NEW`: verdicts per benchmark between two runs (docs/compare.md)."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from cudnn_hostbench.scripts.args import bad, check_out_file

COMPARE_EPILOG = """verdicts, per (probe, variant, size, mode), on worker-level values (eager rows with a
baseline: each worker's median paired ratio to it; other rows: each worker's median):
  SLOWER / FASTER  the median over workers moved past the row's noise floor (at least
                   --threshold, and 1.5x the between-worker spread of either run) and the
                   workers agree (complete separation, or Mann-Whitney U p < --alpha)
  KERNEL CHANGED   it would be SLOWER / FASTER, but the device kernels differ between the runs
                   under a fixed plan rule
  PICK CHANGED     the same, where the plan is an autotune race: information, never a regression
  UNSURE           past the noise floor but the workers overlap; an eager row of a host-unstable
                   run, timed in another host state (fast vs slow), or in the slow host state;
                   a baseline's absolute eager µs (judged only with --absolute); a side of one
                   worker process
  SAME             within the noise floor ("noise-limited: detects >= N %" when it is wider)
  ADDED / REMOVED  the row exists in one run only
  UNMEASURED       a side has no samples (unsupported, failed); the note says why

exit status: 0 compared (no regression, or no --fail-on-regression); 1 with --fail-on-regression:
a SLOWER row, or a KERNEL CHANGED row that is slower (unless --allow-kernel-change); 2 bad input
(an unreadable or empty run file, figures that cannot be measurements, a bad option, a --markdown
path that cannot be written), runs from different GPUs (unless --allow-other-gpu), or runs with
no measured row in common (unless --allow-disjoint); 130 interrupted. Details: docs/compare.md"""


def add_parser(command) -> None:
    import argparse

    p = command("compare", run, epilog=COMPARE_EPILOG,
                description="`hostbench compare BASE NEW`: per-benchmark verdicts between two runs, "
                            "for people and CI.")
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
                   help="exit 1 when any row is SLOWER, or KERNEL CHANGED and slower (naming the kernels)")
    p.add_argument("--allow-kernel-change", action="store_true",
                   help="with --fail-on-regression: a slower row on different kernels does not fail")
    p.add_argument("--allow-other-gpu", action="store_true",
                   help="compare runs from different GPUs (refused otherwise: exit 2)")
    p.add_argument("--allow-disjoint", action="store_true",
                   help="accept runs with no measured row in common (refused otherwise: exit 2)")
    p.add_argument("--json", metavar="OUT", help="also write the verdicts and findings as JSON (for CI); - for stdout")
    p.add_argument("--markdown", metavar="OUT.md",
                   help="also write the comparison as Markdown to this file (its folder must exist; "
                        "an old file is replaced)")
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
    problem = a.markdown and check_out_file(a.markdown)
    if a.markdown and not problem and any(Path(a.markdown).resolve() == Path(f).resolve() for f in (a.base, a.new)):
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
    if a.markdown:
        try:
            write_text_atomic(a.markdown, compare.markdown(df, base, new, diff, threshold, a.alpha, a.normalize))
        except OSError as e:
            return bad(a.prog, f"--markdown {a.markdown}: cannot write ({e.strerror or e})")
    if a.json:
        text = compare.to_json(df)
        if a.json == "-":
            print(text)
            return 1 if a.fail_on_regression and compare.regressions(df, not a.allow_kernel_change) else 0
        try:
            write_text_atomic(a.json, text)
        except OSError as e:
            return bad(a.prog, f"--json {a.json}: cannot write ({e.strerror or e})")
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
