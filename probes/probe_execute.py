"""Trap 2 on ONE plan: generic graph.execute vs execute_plan_at_index(dict) vs the ordered
tensor_uids form, all on the plan generic execute runs (the heuristic's pick), so the ratios are the
call path alone; plus a private raw-pointer floor on that plan (what the backend itself costs). The
autotuned plan (fastest by GPU time) runs as its own rows: against `pinned` it is the engine effect,
same call form. Every note names its plan (index, engine, how it was chosen)."""
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin()
    h, t = mm.heuristic_plan(), mm.built.pinned
    on_h, on_t = mm.plan_id(h), mm.plan_id(t)
    ph, pt = mm.plan_label(h), mm.plan_label(t)
    return {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "generic": mm.case(mm.generic_call(), note=mm.heuristic_note(), plan=ph),
        # the rows that share generic's plan need its index (frontend 1.27+): generic_plan refuses otherwise
        "pinned": guard(lambda: mm.case(mm.pinned_call(mm.generic_plan()), note=on_h, plan=ph)),
        "ordered": guard(lambda: mm.case(mm.ordered_call(), note=f"selected plan: {on_h}", plan=ph)),
        "ordered_pinned": guard(lambda: mm.case(mm.ordered_call(pinned=True, index=mm.generic_plan()), note=on_h, plan=ph)),
        "raw_floor": guard(lambda: mm.case(mm.raw_floor_call(mm.generic_plan()),
                                           note=f"PRIVATE API: _execute_with_raw_ptrs; {on_h}", plan=ph)),
        "autotuned": mm.case(mm.pinned_call(t), note=on_t, plan=pt),
        "autotuned_ordered": guard(lambda: mm.case(mm.ordered_call(pinned=True, index=t), note=on_t, plan=pt)),
    }


PROBE = Probe(
    name="execute",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("generic", "trap", "graph.execute, prebuilt pack", kernels=GEMM),
        Variant("pinned", "fixed", "execute_plan_at_index(dict), generic's plan", kernels=GEMM),
        Variant("ordered", "fixed", "execute(tuple, tensor_uids=...)", kernels=GEMM),
        Variant("ordered_pinned", "fixed", "execute_plan_at_index(tuple, tensor_uids=...), generic's plan",
                kernels=GEMM),
        Variant("raw_floor", "private", "PRIVATE raw-pointer execute (backend floor), generic's plan", kernels=GEMM),
        Variant("autotuned", "info", "execute_plan_at_index(dict), autotuned plan (engine effect)", kernels=GEMM),
        Variant("autotuned_ordered", "info", "execute_plan_at_index(tuple), autotuned plan", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    focus=True,
    # which plan each row runs; a trap/fix pair shares the plan when both name the same one
    extra={"plans": {"generic": "heuristic", "pinned": "heuristic", "ordered": "heuristic",
                     "ordered_pinned": "heuristic", "raw_floor": "heuristic",
                     "autotuned": "autotuned", "autotuned_ordered": "autotuned"},
           "pairs": [("generic", "pinned", True), ("generic", "ordered", True), ("generic", "ordered_pinned", True)],
           "engine_rows": [("pinned", "autotuned"), ("ordered_pinned", "autotuned_ordered")]},
)


def test_execute(hb_run):
    hb_run()
