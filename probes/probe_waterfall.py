"""Where the microseconds of one eager call go, at 256^3 bf16 matmul: torch.mm, generic execute,
execute_plan_at_index(dict), the ordered tensor_uids form, the naive wrapper and the fixed wrapper,
every cuDNN path on the same plan (the one generic execute runs). Each path's eager µs/call is split
into the integration's Python, the frontend's Python, the engine's host cost (the PRIVATE
raw-pointer execute floor on that plan) and the GPU time the host does not hide, all from the same
interleaved rounds (bench/measure/core/waterfall.py says how). The eager row's note says whether the
parts sum to within 10 % of it. `hostbench waterfall RUN` draws the chart."""
import math

from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.host import host_placeholders, host_record, safe_measure
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
from cudnn_hostbench.bench.measure.core import timing, waterfall
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Status, Unsupported, failed

PATHS = ("torch_mm", "generic", "pinned", "ordered", "naive_wrapper", "fixed_wrapper")
LABELS = {"torch_mm": "torch.mm", "generic": "generic execute", "pinned": "execute_plan_at_index(dict)",
          "ordered": "ordered tensor_uids", "naive_wrapper": "naive wrapper", "fixed_wrapper": "fixed wrapper"}
FIGURE_LABELS = {"eager": "eager µs/call (the whole)", "host": "host µs/call (issue time)",
                 "gpu": "GPU µs/call (graph replay)", "integration": "integration Python",
                 "frontend": "frontend Python", "engine": "engine host cost (raw-pointer floor)",
                 "gpu_exposed": "GPU time not hidden by the host"}


def _sizes(options):
    return ["256"]


def _paths(ctx, mm):
    """The six paths as waterfall.Path (replay filled in later), each with the reason it lacks a part."""
    h = mm.heuristic_plan()
    floor = guard(lambda: mm.raw_floor_call(h))
    floor_fn = None if isinstance(floor, BaseException) else floor
    generic = mm.generic_call()
    ps = {"torch_mm": waterfall.Path("torch_mm", mm.torch_mm_call()),
          "generic": waterfall.Path("generic", generic, floor=floor_fn),
          "pinned": waterfall.Path("pinned", mm.pinned_call(h), floor=floor_fn),
          "naive_wrapper": waterfall.Path("naive_wrapper", mm.naive_call(), bare=generic, floor=floor_fn),
          "fixed_wrapper": waterfall.Path("fixed_wrapper", mm.fastest_call(h)[0], floor=floor_fn)}
    ordered = guard(lambda: mm.ordered_call())
    if isinstance(ordered, BaseException):
        ps["ordered"] = ordered
    else:
        ps["ordered"] = waterfall.Path("ordered", ordered, floor=floor_fn)
    why = "" if floor_fn else f"; no engine floor ({floor}): engine = frontend + engine"
    return ps, why


def measure(ctx, size, opt):
    mm = Matmul.cube(ctx, size)
    mm.pin(rule="heuristic")
    paths, why = _paths(ctx, mm)
    recs, good = [], []
    for name in PATHS:
        p = paths[name]
        status = None
        if isinstance(p, BaseException):
            status = Status.of(p)
        else:
            with ctx.torch.cuda.stream(ctx.stream):     # numerics before timing
                mm.poison()
                out = p.full()
            ctx.sync()
            err = mm.check(out)
            if not err <= 2e-2:
                status = failed(f"numerics rel_err={err:.3g} vs torch reference")
        if status is not None:
            recs += [host_record(PROBE, size, v, status=status) for v in _names(name)]
        else:
            good.append(p)
    caps = []
    for p in good:
        try:
            cap = timing.capture(p.full, 20, ctx.stream)
        except timing.CaptureError as e:
            raise Unsupported(f"{p.name}: capture for the GPU time failed: {e}") from e
        caps.append(cap)
        p.replay = lambda cap=cap: timing.replay_us(cap, ctx.stream)
    with ctx.torch.cuda.stream(ctx.stream):
        res = waterfall.measure(good, ctx.sync, rounds=opt.rounds, target_round_s=opt.target_round_s)
    del caps
    h = mm.heuristic_plan()
    for p in good:
        med = waterfall.medians(res[p.name])
        ok, share = waterfall.check(med)
        verdict = (f"parts sum to {share * 100:.1f} % of eager ({'within' if ok else 'OUTSIDE'} "
                   f"{waterfall.TOLERANCE:.0%})") if not math.isnan(share) else "parts do not sum"
        plan = ("; torch.mm is not split: its whole host time (torch dispatch + cuBLAS launch) is in engine"
                if p.name == "torch_mm" else f"; {mm.plan_id(h)}")
        for fig in waterfall.FIGURES:
            # every stage is host-bound, so it is judged against torch.mm's eager call timed in the
            # same rounds: a ratio cancels the host's speed (a vCPU's state moves all stages at once)
            recs.append(host_record(PROBE, size, f"{p.name}.{fig}", res[p.name][fig], unit="us/call",
                                    baseline=BASELINE,
                                    note=(verdict if fig == "eager" else FIGURE_LABELS[fig]) + plan
                                    + (why if fig in ("frontend", "engine") else "")))
    return recs


BASELINE = "torch_mm.eager"


def _names(path):
    return [f"{path}.{fig}" for fig in waterfall.FIGURES]


def build(ctx, size):
    return host_placeholders(PROBE)


PROBE = Probe(
    name="waterfall",
    doc=__doc__,
    variants=[Variant(f"{p}.{fig}", "info", f"{LABELS[p]}: {FIGURE_LABELS[fig]}", modes=("host",))
              for p in PATHS for fig in waterfall.FIGURES],
    build=build,
    sizes=_sizes,
    baseline=None,
    prepare=prepare,
    extra={"measure": safe_measure(lambda: PROBE, measure)},
)


def test_waterfall(hb_run):
    hb_run()
