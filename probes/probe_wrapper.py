"""The guide's composite rows: a naive wrapper (per-call stream query + set_stream, dict build,
torch.empty output, generic execute) vs a fixed wrapper (stream set once, prebuilt pack, fastest
public execute) vs torch.mm. naive and fixed run the same plan (the one generic execute runs), so
their ratio is the wrapper alone; `fixed_autotuned` is the fixed wrapper on the autotuned plan,
the engine effect as its own row."""
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin()
    h, t = mm.heuristic_plan(), mm.built.pinned
    fixed_t, how = mm.fastest_call(t)

    def fixed():    # naive's own plan: needs its index (frontend 1.27+)
        call, _ = mm.fastest_call(mm.generic_plan())
        return mm.case(call, note=f"fixed wrapper uses {how} on {mm.plan_id(h)}", plan=mm.plan_label(h))
    return {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "naive": mm.case(mm.naive_call(), note=f"generic execute: {mm.plan_id(h)}", plan=mm.plan_label(h)),
        "fixed": guard(fixed),
        "fixed_autotuned": mm.case(fixed_t, note=f"fixed wrapper uses {how} on {mm.plan_id(t)}", plan=mm.plan_label(t)),
    }


PROBE = Probe(
    name="wrapper",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("naive", "trap", "naive wrapper", kernels=GEMM),
        Variant("fixed", "fixed", "fixed wrapper, naive's plan", kernels=GEMM),
        Variant("fixed_autotuned", "info", "fixed wrapper, autotuned plan (engine effect)", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    focus=True,
    extra={"plans": {"naive": "heuristic", "fixed": "heuristic", "fixed_autotuned": "autotuned"},
           "pairs": [("naive", "fixed", True)],
           "engine_rows": [("fixed", "fixed_autotuned")]},
)


def test_wrapper(hb_run):
    hb_run()
