"""The suite leaves nothing behind: nothing new in the checkout (git status --porcelain --ignored)
or in the temporary folder (tests/conftest.py checks both around the session), and a wheel is built
from a copy of the checkout, never in it (setuptools writes build/ and *.egg-info beside the source).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what a copy to build from leaves out: history, environments, caches, outputs, carried wheels
NOT_COPIED = (".git", ".venv", "build", "results", ".whl", ".whlm", ".frozen", ".gpuruns", "*.egg-info",
              ".mypy_cache", ".ruff_cache", "__pycache__", "site")


def build_wheel(dest: Path, *pip_args: str) -> subprocess.CompletedProcess:
    """`pip wheel` of the working tree into `dest`, built in a copy under `dest` (removed after)."""
    src = dest / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
    try:
        return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *pip_args,
                               "-w", str(dest), str(src)], capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(src, ignore_errors=True)


# a new source file is someone's work in progress (a test writes none), not debris
SOURCES = (".py", ".md")


def new_in_checkout() -> set[str]:
    """Untracked and ignored entries of the checkout (bytecode aside: Python writes it where it likes),
    and its top-level names (git does not list an empty folder, such as pytest-benchmark's .benchmarks)."""
    r = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=normal"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    return {line for line in r.stdout.splitlines() if line[:2] in ("??", "!!") and "__pycache__" not in line
            and not (line[:2] == "??" and line.endswith(SOURCES))} | {f"top-level {p.name}" for p in ROOT.iterdir()}
