"""The op-registration trap: one cuDNN matmul (256³ bf16 by default, pinned plan, fastest public
execute form) reached through the paths a PyTorch integration uses. Every cuDNN variant runs the
same body, impl(a, b): allocate the output with torch.empty (as torch.mm does) and execute on the
pinned plan. Only the way the call reaches that body differs: inline (`direct`), through a plain
Python function (`python_fn`), through `@torch.library.custom_op` with `register_fake`
(`custom_op`, and the same op looked up as `torch.ops.<ns>.<op>`, `custom_op_torch_ops`), with
`register_autograd` as well (`custom_op_autograd`), and through `torch.library.Library`
define + CUDA impl called via torch.ops (`library`). `graphed` is `direct` captured once in a CUDA
graph and replayed (eager and device modes). The trap is the decorator's per-call work (default
autograd handling, argument checks); the fixes are the Library registration, or capture."""
from cudnn_hostbench.bench.cudnn_graphs import registration
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes, nan_fill
from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

GEMM = (("gemm", 1),)
REGISTERED = ("custom_op", "custom_op_torch_ops", "custom_op_autograd", "library")


def _sizes(options):
    return cube_sizes(options)[:1] if not options.heavy else cube_sizes(options)


def cudnn_impl(ctx, matmul: Matmul):
    """impl(lhs, rhs) -> a new output, executed on the pinned plan of matmul's built graph."""
    torch = ctx.torch
    b = matmul.built
    g, ws, h, i, uids = b.graph, b.workspace, ctx.handle, b.pinned, b.uids
    shape, dtype, dev = tuple(matmul.c.shape), matmul.c.dtype, matmul.c.device
    empty = torch.empty
    if ctx.caps.ordered:
        def impl(lhs, rhs):
            out = empty(shape, dtype=dtype, device=dev)
            g.execute_plan_at_index((lhs, rhs, out), ws, i, handle=h, tensor_uids=uids)
            return out
        form = "execute_plan_at_index(tuple, tensor_uids=...)"
    else:
        ua, ub, uc = uids

        def impl(lhs, rhs):
            out = empty(shape, dtype=dtype, device=dev)
            g.execute_plan_at_index({ua: lhs, ub: rhs, uc: out}, ws, i, handle=h)
            return out
        form = "execute_plan_at_index({uid: tensor})"
    return impl, form


def _registered(ctx, make, what: str):
    """A registration, kept on the GPU context's registry: the context's close deregisters it."""
    try:
        return ctx.attached(("registration", "registry"), registration.Registry).add(make())
    except Exception as e:  # an older torch without this API: this variant only
        raise Unsupported(f"{what} failed on torch: {type(e).__name__}: {e}") from e


def build(ctx, size):
    torch = ctx.torch
    mm = Matmul.cube(ctx, size)
    mm.pin(rule="heuristic")   # one plan on every GPU of a model: the rows measure how the op is reached
    impl, form = cudnn_impl(ctx, mm)
    # the registered ops' impl holds the built graph; the context's close empties it
    ctx.attached(("registration", "registry"), registration.Registry).release(impl)
    a, b = mm.a, mm.b
    note = f"{mm.plan_note()}; body: torch.empty + {form}"

    def case(call, extra=""):
        return Case(call, mm.check, note=note + extra, plan=mm.plan_label())

    def direct():
        return impl(a, b)

    def cudnn_mm(lhs, rhs):        # what an integration's plain wrapper looks like
        return impl(lhs, rhs)

    cases = {"torch_mm": Case(mm.torch_mm_call(), mm.check),
             "direct": case(direct),
             "python_fn": case(lambda: cudnn_mm(a, b))}

    def custom(autograd=False, via_ops=False):
        lib = getattr(torch, "library", None)
        if lib is None or not hasattr(lib, "custom_op"):
            raise Unsupported("needs torch.library.custom_op (torch >= 2.4)")
        reg = _registered(ctx, lambda: registration.custom_op(impl, "cuda", autograd=autograd), "custom_op")
        op = reg.via_ops if via_ops else reg.call

        def call(_keep=reg.keep):   # the registration lives as long as the case
            return op(a, b)
        return case(call, f"; op {reg.qualname}")

    def library():
        reg = _registered(ctx, lambda: registration.library_op(impl, "CUDA"), "torch.library.Library define/impl")
        op = reg.via_ops

        def call(_keep=reg.keep):   # the Library object deregisters the op when collected
            return op(a, b)
        return case(call, f"; op {reg.qualname}")

    cases["custom_op"] = guard(custom)
    cases["custom_op_torch_ops"] = guard(lambda: custom(via_ops=True))
    cases["custom_op_autograd"] = guard(lambda: custom(autograd=True))
    cases["library"] = guard(library)

    def graphed():
        cap = timing.capture(direct, 1, ctx.stream)
        out = cap.last

        def replay():
            cap.graph.replay()
            return out
        return Case(replay, mm.check, nan_fill(out), note=note + "; captured once, replayed per call")
    cases["graphed"] = guard(graphed)
    return cases


PROBE = Probe(
    name="registration",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("direct", "fixed", "cuDNN matmul called inline", kernels=GEMM),
        Variant("python_fn", "info", "the same through a plain Python function", kernels=GEMM),
        Variant("custom_op", "trap", "TRAP: @torch.library.custom_op + register_fake", kernels=GEMM),
        Variant("custom_op_torch_ops", "trap", "TRAP: the custom_op called as torch.ops.<ns>.<op>", kernels=GEMM),
        Variant("custom_op_autograd", "trap", "TRAP: custom_op + register_fake + register_autograd", kernels=GEMM),
        Variant("library", "fixed", "FIX: torch.library.Library define + CUDA impl, via torch.ops", kernels=GEMM),
        # replaying a graph inside another capture is not what this row is about: eager + device only
        Variant("graphed", "floor", "FIX: the call captured once in a CUDA graph, replayed",
                modes=("eager", "device"), kernels=GEMM),
    ],
    build=build,
    sizes=_sizes,
    prepare=prepare,
    # every cuDNN path runs one body on one pinned plan: the rows differ only by how the op is reached
    extra={"plans": {v: "heuristic" for v in ("direct", "python_fn", "custom_op", "custom_op_torch_ops",
                                           "custom_op_autograd", "library", "graphed")},
           "pairs": [("custom_op", "library", True), ("custom_op_torch_ops", "library", True),
                     ("custom_op_autograd", "library", True)]},
)


def test_registration(hb_run):
    hb_run()
