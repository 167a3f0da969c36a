"""Which source files are the user's own code, and how a line of it is named ("file:line").

A file is the user's when it is none of: the interpreter's standard library, an installed package
(site-packages, dist-packages), this harness, torch or cudnn, or a pseudo-file ("<string>"). Both the
counting pass (which call a count came from) and the sampler (where host time went) name a line by
the innermost frame in user code, so their lines match."""
from __future__ import annotations

import os
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def _library_roots() -> tuple:
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(os.path.realpath(p))
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        roots.add(os.path.realpath(os.path.join(p, "lib")))
    import cudnn_hostbench
    roots.add(str(Path(cudnn_hostbench.__file__).resolve().parent))
    for p in getattr(cudnn_hostbench, "__path__", ()):   # in a checkout, the repository root: not all of it
        for sub in ("bench", "probes", "reports", "scripts"):
            if (Path(p) / sub).is_dir():
                roots.add(str((Path(p) / sub).resolve()))
    for name in ("torch", "cudnn"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            roots.add(str(Path(mod.__file__).resolve().parent))
    return tuple(sorted(r.rstrip(os.sep) + os.sep for r in roots))


@lru_cache(maxsize=4096)
def is_user(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    if f"{os.sep}site-packages{os.sep}" in filename or f"{os.sep}dist-packages{os.sep}" in filename:
        return False
    real = os.path.realpath(filename)
    return not any(real.startswith(r) for r in _library_roots())


@lru_cache(maxsize=4096)
def display(filename: str) -> str:
    """A file's name as reports show it: from the working folder when inside it, from the package
    root for installed packages, else the file name."""
    for marker in ("site-packages", "dist-packages"):
        head, sep, tail = filename.partition(f"{os.sep}{marker}{os.sep}")
        if sep:
            return tail
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        pass
    for name in ("torch", "cudnn"):
        i = filename.rfind(f"{os.sep}{name}{os.sep}")
        if i >= 0:
            return filename[i + 1:]
    return Path(filename).name


def where(code, lineno) -> str:
    return f"{display(code.co_filename)}:{lineno}"


def innermost_user_line(frame) -> str | None:
    """'file:line' of the innermost frame in user code at or above `frame`, or None."""
    f = frame
    while f is not None:
        if is_user(f.f_code.co_filename):
            return where(f.f_code, f.f_lineno)
        f = f.f_back
    return None
