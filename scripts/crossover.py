"""Where each trap stops mattering: for each trap, sweep the size and find the size from which the
trap's extra eager µs/call (trap minus its fix, same interleaved rounds) stays under 5 % of the
step's GPU time (the fix captured in a CUDA graph and replayed). Writes a JSON records file and a
plot per GPU; about 2-3 minutes on one H200 (a time box stops the sweep and keeps what it has).

    hostbench crossover [--out DIR] [--threshold 0.05] [--time-box 170]
        [--traps rebuild,execute,set_stream,churn,transpose,wrapper] [--rounds 7]

Each trap reuses its probe's own build (numerics checked against torch before timing):
matmul traps sweep cube sizes 128..8192, transpose the token count of its Linear (1..4096),
the wrapper tokens 1..4096 through a [T,4096] x [4096,4096] GEMM. No GPU: one line, exit 2.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import statistics
import sys
import time
from pathlib import Path

from cudnn_hostbench.scripts.args import check_out_dir
from cudnn_hostbench.scripts.cli import alias, exit_with

CUBES = ["128", "256", "512", "1024", "2048", "4096", "8192"]
TOKENS = [1, 4, 16, 64, 256, 1024, 4096]
# trap -> (probe module, trap variant, fix variant, sizes, what the size means)
TRAPS = {
    "rebuild": ("probe_rebuild", "rebuild", "cache_hit", CUBES, "M=N=K"),
    "execute": ("probe_execute", "generic", "ordered_pinned", CUBES, "M=N=K"),
    "set_stream": ("probe_set_stream", "query_and_set", "set_once", CUBES, "M=N=K"),
    "churn": ("probe_churn", "all_three", "reuse", CUBES, "M=N=K"),
    "transpose": ("probe_transpose", "contiguous_copy", "strided_view", [f"t{t}" for t in TOKENS], "tokens"),
    "wrapper": ("probe_wrapper", "naive", "fixed", [f"{t}x4096x4096" for t in TOKENS], "tokens"),
}


def _check(case, ctx) -> str:
    """'' when the case matches its torch reference, else why not (the suite's own check)."""
    from cudnn_hostbench.bench.measure.core.runner import Session
    status = Session._check(case, ctx)
    return "" if status.ok else str(status)


def _gpu_us(ctx, fn) -> float:
    """GPU µs per call: graph replay of 10 calls (median of 5 replays)."""
    from cudnn_hostbench.bench.measure.core import timing
    cap = timing.capture(fn, 10, ctx.stream)
    xs = [timing.replay_us(cap, ctx.stream) for _ in range(5)]
    return statistics.median(xs)


def _eager(ctx, trap, fix, rounds: int) -> tuple[list, list]:
    """Interleaved eager rounds of trap and fix: µs per call, round by round."""
    from cudnn_hostbench.bench.measure.core import timing
    torch = ctx.torch
    out = {"trap": [], "fix": []}
    fns = {"trap": trap, "fix": fix}
    with torch.cuda.stream(ctx.stream):
        calls = {}
        for k, f in fns.items():
            timing.run_calls(f, 2)
            calls[k] = timing.calls_for(timing.eager_round(f, 2, ctx.sync), 3e-3, 4, 256)
        for r in range(rounds):
            for k in timing.rotated(list(fns), r):
                out[k].append(timing.eager_round(fns[k], calls[k], ctx.sync) * 1e6)
    return out["trap"], out["fix"]


def measure_point(ctx, trap: str, size: str, rounds: int) -> dict:
    import importlib
    mod, tv, fv, _, _ = TRAPS[trap]
    probe = importlib.import_module(f"cudnn_hostbench.probes.{mod}").PROBE
    point = {"size": size}
    try:
        cases = probe.build(probe.context(ctx), size)
    except Exception as e:  # noqa: BLE001 - an unsupported size is a row, not the end of the sweep
        return {**point, "status": f"build: {type(e).__name__}: {e}"[:300]}
    for v in (tv, fv):
        c = cases.get(v)
        if c is None or isinstance(c, BaseException):
            return {**point, "status": f"{v}: {c}"[:300]}
        bad = _check(c, ctx)
        if bad:
            return {**point, "status": f"{v}: {bad}"[:300]}
    t, f = _eager(ctx, cases[tv].fn, cases[fv].fn, rounds)
    extra = statistics.median([a - b for a, b in zip(t, f)])
    try:
        gpu = _gpu_us(ctx, cases[fv].fn)
    except Exception as e:  # noqa: BLE001
        return {**point, "status": f"GPU time of {fv}: {type(e).__name__}: {e}"[:300], "extra_us": extra}
    ctx.torch.cuda.synchronize()
    return {**point, "status": "ok", "trap_us": statistics.median(t), "fix_us": statistics.median(f),
            "extra_us": extra, "gpu_us": gpu, "share": extra / gpu if gpu > 0 else float("nan"),
            "trap_note": cases[tv].note, "fix_note": cases[fv].note}


def crossover(points: list, threshold: float) -> str | None:
    """The first size from which every measured point's share stays under the threshold."""
    ok = [p for p in points if p.get("status") == "ok"]
    for i, p in enumerate(ok):
        if all(q["share"] < threshold for q in ok[i:]):
            return p["size"]
    return None


def add_parser(command) -> None:
    p = command("crossover", run, description=__doc__)
    p.add_argument("--out", default="results/crossover", help="output folder")
    p.add_argument("--threshold", type=float, default=0.05, help="share of the step's GPU time")
    p.add_argument("--time-box", type=float, default=170.0, help="seconds before the sweep stops")
    p.add_argument("--rounds", type=int, default=7, help="interleaved eager rounds per point")
    p.add_argument("--traps", default=",".join(TRAPS), help=f"comma-separated, of {','.join(TRAPS)}")


def run(args) -> int:
    traps = [t for t in args.traps.split(",") if t]
    unknown = [t for t in traps if t not in TRAPS]
    if unknown or not 0 < args.threshold < 1 or args.rounds < 1 or args.time_box <= 0:
        why = f"unknown trap(s) {','.join(unknown)}" if unknown else "--threshold in (0,1), --rounds >= 1, --time-box > 0"
        print(f"{args.prog}: bad option: {why}", file=sys.stderr)
        return 2
    out = Path(args.out)
    bad = check_out_dir(args.out, ["crossover.json"])   # checked, not made: a failed start leaves no folder
    if bad:
        print(f"{args.prog}: --out {out}: {bad}", file=sys.stderr)
        return 2
    from cudnn_hostbench.bench.cudnn_graphs import context as _cudnn_hooks  # noqa: F401 - registers cuDNN's hooks
    from cudnn_hostbench.bench.measure.core.gpu_context import GpuContext, NoGpuError
    from cudnn_hostbench.bench.measure.runfile import fingerprint as fpmod
    try:
        ctx = GpuContext()
    except (NoGpuError, ImportError) as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"{args.prog}: cannot write to {out}: {e}", file=sys.stderr)
        return 2
    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    doc = {"kind": "crossover", "threshold": args.threshold, "rounds": args.rounds,
           "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "fingerprint": fpmod.fingerprint(ctx, root=Path(__file__).resolve().parent.parent), "traps": {}}
    path = out / "crossover.json"
    t0 = time.perf_counter()
    for n, trap in enumerate(traps):
        mod, tv, fv, sizes, unit = TRAPS[trap]
        t_trap = time.perf_counter()
        budget = (args.time_box - (t_trap - t0)) / (len(traps) - n)   # what is left, shared by the traps left
        entry = doc["traps"][trap] = {"probe": mod.removeprefix("probe_"), "trap": tv, "fix": fv, "size_means": unit,
                                      "points": [], "crossover": None}
        for size in sizes:
            if time.perf_counter() - t_trap > budget:
                entry["truncated"] = f"this trap's share of the time box ({budget:.0f} s) spent before size {size}"
                break
            p = measure_point(ctx, trap, size, args.rounds)
            entry["points"].append(p)
            print(f"crossover: {trap} {size}: " + (f"extra {p['extra_us']:.2f} us, GPU {p['gpu_us']:.2f} us, "
                                                   f"share {p['share'] * 100:.1f} %" if p["status"] == "ok" else p["status"]),
                  file=sys.stderr)
            entry["crossover"] = crossover(entry["points"], args.threshold)
            write_text_atomic(path, json.dumps(doc, indent=1, default=_json))   # keep what is measured
    doc["wall_s"] = round(time.perf_counter() - t0, 1)
    write_text_atomic(path, json.dumps(doc, indent=1, default=_json))
    from cudnn_hostbench.reports import crossover_report as report
    print(report.summary(doc))
    png = report.plot(doc, out)
    print(f"wrote {path} and {png}")
    return 0


def _json(value):
    return None if isinstance(value, float) and math.isnan(value) else str(value)


main = alias("crossover")   # python -m cudnn_hostbench.scripts.crossover: `hostbench crossover`

if __name__ == "__main__":
    exit_with(main())
