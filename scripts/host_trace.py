"""Traces the host-state sentinel for a while: is this host bistable, and where is its floor?

    hostbench host-trace --seconds 20 [--out host_trace.json]

Prints the floor (as the harness learns it: the lower quartile of the fast cluster, not the
lowest reading), the fraction of readings within 5/10/15/25 % of it, and how long fast and slow
spells last (a VM host's vCPU can flip between a fast and a slow state; the harness discards
rounds timed in the slow one).
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.files import write_text_atomic
from cudnn_hostbench.scripts.cli import alias


def spells(flags: list[bool], times: list[float]) -> dict:
    """Median and longest run length (seconds) of consecutive True and False readings."""
    out = {True: [], False: []}
    start = 0
    for i in range(1, len(flags) + 1):
        if i == len(flags) or flags[i] != flags[start]:
            out[flags[start]].append(times[i - 1] - times[start])
            start = i
    return {("fast" if k else "slow"): {"n": len(v), "median_s": round(statistics.median(v), 3) if v else None,
                                         "max_s": round(max(v), 3) if v else None} for k, v in out.items()}


def summarize(readings: list[tuple[float, float]], tol: float = 0.10) -> dict:
    from cudnn_hostbench.bench.measure.hoststate import robust_floor
    times = [t for t, _ in readings]
    xs = [x for _, x in readings]
    floor = robust_floor(sorted(xs))   # the floor the harness would learn from these readings
    frac = {f"within_{int(k * 100)}pct": round(sum(x <= floor * (1 + k) for x in xs) / len(xs), 3)
            for k in (0.05, 0.10, 0.15, 0.25)}
    return {"readings": len(xs), "floor_us": floor, "lowest_us": min(xs), "median_us": statistics.median(xs),
            "p90_us": sorted(xs)[int(0.9 * (len(xs) - 1))], **frac,
            "spells": spells([x <= floor * (1 + tol) for x in xs], times)}


def add_parser(command) -> None:
    p = command("host-trace", run, description=__doc__)
    p.add_argument("--seconds", type=float, default=20.0, help="how long to trace")
    p.add_argument("--every", type=float, default=0.01, help="seconds between readings")
    p.add_argument("--out", help="also write the readings and summary as JSON")


def run(a) -> int:
    # the user's input first: a trace that cannot be kept is not worth tracing
    if not a.seconds > 0 or not a.every >= 0:
        print(f"{a.prog}: --seconds must be more than 0 and --every 0 or more, got {a.seconds:g} and {a.every:g}",
              file=sys.stderr)
        return 2
    if a.out and (Path(a.out).is_dir() or not Path(a.out).parent.is_dir()):
        print(f"{a.prog}: --out {a.out}: not a file in an existing folder", file=sys.stderr)
        return 2
    from cudnn_hostbench.bench.measure.context import pin_main_thread
    from cudnn_hostbench.bench.measure.hoststate import sentinel_us
    pin_main_thread()
    t0 = time.perf_counter()
    readings = []
    while time.perf_counter() - t0 < a.seconds:
        readings.append((time.perf_counter() - t0, sentinel_us()))
        time.sleep(a.every)
    s = summarize(readings)
    print(json.dumps(s, indent=1))
    if a.out:
        try:
            write_text_atomic(a.out, json.dumps({"summary": s, "readings": readings}))
        except OSError as e:
            print(f"{a.prog}: --out {a.out}: cannot write ({e.strerror or e})", file=sys.stderr)
            return 2
    return 0


main = alias("host-trace")   # python -m cudnn_hostbench.scripts.host_trace: `hostbench host-trace`

if __name__ == "__main__":
    sys.exit(main())
