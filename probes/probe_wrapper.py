"""The guide's composite rows: a naive wrapper (per-call stream query + set_stream, dict build,
torch.empty output, generic execute) vs a fixed wrapper (stream set once, prebuilt pack,
fastest public execute) vs torch.mm."""
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin()
    torch, cudnn, h = ctx.torch, ctx.cudnn, ctx.handle
    g, ws = mm.built.graph, mm.built.workspace
    tA, tB, tC = mm.built.tensors
    a, b = mm.a, mm.b
    shape = tuple(mm.c.shape)

    def naive():
        cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)
        out = torch.empty(shape, dtype=a.dtype, device=a.device)
        g.execute({tA: a, tB: b, tC: out}, ws, handle=h)
        return out

    fixed, how = mm.fastest_call()
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
    prepare=prepare,
    focus=True,
)


def test_wrapper(hb_run):
    hb_run()
