"""Where in each sync's segment the step launches its device work, and what a faster host makes of it.

The timeline (bench.audit.timeline) knows each sync's host segment, wait and fixed cost, and the
device mode the step's kernels; not when in the segment each kernel was launched. That decides the
wait once findings shorten the host: work launched early runs while the host is still busy, work
launched late is still queued when the host reaches the sync. A fixed step that drops a copy the
trap launched first starts its device later in the segment, so its device idles longer at the
segment's start (log 2026-12-03-1505), which one busy tail cannot show.

`measure` profiles a few steps (torch.profiler, CUDA activity: the runtime's launch calls on the
host, their kernels on the device, paired by correlation id) after every host timing, so its
overhead touches no figure. `from_events` is pure: per sync of the step, the launches of a typical
segment (offset from the previous sync's return, device µs, kernel) and the segment's profiled
host µs; the launch latency is the median start lag of the kernels that found the device idle.
`simulate` replays a segment on one stream with its host mapped (a point of the segment now to
the same point projected) and some kernels dropped: when the device finishes against when the
host reaches the sync.
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Callable

# host-side runtime calls that put work on a stream, and the calls that wait for the device
LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel", "cudaMemcpyAsync", "cudaMemsetAsync", "cuMemcpyAsync",
                "cuMemsetD8Async", "cuMemsetD32Async", "cudaGraphLaunch", "cuGraphLaunch")
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cuStreamSynchronize",
              "cuCtxSynchronize", "cuEventSynchronize", "cudaMemcpy")
IDLE_GAP_US = 1.0      # a kernel that starts this long after the previous one ended found the device idle
STEPS = 20             # steps profiled


def is_launch(name: str) -> bool:
    return name.startswith(LAUNCH_CALLS)


def is_sync(name: str) -> bool:
    return name in SYNC_CALLS or (name.endswith("Synchronize") and name.startswith(("cuda", "cu")))


def from_events(events, syncs_per_step: int) -> dict:
    """{"segments": [{"host_us", "launches": [[offset_us, device_us, kernel, own]]}] per sync of the
    step, "lat_us", "steps"} from profiler events [(name, on_device, start_us, end_us, correlation)]
    of whole steps back to back, else {"error"}. `own`: a copy the sync itself makes (the
    device-to-host copy right before it), part of its fixed cost, not of the segment's work."""
    host = sorted((e for e in events if not e[1]), key=lambda e: e[2])
    syncs = [e for e in host if is_sync(e[0])]
    if syncs_per_step < 1 or len(syncs) < syncs_per_step + 1:
        return {"error": f"{len(syncs)} syncs profiled, {syncs_per_step} a step: too few to place launches"}
    src = _pairs([h for h in host if is_launch(h[0])], sorted((e for e in events if e[1]), key=lambda e: e[2]))
    if not src:
        return {"error": "no launch paired with its device work"}
    lags = _start_lags(src)
    segs = _segments(syncs, src, syncs_per_step)
    out = []
    for pos in segs:
        if not pos:
            return {"error": "a sync of the step was never profiled with a segment before it"}
        out.append(_typical(pos))
    lat = statistics.median(lags) if lags else None
    if lat is None or not 0 <= lat < 1000:
        return {"error": f"no launch latency to read (device idle {len(lags)} times)"}
    return {"segments": out, "lat_us": lat, "steps": len(syncs) // syncs_per_step}


def _start_lags(pairs: dict) -> list:
    """The start lag of each kernel that found the device idle: its start − its launch's."""
    lags = []
    last_end = None
    for launch, work in sorted(pairs.values(), key=lambda p: p[1][2]):    # device idle before a kernel: its start lag
        if last_end is not None and work[2] - last_end > IDLE_GAP_US:
            lags.append(work[2] - launch[2])
        last_end = work[3] if last_end is None else max(last_end, work[3])
    return lags


def _segments(syncs: list, pairs: dict, syncs_per_step: int) -> list[list]:
    """Per sync of the step, the segments before it: the host µs since the sync before and the
    launches made in it."""
    segs: list[list] = [[] for _ in range(syncs_per_step)]
    by_start = sorted(pairs.values(), key=lambda p: p[0][2])
    for k, (prev, sync) in enumerate(zip(syncs, syncs[1:]), start=1):
        start, end = prev[3], sync[2]
        got = [[launch[2] - start, work[3] - work[2], work[0], False]
               for launch, work in by_start if start <= launch[2] < end]
        if got and _is_own_copy(got[-1][2]):
            got[-1][3] = True       # the sync's own copy (.item(), .cpu()): in its fixed cost
        segs[k % syncs_per_step].append({"host_us": end - start, "launches": got})
    return segs


def _is_own_copy(kernel: str) -> bool:
    """A device-to-host copy: the last one before a sync is the sync's own."""
    return "Memcpy" in kernel and ("DtoH" in kernel or "Device -> P" in kernel)


def _typical(segments: list) -> dict:
    """The median segment by host time among those with the commonest count of launches."""
    usual = Counter(len(s["launches"]) for s in segments).most_common(1)[0][0]
    alike = sorted((s for s in segments if len(s["launches"]) == usual), key=lambda s: s["host_us"])
    return alike[len(alike) // 2]

def _pairs(launches: list, device: list) -> dict:
    """{id: (launch, its device work)}: by correlation id, else (fewer than half paired that way) in
    order, one stream's work running in the order it was launched."""
    by_id = {e[4]: e for e in device if e[4] is not None}
    got = {i: (h, by_id[h[4]]) for i, h in enumerate(launches) if h[4] in by_id}
    if len(got) * 2 >= len(launches):
        return got
    return dict(enumerate(zip(launches, device)))


def simulate(launches, host_us: float, lat_us: float, at: Callable[[float], float] = lambda t: t,
             drop: Callable[[str], bool] = lambda name: False) -> float:
    """When the device finishes the segment's work, less when the host reaches the sync, in µs
    (negative: the device was done first): one stream, the queue empty at the segment's start,
    each kernel starting at its launch + `lat_us` or when the one before it ends. `at` maps a point
    of the segment now to the same point projected; `drop`: kernels the fixes remove."""
    end = 0.0
    for offset, dur, name, own in launches:
        if own or drop(name):
            continue
        end = max(at(offset) + lat_us, end) + dur
    return end - at(host_us)


def measure(step, syncs_per_step: int, steps: int = STEPS) -> dict:
    """Profiles `steps` steps and places their launches (from_events); on a CUDA device only."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
    events = [(e.name, e.device_type == DeviceType.CUDA, e.time_range.start, e.time_range.end, e.id)
              for e in prof.events()]
    return from_events(events, syncs_per_step)
