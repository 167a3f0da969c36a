"""A run file written: the engine's document (`run_document`: its format, its fingerprint, every
record with its samples), written whole and atomically (`write_run`), and the JSON-lines file a run
appends a record to as it goes (`JsonlWriter`), so a crash keeps what was measured.

Reading any of them back is records.py's (load_run); the two live apart so the way of a run's
figures, from the engine to the file and back, passes each module once (tests/test_walks.py):
this one writes, files.py makes the write atomic, records.py reads. records.py re-exports these
names (`records.write_run`, ...), as callers have always imported them.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Iterable

from cudnn_hostbench.bench.measure.runfile import run_format
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.fields import Fields
from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic

FORMAT = "cudnn-hostbench run"   # a run file the engine wrote (format 3 on); older ones are pytest-benchmark's


def json_default(value: Any) -> Any:
    """json.dumps' `default` for a run file: a typed object (the fingerprint, its parts) as its
    dict (fields.py), anything else as text."""
    return value.to_dict() if isinstance(value, Fields) else str(value)


class JsonlWriter:
    """Appends one record per line and flushes it to disk at once."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open across writes, closed by close()

    def write(self, obj: dict) -> None:
        self._fh.write(json.dumps(obj, default=json_default) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def run_document(records: Iterable, fingerprint: Fingerprint | dict) -> dict:
    """A whole run file: the format, the fingerprint and every record with its samples (in its
    unit), in the given order (records.Record: this module does not import records.py, which reads
    what it writes); pytest-benchmark's JSON is an export of it (export.py). The
    fingerprint stays as given (typed or a dict): write_run writes a typed one as its dict
    (json_default), so the document is written in one pass over it."""
    return {"format": FORMAT, "schema": run_format.VERSION,
            "datetime": fingerprint.get("datetime") or _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "fingerprint": fingerprint, "records": [r.to_dict() for r in records]}


def write_run(path: str | os.PathLike, doc: dict) -> Path:
    """Writes a run file atomically (temp file, then rename), so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, json.dumps(doc, indent=1, default=json_default))
