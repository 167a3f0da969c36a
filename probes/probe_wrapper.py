"""The guide's composite rows: a naive wrapper (per-call stream query + set_stream, dict build,
torch.empty output, generic execute) vs a fixed wrapper (stream set once, prebuilt pack,
fastest public execute) vs torch.mm."""
from bench.cudnn_graphs.matmul import Matmul, cube_sizes
from bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.build(ctx, size)
    torch, cudnn, h = ctx.torch, ctx.cudnn, ctx.handle
    g, ws = mm.mg.graph, mm.mg.workspace
    tA, tB, tC = mm.mg.tensors["A"], mm.mg.tensors["B"], mm.mg.tensors["C"]
    a, b = mm.a, mm.b
    shape = tuple(mm.c.shape)

    def naive():
        cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)
        out = torch.empty(shape, dtype=a.dtype, device=a.device)
        g.execute({tA: a, tB: b, tC: out}, ws, handle=h)
        return out

    if ctx.caps.get("ordered"):
        fixed, how = mm.ordered_call(pinned=True), "execute_plan_at_index(tuple, tensor_uids)"
    else:
        fixed, how = mm.pinned_call(), "execute_plan_at_index(dict)"
    return {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "naive": mm.case(naive),
        "fixed": mm.case(fixed, note=f"fixed wrapper uses {how}"),
    }


PROBE = Probe(
    name="wrapper",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)"),
        Variant("naive", "trap", "naive wrapper"),
        Variant("fixed", "fixed", "fixed wrapper"),
    ],
    build=build,
    sizes=cube_sizes,
)


def test_wrapper(hb_run):
    hb_run()
