"""The three timing modes, over the same zero-argument callables.

eager  : N back-to-back calls between two device syncs, host clock; per call = elapsed / N.
graph  : the same N calls captured once into a CUDA graph on the harness stream; replays timed
         with CUDA events; per call = replay time / N.
device : torch.profiler (CUDA activity) over N eager calls; per call = summed device-side event
         time / N, plus kernels per call and their names.

Variants of one probe are measured in alternating rounds (A B C, B C A, C A B, ...) so machine
drift hits them alike and ratios can be taken round by round.

A profiler session leaves host dispatch in the same process slower for the rest of its life
(seen on the H200: 1.6-1.8x, even for CPU-only torch calls), so once `measure_device` has run,
`measure_eager` and `measure_graph` refuse with ContaminatedError.
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

UNROLL = 64
_profiled = False


class ContaminatedError(RuntimeError):
    """Host timing asked for after a profiler session in the same process."""


class CaptureError(RuntimeError):
    """A callable could not be captured into a CUDA graph."""


def profiler_has_run() -> bool:
    return _profiled


def _mark_profiled() -> None:
    global _profiled
    _profiled = True


def _guard() -> None:
    if _profiled:
        raise ContaminatedError(
            "eager/graph timing after a torch.profiler session in this process would read "
            "1.6-1.8x slow; measure host modes first or use a fresh process")


def _make_loop(unroll: int = UNROLL) -> Callable[[Callable, int], None]:
    # an unrolled body keeps the Python loop's own cost out of the per-call figure
    body = "\n".join(["        fn()"] * unroll)
    src = (f"def loop(fn, n, _rep=_rep):\n    for _ in _rep(None, n // {unroll}):\n{body}\n"
           f"    for _ in _rep(None, n % {unroll}):\n        fn()\n")
    ns = {"_rep": itertools.repeat}
    exec(src, ns)  # noqa: S102 - generated from constants above
    return ns["loop"]


run_calls = _make_loop()


def eager_round(fn: Callable, n: int, sync: Callable[[], None], clock=time.perf_counter) -> float:
    """Seconds per call of n back-to-back calls, device synced before and after."""
    sync()
    t0 = clock()
    run_calls(fn, n)
    sync()
    return (clock() - t0) / n


def calls_for(per_call_s: float, target_round_s: float, lo: int, hi: int) -> int:
    """Calls per round so a round lasts about target_round_s, within [lo, hi]."""
    if per_call_s <= 0:
        return hi
    return int(max(lo, min(hi, round(target_round_s / per_call_s))))


def rotated(names: list, r: int) -> list:
    k = r % len(names) if names else 0
    return names[k:] + names[:k]


@dataclass
class Options:
    rounds: int = 25
    warmup_rounds: int = 2
    target_round_s: float = 2e-3   # host time a round should take
    min_calls: int = 16
    max_calls: int = 512
    device_rounds: int = 5
    device_calls: int = 20


def _no_range(name):
    return contextlib.nullcontext()


def measure_eager(fns: dict, sync: Callable[[], None], opt: Options, ranges=_no_range) -> dict:
    """Interleaved eager rounds. Returns {name: (samples in us/call, calls per round)}."""
    _guard()
    names = list(fns)
    calls = {}
    for name in names:  # warm up, then size each variant's rounds from a short estimate
        est = min(eager_round(fns[name], 4, sync) for _ in range(3))
        calls[name] = calls_for(est, opt.target_round_s, opt.min_calls, opt.max_calls)
    samples = {name: [] for name in names}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for r in range(opt.warmup_rounds + opt.rounds):
            for name in rotated(names, r):
                with ranges(name):
                    us = eager_round(fns[name], calls[name], sync) * 1e6
                if r >= opt.warmup_rounds:
                    samples[name].append(us)
    finally:
        if gc_was:
            gc.enable()
    return {name: (samples[name], calls[name]) for name in names}


@dataclass
class Captured:
    graph: object
    calls: int
    last: object = None          # the last call's return value, valid after each replay


def capture(fn: Callable, calls: int, stream, warmup: int = 3) -> Captured:
    """Captures `calls` back-to-back calls of fn into one CUDA graph on `stream`.

    Everything fn needs must be built already; the warm-up runs on the same stream first.
    """
    import torch
    try:
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                fn()
        stream.synchronize()
        g = torch.cuda.CUDAGraph()
        last = None
        with torch.cuda.graph(g, stream=stream):
            for _ in range(calls):
                last = fn()
        stream.synchronize()
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        torch.cuda.synchronize()
        raise CaptureError(f"{type(e).__name__}: {e}") from e
    return Captured(g, calls, last)


def replay_us(cap: Captured, stream) -> float:
    """One timed replay, per call in microseconds (CUDA events on the capture stream)."""
    import torch
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record(stream)
        cap.graph.replay()
        end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / cap.calls


def measure_graph(caps: dict, stream, opt: Options, ranges=_no_range) -> dict:
    """Interleaved replay rounds over captured graphs. Returns {name: samples in us/call}."""
    _guard()
    names = list(caps)
    samples = {name: [] for name in names}
    for r in range(opt.warmup_rounds + opt.rounds):
        for name in rotated(names, r):
            with ranges(name):
                us = replay_us(caps[name], stream)
            if r >= opt.warmup_rounds:
                samples[name].append(us)
    return samples


@dataclass
class DeviceSample:
    per_call_us: float
    kernels_per_call: float
    names: Counter = field(default_factory=Counter)


def short_kernel_name(name: str, width: int = 90) -> str:
    """Kernel names without template arguments; keeps a copy/transpose hint that the base drops."""
    name = name.removeprefix("void ").strip()
    if len(name) <= width:
        return name
    base = name.split("<", 1)[0].split("(", 1)[0]
    tags = [t for t in ("copy", "transpose", "splitKreduce", "reduce") if t in name and t not in base]
    return base + (f" [{','.join(tags)}]" if tags else "")


def is_kernel(name: str) -> bool:
    return not (name.startswith("Memcpy") or name.startswith("Memset"))


def summarize_device_events(events, calls: int) -> DeviceSample:
    """Per call device time and kernel count from (name, duration_us) device-side events.

    Only GPU-side activity is passed in: CPU rows already contain their kernels' time, so
    summing both would count it twice.
    """
    total = 0.0
    names = Counter()
    for name, dur in events:
        total += dur
        names[short_kernel_name(name)] += 1
    kernels = sum(c for n, c in names.items() if is_kernel(n))
    return DeviceSample(total / calls, kernels / calls, names)


def _device_events(prof):
    from torch.autograd import DeviceType
    for e in prof.events():
        if getattr(e, "device_type", None) == DeviceType.CUDA:
            yield e.name, e.time_range.elapsed_us()


def profile_calls(fn: Callable, calls: int, sync: Callable[[], None]) -> DeviceSample:
    from torch.profiler import ProfilerActivity, profile
    _mark_profiled()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_calls(fn, calls)
        sync()
    return summarize_device_events(_device_events(prof), calls)


def measure_device(fns: dict, sync: Callable[[], None], opt: Options, ranges=_no_range) -> dict:
    """Interleaved profiler rounds. Returns {name: [DeviceSample per round]}."""
    names = list(fns)
    for name in names:
        run_calls(fns[name], 3)
    out = {name: [] for name in names}
    for r in range(opt.device_rounds):
        for name in rotated(names, r):
            with ranges(name):
                out[name].append(profile_calls(fns[name], opt.device_calls, sync))
    return out


def calibration_us(rounds: int = 15, calls: int = 2000) -> float:
    """Median host cost of a CPU-only torch.empty: taken before and after the profiler phase
    to show (and detect) the slowdown a profiler session leaves behind."""
    import torch
    fn = lambda: torch.empty(16)  # noqa: E731
    xs = sorted(eager_round(fn, calls, lambda: None) * 1e6 for _ in range(rounds))
    return xs[len(xs) // 2]


def warm_host(max_s: float = 3.0, tol: float = 0.05) -> float:
    """Repeats the calibration until two readings agree within tol (or max_s passes).

    On the lent VM the first seconds of a process run measurably slower (seen: 1.9 µs for the
    calibration call at start, 1.0 µs later), which would bias whichever probe ran first.
    """
    t_end = time.perf_counter() + max_s
    prev = calibration_us(rounds=5, calls=2000)
    while time.perf_counter() < t_end:
        cur = calibration_us(rounds=5, calls=2000)
        if abs(cur - prev) <= tol * prev:
            return cur
        prev = cur
    return prev
