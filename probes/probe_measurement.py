"""Trap 8: measuring host bubbles instead of kernels. One fast kernel (256^3 bf16 matmul) and one
slow one (4096^3), each a pinned cuDNN execute, timed four ways side by side: the harness's eager
host clock, CUDA-graph replay and profiler device time (the `cudnn` row's three columns), and the
common hand-rolled method, CUDA events recorded around each synchronized call, best of N (the
`events_best_of_n` row, host column, in µs/call). For the fast kernel the event pair brackets the
host dispatch as well as the kernel, so best-of-N reports the bubble; for the slow one it converges
on the kernel time."""
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.host import host_placeholders, host_record, median, safe_measure
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import failed

N_PER_ROUND = 16


def _sizes(options):
    return ["256", "4096"]


def _built(ctx, size):
    """The pinned matmul and its call, made once per context and size for build() and measure()."""
    def make():
        mm = Matmul.cube(ctx, size)
        mm.pin(rule="heuristic")
        return (mm,) + mm.fastest_call()
    return ctx.attached((PROBE.name, size), make)


def build(ctx, size):
    mm, call, how = _built(ctx, size)
    c = mm.c

    def cudnn():
        call()
        return c
    return {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "cudnn": mm.case(cudnn, note=f"{how}; {mm.plan_note()}"),
        **host_placeholders(PROBE),
    }


def measure(ctx, size, opt):
    mm, call, _ = _built(ctx, size)
    torch = ctx.torch
    with torch.cuda.stream(ctx.stream):          # numerics first, as for every other row
        mm.poison()
        call()
    ctx.sync()
    err = mm.check(mm.c)
    if not err <= 2e-2:
        return [host_record(PROBE, size, "events_best_of_n",
                                   status=failed(f"numerics rel_err={err:.3g} vs torch reference"))]
    s = ctx.stream
    start = [torch.cuda.Event(enable_timing=True) for _ in range(N_PER_ROUND)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(N_PER_ROUND)]
    best, med = [], []
    with torch.cuda.stream(s):
        for r in range(opt.warmup_rounds + opt.rounds):
            xs = []
            for i in range(N_PER_ROUND):
                s.synchronize()                    # each call starts on an idle GPU, as in the naive loop
                start[i].record(s)
                call()
                end[i].record(s)
                end[i].synchronize()
                xs.append(start[i].elapsed_time(end[i]) * 1e3)
            if r >= opt.warmup_rounds:
                xs.sort()
                best.append(xs[0])
                med.append(xs[len(xs) // 2])
    return [host_record(
        PROBE, size, "events_best_of_n", best, unit="us/call",
        note=(f"µs per call (not ms): CUDA events around each synchronized call, best of {N_PER_ROUND} per "
              f"round; median-of-{N_PER_ROUND} {median(med):.2f} us; compare with the cudnn row's "
              f"graph and device columns (kernel) and eager column (host clock)"))]


PROBE = Probe(
    name="measurement",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("cudnn", "info", "pinned cuDNN execute: host clock / replay / device", kernels=GEMM),
        Variant("events_best_of_n", "trap", "CUDA events per call, best of N (µs)", modes=("host",)),
    ],
    build=build,
    sizes=_sizes,
    prepare=prepare,
    extra={"measure": safe_measure(lambda: PROBE, measure), "plans": {"cudnn": "heuristic"}},
)


def test_measurement(hb_run):
    hb_run()
