"""A naive cuDNN Frontend linear layer: Y = X @ W.t() with W in nn.Linear layout [out, in].

It works, and it hits the integration guide's traps on purpose, one per marked line:
    hostbench audit examples/naive_integration.py:make_step
Compare examples/fixed_integration.py, which does the same work without them.
"""
import cudnn
import torch

M = N = K = 256          # 256³ bf16: the kernel is nearly free, so host overhead shows


class NaiveLinear:
    def __init__(self, weight):
        self.weight = weight                     # [out, in], as nn.Linear stores it
        self.handle = cudnn.create_handle()

    def __call__(self, x):
        bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
        w_t = self.weight.t().contiguous().unsqueeze(0)                       # trap 5: copy kernel
        out = torch.empty(x.shape[0], x.shape[1], w_t.shape[2], dtype=x.dtype, device=x.device)  # trap 4
        g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32,
                          handle=self.handle)                                   # trap 1: rebuilt per call
        a = g.tensor(name="x", dim=list(x.shape), stride=list(x.stride()), data_type=bf16)
        b = g.tensor(name="w_t", dim=list(w_t.shape), stride=list(w_t.stride()), data_type=bf16)
        y = g.matmul(name="mm", A=a, B=b, compute_data_type=f32)
        y.set_output(True).set_data_type(bf16).set_dim(list(out.shape)).set_stride(list(out.stride()))
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])                 # trap 1: planned per call
        ws = torch.empty(g.get_workspace_size(), dtype=torch.uint8, device=x.device)  # trap 4
        cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)  # trap 3
        g.execute({a: x, b: w_t, y: out}, ws, handle=self.handle)              # traps 2 and 4
        return out


def make_step():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    layer = NaiveLinear(w)
    ref = (x.float() @ w.float().t()).to(torch.bfloat16)
    torch.testing.assert_close(layer(x), ref, rtol=2e-2, atol=2e-2)
    return lambda: layer(x)
