"""What every hostbench command shares: the argument parser (defaults in --help, a one-line error
with exit 2), the one-line answer to bad input, and checks that an output path can be written.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


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


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:   # a name the OS refuses to look up (too long): it does not exist
        return False


def _first_existing(path: Path) -> Path:
    while not _exists(path) and path != path.parent:
        path = path.parent
    return path


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




def bad(prog: str, msg: str) -> int:
    """One line on stderr, exit status 2: what every command does with bad input."""
    print(f"{prog}: {msg}", file=sys.stderr)
    return 2
