"""The engine effect: every plan of the matmul graph (build_plans policy ALL), each run through the
same public call (the fastest form this frontend has, pinned to that plan), in eager, graph and
device mode, at the host-bound headline sizes. A row per plan index; its note names the engine and
marks the heuristic's pick (the plan generic execute runs) and the plan autotuned by GPU time. On
frontend 1.32 / cuDNN 9.19 the heuristic's engine was seen to cost ~3.4 us more host time per call
than the others, at no better GPU time: this probe measures that spread instead of mixing it into
the call-path traps."""
from cudnn_hostbench.bench.cudnn_graphs.build import Built, guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

MAX_PLANS = 16   # rows are declared up front; a graph with more plans says so in the last row's note


def _sizes(options):
    """The host-bound sizes (<= 1024^3) of --hb-sizes; all of them with --hb-heavy."""
    sizes = list(options.sizes)
    if options.heavy:
        return sizes
    small = [s for s in sizes if all(int(x) <= 1024 for x in s.split("x") if x.isdigit())]
    return small or sizes[:1]


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin()
    b = mm.built
    heur = mm.heuristic_plan()
    out = {}
    for i in range(MAX_PLANS):
        if i not in b.plans:
            out[f"plan_{i}"] = Unsupported(f"plan {i} did not build ({len(b.plans)} of "
                                           f"{b.graph.get_execution_plan_count()} built)")
            continue
        tags = (["HEURISTIC'S PICK"] if i == heur else []) + (["autotuned (GPU time)"] if i == b.pinned else [])
        more = [j for j in b.plans if j >= MAX_PLANS]
        note = (f"{mm.plan_id(i)}; {Built.call_form(ctx)}" + (f"; {' '.join(tags)}" if tags else "")
                + (f"; {len(more)} more plan(s) not shown" if more and i == MAX_PLANS - 1 else ""))
        out[f"plan_{i}"] = guard(lambda i=i, note=note: mm.case(b.call(mm.buffers(), index=i), note=note))
    out["torch_mm"] = mm.case(mm.torch_mm_call())
    return out


PROBE = Probe(
    name="engine",
    doc=__doc__,
    variants=[Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM)]
    + [Variant(f"plan_{i}", "info", f"plan {i} (engine in the note)", kernels=GEMM) for i in range(MAX_PLANS)],
    build=build,
    sizes=_sizes,
    prepare=prepare,
)


def test_engine(hb_run):
    hb_run()
