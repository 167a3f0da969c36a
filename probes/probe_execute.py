"""Trap 2: generic graph.execute vs a pinned execute_plan_at_index (autotuned once) vs the
ordered tensor_uids form; plus a private raw-pointer floor (what the backend itself costs)."""
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin()
    return {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "generic": mm.case(mm.generic_call(), note=mm.heuristic_note()),
        "pinned": mm.case(mm.pinned_call(), note=mm.plan_note()),
        "ordered": guard(lambda: mm.case(mm.ordered_call())),
        "ordered_pinned": guard(lambda: mm.case(mm.ordered_call(pinned=True))),
        "raw_floor": guard(lambda: mm.case(mm.raw_floor_call(), note="PRIVATE API: _execute_with_raw_ptrs")),
    }


PROBE = Probe(
    name="execute",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)"),
        Variant("generic", "trap", "graph.execute, prebuilt pack"),
        Variant("pinned", "fixed", "execute_plan_at_index, pinned plan"),
        Variant("ordered", "fixed", "execute(tuple, tensor_uids=...)"),
        Variant("ordered_pinned", "fixed", "execute_plan_at_index(tuple, tensor_uids=...)"),
        Variant("raw_floor", "private", "PRIVATE raw-pointer execute (backend floor)"),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    focus=True,
)


def test_execute(hb_run):
    hb_run()
