"""`hostbench`: one command, its subcommands declared by their own modules.

The registry below names each subcommand, the module that declares it and the one line that
`hostbench --help` shows. A command module has `add_parser(command)`, which calls
`command(name, run, **argparse_kw)` and adds the options to the parser it returns; `run(args)`
gets the parsed arguments and returns the exit status (`extra=` lets arguments it does not declare
through, in args.rest: `run` hands them to pytest). So a new command is one module and one line
here; its `python -m` form, if any, is `main = cli.alias(name)`. Only the typed command's module
is imported.

Bad input exits 2 with one line on stderr, before any output or file; 1 is left to the commands
(a regression, a failed audit, a failed probe).
"""
from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import re
import sys
from pathlib import Path

from cudnn_hostbench.scripts.args import ArgParser

ROOT = Path(__file__).resolve().parent.parent   # the checkout, or the installed package

# name: (module under cudnn_hostbench that declares it, one line for `hostbench --help`)
COMMANDS = {
    "run": ("scripts.run", "Run the probes on this GPU (without one, show the committed reference run)."),
    "table": ("scripts.table_cmd", "Render the table of a saved run (JSON or partial JSONL)."),
    "compare": ("scripts.compare_cmd", "Compare two runs: verdicts per benchmark, exit 1 on regression."),
    "ab": ("scripts.ab_cmd", "An interleaved A/B job on this machine: every row judged on its own pairs."),
    "dashboard": ("scripts.dashboard_cmd", "Write a static HTML dashboard over runs or a history store."),
    "history": ("scripts.history_cmd", "The history store: ingest runs, check a run against its history, export."),
    "audit": ("scripts.audit_cmd", "Audit your own integration step for known traps."),
    "reprice": ("scripts.reprice_cmd", "Price a saved audit again from another run file (no GPU needed)."),
    "waterfall": ("scripts.waterfall_cmd", "Where one eager call's µs go: the waterfall probe's table and chart."),
    "engines": ("scripts.engines_cmd", "The engine probe's plans per size: host and GPU µs of each engine."),
    "crossover": ("scripts.crossover", "Sweep sizes on this GPU to find where each trap stops mattering."),
    "crossover-plot": ("scripts.crossover_plot_cmd", "Summarize and plot a crossover.json again (no GPU needed)."),
    "matrix": ("scripts.version_matrix", "Run the probes under several nvidia-cudnn-frontend wheels and merge the runs."),
    "lock": ("scripts.lock", "Write the exact package versions behind a run as a pip constraints file."),
    "host-trace": ("scripts.host_trace", "Trace the host-state sentinel: whether this host is bistable, and where its floor is."),
    "node": ("scripts.node.node_cmd", "The GPUs of this node: cores per GPU, the slow-GPU report, the parallel matrix's checks."),
    "node-check": ("scripts.node.node_check", "Show that parallel jobs on a node measure what one job alone does."),
}
# for work on cudnn-hostbench itself; listed apart in `hostbench --help`
MAINTAINER_COMMANDS = {
    "readme-figures": ("scripts.maint.readme_figures", "Render the README's figure sections from the committed runs."),
    "history-bench": ("scripts.maint.history_bench", "Time the history store at scale (ingest, check, dashboard)."),
    "verdict-check": ("scripts.maint.verdict_check",
                      "Validate the verdict model out of sample (leave one start out, injections)."),
    "ab-check": ("scripts.maint.ab_check", "Validate the A/B job's paired verdict on recorded A/A jobs (resampled, planted)."),
    "history-starts": ("scripts.maint.history_starts", "Write the committed runs' machine starts (from the log) into an export."),
}
ALL = {**COMMANDS, **MAINTAINER_COMMANDS}
SYNOPSIS = "usage: hostbench [--version] {" + ",".join(ALL) + "} ..."
HINT = "run `hostbench <cmd> --help` for a command's options"


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
    lines += [f"  {name:15s}{text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "maintainer's commands (for work on cudnn-hostbench itself):"]
    lines += [f"  {name:15s}{text}" for name, (_, text) in MAINTAINER_COMMANDS.items()]
    lines += ["", "exit status: 0 ok; 1 a failure the command reports (compare: a regression with",
              "--fail-on-regression); 2 bad input", "", HINT]
    return "\n".join(lines)


def parser(names=None) -> ArgParser:
    """The parser of the commands `names` (default: every command)."""
    ap = ArgParser(prog="hostbench", add_help=False)
    sub = ap.add_subparsers(dest="command", parser_class=ArgParser)
    ap.commands = {}   # name: its parser

    def command(name, func, extra=None, **kw):
        """A subcommand; extra: None (every argument is ours), "unknown" (arguments we do not know
        are passed on, as a.rest) or "after --" (those after a bare -- are)."""
        p = sub.add_parser(name, help=ALL[name][1], **kw)
        p.set_defaults(func=func, parser=p, prog=p.prog, extra=extra, rest=[])
        ap.commands[name] = p
        return p

    for name in names or ALL:
        importlib.import_module(f"cudnn_hostbench.{ALL[name][0]}").add_parser(command)
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
    if argv[0] not in ALL:
        what = "option" if argv[0].startswith("-") else "command"
        print(f"hostbench: unknown {what} {argv[0]!r}; {SYNOPSIS.removeprefix('usage: ')} ({HINT})",
              file=sys.stderr)
        return 2
    ap = parser([argv[0]])
    extra = ap.commands[argv[0]].get_default("extra")
    after = []
    if extra == "after --" and "--" in argv:
        argv, after = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    a, rest = ap.parse_known_args(argv)
    if rest and extra != "unknown":
        a.parser.error(f"unrecognized arguments: {' '.join(rest)}")
    a.rest = rest + after
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


def exit_with(code: int) -> None:
    """`sys.exit(code)` for a `python -m` entry point. After an interrupt (130) it ends the process
    itself: a KeyboardInterrupt raised inside code an extension module ran through PyRun_String
    (Cython modules do) sets CPython's unhandled-interrupt flag even when caught, and under
    `python -m` the interpreter then kills itself with SIGINT at exit (CI, oldest versions)."""
    if code != 130:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)


def alias(name: str):
    """`main(argv)` of a command module: `python -m cudnn_hostbench.scripts.lock ...` runs
    `hostbench lock ...`, through the same parser."""
    def main_(argv: list[str] | None = None) -> int:
        return main([name, *(sys.argv[1:] if argv is None else argv)])
    return main_


if __name__ == "__main__":
    exit_with(main())
