"""`hostbench` command: one subcommand per entry point; each is `module:function(argv) -> int`.

Bad input exits 2 with one line on stderr; 1 is left to the commands (a regression, a failed probe).
The commands share the helpers here: ArgParser, the output-path checks, whole-file writes.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path

COMMANDS = {
    "run": ("scripts.run", "main", "run the probes on this GPU (or render the reference run without one)"),
    "table": ("reports.table", "main", "render the table of a saved run (JSON or partial JSONL)"),
    "compare": ("reports.compare", "main", "compare two runs: verdicts per benchmark, exit 1 on regression"),
    "dashboard": ("reports.dashboard", "main", "write a static HTML dashboard over runs"),
    "audit": ("bench.audit.auditor", "main", "audit your own integration step for known traps"),
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


def _first_existing(p: Path) -> Path:
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_out_dir(path: str, names=()) -> str | None:
    """Why files `names` cannot be written into folder `path` (made if missing), or None."""
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


def write_text_atomic(path, text: str) -> None:
    """Write a whole file or nothing: a temp file beside it, then a rename."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version as _v
        return _v("cudnn-hostbench")
    except PackageNotFoundError:  # a plain checkout, not installed: read pyproject.toml
        text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
        m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        return m.group(1) if m else "unknown"


def usage() -> str:
    lines = [SYNOPSIS, "", "commands:"]
    lines += [f"  {name:10s} {text}" for name, (_, _, text) in COMMANDS.items()]
    lines += ["", "exit status: 0 ok; 1 a failure the command reports (compare: a regression with",
              "--fail-on-regression); 2 bad input", "", HINT]
    return "\n".join(lines)


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
    mod, fn, _ = COMMANDS[argv[0]]
    return int(getattr(importlib.import_module(mod), fn)(argv[1:]) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a closed pipe shows up here for output still in the buffer
        return code
    except BrokenPipeError:
        # the reader went away (`| head`): what it wanted is printed. Point stdout at devnull so
        # the interpreter's last flush does not raise again, and end quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
