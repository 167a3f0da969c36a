"""Where results and the default history store live, and paths as a person can use them.

Never inside the package: an installed harness sits in site-packages, which is no place for data.
- a checkout (this package run from its repository): the checkout's results/;
- installed: results/ of the project you run it from (the nearest folder up from the current one
  with pyproject.toml, setup.cfg, setup.py, tox.ini, pytest.ini or .git), else results/ in your
  data folder (platformdirs: ~/.local/share/cudnn-hostbench on Linux).
"""
from __future__ import annotations

import os
from pathlib import Path

APP = "cudnn-hostbench"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]   # the checkout, or site-packages/cudnn_hostbench
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".git")


def checkout() -> Path | None:
    """The repository this harness runs from, or None when it is installed."""
    r = PACKAGE_ROOT
    return r if (r / "pyproject.toml").is_file() and (r / "bench" / "measure").is_dir() else None


def project(start: Path | None = None) -> Path | None:
    """The nearest folder up from `start` (the current one) that looks like a project."""
    try:
        here = (start or Path.cwd()).resolve()
    except OSError:   # the current folder was removed under us
        return None
    for d in (here, *here.parents):
        if d == Path.home() or d.parent == d:
            return None    # the home folder or / is not a project, even with a stray marker
        if any((d / m).exists() for m in PROJECT_MARKERS):
            return d
    return None


def results_dir() -> Path:
    """results/ of the checkout, else of the current project, else of the user's data folder."""
    home = checkout() or project()
    if home is None:
        import platformdirs
        home = platformdirs.user_data_path(APP)
    return home / "results"


def default_store() -> Path:
    return results_dir() / "history.db"


def shown(path: str | os.PathLike) -> str:
    """A path as a person can type it from here: relative under the current folder, else absolute."""
    p = Path(path)
    try:
        a = p.resolve()
        return str(a.relative_to(Path.cwd().resolve()))
    except OSError:
        return str(p)
    except ValueError:
        return str(a)


def repo_relative(path: str | os.PathLike) -> str:
    """The path inside its repository (this checkout, or the git repository holding it), for what
    is shared (an export); '' outside any: a local path means nothing on another machine. A
    relative path is kept: the store was given it relative to the repository."""
    p = Path(path)
    if not str(path):
        return ""
    if not p.is_absolute():
        return p.as_posix()
    p = p.resolve()
    roots = [r for r in (checkout(),) if r] + [d for d in p.parents if (d / ".git").exists()]
    for r in roots:
        try:
            return p.relative_to(r).as_posix()
        except ValueError:
            continue
    return ""
