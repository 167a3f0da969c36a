"""Saved cuDNN execution plans, and when to trust one: deserialize, or fall back to a rebuild.

A serialized plan (`graph.serialize()`) is the backend's plan for the *selected* engine config:
valid only for the GPU it was built on, that cuDNN backend and that frontend JSON format. The
file written here wraps the blob with a header that says so, plus its length and SHA-256:

    HBPLAN 1\\n<header JSON, one line>\\n<blob bytes>

`decide()` reads a file's bytes and says "deserialize" or "rebuild" (with the reason), purely in
Python. `load_or_build()` acts on it: it deserializes when the header matches this run, and
falls back to a rebuild with a `warnings.warn` when the file is foreign (another GPU / cuDNN /
frontend / problem), truncated, corrupt, or when the backend refuses the blob anyway. Only the
rebuild itself may raise. Nothing here needs a GPU; the probe passes the two callables.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from cudnn_hostbench.bench.cudnn_graphs.winners import Env
from cudnn_hostbench.bench.measure.runfile.files import write_bytes_atomic

MAGIC = b"HBPLAN 1\n"
FORMAT = 1
DESERIALIZE, REBUILD = "deserialize", "rebuild"


class PlanFallbackWarning(UserWarning):
    """A saved plan was not used; the graph is rebuilt instead."""


@dataclass
class Decision:
    action: str                    # DESERIALIZE | REBUILD
    reason: str
    blob: bytes | None = None
    header: dict = field(default_factory=dict)
    warn: bool = True              # False for the ordinary "nothing saved yet"


@dataclass
class Outcome:
    """What load_or_build did: 'deserialized' or 'rebuilt', and why."""
    action: str
    reason: str
    value: Any = None
    header: dict = field(default_factory=dict)


def to_bytes(blob) -> bytes:
    """serialize() gives bytes (1.32 as_bytes=True) or a list of ints (<= 1.31)."""
    if isinstance(blob, (bytes, bytearray, memoryview)):
        return bytes(blob)
    if isinstance(blob, (list, tuple)):
        return bytes(blob)
    raise TypeError(f"cannot make bytes of a serialized plan of type {type(blob).__name__}")


def dumps(blob, env: Env, problem: str, meta: dict | None = None) -> bytes:
    blob = to_bytes(blob)
    header = {
        "format": FORMAT, "gpu": env.gpu, "cudnn_backend": int(env.cudnn_backend),
        "cudnn_frontend": env.cudnn_frontend, "problem": problem, "blob_len": len(blob),
        "blob_sha256": hashlib.sha256(blob).hexdigest(), "meta": dict(meta or {}),
    }
    line = json.dumps(header, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8")
    if b"\n" in line:  # json.dumps never emits a raw newline; keep the format honest anyway
        raise ValueError("header JSON contains a newline")
    return MAGIC + line + b"\n" + blob


def save(path: str | os.PathLike, blob, env: Env, problem: str, meta: dict | None = None) -> Path:
    """Writes atomically (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_bytes_atomic(path, dumps(blob, env, problem, meta))


def decide(data: bytes | None, env: Env, problem: str) -> Decision:
    """Deserialize or rebuild? Never raises, whatever `data` holds."""
    if data is None:
        return Decision(REBUILD, "no saved plan", warn=False)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return Decision(REBUILD, f"saved plan is {type(data).__name__}, not bytes")
    data = bytes(data)
    if not data.startswith(MAGIC):
        if MAGIC.startswith(data):
            return Decision(REBUILD, f"saved plan truncated ({len(data)} bytes, inside the magic)")
        return Decision(REBUILD, "not a hostbench plan file (bad magic)")
    rest = data[len(MAGIC):]
    nl = rest.find(b"\n")
    if nl < 0:
        return Decision(REBUILD, f"saved plan truncated ({len(data)} bytes, inside the header)")
    try:
        header = json.loads(rest[:nl].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return Decision(REBUILD, f"saved plan header corrupt ({e})")
    if not isinstance(header, dict):
        return Decision(REBUILD, "saved plan header is not an object")
    if header.get("format") != FORMAT:
        return Decision(REBUILD, f"saved plan format {header.get('format')!r}, expected {FORMAT}", header=header)
    try:
        saved = Env(str(header["gpu"]), int(header["cudnn_backend"]), str(header["cudnn_frontend"]))
        blob_len, sha = int(header["blob_len"]), str(header["blob_sha256"])
        saved_problem = str(header["problem"])
    except (KeyError, TypeError, ValueError) as e:
        return Decision(REBUILD, f"saved plan header incomplete ({type(e).__name__}: {e})", header=header)
    diffs = env.differs(saved)
    if diffs:
        return Decision(REBUILD, "saved plan is foreign: " + "; ".join(diffs), header=header)
    if saved_problem != problem:
        return Decision(REBUILD, f"saved plan is for {saved_problem!r}, not {problem!r}", header=header)
    blob = rest[nl + 1:]
    if len(blob) != blob_len:
        return Decision(REBUILD, f"saved plan truncated or padded: blob has {len(blob)} bytes, header says "
                                 f"{blob_len}", header=header)
    if hashlib.sha256(blob).hexdigest() != sha:
        return Decision(REBUILD, "saved plan corrupt: SHA-256 mismatch", header=header)
    return Decision(DESERIALIZE, "saved plan matches this GPU, cuDNN, frontend and problem", blob, header)


def read(path: str | os.PathLike) -> bytes | None:
    """The file's bytes, or None when there is no file; other read errors come back as b''."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return b""


def load_or_build(path: str | os.PathLike, env: Env, problem: str, deserialize: Callable[[bytes], Any],
                  build: Callable[[], Any]) -> Outcome:
    """Deserialize the saved plan if it is this run's, else (or if that fails) rebuild, warning why."""
    d = decide(read(path), env, problem)
    if d.action == DESERIALIZE:
        try:
            return Outcome("deserialized", d.reason, deserialize(d.blob), d.header)
        except Exception as e:  # noqa: BLE001 - any backend refusal means: rebuild
            reason = f"deserialize failed ({type(e).__name__}: {e})"
            warnings.warn(f"{path}: {reason}; rebuilding", PlanFallbackWarning, stacklevel=2)
            return Outcome("rebuilt", reason, build(), d.header)
    if d.warn:
        warnings.warn(f"{path}: {d.reason}; rebuilding", PlanFallbackWarning, stacklevel=2)
    return Outcome("rebuilt", d.reason, build(), d.header)
