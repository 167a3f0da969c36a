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
