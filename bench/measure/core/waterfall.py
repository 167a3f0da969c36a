"""A per-call waterfall: one eager call split into measured parts, all taken in the same rounds.

For each path (the call an integration makes) three callables are timed back to back in each
round, rotated: `full` (the whole call), `bare` (the library call it makes, without the
integration's own Python) and `floor` (the engine's host floor on the same plan: the private
raw-pointer execute); a captured graph of `full` is replayed for the GPU time. Each timing loop
gives two figures at once: the *issue* time (host clock at the last call's return: host work only,
the GPU runs behind it) and the *eager* time (the same loop to the sync after it).

  integration = issue(full) - issue(bare)      stream query, set_stream, pack, torch.empty, key
  frontend    = issue(bare) - issue(floor)     the frontend's Python down to the backend call
  engine      = issue(floor)                   backend execute + launch (the host floor)
  gpu_exposed = max(0, gpu - issue(full))      GPU time the host does not hide

The parts add up to max(host, GPU), an estimate of eager built from other measurements; `check`
compares it with the eager figure of the same rounds (the issue's 10 % criterion).
"""
from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass
from typing import Callable

from cudnn_hostbench.bench.measure.core.timing import calls_for, rotated, run_calls

PARTS = ("integration", "frontend", "engine", "gpu_exposed")
FIGURES = ("eager", "host", "gpu", *PARTS)
TOLERANCE = 0.10


@dataclass
class Path:
    name: str
    full: Callable[[], object]
    bare: Callable[[], object] | None = None      # None: full is the library call itself
    floor: Callable[[], object] | None = None     # None: the engine's floor cannot be separated
    replay: Callable[[], float] | None = None     # one graph replay -> GPU µs per call


def issue_and_eager(fn, calls: int, sync, clock=time.perf_counter) -> tuple[float, float]:
    """(issue, eager) seconds per call of one loop of `calls` calls."""
    sync()
    t0 = clock()
    run_calls(fn, calls)
    t1 = clock()
    sync()
    t2 = clock()
    return (t1 - t0) / calls, (t2 - t0) / calls


def measure(paths: list[Path], sync, rounds: int = 25, target_round_s: float = 2e-3,
            clock=time.perf_counter) -> dict:
    """{path name: {figure: [µs per round]}} for FIGURES; every callable is timed once per round."""
    fns, key = {}, {}
    for p in paths:
        for part in ("full", "bare", "floor"):
            f = getattr(p, part)
            if f is not None:
                key[(p.name, part)] = id(f)
                fns[id(f)] = f
    calls = {}
    for k, f in fns.items():     # warm-up, then calls per round from one timed round
        run_calls(f, 3)
        calls[k] = calls_for(issue_and_eager(f, 8, sync, clock)[1], target_round_s, 16, 512)
    out: dict[str, dict[str, list]] = {p.name: {f: [] for f in FIGURES} for p in paths}
    order = list(fns)
    was = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            got = {k: issue_and_eager(fns[k], calls[k], sync, clock) for k in rotated(order, r)}
            for p in paths:
                full = got[key[(p.name, "full")]]
                bare = got[key[(p.name, "bare")]] if p.bare is not None else full
                floor = got[key[(p.name, "floor")]] if p.floor is not None else None
                host = full[0] * 1e6
                gpu = p.replay() if p.replay is not None else 0.0
                o = out[p.name]
                o["eager"].append(full[1] * 1e6)
                o["host"].append(host)
                o["gpu"].append(gpu)
                o["integration"].append((full[0] - bare[0]) * 1e6)
                o["frontend"].append((bare[0] - floor[0]) * 1e6 if floor else 0.0)
                o["engine"].append((floor[0] if floor else bare[0]) * 1e6)
                o["gpu_exposed"].append(max(0.0, gpu - host))
    finally:
        if was:
            gc.enable()
    return out


def medians(figs: dict) -> dict:
    return {k: statistics.median(v) for k, v in figs.items() if v}


def check(med: dict, tolerance: float = TOLERANCE) -> tuple[bool, float]:
    """(parts sum within tolerance of eager, sum / eager) from a path's median figures."""
    total = sum(med[p] for p in PARTS)
    eager = med["eager"]
    share = total / eager if eager else float("inf")
    return abs(share - 1.0) <= tolerance, share
