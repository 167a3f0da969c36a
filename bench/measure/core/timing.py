"""The three timing modes, over the same zero-argument callables.

eager  : N back-to-back calls between two device syncs, host clock; per call = elapsed / N.
graph  : the same N calls captured once into a CUDA graph on the harness stream; replays timed
         with CUDA events; per call = replay time / N.
device : torch.profiler (CUDA activity) over N eager calls; per call = summed device-side event
         time / N, plus kernels per call and their names.

Variants of one probe are measured in alternating rounds (A B C, B C A, C A B, ...) so machine
drift hits them alike and ratios can be taken round by round.

A profiler session can leave host dispatch in the same process slower for the rest of its life,
even for CPU-only torch calls (not on every machine; a wrong figure would be silent:
log 2026-11-29-1827), so once
`measure_device` has run, `measure_eager` and `measure_graph` refuse with ContaminatedError.
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import math
import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from cudnn_hostbench.bench.measure.core.kernels import families as kernel_families
from cudnn_hostbench.bench.measure.runfile.stats import relative_spread

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
    ns: dict = {"_rep": itertools.repeat}
    exec(src, ns)  # noqa: S102 - generated from constants above
    return ns["loop"]


run_calls = _make_loop()


def eager_round(fn: Callable, calls: int, sync: Callable[[], None], clock=time.perf_counter) -> float:
    """Seconds per call of `calls` back-to-back calls, device synced before and after."""
    sync()
    t0 = clock()
    run_calls(fn, calls)
    sync()
    return (clock() - t0) / calls


LEVELS = ("fast", "mid", "slow")   # the host levels an eager cycle is kept in (Watch)
REREAD_ENV = "HB_TRACE_REREAD"   # "1": read the host sentinel twice after each eager cycle (the trace's)

LONG_ROUND_S = 8e-3   # heavy calls: fewer than min_calls once a round would last longer than this
FEWEST_CALLS = 2


def calls_for(per_call_s: float, target_round_s: float, least: int, most: int, long_round_s: float = LONG_ROUND_S) -> int:
    """Calls per round so a round lasts about target_round_s, within [lo, hi]; a call so slow
    that lo calls would last past long_round_s gets just enough calls to pass it (at least
    FEWEST_CALLS): its figure is GPU- or build-bound and gains nothing from 16 calls a round, while
    a 1-8 ms call at 16 calls made the heavy probes most of the suite's time."""
    if per_call_s <= 0:
        return most
    least = min(least, max(FEWEST_CALLS, math.ceil(long_round_s / per_call_s)))
    return int(max(least, min(most, round(target_round_s / per_call_s))))


def rotated(names: list, start: int) -> list:
    k = start % len(names) if names else 0
    return names[k:] + names[:k]


GRAPH_ROUNDS = 4         # per worker: CUDA-graph replays are GPU-bound (two runs agree within 0.5 %)


@dataclass
class Options:
    rounds: int = 25
    warmup_rounds: int = 2
    target_round_s: float = 2e-3   # host time a round should take
    min_calls: int = 16
    max_calls: int = 512
    graph_rounds: int | None = None  # replays are GPU-bound and agree within 0.5 % between runs: fewer
    #                                  rounds than eager (None: as many)
    device_rounds: int = 3         # per worker: device figures agree within 0.2 % between runs, so
    #                                the workers' replicates are worth more than more profiler rounds
    device_more: int = 6           # more profiler rounds where the first ones spread (DEVICE_SPREAD)
    device_calls: int = 20
    rotation: int = 0              # offset of the variant rotation (each worker its own)
    max_round_factor: int = 3      # at most this many times the rounds, discards included
    target_se: float = 0.0         # eager: stop once every variant's median is known to this relative
    #                                standard error (0: always `rounds`), after at least min_rounds
    min_rounds: int = 8


def _no_range(name):
    return contextlib.nullcontext()


@dataclass
class Watch:
    """What decides that a round cycle is kept, and what was thrown away.

    host   : a hoststate.HostState; the sentinel readings on both sides of an eager cycle put it
             in the host's fast, middle or slow level (or 'mixed': a switch, always discarded);
             a record keeps the cycles of one level, the fast one when it has enough of them;
             a record of the middle level is a slow-state record (not fast), its cycles never
             pooled with the slow level's.
    clocks : a gpustate.Clocks; a graph or device cycle is kept only when the SM clock read
             while its work runs is within 95 % of the median clock of the same work's cycles.
    After each measure_* call: `discarded` (reason -> cycles), `sentinel` (readings next to
    kept cycles), `sm_mhz` (clocks after kept cycles), `fell_back` (too few cycles were kept,
    so every cycle is used and the figure is flagged).
    """
    host: Any = None     # a hoststate.HostState
    clocks: Any = None   # a gpustate.GpuClocks
    min_kept: int = 3

    def __post_init__(self):
        self.cycle_log: list = []   # every eager cycle of the process: (start, end, bucket), for the host trace
        self.begin()

    def begin(self) -> None:
        self.discarded: Counter[str] = Counter()
        self.sentinel: list = []
        self.sm_mhz: list = []
        self.fell_back = False
        self.state = ""        # host state of the kept eager cycles: 'fast' or 'slow'
        self.level = ""        # ... and their level: 'fast', 'mid' or 'slow'
        self.busy: list = []   # clock readings taken during the current cycle's GPU work

    def host_read(self):
        return self.host.read() if self.host is not None else None

    def host_ready(self):
        """The sentinel reading a cycle starts from; waits for the fast state while the host's
        gate budget lasts."""
        return self.host.await_fast() if self.host is not None else None

    def want_fast(self) -> bool:
        return self.host is not None and self.host.gating()

    def host_state(self, before, after) -> str | None:
        """The host level ('fast', 'mid', 'slow') both sentinel readings around a cycle agree on,
        else 'mixed'."""
        if self.host is None:
            return None
        a, b = self.host.level(before), self.host.level(after)
        return a if a == b else "mixed"

    def settled_state(self, before, after) -> tuple[str | None, float | None]:
        """host_state(), with one more reading when the first one after the cycle disagrees with
        the one before it: the first reading after a cycle often sits one level up for a moment,
        and a second reading a millisecond later is back where the cycle began far more often than
        the level has really changed (log 2026-12-04-2011). Returns (state, the reading used)."""
        got = self.host_state(before, after)
        if got == "mixed":
            again = self.host_read()
            settled = self.host_state(before, again)
            if settled != "mixed":
                return settled, again
        return got, after

    def clock_read(self):
        return self.clocks.sm_mhz() if self.clocks is not None else None

    def busy_read(self) -> None:
        """A clock reading taken while the GPU is working (after a launch, before its sync): an
        idle GPU clocks down within microseconds, so a reading after the sync says nothing."""
        mhz = self.clock_read()
        if mhz is not None:
            self.busy.append(mhz)

    def meta(self) -> dict:
        return {"discarded": dict(self.discarded), "sentinel": list(self.sentinel),
                "sm_mhz": list(self.sm_mhz), "fell_back": self.fell_back, "host_state": self.state,
                "host_level": self.level,
                "top_mhz": getattr(self.clocks, "top", 0) or None}


def median_se(values: list) -> float:
    """The relative standard error of a median of `values` (1.2533 σ/√n, σ from the IQR, so one
    outlying round does not hold the cycles open)."""
    n = len(values)
    if n < 4:
        return math.inf
    xs = sorted(values)
    med = statistics.median(xs)
    iqr = xs[(3 * n) // 4] - xs[n // 4]
    return 1.2533 * (iqr / 1.349) / math.sqrt(n) / med if med > 0 else math.inf


def _cycles(names: list, opt: Options, run_cycle: Callable[[list], dict], judge, watch: "Watch | None",
            rounds: int, target_se: float = 0.0, fresh: bool = True) -> dict:
    """Runs rotated round cycles until one bucket holds `rounds` kept cycles (or the limit of
    max_round_factor x rounds is reached).

    run_cycle(order) -> {name: value}; judge() -> (bucket, sentinel), called right after each
    cycle: bucket None keeps the cycle, 'fast'/'mid'/'slow' put it in that host level's bucket, any
    other string is a discard reason. Warm-up cycles are never kept. Of the host buckets the fast
    one is kept when it holds at least half the rounds (or min_kept), else the fuller one.
    Returns {name: kept values}.
    """
    buckets: dict = {}
    every: dict[str, list] = {n: [] for n in names}
    if watch is not None and fresh:   # not fresh: more cycles of the same figures, counted with them
        watch.begin()
    done, limit = 0, opt.warmup_rounds + rounds * max(1, opt.max_round_factor)
    goal = _Goal(names, rounds, opt.min_rounds, target_se)
    while done < limit and not _full(buckets, watch, goal):
        vals = run_cycle(rotated(names, done + opt.rotation))
        bucket, sentinel = judge() if watch is not None else (None, None)
        done += 1
        if done <= opt.warmup_rounds:
            continue
        for name in names:
            every[name].append(vals[name])
        if bucket not in (None, *LEVELS):
            watch.discarded[bucket] += 1   # type: ignore[union-attr]  # a bucket comes from a watch
            continue
        buckets.setdefault(bucket, []).append((vals, sentinel))
    need = watch.min_kept if watch is not None else 1
    chosen = _chosen(buckets, need, goal)
    kept = buckets.get(chosen, [])
    if watch is not None and _settle_watch(watch, buckets, chosen, kept, min(rounds, need)):
        return every
    return {name: [v[name] for v, _ in kept] for name in names}


class _Goal(NamedTuple):
    """What ends the cycles: `rounds` kept, or (target_se > 0) every median known to it after min_rounds."""
    names: list
    rounds: int
    min_rounds: int
    target_se: float


def _precise(bucket: list, goal: _Goal) -> bool:
    """Every variant's median known well enough, after min_rounds."""
    return (goal.target_se > 0 and len(bucket) >= min(goal.rounds, goal.min_rounds)
            and all(median_se([v[name] for v, _ in bucket]) <= goal.target_se for name in goal.names))


def _full(buckets: dict, watch: "Watch | None", goal: _Goal) -> bool:
    """Whether a bucket is done; while the host gate lasts, only a full fast bucket ends the cycles."""
    if watch is not None and watch.want_fast():
        fast = buckets.get("fast", [])
        return len(fast) >= goal.rounds or _precise(fast, goal)
    return any(len(bucket) >= goal.rounds or _precise(bucket, goal) for bucket in buckets.values())


def _chosen(buckets: dict, need: int, goal: _Goal):
    """The bucket kept: none when the cycles were not sorted by host state, the fast one when it
    holds at least half the rounds (or `need`) or is precise, else the fullest."""
    if None in buckets or not buckets:   # cycles not sorted by host state: keep them all
        return None
    rounds = goal.rounds
    if len(buckets.get("fast", ())) >= max(need, min(rounds, (rounds + 1) // 2)) or _precise(buckets.get("fast", []), goal):
        return "fast"
    return max(buckets, key=lambda k: len(buckets[k]))


def _settle_watch(watch: "Watch", buckets: dict, chosen, kept: list, least: int) -> bool:
    """The watch's discards, host level and state, and sentinels from the chosen bucket; True when
    it kept fewer than `least` cycles (every cycle is kept then, and the figure has no host state)."""
    for level, bucket in buckets.items():
        if level != chosen:
            watch.discarded[f"host_{level}"] += len(bucket)
    watch.level = chosen or ""
    watch.state = "slow" if chosen == "mid" else (chosen or "")   # not fast: a slow-state figure
    watch.sentinel += [s for _, s in kept if s is not None]
    if len(kept) < least:
        watch.fell_back = True   # too few clean cycles: keep them all, and say so
        watch.state = watch.level = ""   # ... which mix host states: the figure has none
        return True
    return False

def measure_eager(fns: dict, sync: Callable[[], None], opt: Options, ranges=_no_range,
                  watch: Watch | None = None) -> dict:
    """Interleaved eager rounds. Returns {name: (samples in us/call, calls per round)}."""
    _guard()
    names = list(fns)
    calls = {}
    for name in names:  # warm up, then size each variant's rounds from a short estimate
        est = min(eager_round(fns[name], 4, sync) for _ in range(3))
        calls[name] = calls_for(est, opt.target_round_s, opt.min_calls, opt.max_calls)

    state: dict = {"before": None, "t0": 0.0}
    reread = os.environ.get(REREAD_ENV) == "1"

    def cycle(order):
        if watch is not None:
            state["before"] = watch.host_ready()
        state["t0"] = time.perf_counter()
        out = {}
        for name in order:
            with ranges(name):
                out[name] = eager_round(fns[name], calls[name], sync) * 1e6
        state["t1"] = time.perf_counter()
        return out

    def judge():
        before, after = state["before"], watch.host_read()
        if watch.host is None:
            return None, None
        if reread:   # a second reading for the trace only: is the first one after a cycle biased?
            watch.host_read()
        bucket, after = watch.settled_state(before, after)
        watch.cycle_log.append((state["t0"], state["t1"], bucket))
        return bucket, max(before, after)

    gc_was = gc.isenabled()
    gc.disable()
    try:
        samples = _cycles(names, opt, cycle, judge, watch, opt.rounds, opt.target_se)
    finally:
        if gc_was:
            gc.enable()
    return {name: (samples[name], calls[name]) for name in names}


def _judge_clock(watch: Watch):
    seen = []   # this workload's readings: its usual clock is their median

    def judge():
        mhz = min(watch.busy) if watch.busy else None
        watch.busy = []
        if mhz is not None:
            seen.append(mhz)
        ref = statistics.median(seen) if len(seen) >= 3 else None
        if watch.clocks is not None and ref is not None and watch.clocks.dropped(mhz, ref):
            return "clock_drop", None
        if mhz is not None:
            watch.sm_mhz.append(mhz)
        return None, None
    return judge


@dataclass
class Captured:
    graph: Any                   # a torch.cuda.CUDAGraph
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
    except Exception as e:
        torch.cuda.synchronize()
        raise CaptureError(f"{type(e).__name__}: {e}") from e
    return Captured(g, calls, last)


def replay_us(cap: Captured, stream, during: Callable[[], None] | None = None) -> float:
    """One timed replay, per call in microseconds (CUDA events on the capture stream);
    `during()` runs while the replay is in flight."""
    import torch
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record(stream)
        cap.graph.replay()
        end.record(stream)
    if during is not None:
        during()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / cap.calls


def measure_graph(caps: dict, stream, opt: Options, ranges=_no_range, watch: Watch | None = None) -> dict:
    """Interleaved replay rounds over captured graphs. Returns {name: samples in us/call}."""
    _guard()
    names = list(caps)

    def cycle(order):
        out = {}
        for name in order:
            with ranges(name):
                out[name] = replay_us(caps[name], stream, during=watch.busy_read if watch else None)
        return out

    return _cycles(names, opt, cycle, _judge_clock(watch) if watch else None, watch, opt.graph_rounds or opt.rounds)


@dataclass
class DeviceSample:
    per_call_us: float
    kernels_per_call: float
    names: Counter = field(default_factory=Counter)
    times: Counter = field(default_factory=Counter)   # µs per kernel name, over all calls
    families: dict = field(default_factory=dict)      # kernel family -> kernels per call (kernels.py)


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
    names: Counter[str] = Counter()
    times: Counter = Counter()   # summed µs
    full: Counter[str] = Counter()
    for name, dur in events:
        total += dur
        names[short_kernel_name(name)] += 1
        times[short_kernel_name(name)] += dur
        full[name] += 1     # families from the full name: a template argument may say 'copy'
    kernels = sum(c for n, c in names.items() if is_kernel(n))
    return DeviceSample(total / calls, kernels / calls, names, times, kernel_families(full, calls))


def _device_events(prof):
    from torch.autograd import DeviceType
    for e in prof.events():
        if getattr(e, "device_type", None) == DeviceType.CUDA:
            yield e.name, e.time_range.elapsed_us()


def profile_calls(fn: Callable, calls: int, sync: Callable[[], None],
                  during: Callable[[], None] | None = None) -> DeviceSample:
    from torch.profiler import ProfilerActivity, profile
    _mark_profiled()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_calls(fn, calls)
        if during is not None:
            during()
        sync()
    return summarize_device_events(_device_events(prof), calls)


def measure_device(fns: dict, sync: Callable[[], None], opt: Options, ranges=_no_range,
                   watch: Watch | None = None) -> dict:
    """Interleaved profiler rounds. Returns {name: [DeviceSample per round]}."""
    names = list(fns)
    for name in names:
        run_calls(fns[name], 3)

    def cycle(order):
        out = {}
        for name in order:
            with ranges(name):
                out[name] = profile_calls(fns[name], opt.device_calls, sync,
                                          during=watch.busy_read if watch else None)
        return out

    dev = Options(**{**vars(opt), "warmup_rounds": 0})
    judge = _judge_clock(watch) if watch else None
    got = _cycles(names, dev, cycle, judge, watch, opt.device_rounds)
    # measured once per run, on one process: a row whose few rounds spread is measured more, since
    # the median of three spread rounds is no figure: one spread round moves it by several per cent
    # from the next run's (log 2026-12-02-1013)
    if opt.device_more > 0 and any(device_spread(got.get(n) or []) > DEVICE_SPREAD for n in names):
        more = _cycles(names, Options(**{**vars(dev), "rotation": dev.rotation + opt.device_rounds}), cycle, judge,
                       watch, opt.device_more, fresh=False)
        got = {n: [*got.get(n, []), *more.get(n, [])] for n in names}
    return got


DEVICE_SPREAD = 0.02   # (max - min) / median of a device row's rounds past which it gets device_more rounds


def device_spread(samples: list) -> float:
    return relative_spread([s.per_call_us for s in samples if s.per_call_us > 0]) or 0.0


def calibration_us(readings: int = 15) -> float:
    """Median host-state sentinel reading (a CPU-only torch.empty): taken before and after the
    profiler phase to show (and detect) the slowdown a profiler session can leave behind."""
    from cudnn_hostbench.bench.measure.core.hoststate import sentinel_us
    return statistics.median(sentinel_us() for _ in range(readings))
