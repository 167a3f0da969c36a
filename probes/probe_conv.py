"""Trap 6 (conv) and graph capture of a conv plan: the tutorial's conv-bias-ReLU (N=32, C=128,
H=W=56, K=256, 3x3, channels_last, bf16) as ONE fused cuDNN graph vs torch's conv2d + bias add +
ReLU. The fused plan's eager column vs its graph column is the per-iteration cost of eager launch
vs captured replay; the small size shows it where launch cost dominates."""
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import ConvProblem, ConvShape, require_conv
from cudnn_hostbench.bench.measure.probe import Probe, Variant


def _sizes(options):
    sizes = ["n32c128hw56k256", "n1c64hw28k64"]
    if options.heavy:
        sizes += ["n8c256hw28k256", "n64c64hw56k64"]
    return sizes


def build(ctx, size):
    p = ConvProblem(ctx, ConvShape.parse(size))
    cases = {
        "torch_unfused": p.case(p.torch_unfused()),
        "torch_bias_in_conv": p.case(p.torch_bias_in_conv(), note="F.conv2d(x, w, bias) then ReLU"),
    }

    def fused():
        require_conv(ctx)
        b = p.build()
        return p.case(b.call(p.buffers()), note=f"one graph: {b.describe()}; workspace {b.workspace.numel()} B")
    cases["cudnn_fused"] = guard(fused)
    return cases


PROBE = Probe(
    name="conv",
    doc=__doc__,
    variants=[
        Variant("torch_unfused", "baseline", "F.conv2d + bias add + ReLU (torch)",
                kernels=(("conv", 1), ("pointwise", 2))),
        Variant("torch_bias_in_conv", "info", "F.conv2d(bias=) + ReLU (torch)",
                kernels=(("conv", 1), ("pointwise", (1, 2)))),  # torch may add the bias in a kernel of its own
        Variant("cudnn_fused", "fixed", "conv-bias-ReLU in one cuDNN graph", kernels=(("conv", 1),)),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_unfused",
    prepare=prepare,
)


def test_conv(hb_run):
    hb_run()
