"""The frontend's own torch wrapper, `cudnn.Graph`, against a hand-built `pygraph` executed with a
pinned plan, on one bf16 matmul (the heuristic's pick on both sides: the wrapper builds with
heuristic modes A + FALLBACK and HEURISTICS_CHOICE, as the hand-built graph does).

The wrapper's call forms (cudnn/wrapper.py): `wrapper_positional` calls `graph(a, b, handle=h)`
(a new dict pack, a new output tensor from torch.empty_strided, generic execute, every call);
`wrapper_named` calls `graph({"mm::A": a, "mm::B": b, "mm::C": c}, handle=h)` with the output
given; `wrapper_auto_handle` is the positional call on a graph made with handle="auto" (the
wrapper's per-thread handle, re-bound to torch's current stream every call). The wrapper keeps its
own workspace. `pygraph_pinned` is the fix: prebuilt buffers, the plan pinned, the fastest public
execute form this frontend has."""
from cudnn_hostbench.bench.cudnn_graphs import calls
from cudnn_hostbench.bench.cudnn_graphs.build import as_output, guard, plan_name, selected_index
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

TRAPS = ("wrapper_positional", "wrapper_named", "wrapper_auto_handle")


def wrapped_matmul(ctx, mm: Matmul, handle):
    """A cudnn.Graph around the matmul, inputs and output named for positional calls."""
    cudnn, torch = ctx.cudnn, ctx.torch
    if not calls.has_graph_wrapper(cudnn):
        raise calls.needs("graph_wrapper")
    try:
        graph = cudnn.Graph(handle=handle, io_data_type=torch.bfloat16, intermediate_data_type=torch.float32,
                            compute_data_type=torch.float32, inputs=["mm::A", "mm::B"], outputs=["mm::C"])
    except RuntimeError as e:       # 1.32: "cuDNN version 9.12.0 or higher is required"
        raise Unsupported(f"cudnn.Graph refused this backend: {e}") from e
    with graph:
        c = graph.matmul(name="mm", A=mm.a, B=mm.b, compute_data_type=cudnn.data_type.FLOAT)
        as_output(ctx, c, mm.c)
    return graph


def _wrapper_plan(graph) -> str:
    """The plan the wrapper's graph selected (its pygraph is private to the wrapper: for notes only)."""
    g = getattr(graph, "_Graph__graph", None)
    i = selected_index(g) if g is not None else None
    return f"{i}:{plan_name(g, i)}" if i is not None else ""


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin(rule="heuristic")
    h = ctx.handle
    a, b, c = mm.a, mm.b, mm.c
    fixed, form = mm.fastest_call(mm.heuristic_plan())
    cases = {"torch_mm": mm.case(mm.torch_mm_call()),
             "pygraph_pinned": mm.case(fixed, note=f"{form}; {mm.plan_id(mm.heuristic_plan())}")}

    def positional():
        graph = wrapped_matmul(ctx, mm, h)
        return mm.case(lambda: graph(a, b, handle=h), plan=_wrapper_plan(graph),
                       note=f"graph(a, b, handle=h): new output per call; wrapper plan {_wrapper_plan(graph)}")

    def named():
        graph = wrapped_matmul(ctx, mm, h)
        pack = {"mm::A": a, "mm::B": b, "mm::C": c}
        return mm.case(lambda: graph(pack, handle=h), plan=_wrapper_plan(graph),
                       note=f"graph({{name: tensor}}, handle=h), output given; wrapper plan {_wrapper_plan(graph)}")

    def auto_handle():
        graph = wrapped_matmul(ctx, mm, "auto")
        return mm.case(lambda: graph(a, b), plan=_wrapper_plan(graph),
                       note=f"handle='auto': get_default_handle() + set_stream per call; wrapper plan "
                            f"{_wrapper_plan(graph)}")
    cases["wrapper_positional"] = guard(positional)
    cases["wrapper_named"] = guard(named)
    cases["wrapper_auto_handle"] = guard(auto_handle)
    return cases


PROBE = Probe(
    name="fe_wrapper",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("wrapper_positional", "trap", "cudnn.Graph called positionally (new output per call)", kernels=GEMM),
        Variant("wrapper_named", "trap", "cudnn.Graph called with a {name: tensor} dict", kernels=GEMM),
        Variant("wrapper_auto_handle", "trap", "cudnn.Graph(handle='auto') called positionally", kernels=GEMM),
        Variant("pygraph_pinned", "fixed", "hand-built pygraph, pinned plan, prebuilt buffers", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    # the wrapper builds with A + FALLBACK and HEURISTICS_CHOICE: the heuristic's pick, as pygraph_pinned
    extra={"plans": dict.fromkeys((*TRAPS, "pygraph_pinned"), "heuristic"),
           "pairs": [(t, "pygraph_pinned", True) for t in TRAPS]},
)


def test_fe_wrapper(hb_run):
    hb_run()
