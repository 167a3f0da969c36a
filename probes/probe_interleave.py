"""Trap 7: cuDNN execute and torch.mm alternating op by op vs the same ops batched by phase.
Figures are per op (a call runs 8 GEMMs)."""
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.core.kernels import gemms
from cudnn_hostbench.bench.measure.probe import Probe, Variant

PAIRS = 4  # a call = PAIRS cuDNN GEMMs + PAIRS torch GEMMs


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin(rule="heuristic")   # one plan on every GPU of a model: the rows measure the call order
    cud = mm.pinned_call()
    tmm = mm.torch_mm_call()
    c = mm.c

    def alternating():
        for _ in range(PAIRS):
            cud()
            tmm()
        return c

    def phased():
        for _ in range(PAIRS):
            cud()
        for _ in range(PAIRS):
            tmm()
        return c

    def cudnn_only():
        for _ in range(2 * PAIRS):
            cud()
        return c

    def torch_only():
        for _ in range(2 * PAIRS - 1):
            tmm()
        return tmm()

    return {
        "torch_only": mm.case(torch_only),
        "cudnn_only": mm.case(cudnn_only),
        "alternating": mm.case(alternating),
        "phased": mm.case(phased),
    }


PROBE = Probe(
    name="interleave",
    doc=__doc__,
    variants=[
        Variant("torch_only", "baseline", "8 x torch.mm", ops_per_call=2 * PAIRS, kernels=gemms(2 * PAIRS)),
        Variant("cudnn_only", "info", "8 x pinned cuDNN execute", ops_per_call=2 * PAIRS, kernels=gemms(2 * PAIRS)),
        Variant("alternating", "trap", "cuDNN, torch.mm, cuDNN, ... op by op", ops_per_call=2 * PAIRS,
                kernels=gemms(2 * PAIRS)),
        Variant("phased", "fixed", "4 x cuDNN then 4 x torch.mm", ops_per_call=2 * PAIRS, kernels=gemms(2 * PAIRS)),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    baseline="torch_only",
    focus=True,
    extra={"plans": dict.fromkeys(("cudnn_only", "alternating", "phased"), "heuristic"),
           "pairs": [("alternating", "phased", True)]},
)


def test_interleave(hb_run):
    hb_run()
