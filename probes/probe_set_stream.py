"""Trap 3: set_stream on every call (and asking torch for its current stream every call) vs
setting it once. Frontend >= 1.28 caches an unchanged stream: measured, not assumed. The fix rows
for the query read the stream with torch's private raw getter,
torch._C._cuda_getCurrentRawStream(device_index), which builds no Stream object."""
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.load import raw_set_stream
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported


def raw_stream_getter(torch):
    """torch._C._cuda_getCurrentRawStream, or Unsupported where this torch has none."""
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get is None:
        raise Unsupported("needs torch._C._cuda_getCurrentRawStream (private torch API)")
    return get


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

    def raw_cases():
        # the harness times every call with its stream current, as query_and_set assumes too
        get, dev = raw_stream_getter(torch), ctx.device.index or 0

        def query_raw():
            get(dev)
            return pinned()

        def query_raw_and_set():
            cudnn.set_stream(handle=h, stream=get(dev))
            return pinned()
        note = "PRIVATE torch API: torch._C._cuda_getCurrentRawStream(device_index)"
        return {"query_raw_stream": mm.case(query_raw, note=note),
                "query_raw_and_set": mm.case(query_raw_and_set, note=note)}
    raw = guard(raw_cases)
    raw = raw if isinstance(raw, dict) else dict.fromkeys(("query_raw_stream", "query_raw_and_set"), raw)

    return {
        **raw,
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
        Variant("query_raw_stream", "fixed", "torch._C._cuda_getCurrentRawStream per call", kernels=GEMM),
        Variant("query_raw_and_set", "fixed", "raw stream getter + set_stream per call", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    focus=True,
    extra={"plans": dict.fromkeys(("set_once", "set_stream_same", "raw_set_stream", "query_stream", "query_and_set",
                                   "query_raw_stream", "query_raw_and_set"), "heuristic"),
           "pairs": [(t, "set_once", True) for t in ("set_stream_same", "raw_set_stream", "query_stream", "query_and_set")]
           + [("query_stream", "query_raw_stream", True), ("query_and_set", "query_raw_and_set", True)]},
)


def test_set_stream(hb_run):
    hb_run()
