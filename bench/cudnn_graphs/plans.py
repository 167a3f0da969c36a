"""Pinning a plan: time every plan that built and keep the fastest, by GPU time (CUDA events behind a
spin: kernel time, what a CUDA-graph integration pays) or by eager µs/call (host clock over
back-to-back calls: host + GPU, what an op-by-op integration pays). `b.pinned_by` says which."""
from __future__ import annotations

from cudnn_hostbench.bench.cudnn_graphs.build import Built
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

SPIN_CYCLES = 2_000_000


BY = ("graph", "eager")


def pin_plan(built: Built, variant_pack, stream, calls: int = 20, rounds: int = 3, by: str = "graph") -> int:
    """Times every built plan with execute_plan_at_index and pins the fastest (built.pinned,
    built.plan_us, built.pinned_by)."""
    import time

    import torch
    if by not in BY:
        raise ValueError(f"pin by {by!r}: one of {BY}")
    g, ws, h = built.graph, built.workspace, built.ctx.handle
    best, best_us = None, float("inf")
    with torch.cuda.stream(stream):
        for i in built.plans:
            try:
                for _ in range(3):
                    g.execute_plan_at_index(variant_pack, ws, i, handle=h)
                stream.synchronize()
            except Exception:  # noqa: BLE001 - listed but not executable here
                continue
            times = []
            for _ in range(rounds):
                if by == "eager":
                    stream.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        g.execute_plan_at_index(variant_pack, ws, i, handle=h)
                    stream.synchronize()
                    times.append((time.perf_counter() - t0) * 1e6 / calls)
                    continue
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                # hold the stream with a ~1 ms spin so every launch is queued before the start
                # event fires: the events then time the kernels, not the host's launch rate
                # (at 256^3 the host is slower than the GPU and would pick plans at random)
                torch.cuda._sleep(SPIN_CYCLES)
                s.record(stream)
                for _ in range(calls):
                    g.execute_plan_at_index(variant_pack, ws, i, handle=h)
                e.record(stream)
                e.synchronize()
                times.append(s.elapsed_time(e) * 1e3 / calls)
            us = sorted(times)[len(times) // 2]
            built.plan_us[i] = us
            if us < best_us:
                best, best_us = i, us
    if best is None:
        raise Unsupported("no built plan executes")
    built.pinned, built.pinned_by = best, by
    return best
