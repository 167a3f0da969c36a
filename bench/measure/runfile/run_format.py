"""The run file's format version and the migrations that bring an older file up to it.

A run file's version is its `schema` (format 3 on: the engine's document, records.run_document;
up to 2: pytest-benchmark's JSON, with it in `hostbench.schema`) and the fingerprint's `schema`.
Reading a file applies each migration from its version up, so every reader sees the current layout:

- 1 → 2: the fingerprint's per-worker lists (worker_wall_s, worker_startup_s, beside
  host_state.per_worker) become one table, `worker_table`: a row per worker process (`WorkerInfo`),
  which format 2 also gives each worker's role and time per phase. Format 1 files get their
  roles from the top-up and focus-only counts, which the parent kept.
- 2 → 3: the run file is the engine's own document (format, schema, datetime, fingerprint, every
  record with its samples in its unit); pytest-benchmark's JSON becomes an export (export.py). The
  fingerprint and the records are unchanged, so nothing migrates; a format-2 file loads as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cudnn_hostbench.bench.measure.runfile.fields import Fields

VERSION = 3


@dataclass(eq=False)
class WorkerInfo(Fields):
    """One worker process of a run: its role and where its time went (a row of the fingerprint's
    worker_table; keys it does not know are kept in `extra`)."""
    worker: int = 0
    role: str = "full"                 # full (every mode), eager (eager rows only), top-up, focus
    wall_s: float | None = None        # its suite wall, start-up not included
    startup_s: float | None = None
    time_s: dict = field(default_factory=dict)   # runner.PHASES -> seconds (runs from 2026-12-02 on)
    floor_us: float | None = None      # the host floor it learned
    fast_fraction: float | None = None  # its host's share of fast-state readings


def extra_workers(fingerprint: dict) -> tuple[list, int]:
    """The top-up workers' records (a catch-up worker in older runs) and the focus-only workers'
    count, as the parent kept them: they come after the full workers."""
    catch = fingerprint.get("catch_up") or {}
    tops = [t for t in fingerprint.get("top_ups") or ([catch] if catch else []) if t]
    return tops, int((fingerprint.get("focus_workers") or {}).get("workers") or 0)


def row_of(worker: int, own: dict, role: str = "full") -> dict:
    """A worker's table row from its own fingerprint (its suite wall, start-up, time per phase, host)."""
    h = own.get("host_state") or {}
    return WorkerInfo(
        worker=worker, role=role,
        wall_s=round(own["suite_wall_s"], 1) if own.get("suite_wall_s") is not None else None,
        startup_s=round(own["startup_s"], 1) if own.get("startup_s") is not None else None,
        time_s=own.get("time_s") or {}, floor_us=h.get("floor_us"), fast_fraction=h.get("fast_fraction")).full_dict()


def worker_table(fingerprint: dict) -> list[dict]:
    """Format 1's per-worker lists (worker_wall_s, worker_startup_s, host_state.per_worker) as one
    row per worker; roles from the top-up and focus counts. A run of one process: its own row."""
    walls, starts = fingerprint.get("worker_wall_s") or [], fingerprint.get("worker_startup_s") or []
    n = max(int(fingerprint.get("workers") or 1), len(walls))
    if n == 1 and not walls:
        return [row_of(1, fingerprint)]
    hosts = (fingerprint.get("host_state") or {}).get("per_worker") or []
    tops, focus = extra_workers(fingerprint)
    full = max(0, n - len(tops) - focus)
    roles = ["full"] * full + ["top-up"] * len(tops) + ["focus"] * focus

    def at(xs, i):
        return xs[i] if i < len(xs) else None
    rows = []
    for i in range(n):
        h = at(hosts, i) if isinstance(at(hosts, i), dict) else {}
        rows.append(WorkerInfo(
            worker=i + 1, role=roles[i], wall_s=at(walls, i), startup_s=at(starts, i),
            floor_us=h.get("floor_us"), fast_fraction=h.get("fast_fraction")).full_dict())
    return rows


def migrate(fingerprint: dict, schema) -> dict:
    """The fingerprint of a file of format `schema` (None: a file from before versions) in the
    current format. Returns a new dict; the file is not touched."""
    fingerprint = dict(fingerprint)
    version = schema if isinstance(schema, int) and not isinstance(schema, bool) else 1
    if version < 2 and fingerprint:
        fingerprint["worker_table"] = worker_table(fingerprint)
        for k in ("worker_wall_s", "worker_startup_s"):   # moved into the table
            fingerprint.pop(k, None)
    if fingerprint:
        fingerprint["schema"] = VERSION
    return fingerprint

