"""The step's timeline around its device syncs, and the syncs re-priced for a faster host.

A host sync costs its fixed price plus the device work still queued when the host reaches it, so
a step whose host gets faster arrives sooner and waits as long or longer: shortening the sync's
line projected half the wait a fixed step still paid (log 2026-12-01-0517). The timeline pass
(`measure`) runs the step with only its sync calls wrapped:

- natural steps: for each sync of the step, in order, the host time since the previous sync
  returned (its segment: it launches the device work the sync waits for) and the sync's own time;
- drained steps: before each sync the device is drained first, so the sync's own time is its
  fixed cost (the call and its copy on an idle device).

`project_syncs` is pure (audit.json's `timeline`, the device mode's µs per step, the host time now
and projected): per sync, its wait now (own time − fixed) and projected. The model, per segment
(the queue is empty when the previous sync returns): the device finishes the segment's work
`c + d` µs into it, d its device work (the device mode's µs per step, one sync per step; several:
each sync's wait plus the rest shared by host time) and c when it ran busy to the end (from the
measured wait: c = wait + host − d, 0 when it did not wait; a device busy through the previous
sync's fixed part makes it negative, down to −fixed). Findings shorten the host by r
(projected host / host now), c with it; copy kernels a removed finding launched leave d. The
projected wait is max(0, d' + c·r − host·r), so a sync that waited keeps waiting, and one that
did not starts to once the host is faster than the device's work.

A sync line's other calls (the `y.abs().amax()` of `float(y.abs().amax())`) run last in its
segment, right before the sync, at their own projected length: the findings that shorten the rest
of the step leave them alone, and the device's busy tail often lies inside them: scaled with the
rest of the step, a scheduler step's wait was projected well above what its hand-fixed step waited
(log 2026-12-03-1505). `tails` gives each segment
that part (µs now, projected); the rest of the segment scales by the rest of the step's ratio.
"""
from __future__ import annotations

import functools
import statistics
import sys
import time
from collections import Counter

from cudnn_hostbench.bench.audit import launches as audit_launches
from cudnn_hostbench.bench.audit import usercode
from cudnn_hostbench.bench.audit.count import SYNC_METHODS, Patcher, _on_device
from cudnn_hostbench.bench.audit.rules import is_copy_kernel
from cudnn_hostbench.bench.measure.runfile import stats

MIN_STEPS = 20
TARGET_S = 0.2            # each pass runs about this long (MIN_STEPS..MAX_STEPS steps)
MAX_STEPS = 2000
SAME = 0.9                # this share of the steps must sync alike, else no timeline
DRAIN_CHUNK = 5           # drained steps between two host-state checks (`held`)
HELD_TRIES = 4            # drained chunks tried, at most, per chunk kept


def sync_calls(torch) -> list:
    """[(owner, attribute, name, on_self)]: the calls that wait for the device (count.SYNC_METHODS,
    torch.cuda.synchronize, Stream/Event.synchronize); on_self: a sync only on a device tensor."""
    out = [(torch.Tensor, m, shown, True) for m, shown in SYNC_METHODS.items()]
    cuda = getattr(torch, "cuda", None)
    out.append((cuda, "synchronize", "torch.cuda.synchronize", False))
    out += [(getattr(cuda, c, None), "synchronize", f"{c}.synchronize", False) for c in ("Stream", "Event")]
    return out


class _Pass:
    def __init__(self, drain, device_type: str, clock):
        self.events: list = []       # per step: [(line, name, t_in, t_out)]
        self.drain, self.device_type, self.clock = drain, device_type, clock
        self.depth = 0
        self.on = False

    def wrap(self, orig, name: str, on_self: bool):
        def wrapper(*args, **kwargs):
            if not self.on or self.depth or (on_self and not (args and _on_device(args[0], self.device_type))):
                return orig(*args, **kwargs)
            self.depth += 1
            try:
                if self.drain is not None:
                    self.drain()
                t0 = self.clock()
                out = orig(*args, **kwargs)
                t1 = self.clock()
            finally:
                self.depth -= 1
            line = usercode.innermost_user_line(sys._getframe(1)) or "(no user line)"
            self.events[-1].append((line, name, t0, t1))
            return out
        return wrapper


def _run(step, steps: int, calls, drain, device_type: str, clock) -> list:
    ps = _Pass(drain, device_type, clock)
    p = Patcher()
    try:
        for owner, attr, name, on_self in calls:
            p.patch(owner, attr, lambda orig, name=name, on_self=on_self: ps.wrap(orig, name, on_self))
        ps.on = True
        for _ in range(steps):
            ps.events.append([])
            step()
    finally:
        ps.on = False
        p.restore()
    return ps.events


def _drained(step, steps: int, calls, drain, device_type: str, clock, held) -> tuple[list, bool | None]:
    """The drained steps, and whether they were held to the host state `held` checks (None: not
    asked). With `held`, steps run in chunks of DRAIN_CHUNK, each kept only when `held(True)` (which
    may wait for the state) and `held(False)` (a reading) bracket it; too few kept: every chunk run,
    and False."""
    if held is None:
        return _run(step, steps, calls, drain, device_type, clock), None
    kept: list = []
    ran: list = []
    for _ in range(HELD_TRIES * -(-steps // DRAIN_CHUNK)):
        if len(kept) >= steps:
            break
        before = held(True)
        got = _run(step, DRAIN_CHUNK, calls, drain, device_type, clock)
        ran += got
        if before and held(False):
            kept += got
    return (kept, True) if len(kept) >= min(steps, MIN_STEPS) else (ran, False)


def measure(step, step_us: float | None, *, torch=None, device_type: str = "cuda", drain=None, calls=None,
            clock=time.perf_counter, held=None) -> dict:
    """audit.json's `timeline`: {"segments": [{line, sync, host_us, sync_us, fixed_us}], "steps",
    "syncs_per_step"}, the medians over the steps with the step's usual sync sequence (SAME of
    them, else {"error"}); {} for a step that does not sync. `drain` empties the device queue (torch.cuda.synchronize).
    `held(wait)`: whether the host is in the state the projection is held to; the drained syncs
    (the fixed cost, host-paced) are kept only from chunks of steps it brackets ("fixed_held")."""
    if torch is None:
        import torch
    calls = sync_calls(torch) if calls is None else calls
    if drain is None and device_type == "cuda":
        drain = torch.cuda.synchronize          # bound before the pass wraps it
    steps = int(min(MAX_STEPS, max(MIN_STEPS, TARGET_S / max((step_us or 100.0) * 1e-6, 1e-7))))
    natural = _run(step, steps, calls, None, device_type, clock)
    if not any(natural):
        return {}
    drained, fixed_held = _drained(step, max(MIN_STEPS, steps // 4), calls, drain, device_type, clock, held)
    shape = Counter(_shape(syncs) for syncs in natural).most_common(1)[0][0]
    keep = [i for i, syncs in enumerate(natural) if _shape(syncs) == shape]
    host, own = _natural_times(natural, keep, len(shape))
    fixed = _drained_times(drained, shape)
    if not shape or not all(host) or not all(fixed) or len(keep) < SAME * len(natural):
        return {"error": "the step's syncs differ from step to step: no timeline", "steps": steps}
    segs = [{"line": line, "sync": name, "host_us": statistics.median(host[k]),
             "sync_us": statistics.median(own[k]),
             "fixed_us": min(statistics.median(fixed[k]), statistics.median(own[k])), "noise_us": _iqr(fixed[k])}
            for k, (line, name) in enumerate(shape)]
    return {"segments": segs, "steps": len(keep), "syncs_per_step": len(shape),
            "step_us": sum(seg["host_us"] + seg["sync_us"] for seg in segs),
            **({} if fixed_held is None else {"fixed_held": fixed_held, "drained_steps": len(drained)})}


def _shape(syncs: list) -> tuple:
    """A step's sync sequence: (line, sync) of each."""
    return tuple((line, name) for line, name, _, _ in syncs)


def _drained_times(drained: list, shape: tuple) -> list[list]:
    """Per sync of the step, its own µs in the drained steps of the usual sequence."""
    fixed: list[list] = [[] for _ in shape]
    for syncs in drained:
        if _shape(syncs) == shape:
            for k, (_, _, start, end) in enumerate(syncs):
                fixed[k].append((end - start) * 1e6)
    return fixed


def _natural_times(natural: list, keep: list, per_step: int) -> tuple[list, list]:
    """Per sync of the step, over the kept steps: the host µs before it (since the previous sync
    returned, whichever step made it) and its own µs."""
    host: list[list] = [[] for _ in range(per_step)]
    own: list[list] = [[] for _ in range(per_step)]
    last = None                                  # the previous sync's return, whichever step made it
    prev_out = []
    for syncs in natural:
        prev_out.append(last)
        if syncs:
            last = syncs[-1][3]
    for i in keep:
        if prev_out[i] is None:
            continue
        last_out = prev_out[i]
        for k, (_, _, start, end) in enumerate(natural[i]):
            host[k].append((start - last_out) * 1e6)
            own[k].append((end - start) * 1e6)
            last_out = end
    return host, own

def _iqr(xs: list) -> float:
    """The IQR the tables print (bench.measure.runfile.stats); 0 for fewer than 4 readings: too few to say."""
    return (stats.summarize(xs).iqr or 0.0) if len(xs) >= 4 else 0.0


def waited(segment: dict) -> float:
    """A sync's wait now: its own time past its fixed cost, counted only beyond the drained syncs'
    own spread (IQR, `noise_us`). A wait inside it is noise: read as a device that ran busy right up
    to the sync, it projected a wait the fixed step never paid (log 2026-12-02-2249). Older audits carry no spread: as before."""
    w = segment["sync_us"] - segment["fixed_us"]
    return w if w > (segment.get("noise_us") or 0.0) else 0.0


def project_syncs(segments, device_us: float | None, host_now_us: float, host_proj_us: float,
                  device_cut_us: float = 0.0, tails: list | None = None) -> list:
    """Each sync now and projected (module doc): [{line, sync, fixed_us, wait_us, cost_us,
    host_us, device_us, wait_proj_us, cost_proj_us}]. `device_cut_us`: device µs per step the
    fixes remove (copy kernels), shared like the device time. `tails`: per segment, the host µs
    (now, projected) of its sync line's other calls, which run last before the sync (None: none)."""
    if not segments:
        return []
    hosts = [max(0.0, s["host_us"]) for s in segments]
    tails = [(min(max(0.0, t[0]), h), max(0.0, t[1])) if t else (0.0, 0.0)
             for t, h in zip(tails or [None] * len(segments), hosts)]
    r = max(0.0, host_proj_us / host_now_us) if host_now_us > 0 else 1.0
    rest_now = host_now_us - sum(b for b, _ in tails)
    # the rest of the step: what the findings shorten, by the ratio left once the tails are taken out
    r_rest = max(0.0, (host_proj_us - sum(b2 for _, b2 in tails)) / rest_now) if rest_now > 0 else r
    waits = [waited(s) for s in segments]
    spare = max(0.0, (device_us or 0.0) - sum(waits))
    total_h = sum(hosts)
    # a segment's device work fits in its wall time (host, wait, and the sync's fixed part)
    dev = [min(w + spare * (h / total_h if total_h > 0 else 1 / len(segments)), h + w + s["fixed_us"])
           for s, w, h in zip(segments, waits, hosts)]
    total_d = sum(dev)
    return [_project_sync(seg, (wait, host, dev_us, tail), r_rest, total_d, device_cut_us)
            for seg, wait, host, dev_us, tail in zip(segments, waits, hosts, dev, tails)]


def _project_sync(seg: dict, now: tuple, r_rest: float, total_d: float, device_cut_us: float) -> dict:
    """One sync projected; `now`: its (wait, host µs, device µs, (tail now, tail projected))."""
    w, h, d, (b, b2) = now
    c = min(h, max(-seg["fixed_us"], w + h - d)) if w > 0 else 0.0
    d2 = max(0.0, d - device_cut_us * d / total_d) if total_d > 0 else d
    at = functools.partial(_at, rest=h - b, r_rest=r_rest, r_tail=b2 / b if b > 0 else 1.0)
    h2 = at(h)
    w2 = max(0.0, d2 + at(c) - h2)
    placed = _placed(seg.get("launch"), h, w, at, device_cut_us > 0)
    if placed is not None:
        w2 = placed
    return {"line": seg["line"], "sync": seg["sync"], "fixed_us": seg["fixed_us"], "wait_us": w,
            "cost_us": seg["fixed_us"] + w, "host_us": h, "device_us": d, "device_proj_us": d2,
            "host_proj_us": h2, "wait_proj_us": w2, "cost_proj_us": seg["fixed_us"] + w2,
            **({"tail_us": b, "tail_proj_us": b2} if b > 0 else {}),
            **({"from_launches": True} if placed is not None else {})}

def _at(point: float, rest: float, r_rest: float, r_tail: float) -> float:
    """A point `t` µs into a segment, projected: its first `rest` µs by `r_rest`, the sync line's tail after them by `r_tail`."""
    return point * r_rest if point <= rest else rest * r_rest + (point - rest) * r_tail


def _placed(launch: dict | None, host_us: float, wait_us: float, projected, copies_cut: bool) -> float | None:
    """The projected wait from the segment's launches (bench.audit.launches), anchored on the wait
    measured now: the replay's change in when the device finishes against when the host arrives,
    added to it (a wait of 0 now: the replay's own slack). None without launches."""
    if not launch or not launch.get("launches") or not launch.get("host_us") or launch.get("lat_us") is None:
        return None
    k = host_us / launch["host_us"]            # the profiled segment in this segment's µs (the profiler slows the host)
    placed = [[off * k, dur, name, own] for off, dur, name, own in launch["launches"]]
    now = audit_launches.simulate(placed, host_us, launch["lat_us"])
    proj = audit_launches.simulate(placed, host_us, launch["lat_us"], projected,
                                   is_copy_kernel if copies_cut else lambda n: False)
    return max(0.0, wait_us + proj - now) if wait_us > 0 else max(0.0, proj - max(now, 0.0))
