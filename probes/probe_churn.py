"""Trap 4: per-call Python churn (a new variant-pack dict, a torch.empty output, a recomputed
(shape, stride) cache key), each alone and all together, vs reusing them; and a tensor view made per
call (`a.view(shape)` bound into the pack), the price of one per-call view/reshape op."""
from cudnn_hostbench.bench.cudnn_graphs.cache_keys import GraphCache
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def build(ctx, size):
    mm = Matmul.cube(ctx, size)
    mm.pin(rule="heuristic")   # one plan on every GPU of a model: the rows measure the call
    torch = ctx.torch
    g, ws, h, i = mm.built.graph, mm.built.workspace, ctx.handle, mm.built.pinned
    tA, tB, tC = mm.built.tensors
    a, b, c, vp = mm.a, mm.b, mm.c, mm.vp
    shape, dtype, dev = tuple(c.shape), c.dtype, c.device
    cache = {GraphCache.key(a, b): g}

    def new_dict():
        g.execute_plan_at_index({tA: a, tB: b, tC: c}, ws, i, handle=h)
        return c

    own = dict(vp)  # its own long-lived pack: only the output entry changes per call

    def new_output():
        out = torch.empty(shape, dtype=dtype, device=dev)
        own[tC] = out
        g.execute_plan_at_index(own, ws, i, handle=h)
        return out

    own_view = dict(vp)   # its own long-lived pack: only A's entry changes per call
    a_shape = tuple(a.shape)

    def new_view():
        own_view[tA] = a.view(a_shape)
        g.execute_plan_at_index(own_view, ws, i, handle=h)
        return c

    def cache_key():
        gg = cache[GraphCache.key(a, b)]
        gg.execute_plan_at_index(vp, ws, i, handle=h)
        return c

    def all_three():
        gg = cache[GraphCache.key(a, b)]
        out = torch.empty(shape, dtype=dtype, device=dev)
        gg.execute_plan_at_index({tA: a, tB: b, tC: out}, ws, i, handle=h)
        return out

    fixed = mm.pinned_call()

    def reuse():
        fixed()
        return c

    cases = {
        "torch_mm": mm.case(mm.torch_mm_call()),
        "reuse": mm.case(reuse),
        "new_dict": mm.case(new_dict),
        "new_output": mm.case(new_output),
        "cache_key": mm.case(cache_key),
        "new_view": mm.case(new_view),
        "all_three": mm.case(all_three),
    }
    return cases


PROBE = Probe(
    name="churn",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("reuse", "fixed", "prebuilt pack + reused output", kernels=GEMM),
        Variant("new_dict", "trap", "new variant-pack dict per call", kernels=GEMM),
        Variant("new_output", "trap", "torch.empty output per call", kernels=GEMM),
        Variant("cache_key", "trap", "(shape, stride, dtype) cache key per call", kernels=GEMM),
        Variant("all_three", "trap", "dict + torch.empty + cache key per call", kernels=GEMM),
        Variant("new_view", "trap", "a.view(shape) made and bound per call", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    focus=True,
    extra={"plans": dict.fromkeys(("reuse", "new_dict", "new_output", "cache_key", "all_three", "new_view"),
                                  "heuristic"),
           "pairs": [(t, "reuse", True) for t in ("new_dict", "new_output", "cache_key", "all_three", "new_view")]},
)


def test_churn(hb_run):
    hb_run()
