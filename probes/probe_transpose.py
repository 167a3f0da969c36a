"""Trap 5: an nn.Linear weight W[out=5120, in=17408] bf16 bound as W.t().contiguous() (a
transpose kernel every call) vs declared with the .t() view's strides and bound as the view.
Y[M,5120] = X[M,17408] @ W.t(); torch baseline torch.mm(X, W.t())."""
from cudnn_hostbench.bench.cudnn_graphs.build import plan_name
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err

OUT_F, IN_F = 5120, 17408


def _sizes(options):
    return [f"t{t}" for t in options.tokens]


def build(ctx, size):
    torch = ctx.torch
    m = int(size.lstrip("t"))
    x = ctx.randn(1, m, IN_F, scale=IN_F ** -0.5)
    w = ctx.randn(OUT_F, IN_F)                      # nn.Linear layout [out, in]
    wt_view = w.t().unsqueeze(0)                    # [1, in, out], strides [.., 1, in]: no copy
    y = torch.empty(1, m, OUT_F, dtype=torch.bfloat16, device=ctx.device)
    ref = torch.matmul(x.float(), w.float().t())
    check = lambda out: rel_err(out if isinstance(out, torch.Tensor) else y, ref)  # noqa: E731
    poison = lambda: y.fill_(float("nan"))  # noqa: E731

    # fixed: B declared with the view's strides, the view bound directly
    view_mm = Matmul(ctx, x, wt_view, y)
    i_view = view_mm.pin_heuristic()   # the heuristic's pick: one plan per GPU model, never a timing race
    view_g, vp_view = view_mm.built, view_mm.vp
    # trap: B declared contiguous; the weight is transposed into a new buffer every call
    wt_contig = w.t().contiguous().unsqueeze(0)
    cont_mm = Matmul(ctx, x, wt_contig, y)
    i_cont = cont_mm.pin_heuristic()
    cont_g = cont_mm.built
    tc = dict(zip("ABC", cont_g.tensors))
    h = ctx.handle

    def strided_view():
        view_g.graph.execute_plan_at_index(vp_view, view_g.workspace, i_view, handle=h)
        return y

    def contiguous_copy():
        b = w.t().contiguous().unsqueeze(0)
        cont_g.graph.execute_plan_at_index({tc["A"]: x, tc["B"]: b, tc["C"]: y}, cont_g.workspace, i_cont, handle=h)
        return y

    vp_pre = {tc["A"]: x, tc["B"]: wt_contig, tc["C"]: y}

    def pretransposed():
        cont_g.graph.execute_plan_at_index(vp_pre, cont_g.workspace, i_cont, handle=h)
        return y

    x2 = x[0]
    return {
        "torch_mm": Case(fn=lambda: torch.mm(x2, w.t()), check=check, poison=poison),
        "strided_view": Case(fn=strided_view, check=check, poison=poison,
                             note=f"plan {plan_name(view_g.graph, i_view)}"),
        "contiguous_copy": Case(fn=contiguous_copy, check=check, poison=poison,
                                note=f"plan {plan_name(cont_g.graph, i_cont)}"),
        "pretransposed": Case(fn=pretransposed, check=check, poison=poison,
                              note="W.t().contiguous() made once (2x weight memory)"),
    }


PROBE = Probe(
    name="transpose",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm(X, W.t())", kernels=GEMM),
        Variant("strided_view", "fixed", "bind W.t() view, strides declared", kernels=GEMM),
        Variant("contiguous_copy", "trap", "bind W.t().contiguous() per call", kernels=(("copy", 1), *GEMM)),
        Variant("pretransposed", "info", "contiguous W^T made once", kernels=GEMM),
    ],
    build=build,
    sizes=_sizes,
    prepare=prepare,
    focus=True,
    extra={"plans": {"strided_view": "heuristic (W.t() graph)", "contiguous_copy": "heuristic (contiguous graph)",
                     "pretransposed": "heuristic (contiguous graph)"},
           "pairs": [("contiguous_copy", "strided_view", False,
                      "the trap binds another layout, so cuDNN plans another graph: its kernels are the trap")]},
)


def test_transpose(hb_run):
    hb_run()
