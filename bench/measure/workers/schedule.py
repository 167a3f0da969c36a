"""Which cases a worker measures, in which order, and how many more workers the budget allows:
pure functions, testable without processes (the parent and both worker front ends call them)."""
from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from cudnn_hostbench.bench.measure.core.options import split

T = TypeVar("T")


def worker_number(worker: str | None) -> int:
    """1 for "1/3" (or no worker: one process measures everything)."""
    try:
        return max(1, int(str(worker or "1").split("/")[0]))
    except ValueError:
        return 1


def order(items: Iterable[T], module: Callable[[T], str], mode: Callable[[T], str], worker: str | None) -> list[T]:
    """Items in measuring order for worker `worker` ("i/n"): every device (profiler) case after
    every host-timed one (a profiler session can slow host dispatch for the rest of the process),
    and the probe modules rotated by the worker's number, so each worker takes them in its own
    order; within a module, the collection order stands."""
    items = list(items)
    mods = list(dict.fromkeys(module(it) for it in items))
    if not mods:
        return items
    shift = (worker_number(worker) - 1) % len(mods)
    rank = {m: i for i, m in enumerate(mods[shift:] + mods[:shift])}
    return sorted(items, key=lambda it: (1 if mode(it) == "device" else 0, rank[module(it)]))


def select(items: Iterable[T], block: Callable[[T], str], mode: Callable[[T], str], modes: Iterable[str],
           only: str | None = None) -> list[T]:
    """The items a worker measures: its modes' (build-time `host` rows always run), or with `only`
    (a top-up worker's "probe/size,..." blocks) the eager rows of those blocks and nothing else."""
    if only:
        blocks = set(split(only))
        return [it for it in items if block(it) in blocks and mode(it) == "eager"]
    want = set(modes) | {"host"}
    return [it for it in items if mode(it) in want]


def fit(wanted: int, blocks: int, per_block: float, left_s: float | None, fixed_s: float, focus_block_s: float,
        share: float = 1.0) -> tuple[int, float]:
    """How many extra workers (of `wanted`) fit in `left_s` seconds (None: no budget), each costing
    `fixed_s` besides waiting, and the focus allowances per block each may wait (at most
    `per_block`, each `focus_block_s` long) within `share` of what is left."""
    if left_s is None:
        return wanted, per_block
    wanted = min(wanted, max(0, int(left_s // fixed_s)))
    if not wanted:
        return 0, 0.0
    wait = left_s * share / wanted - fixed_s
    return wanted, max(0.0, min(per_block, wait / (focus_block_s * blocks)))
