"""Whole-file writes: a temp file beside the target, then a rename, so a crash or a full disk
never leaves half a file under the real name."""
from __future__ import annotations

import os
from pathlib import Path


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")  # the pid: two writers never share a temp file
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def ready_dir(path: str | os.PathLike, names=()) -> str | None:
    """Makes folder `path` and proves a file can be written in it, before a command prints or
    writes anything: why not, in a few words, or None. A failure leaves no folder it made.
    (Permission bits alone do not tell: root passes them on a read-only mount or /proc.)"""
    p = Path(path)
    if p.exists() and not p.is_dir():
        return "exists and is not a folder"
    made, q = [], p   # the folders this makes, innermost first
    while not q.exists() and q != q.parent:
        made.append(q)
        q = q.parent
    try:
        p.mkdir(parents=True, exist_ok=True)
        clash = [n for n in names if (p / n).is_dir()]
        if clash:
            return f"{p / clash[0]} is a folder"
        trial = p / f".hostbench-trial{os.getpid()}"
        trial.write_bytes(b"")
        trial.unlink()
    except OSError as e:
        for d in made:
            try:
                d.rmdir()
            except OSError:
                break
        return e.strerror or str(e)
    return None
