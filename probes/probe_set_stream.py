"""Trap 3: set_stream on every call (and asking torch for its current stream every call) vs
setting it once. Frontend >= 1.28 caches an unchanged stream: measured, not assumed."""
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.load import raw_set_stream
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin(rule="heuristic")   # one plan on every GPU of a model: the rows measure the call
    cudnn, h, s = ctx.cudnn, ctx.handle, ctx.stream_ptr
    pinned = mm.pinned_call()
    torch = ctx.torch

    def set_same():
        cudnn.set_stream(handle=h, stream=s)
        return pinned()

    def set_raw():
        raw_set_stream(cudnn, h, s)
        return pinned()

    def query_and_set():
        cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)
        return pinned()

    def query_only():
        torch.cuda.current_stream().cuda_stream  # noqa: B018 - the query is the cost measured
        return pinned()

    return {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "set_once": mm.case(pinned),
        "set_stream_same": mm.case(set_same),
        "raw_set_stream": mm.case(set_raw, note="backend cudnnSetStream every call"),
        "query_stream": mm.case(query_only),
        "query_and_set": mm.case(query_and_set),
    }


PROBE = Probe(
    name="set_stream",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("set_once", "fixed", "stream set once, pinned execute", kernels=GEMM),
        Variant("set_stream_same", "trap", "cudnn.set_stream(same stream) per call", kernels=GEMM),
        Variant("raw_set_stream", "trap", "backend cudnnSetStream per call", kernels=GEMM),
        Variant("query_stream", "trap", "torch.cuda.current_stream().cuda_stream per call", kernels=GEMM),
        Variant("query_and_set", "trap", "query torch stream + set_stream per call", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    focus=True,
    extra={"plans": dict.fromkeys(("set_once", "set_stream_same", "raw_set_stream", "query_stream", "query_and_set"),
                                   "heuristic"),
           "pairs": [(t, "set_once", True) for t in ("set_stream_same", "raw_set_stream", "query_stream", "query_and_set")]},
)


def test_set_stream(hb_run):
    hb_run()
