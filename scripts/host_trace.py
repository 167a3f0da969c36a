"""Traces the host-state sentinel for a while: is this host bistable, and where is its floor?

    hostbench host-trace --seconds 20 [--out host_trace.json]
    hostbench host-trace --run results/<stamp>     # what a run's workers saw (their host_trace.json)

Prints one verdict line: "this host is bistable: fast … µs, slow … µs, … % of time slow" or "not
bistable" (a VM host's vCPU can flip between a fast and a slow state; the harness discards rounds
timed in the slow one). `--json` prints the figures instead: the floor (as the harness learns it:
the lower quartile of the fast cluster, not the lowest reading), the fraction of readings within
5/10/15/25 % of it, the two states' medians and how long fast and slow spells last.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
from cudnn_hostbench.scripts.cli import alias, exit_with


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


def _time_share(flags: list[bool], times: list[float]) -> float:
    """The share of the traced time spent where `flags` is True: each reading stands for the time
    to the next one (the last for the median gap)."""
    if len(times) < 2:
        return float(sum(flags)) / max(len(flags), 1)
    gaps = [b - a for a, b in zip(times, times[1:])]
    gaps.append(statistics.median(gaps))
    total = sum(gaps)
    return sum(g for g, f in zip(gaps, flags) if f) / total if total > 0 else sum(flags) / len(flags)


def summarize(readings: list[tuple[float, float]], tol: float = 0.10) -> dict:
    from cudnn_hostbench.bench.measure.core.hoststate import SLOW_AT, robust_floor
    times = [t for t, _ in readings]
    xs = [x for _, x in readings]
    floor = robust_floor(sorted(xs))   # the floor the harness would learn from these readings
    frac = {f"within_{int(k * 100)}pct": round(sum(x <= floor * (1 + k) for x in xs) / len(xs), 3)
            for k in (0.05, 0.10, 0.15, 0.25)}
    fast = [x for x in xs if x <= floor * (1 + tol)]
    slow = [x for x in xs if x >= floor * SLOW_AT]   # the harness's slow state (in between: a switch)
    return {"readings": len(xs), "floor_us": floor, "lowest_us": min(xs), "median_us": statistics.median(xs),
            "p90_us": sorted(xs)[int(0.9 * (len(xs) - 1))], **frac,
            "fast_median_us": statistics.median(fast) if fast else None,
            "slow_median_us": statistics.median(slow) if slow else None,
            "slow_time_share": round(_time_share([x >= floor * SLOW_AT for x in xs], times), 3),
            "fast_time_share": round(_time_share([x <= floor * (1 + tol) for x in xs], times), 3),
            "spells": spells([x <= floor * (1 + tol) for x in xs], times)}


BISTABLE_SHARE = 0.05   # each state must hold at least this share of the time for the host to be bistable


def verdict(summary: dict) -> str:
    """One line over a summary (summarize): 'this host is bistable: fast … µs, slow … µs, … % of
    time slow' when both the fast state (within 10 % of the floor) and the slow one (at least
    hoststate.SLOW_AT times the floor) hold BISTABLE_SHARE of the time or more, else 'not bistable'
    and which state the host stays in."""
    slow, fast = summary.get("slow_time_share") or 0.0, summary.get("fast_time_share") or 0.0
    longest = ((summary.get("spells") or {}).get("slow") or {}).get("max_s")
    if (slow >= BISTABLE_SHARE and fast >= BISTABLE_SHARE and summary.get("slow_median_us")
            and summary.get("fast_median_us")):
        return (f"this host is bistable: fast {summary['fast_median_us']:.2f} µs, "
                f"slow {summary['slow_median_us']:.2f} µs, {slow * 100:.0f} % of time slow"
                + (f" (slow spells up to {longest:g} s)" if longest else "")
                + f"; {summary['readings']} readings, floor {summary['floor_us']:.2f} µs")
    if fast < BISTABLE_SHARE:
        return (f"not bistable: the host never settles near its floor ({summary['floor_us']:.2f} µs; median "
                f"{summary['median_us']:.2f} µs, {fast * 100:.0f} % of time within 10 %); "
                f"{summary['readings']} readings")
    return (f"not bistable: {fast * 100:.0f} % of time within 10 % of the floor {summary['floor_us']:.2f} µs, "
            f"{slow * 100:.1f} % slow; {summary['readings']} readings")


def _shares(levels: list[str], names: tuple) -> dict:
    return {k: round(levels.count(k) / len(levels), 3) if levels else None for k in names}


def worker_summary(doc: dict) -> dict:
    """One worker's host_trace.json in figures: the floor it judged by (and the earlier workers'
    it was given, and the one its readings alone give), its fast level (the median reading outside
    the slow state), and the shares of its readings and of its eager cycles in each level, as it
    judged them ('switch': the readings around the cycle disagreed)."""
    from cudnn_hostbench.bench.measure.core.hoststate import SLOW_AT, HostState, robust_floor
    floor = float(doc["floor_us"]) if doc.get("floor_us") else None   # none: the worker read too little
    judged = HostState(floor=floor, tol=float(doc.get("tol") or 0.10))   # levels as the worker read them
    xs = [float(us) for _, us in doc["readings"]]
    own = robust_floor(sorted(xs))
    under = [x for x in xs if own is not None and x < own * SLOW_AT]   # not the slow state, whatever it was judged by
    kinds = [k if k in ("fast", "mid", "slow") else "switch" if k == "mixed" else "unjudged" for _, _, k in doc["cycles"]]
    return {"worker": str(doc.get("worker") or "?").split("/")[0], "floor_us": floor, "given_us": doc.get("given_us"),
            "own_floor_us": own, "fast_level_us": statistics.median(under) if under else None,
            "readings": len(xs),
            "reading_levels": _shares([judged.level(x) for x in xs] if floor else [], ("fast", "mid", "slow")),
            "cycles": len(kinds), "cycle_levels": _shares(kinds, ("fast", "mid", "slow", "switch"))}


def _pct(shares: dict) -> str:
    return " · ".join(f"{k} {v * 100:.0f} %" for k, v in shares.items() if v is not None)


def worker_line(summary: dict) -> str:
    notes = ([f"given {summary['given_us']:.2f}"] if summary.get("given_us") else []) + \
        ([f"its readings alone: {summary['own_floor_us']:.2f}"]
         if summary.get("own_floor_us") and summary.get("floor_us")
         and abs(summary["own_floor_us"] / summary["floor_us"] - 1) > 0.03 else [])
    level = f", fast level {summary['fast_level_us']:.2f} µs" if summary.get("fast_level_us") else ""
    cycles = (f"; {summary['cycles']} eager cycles {_pct(summary['cycle_levels'])}" if summary["cycles"]
              else "; no eager cycles")
    floor = f"floor {summary['floor_us']:.2f} µs" if summary.get("floor_us") else "no floor"
    return (f"w{summary['worker']}: {floor}{' (' + '; '.join(notes) + ')' if notes else ''}{level}; "
            f"{_readings(summary)}{cycles}")


def _readings(summary: dict) -> str:
    pct = _pct(summary["reading_levels"])
    return f"{summary['readings']} readings" + (f" {pct}" if pct else "")


def run_traces(folder: Path) -> list[dict]:
    """The workers' host_trace.json files of a run folder, in worker order, summarized
    (worker_summary); ValueError names a file that is not a trace."""
    paths = sorted(folder.glob("workers/w*/host_trace.json"),
                   key=lambda p: int(p.parent.name[1:]) if p.parent.name[1:].isdigit() else 0)
    out = []
    for p in paths:
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
            out.append(worker_summary(doc))
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            raise ValueError(f"{p}: not a host trace ({type(e).__name__}: {e})") from e
    return out


def run_lines(summaries: list[dict]) -> list[str]:
    """A head line (the workers' fast levels, which differ by process) and a line per worker."""
    levels = [s["fast_level_us"] for s in summaries if s.get("fast_level_us")]
    head = f"{len(summaries)} worker trace(s)"
    if levels:
        mid = statistics.median(levels)
        head += (f"; fast level {min(levels):.2f}-{max(levels):.2f} µs over the workers "
                 f"({(min(levels) / mid - 1) * 100:+.0f} to {(max(levels) / mid - 1) * 100:+.0f} % of their median)")
    return [head, *(worker_line(s) for s in summaries)]


def add_parser(command) -> None:
    p = command("host-trace", run, description=__doc__)
    p.add_argument("--seconds", type=float, default=20.0, help="how long to trace")
    p.add_argument("--every", type=float, default=0.01, help="seconds between readings")
    p.add_argument("--out", help="also write the readings and summary as JSON")
    p.add_argument("--json", action="store_true", help="print the summary's figures as JSON instead of the verdict line")
    p.add_argument("--run", metavar="DIR", help="trace nothing: summarize the host traces a run's workers wrote "
                   "(DIR/workers/wN/host_trace.json): each one's floor, fast level, and readings and eager "
                   "cycles per level")


def _run_folder(args) -> int:
    folder = Path(args.run)
    if not folder.is_dir():
        print(f"{args.prog}: --run {args.run}: not a folder", file=sys.stderr)
        return 2
    try:
        summaries = run_traces(folder)
    except ValueError as e:
        print(f"{args.prog}: --run {e}", file=sys.stderr)
        return 2
    if not summaries:
        print(f"{args.prog}: --run {args.run}: no workers/wN/host_trace.json in it (a run of this harness writes one "
              "per worker)", file=sys.stderr)
        return 2
    print(json.dumps(summaries, indent=1) if args.json else "\n".join(run_lines(summaries)))
    return 0


def run(args) -> int:
    if args.run:
        return _run_folder(args)
    # the user's input first: a trace that cannot be kept is not worth tracing
    if not args.seconds > 0 or not args.every >= 0:
        print(f"{args.prog}: --seconds must be more than 0 and --every 0 or more, got {args.seconds:g} and {args.every:g}",
              file=sys.stderr)
        return 2
    if args.out and (Path(args.out).is_dir() or not Path(args.out).parent.is_dir()):
        print(f"{args.prog}: --out {args.out}: not a file in an existing folder", file=sys.stderr)
        return 2
    from cudnn_hostbench.bench.measure.core.gpu_context import pin_main_thread
    from cudnn_hostbench.bench.measure.core.hoststate import sentinel_us
    pin_main_thread()
    t0 = time.perf_counter()
    readings = []
    while time.perf_counter() - t0 < args.seconds:
        readings.append((time.perf_counter() - t0, sentinel_us()))
        time.sleep(args.every)
    s = summarize(readings)
    print(json.dumps(s, indent=1) if args.json else verdict(s))
    if args.out:
        try:
            write_text_atomic(args.out, json.dumps({"summary": s, "readings": readings}))
        except OSError as e:
            print(f"{args.prog}: --out {args.out}: cannot write ({e.strerror or e})", file=sys.stderr)
            return 2
    return 0


main = alias("host-trace")   # python -m cudnn_hostbench.scripts.host_trace: `hostbench host-trace`

if __name__ == "__main__":
    exit_with(main())
