"""`hostbench table RUN`: the table of a saved run, checked before the first line of output."""
from __future__ import annotations

import sys
import textwrap

from cudnn_hostbench.bench.measure.runfile.files import ready_dir
from cudnn_hostbench.scripts.args import bad, check_out_dir


def add_parser(command) -> None:
    p = command("table", run,
                description="The table: µs per call by mode, kernels per call, ratio to the probe's baseline "
                            "with its spread, host overhead. Rows are probe / variant / size; built from a "
                            "run's records only.")
    p.add_argument("run", nargs="?",
                   help="run file (run.json, run.json.gz, a --benchmark-json file, or a partial records.jsonl)")
    p.add_argument("--gpu", metavar="NAME",
                   help="instead of RUN, the committed reference run of this GPU (a folder of reports/reference: "
                        f"{', '.join(reference_gpus()) or 'none in this copy'})")
    p.add_argument("--out", metavar="DIR",
                   help="also write table.csv and table.md (whole run) into this folder; made if missing, "
                        "files of those names replaced")
    p.add_argument("--probe", help="only rows of this probe")
    p.add_argument("--markdown", action="store_true", help="print Markdown (as in table.md) instead of text")
    p.add_argument("--wide", action="store_true",
                   help="every column (the ratio IQRs, the worker range), whole statuses and the run summary in full "
                        "(every block, every discard reason), however wide (default: fit $COLUMNS or the terminal, "
                        "the summary in three lines)")


def reference_gpus() -> list[str]:
    """The GPUs with a committed reference run (folder names under reports/reference)."""
    from cudnn_hostbench.scripts.run import reference_runs
    return [p.parent.name for p in reference_runs()]


def _which_run(args) -> str | None:
    """Sets args.run from --gpu; the one-line problem when RUN and --gpu are both given, or neither, or
    the GPU has no reference run."""
    if (args.run is None) == (args.gpu is None):
        return "name a run file, or a GPU's reference run with --gpu NAME (not both)"
    if args.gpu is not None:
        from cudnn_hostbench.scripts.run import reference_problem, reference_runs
        problem = reference_problem(args.gpu)
        if problem:
            return problem
        args.run = str(reference_runs(args.gpu)[0])
    return None


def run(args) -> int:
    from cudnn_hostbench.bench.measure.runfile import records, trust
    # every check before the first line of output, so bad input never leaves half a result
    problem = _which_run(args)
    if problem:
        return bad(args.prog, problem)
    try:
        run = records.load_run(args.run, need_records=True)
        trust.check_run(run)
    except ValueError as e:   # RunFileError, or figures that cannot be measurements
        return bad(args.prog, str(e))
    probes = list(dict.fromkeys(r.probe for r in run.records))
    if args.probe is not None and args.probe not in probes:
        return bad(args.prog, f"--probe {args.probe!r}: no such probe in {args.run} (it has: {', '.join(probes)})")
    names = ("table.csv", "table.md")
    problem = args.out and (check_out_dir(args.out, names) or ready_dir(args.out, names))   # made and written to, or why not
    if problem:
        return bad(args.prog, f"--out {args.out}: {problem}")
    for w in run.warnings:
        print(f"warning: {w}", file=sys.stderr)
    # pandas (the table) only now: bad input is refused without it
    from cudnn_hostbench.reports import fmt, run_summary, table
    df = table.build_table(run)
    if args.probe is not None:
        df = df[df["probe"] == args.probe]
    # the table is rendered first, the run's lines above it after: each module is entered once
    if args.markdown:
        print(table.markdown_document(run, df), end="")
    elif args.wide:
        body = table.render_text(df, wide=True)
        time = run_summary.time_text(run)
        print("\n".join([run_summary.caption(run), run_summary.summary_line(run), *([time] if time else []), body]))
    else:
        width = fmt.term_width()
        body = table.render_text(df, width)
        print("\n".join(textwrap.wrap(run_summary.caption(run), width, subsequent_indent="  ", break_long_words=True)))
        print("\n".join(run_summary.summary_lines(run, width)))   # three lines at most; --wide has it whole
        print(body)
    if args.out:
        try:
            for p in table.write_outputs(run, args.out):
                print(f"wrote {p}")
        except OSError as e:
            return bad(args.prog, f"--out {args.out}: cannot write ({e.strerror or e})")
    return 0
