"""The run file's format version and the migrations that bring an older file up to it.

A run file is pytest-benchmark's JSON with the harness's own parts (records.py); its version is
`hostbench.schema` (and the fingerprint's `schema`). Reading a file applies each migration from
its version up, so every reader sees the current layout:

- 1 → 2: the fingerprint's per-worker lists (worker_wall_s, worker_startup_s, worker_time_s,
  worker_roles, host_state.per_worker) become one table, `worker_table`: a row per worker process
  (`WorkerInfo`). Files from before roles were recorded get them from the top-up and focus-only
  counts, which the parent kept.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

VERSION = 2


@dataclass
class WorkerInfo:
    """One worker process of a run: its role and where its time went."""
    worker: int
    role: str = "full"                 # full (every mode), eager (eager rows only), top-up, focus
    wall_s: float | None = None        # its suite wall, start-up not included
    startup_s: float | None = None
    time_s: dict = field(default_factory=dict)   # runner.PHASES -> seconds (runs from 2026-12-02 on)
    floor_us: float | None = None      # the host floor it learned
    fast_fraction: float | None = None  # its host's share of fast-state readings

    @classmethod
    def of(cls, d: dict) -> "WorkerInfo":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def roles_of(fp: dict) -> list[str]:
    """Each worker's role: recorded (worker_roles), else from the counts the parent kept (top-up
    and focus-only workers come after the full ones)."""
    n = max(int(fp.get("workers") or 1), *(len(fp.get(k) or ()) for k in ("worker_wall_s", "worker_time_s")))
    if fp.get("worker_roles"):
        roles = list(fp["worker_roles"])
        return (roles + ["full"] * n)[:n]
    tops = [t for t in fp.get("top_ups") or ([fp["catch_up"]] if fp.get("catch_up") else []) if t]
    focus = int((fp.get("focus_workers") or {}).get("workers") or 0)
    full = max(0, n - len(tops) - focus)
    return ["full"] * full + ["top-up"] * len(tops) + ["focus"] * focus


def worker_table(fp: dict) -> list[dict]:
    """The fingerprint's per-worker lists as one row per worker (format 2's `worker_table`)."""
    n = max(int(fp.get("workers") or 1), *(len(fp.get(k) or ()) for k in ("worker_wall_s", "worker_time_s")))
    walls, starts = fp.get("worker_wall_s") or [], fp.get("worker_startup_s") or []
    if n == 1 and not walls:   # one process measured it all (--hb-workers 1, or a worker's own file)
        walls, starts = [fp.get("suite_wall_s")], [fp.get("startup_s")]
    times = fp.get("worker_time_s") or ([fp["time_s"]] if fp.get("time_s") else [])
    hosts = (fp.get("host_state") or {}).get("per_worker") or []
    roles = roles_of(fp)

    def at(xs, i):
        return xs[i] if i < len(xs) else None
    rows = []
    for i in range(n):
        h = at(hosts, i) or {}
        rows.append(dataclasses.asdict(WorkerInfo(
            worker=i + 1, role=roles[i], wall_s=at(walls, i), startup_s=at(starts, i), time_s=at(times, i) or {},
            floor_us=h.get("floor_us") if isinstance(h, dict) else None,
            fast_fraction=h.get("fast_fraction") if isinstance(h, dict) else None)))
    return rows


def migrate(fp: dict, schema) -> dict:
    """The fingerprint of a file of format `schema` (None: a file from before versions) in the
    current format. Returns a new dict; the file is not touched."""
    fp = dict(fp)
    version = schema if isinstance(schema, int) and not isinstance(schema, bool) else 1
    if version < 2 and fp:
        fp["worker_table"] = worker_table(fp)
    if fp:
        fp["schema"] = VERSION
    return fp


def workers_of(fp: dict) -> list[WorkerInfo]:
    """The run's workers, typed (from a file of any version: its table, else its lists)."""
    rows = fp.get("worker_table")
    if not isinstance(rows, list):
        rows = worker_table(fp)
    return [WorkerInfo.of(r) for r in rows if isinstance(r, dict)]
