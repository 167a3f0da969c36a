"""Two linear + bias + ReLU layers, each a cuDNN Frontend matmul registered as a PyTorch op with
torch.library (a `Library`'s define + a CUDA impl) and reached through `torch.ops`, with a torch.mm
between them: 256³ bf16, as integrations that expose a cuDNN graph to other PyTorch code do.
    hostbench audit examples/library_op_integration.py:make_step

The cuDNN side is done right (graph built once, strided W.t() view, stream set only when it
changes, ordered execute: examples/custom_op_integration.py's CudnnMatmul); the call goes through
the dispatcher, the op returns a new tensor per call and looks its graph up by
`(shape, stride, dtype)` every call. examples/library_op_fixed_integration.py calls the same graphs
directly with their outputs and packs made once; the audit's projection for this step is checked
against that step's plain loop.
"""
import torch
from custom_op_integration import CudnnMatmul  # the audit puts this file's folder on sys.path

M = N = K = 256

_LIB = torch.library.Library("hostbench_lib", "DEF")      # kept alive: the op lives as long as it does
_LIB.define("linear_bias_relu(Tensor x, Tensor w_t, Tensor bias) -> Tensor")
_GRAPHS = {}             # (shape, stride, dtype) of x -> CudnnMatmul, filled before the first call


def _linear_bias_relu(x, w_t, bias):
    mm = _GRAPHS[(tuple(x.shape), tuple(x.stride()), x.dtype)]   # the graph looked up every call
    return mm(x, w_t).add_(bias).relu_()                        # a new output per call, bias + ReLU in place


_LIB.impl("linear_bias_relu", _linear_bias_relu, "CUDA")


def weights():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16)
    w1, w2 = (torch.randn(N, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16) for _ in range(2))
    w_mid = torch.randn(N, N, device="cuda", generator=gen).mul_(N ** -0.5).to(torch.bfloat16)
    b1, b2 = (torch.randn(N, device="cuda", generator=gen).mul_(0.1).to(torch.bfloat16) for _ in range(2))
    return x, w1, w2, w_mid, b1, b2


def reference(x, w1, w2, w_mid, b1, b2):
    def layer(a, w, b):
        return torch.relu((a.float() @ w.float().t()).to(torch.bfloat16).float() + b.float()).to(torch.bfloat16)
    mid = (layer(x[0], w1, b1).float() @ w_mid.float()).to(torch.bfloat16)
    return layer(mid, w2, b2)


def make_step():
    x, w1, w2, w_mid, b1, b2 = weights()
    w1_t, w2_t = w1.t().unsqueeze(0), w2.t().unsqueeze(0)   # [1, K, N] views of nn.Linear's [N, K], no copy
    _GRAPHS[(tuple(x.shape), tuple(x.stride()), x.dtype)] = CudnnMatmul(x, w1_t)   # both layers: one shape
    op = torch.ops.hostbench_lib.linear_bias_relu

    def step():
        h = op(x, w1_t, b1)                                  # through the dispatcher
        h = torch.mm(h[0], w_mid).unsqueeze(0)               # cuBLAS between the layers
        return op(h, w2_t, b2)

    torch.testing.assert_close(step()[0].float(), reference(x, w1, w2, w_mid, b1, b2).float(), rtol=3e-2, atol=3e-2)
    return step
