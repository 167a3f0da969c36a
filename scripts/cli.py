"""`hostbench` command: every subcommand and its options are declared here (argparse subparsers);
each handler checks the input, calls the library (reports.*, bench.audit, scripts.run) with paths,
and prints.

Bad input exits 2 with one line on stderr, before any output or file; 1 is left to the commands
(a regression, a failed audit, a failed probe).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent   # where results/ and reports/reference/ are
COMMANDS = {
    "run": "run the probes on this GPU (or render the reference run without one)",
    "table": "render the table of a saved run (JSON or partial JSONL)",
    "compare": "compare two runs: verdicts per benchmark, exit 1 on regression",
    "dashboard": "write a static HTML dashboard over runs",
    "history": "the history store: ingest runs, check a run against its history, export",
    "audit": "audit your own integration step for known traps",
    "reprice": "price a saved audit again from another run file (no GPU needed)",
    "node": "the GPUs of this node: cores per GPU, the slow-GPU report, the parallel matrix's checks",
}
SYNOPSIS = "usage: hostbench [--version] {" + ",".join(COMMANDS) + "} ..."
HINT = "run `hostbench <cmd> --help` for a command's options"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's default in its help (unless it is None or a flag's False); descriptions and
    epilogs keep their line breaks."""

    def _get_help_string(self, action):  # the hook ArgumentDefaultsHelpFormatter uses
        text = action.help or ""
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS) \
                and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


class ArgParser(argparse.ArgumentParser):
    """argparse with defaults in --help and a one-line error (exit 2) instead of usage + error."""

    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kw)

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except OSError:   # a name the OS refuses to look up (too long): it does not exist
        return False


def _first_existing(p: Path) -> Path:
    while not _exists(p) and p != p.parent:
        p = p.parent
    return p


def name_problem(path: str) -> str | None:
    """Why the OS would refuse the name `path` itself (a part over its name limit, a NUL), or None."""
    if "\0" in str(path):
        return "the name holds a NUL byte"
    up = _first_existing(Path(path).absolute())
    try:
        limit = os.pathconf(up if up.is_dir() else up.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    for part in Path(path).parts:
        if len(os.fsencode(part)) > limit:
            return f"a name in it is {len(os.fsencode(part))} bytes, over this file system's limit of {limit}"
    return None


def check_out_dir(path: str, names=()) -> str | None:
    """Why files `names` cannot be written into folder `path` (made if missing), or None."""
    bad = name_problem(path)
    if bad:
        return bad
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            return "exists and is not a folder"
        clash = [n for n in names if (p / n).is_dir()]
        if clash:
            return f"{p / clash[0]} is a folder"
    else:
        up = _first_existing(p.parent)
        if not up.is_dir():
            return f"{up} is not a folder"
        p = up
    return None if os.access(p, os.W_OK) else f"cannot write in {p}"


def check_out_file(path: str) -> str | None:
    """Why file `path` cannot be written (its folder must exist; an old file is replaced), or None."""
    bad = name_problem(path)
    if bad:
        return bad
    p = Path(path)
    if p.is_dir():
        return "is a folder, not a file"
    folder = p.parent
    if not folder.exists():
        return f"folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        return "cannot write it"
    return None


def version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as _v
        return _v("cudnn-hostbench")
    except PackageNotFoundError:  # a plain checkout, not installed: read pyproject.toml
        text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
        m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        return m.group(1) if m else "unknown"


def usage() -> str:
    lines = [SYNOPSIS, "", "commands:"]
    lines += [f"  {name:10s} {text}" for name, text in COMMANDS.items()]
    lines += ["", "exit status: 0 ok; 1 a failure the command reports (compare: a regression with",
              "--fail-on-regression); 2 bad input", "", HINT]
    return "\n".join(lines)


def _bad(prog: str, msg: str) -> int:
    print(f"{prog}: {msg}", file=sys.stderr)
    return 2


# -- the commands ---------------------------------------------------------------------------------

def cmd_run(a, rest: list[str]) -> int:
    from cudnn_hostbench.scripts import node_run, run
    if a.all_gpus or a.gpus:   # every GPU of the node at once (scripts/node_run.py)
        a.pytest_args = rest
        return node_run.run(a)
    return run.main(a.out, a.reference, rest)


def cmd_table(a) -> int:
    from cudnn_hostbench.bench.measure import records, trust
    from cudnn_hostbench.reports import fmt, table

    # every check before the first line of output, so bad input never leaves half a result
    try:
        run = records.load_run(a.run, need_records=True)
        trust.check_run(run)
    except ValueError as e:   # RunFileError, or figures that cannot be measurements
        return _bad(a.prog, str(e))
    probes = list(dict.fromkeys(r.probe for r in run.records))
    if a.probe is not None and a.probe not in probes:
        return _bad(a.prog, f"--probe {a.probe!r}: no such probe in {a.run} (it has: {', '.join(probes)})")
    problem = a.out and check_out_dir(a.out, ("table.csv", "table.md"))
    if problem:
        return _bad(a.prog, f"--out {a.out}: {problem}")
    for w in run.warnings:
        print(f"warning: {w}", file=sys.stderr)
    df = table.build_table(run)
    if a.probe is not None:
        df = df[df["probe"] == a.probe]
    if a.markdown:
        print(table.markdown_document(run, df), end="")
    elif a.wide:
        print(table.caption(run))
        print(trust.summary_line(run))
        print(table.render_text(df, wide=True))
    else:
        width = fmt.term_width()
        for text in (table.caption(run), trust.summary_line(run)):
            print("\n".join(textwrap.wrap(text, width, subsequent_indent="  ", break_long_words=True)))
        print(table.render_text(df, width))
    if a.out:
        try:
            for p in table.write_outputs(run, a.out):
                print(f"wrote {p}")
        except OSError as e:
            return _bad(a.prog, f"--out {a.out}: cannot write ({e.strerror or e})")
    return 0


def cmd_compare(a) -> int:
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
        return _bad(a.prog, str(e))
    problem = a.markdown and check_out_file(a.markdown)
    if a.markdown and not problem and any(Path(a.markdown).resolve() == Path(f).resolve() for f in (a.base, a.new)):
        problem = "is one of the run files being compared"
    if problem:
        return _bad(a.prog, f"--markdown {a.markdown}: {problem}")
    if store.gpu(base) != store.gpu(new) and not a.allow_other_gpu:
        return _bad(a.prog, f"{a.base} is from {store.gpu(base)}, {a.new} from {store.gpu(new)}: not compared "
                            "(--allow-other-gpu compares them anyway)")
    df = compare.compare(base, new, threshold, a.alpha, a.normalize, a.min_samples, a.absolute)
    if not compare.judged(df) and not a.allow_disjoint:
        return _bad(a.prog, f"{a.base} and {a.new} have no measured row in common ({compare.summary(df)}): "
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
            return _bad(a.prog, f"--markdown {a.markdown}: cannot write ({e.strerror or e})")
    width = fmt.term_width()
    print(compare.summary(df))   # the verdict counts first
    if compare.machine_line(df):
        print(compare.machine_line(df))
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


def cmd_dashboard(a) -> int:
    from cudnn_hostbench.reports import dashboard, store
    from cudnn_hostbench.reports.history import db

    def say(msg: str) -> None:
        print(f"{a.prog}: {store.one_line(msg)}", file=sys.stderr)

    if name_problem(a.out):
        say(f"--out: {name_problem(a.out)}: {a.out}")   # the reason first: one_line cuts long lines
        return 2
    try:
        dashboard.previous_files(Path(a.out))  # before loading anything: a bad --out is the one message
    except dashboard.OutError as e:
        say(str(e))
        return 2
    if not a.paths and not a.store:
        say("name run files or folders, or a store with --store URL")
        return 2
    if a.last < 1:
        say(f"--last {a.last}: must be at least 1")
        return 2
    runs, errors, st = [], [], None
    if a.paths:   # read first: only a run to store makes a store
        runs, errors = store.load_runs(a.paths, a.order)
    if a.store:
        try:
            st = db.open_store(a.store, create=bool(runs))
            n = st.count()[0]
        except db.StoreError as e:
            for x in errors if not runs else []:
                say(f"skipped {x}")
            say(str(e))
            return 2
        if not n and not runs:
            st.close()
            for x in errors:
                say(f"skipped {x}")
            say(f"{st.shown}: the store holds no runs; nothing written")
            return 2
    if a.paths:
        for r in runs:
            for w in getattr(r, "warnings", None) or []:
                say(f"warning: {w}")
        if not runs and st is None:
            if not errors:
                say(f"{' '.join(a.paths)}: no run files found (*.json, *.jsonl); nothing written")
            for k, e in enumerate(errors):
                say(f"{e}{'; no run left to show, nothing written' if k == len(errors) - 1 else ''}")
            return 2
        for e in errors:
            say(f"skipped {e}")
    try:
        if st is not None:
            for r in runs:   # files named beside --store are stored first (each once)
                st.ingest_run(r)
            index = dashboard.build([], a.out, errors, a.order, a.title, store=st, last=a.last)
            n = st.count()[0]
        else:
            index = dashboard.build(runs, a.out, errors, a.order, a.title, last=a.last)
            n = len(runs)
    except dashboard.OutError as e:
        say(str(e))
        return 2
    except db.StoreError as e:
        say(str(e))
        return 2
    except OSError as e:
        say(f"{a.out}: cannot write the dashboard ({e.strerror or e})")
        return 2
    finally:
        if st is not None:
            st.close()
    print(f"wrote {index} ({n} runs)")
    return 0


def cmd_audit(a) -> int:
    from cudnn_hostbench.bench.audit import audit, count, rules, target
    from cudnn_hostbench.bench.measure import records
    from cudnn_hostbench.reports import audit_report

    if a.rounds < 1 or a.count_steps < count.MIN_STEPS:
        return _bad(a.prog, f"--rounds must be at least 1 and --count-steps at least {count.MIN_STEPS}")
    if a.out and name_problem(a.out):
        return _bad(a.prog, f"--out {a.out}: {name_problem(a.out)}")
    if a.out and Path(a.out).exists() and not Path(a.out).is_dir():
        return _bad(a.prog, f"--out {a.out} exists and is not a folder")
    try:  # the user's own mistakes first: they hold on any machine
        target.parse_target(a.target)
        if a.run_file:
            records.load_run(a.run_file, need_records=True)
    except (target.AuditInputError, records.RunFileError) as e:
        return _bad(a.prog, str(e))
    problem = target.environment_problem()
    if problem:
        return _bad(a.prog, f"{target.NEEDS}; here: {problem}")
    try:
        factory = target.load_factory(a.target)
    except target.AuditInputError as e:
        return _bad(a.prog, str(e))
    try:
        ctx = _gpu_context()
    except Exception as e:  # noqa: BLE001 - NoGpuError, or a CUDA start-up failure
        return _bad(a.prog, f"{target.NEEDS}; here: {rules.error_line(f'{type(e).__name__}: {e}')}")
    try:
        with _on_stream(ctx):   # set-up sees the audit's stream as current
            step = target.make_step(factory, a.target.rpartition(":")[2])
            target.first_call(step)
        report = audit(step, run_file=a.run_file, rounds=a.rounds, count_steps=a.count_steps, ctx=ctx,
                       target=a.target, checked=True, root=ROOT)
    except target.AuditInputError as e:
        return _bad(a.prog, f"{a.target}: {e}")
    except Exception as e:  # noqa: BLE001 - e.g. the step failing later: say so, write nothing
        _bad(a.prog, f"{a.target}: audit failed: {rules.error_line(f'{type(e).__name__}: {e}')}")
        return 1
    print(audit_report.render_text(report), end="")
    if a.out:
        for p in audit_report.write_outputs(report, a.out):
            print(f"wrote {p}")
    _end_after_user_code(0)
    return 0


def _end_after_user_code(code: int) -> None:
    """Ends the process once everything is written. The audited step's objects (its module's
    caches, ops it registered in torch's dispatcher) live until interpreter teardown, where the
    frontend's nanobind module reports them as leaks: pages of noise after the report. The
    harness cannot release objects the user's code owns, so it skips that teardown."""
    if "cudnn" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def cmd_reprice(a) -> int:
    import json

    from cudnn_hostbench.bench.audit.auditor import AuditReport, price
    from cudnn_hostbench.bench.audit.cost import _rel
    from cudnn_hostbench.bench.measure import records
    from cudnn_hostbench.reports import audit_report

    src = Path(a.audit)
    src = src / "audit.json" if src.is_dir() else src
    try:
        report = AuditReport.from_dict(json.loads(src.read_text(encoding="utf-8")))
    except OSError as e:
        return _bad(a.prog, f"{src}: cannot read ({e.strerror or e})")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return _bad(a.prog, f"{src}: not an audit.json written by `hostbench audit --out` ({e})")
    try:
        run = records.load_run(a.run_file, need_records=True)
    except records.RunFileError as e:
        return _bad(a.prog, str(e))
    out = Path(a.out) if a.out else src.parent
    if name_problem(str(out)):
        return _bad(a.prog, f"--out {out}: {name_problem(str(out))}")
    if out.exists() and not out.is_dir():
        return _bad(a.prog, f"--out {out} exists and is not a folder")
    gpu, ran_on = report.env.get("gpu_name"), run.fingerprint.get("gpu_name")
    note = "given (re-priced)"
    if gpu and ran_on and gpu != ran_on:
        note += f"; the run is from {ran_on}, the audit from {gpu}"
    priced = price(dataclasses.replace(report, run_file=_rel(Path(a.run_file)), run_note=note), run)
    print(audit_report.render_text(priced), end="")
    try:
        for p in audit_report.write_outputs(priced, out):
            print(f"wrote {p}")
    except OSError as e:
        return _bad(a.prog, f"{out}: cannot write ({e.strerror or e})")
    return 0


def _gpu_context():
    from cudnn_hostbench.bench.measure.context import GpuContext
    return GpuContext()


def _on_stream(ctx):
    import torch
    return torch.cuda.stream(ctx.stream)


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


def parser() -> ArgParser:
    """Every command and option."""
    from cudnn_hostbench.bench.audit import count, target
    from cudnn_hostbench.bench.audit.auditor import COUNT_STEPS
    from cudnn_hostbench.bench.measure import timing
    from cudnn_hostbench.reports import gate
    from cudnn_hostbench.reports.dashboard import MANIFEST
    from cudnn_hostbench.scripts import run

    ap = ArgParser(prog="hostbench", add_help=False)
    sub = ap.add_subparsers(dest="command", parser_class=ArgParser)

    def command(name, func, **kw):
        p = sub.add_parser(name, help=COMMANDS[name], **kw)
        p.set_defaults(func=func, parser=p, prog=p.prog)
        return p

    p = command("run", cmd_run, description=run.__doc__,
                epilog="other arguments go to pytest (e.g. --hb-workers 1 --hb-sizes 256 -k execute)")
    p.add_argument("--out", help="result folder (default results/<stamp>)")
    p.add_argument("--reference", action="store_true", help="render the committed reference run(s) only")
    from cudnn_hostbench.scripts import node_cmd, node_run
    node_run.add_arguments(p)

    p = command("table", cmd_table,
                description="The table: µs per call by mode, kernels per call, ratio to the probe's baseline "
                            "with its spread, host overhead. Rows are probe / variant / size; built from a "
                            "run's records only.")
    p.add_argument("run", help="run file (run.json, a --benchmark-json file, or a partial records.jsonl)")
    p.add_argument("--out", metavar="DIR",
                   help="also write table.csv and table.md (whole run) into this folder; made if missing, "
                        "files of those names replaced")
    p.add_argument("--probe", help="only rows of this probe")
    p.add_argument("--markdown", action="store_true", help="print Markdown (as in table.md) instead of text")
    p.add_argument("--wide", action="store_true",
                   help="every column and whole statuses, however wide (default: fit $COLUMNS or the terminal)")

    p = command("compare", cmd_compare, epilog=COMPARE_EPILOG,
                description="`hostbench compare BASE NEW`: per-benchmark verdicts between two runs, "
                            "for people and CI.")
    p.add_argument("base", help="run file (JSON, or partial JSONL) to compare against")
    p.add_argument("new", help="run file to judge")
    p.add_argument("--threshold", default=None,
                   help=f"minimum change, in percent, for every row (default per row: {gate.floors_text().replace('%', '%%')})")
    p.add_argument("--alpha", type=float, default=0.01, help="Mann-Whitney U significance level")
    p.add_argument("--min-samples", type=int, default=5, help="fewer samples than this on a side give UNSURE")
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
    p.add_argument("--markdown", metavar="OUT.md",
                   help="also write the comparison as Markdown to this file (its folder must exist; "
                        "an old file is replaced)")
    p.add_argument("--show-same", action="store_true", help="also print the SAME rows (the default prints the rest)")
    p.add_argument("--changes-only", action="store_true", help=argparse.SUPPRESS)   # the default now; kept for scripts
    p.add_argument("--wide", action="store_true",
                   help="notes inline and every column, however wide (default: fit $COLUMNS or the terminal)")

    p = command("dashboard", cmd_dashboard,
                description="Write a static HTML dashboard over runs or a history store: per GPU, the newest "
                            "run's verdicts against its history first, trust marks by kind, trends with the "
                            "history band and version changes, the frontend version view, the runs. "
                            "No scripts, nothing fetched: it opens from file://.",
                epilog="Exit status: 0 written; 2 bad input or --out (one line on stderr, nothing written). "
                       "Unreadable run files among readable ones are skipped, one warning line each.")
    p.add_argument("paths", nargs="*", metavar="RUN_OR_DIR",
                   help="run files (run.json, records.jsonl) or folders scanned recursively for them "
                        "(with --store: stored first)")
    p.add_argument("--store", metavar="URL", help="read the runs from this history store (sqlite:///FILE or "
                                                  "postgresql://...; see hostbench history)")
    p.add_argument("--last", type=int, default=100, help="newest runs per GPU in the trends")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"folder to write into, made if missing. It overwrites DIR/index.html, DIR/img/*.png "
                        f"and DIR/{MANIFEST} (the list of files it wrote); a rebuild removes only files "
                        f"that list names, and a non-empty folder without it is refused")
    p.add_argument("--order", choices=["date", "version"], default="date",
                   help="order runs by date, or by nvidia-cudnn-frontend version")
    p.add_argument("--title", default="hostbench dashboard", help="page title")

    from cudnn_hostbench.scripts import history_cmd
    history_cmd.add_parser(command)

    p = command("audit", cmd_audit,
                description=("Which integration traps your own step hits, and what each costs on this GPU: times "
                             "the step eager, replayed in a CUDA graph and on the device, counts what it calls, "
                             "samples its host time by source line, prices each trap with the probes' figures "
                             f"and projects the step with every trap fixed. It {target.NEEDS}."),
                epilog="exit codes: 0 done; 2 bad input (including a line sampler that cannot start), or no CUDA "
                       "GPU / cuDNN frontend here; 1 the audit failed part way (nothing written)")
    p.add_argument("target", help="path/to/file.py:make_step; make_step() sets up and returns a zero-argument step")
    p.add_argument("--run-file", help="run file with the probes' figures (default: newest results/*/run.json "
                                      "measured on this GPU, else reports/reference/<gpu>/run.json)")
    p.add_argument("--out", help="also write audit.md, audit.json and flame.html into this folder (default: print only)")
    p.add_argument("--rounds", type=int, default=timing.Options.rounds,
                   help="interleaved timing rounds per mode")
    p.add_argument("--count-steps", type=int, default=COUNT_STEPS,
                   help=f"steps in the counting pass, at least {count.MIN_STEPS}")

    p = command("reprice", cmd_reprice,
                description="Price a saved audit's findings again from another run file of the probes (e.g. "
                            "after a new run on the same GPU). What the audit measured of the step (its modes, "
                            "counts, kernels and sampled stacks) stays as it was; the costs, their citations, the "
                            "line table and the projection are computed again.",
                epilog="exit codes: 0 written; 2 bad input (an unreadable audit or run file, a bad --out)")
    p.add_argument("audit", help="audit.json, or the folder `hostbench audit --out` wrote it to")
    p.add_argument("--run-file", required=True, help="run file with the probes' figures to price with")
    p.add_argument("--out", help="folder for the new audit.md, audit.json and flame.html (default: the audit's "
                                 "own folder, replacing its files)")
    node_cmd.add_arguments(command("node", node_cmd.run, description=node_cmd.__doc__))
    return ap


def _dispatch(argv: list[str]) -> int:
    if not argv:  # no command: the usage is the answer, but still exit 2 for scripts
        print(usage())
        return 2
    if argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        print(f"hostbench {version()}")
        return 0
    if argv[0] not in COMMANDS:
        what = "option" if argv[0].startswith("-") else "command"
        print(f"hostbench: unknown {what} {argv[0]!r}; {SYNOPSIS.removeprefix('usage: ')} ({HINT})",
              file=sys.stderr)
        return 2
    a, rest = parser().parse_known_args(argv)
    if a.command == "run":
        return int(cmd_run(a, rest) or 0)
    if rest:
        a.parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return int(a.func(a) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a closed pipe shows up here for output still in the buffer
        return code
    except KeyboardInterrupt:
        # files are written atomically (a temporary file renamed into place): nothing is half-written
        print("hostbench: interrupted (Ctrl-C); nothing half-written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): what it wanted is printed. Point stdout at devnull so
        # the interpreter's last flush does not raise again, and end quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
