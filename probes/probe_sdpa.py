"""SDPA with causal masking, bf16: a cuDNN frontend SDPA graph vs
torch.nn.functional.scaled_dot_product_attention at an LLM prefill shape (B=4, H=32, S=2048,
D=128) and a short decode-like one (B=32, S=128; Sq = Skv, so top-left and bottom-right causal
agree). Q/K/V/O live in [B, S, H, D] memory (what projections produce) viewed as [B, H, S, D].
Notes record which backend torch dispatched to and which engine cuDNN ran (backend vs python)."""

from cudnn_hostbench.bench.cudnn_graphs.build import as_output, build_graph, guard, new_graph, sdpa_inference, tensor_of
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import nan_fill, sdpa_operands
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported


def _sizes(options):
    sizes = ["b4h32s2048d128", "b32h32s128d128"]
    if options.heavy:
        sizes += ["b1h32s8192d128", "b8h32s1024d64"]
    return sizes


def torch_backend(torch, q, k, v) -> str:
    """The backend torch's dispatcher picks for these inputs (private torch._fused_sdp_choice)."""
    try:
        from torch.nn.attention import SDPBackend
        choice = int(torch._fused_sdp_choice(q, k, v, None, 0.0, True))
        for name, member in SDPBackend.__members__.items():
            if int(member.value) == choice:
                return name
        return f"backend #{choice}"
    except Exception as e:  # noqa: BLE001 - private API: say so, device-mode kernel names still show it
        return f"unknown ({type(e).__name__}; see device-mode kernel names)"


def build(ctx, size):
    torch = ctx.torch
    F = torch.nn.functional
    ops = sdpa_operands(ctx, size)
    q, k, v, o, scale, ref = ops.q, ops.k, ops.v, ops.o, ops.scale, ops.ref
    poison = nan_fill(o)

    def check(out):
        return rel_err(out if isinstance(out, torch.Tensor) else o, ref)
    picked = torch_backend(torch, q, k, v)
    cases = {"torch_sdpa": Case(
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale), check, poison,
        note=f"torch dispatched to {picked} (torch._fused_sdp_choice)")}

    def torch_cudnn():
        op = getattr(torch.ops.aten, "_scaled_dot_product_cudnn_attention", None)
        if op is None:
            raise Unsupported("needs torch.ops.aten._scaled_dot_product_cudnn_attention")

        def fn():
            return op(q, k, v, None, False, 0.0, True, False, scale=scale)[0]
        try:                       # a refusal for this shape/GPU is "unsupported", not a probe error
            with torch.cuda.stream(ctx.stream):
                fn()
            ctx.sync()
        except (RuntimeError, NotImplementedError) as e:
            raise Unsupported(f"torch's cuDNN attention refused: {type(e).__name__}: {str(e)[:200]}") from e
        return Case(fn, check, poison, note="torch's own cuDNN attention (C++ frontend), private aten op")
    cases["torch_cudnn"] = guard(torch_cudnn)

    def cudnn_sdpa():
        g = new_graph(ctx)
        Q, K, V = (tensor_of(ctx, g, t, nm) for t, nm in ((q, "Q"), (k, "K"), (v, "V")))
        Out = sdpa_inference(ctx, g, Q, K, V, use_causal_mask=True, attn_scale=scale)
        as_output(ctx, Out, o)
        bl = build_graph(ctx, g, [Q, K, V, Out], what="causal SDPA graph")
        run = bl.call((q, k, v, o))
        return Case(lambda: run() or o, check, poison,
                                   note=f"cuDNN ran the {bl.engine}; plan {bl.index} '{bl.plan}'")
    cases["cudnn_sdpa"] = guard(cudnn_sdpa)
    return cases


PROBE = Probe(
    name="sdpa",
    doc=__doc__,
    variants=[
        Variant("torch_sdpa", "baseline", "F.scaled_dot_product_attention(is_causal=True)", kernels=(("sdpa", 1),)),
        Variant("torch_cudnn", "info", "torch's cuDNN attention backend, forced", kernels=(("sdpa", 1),)),
        Variant("cudnn_sdpa", "fixed", "cuDNN frontend SDPA graph, causal", kernels=(("sdpa", 1),)),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_sdpa",
    prepare=prepare,
)


def test_sdpa(hb_run):
    hb_run()
