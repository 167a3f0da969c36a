"""A per-layer scheduler's MLP step: two cuDNN linear layers (1024 x 1024 x 1024 bf16) with ReLU
between them, and the step's output max logged every step with float() (a host sync).
    hostbench audit examples/scheduler_integration.py:make_step

Traps: each layer caches its built graph by a key recomputed per call, queries and sets the stream
per call, executes generically with a new dict pack, and allocates its output per call. Written
after the audit's model, to test it on a step it had not seen (log 2026-12-02-2249);
examples/scheduler_fixed_integration.py is its hand-fixed version.
"""
import cudnn
import torch

M, D = 1024, 1024


def weights():
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(1, M, D, device="cuda", generator=gen).to(torch.bfloat16)
    w1 = torch.randn(D, D, device="cuda", generator=gen).mul_(D ** -0.5).to(torch.bfloat16)
    w2 = torch.randn(D, D, device="cuda", generator=gen).mul_(D ** -0.5).to(torch.bfloat16)
    return x, w1, w2


def reference(x, w1, w2):
    h = torch.relu((x[0].float() @ w1.float().t()).to(torch.bfloat16).float())
    return (h @ w2.float().t()).to(torch.bfloat16)


class SchedLinear:
    def __init__(self, weight):
        self.weight = weight                    # [out, in]
        self.handle = cudnn.create_handle()
        self.cache = {}

    def key(self, x):
        return (tuple(x.shape), tuple(x.stride()), str(x.dtype), tuple(self.weight.shape))

    def build(self, x):
        bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
        w_t = self.weight.t().unsqueeze(0)
        g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=self.handle)
        a = g.tensor(name="x", dim=list(x.shape), stride=list(x.stride()), data_type=bf16)
        b = g.tensor(name="w_t", dim=list(w_t.shape), stride=list(w_t.stride()), data_type=bf16)
        y = g.matmul(name="mm", A=a, B=b, compute_data_type=f32)
        dims = [x.shape[0], x.shape[1], w_t.shape[2]]
        y.set_output(True).set_data_type(bf16).set_dim(dims).set_stride([dims[1] * dims[2], dims[2], 1])
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=x.device)
        return g, a, b, y, ws

    def __call__(self, x):
        k = self.key(x)
        if k not in self.cache:
            self.cache[k] = self.build(x)
        g, a, b, y, ws = self.cache[k]
        out = torch.empty(x.shape[0], x.shape[1], self.weight.shape[0], dtype=x.dtype, device=x.device)
        cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)
        g.execute({a: x, b: self.weight.t().unsqueeze(0), y: out}, ws, handle=self.handle)
        return out


def make_step():
    x, w1, w2 = weights()
    l1, l2 = SchedLinear(w1), SchedLinear(w2)
    peaks = []

    def step():
        h = torch.relu(l1(x))
        y = l2(h)
        peaks.append(float(y.abs().amax()))     # logged every step: a host sync
        del peaks[:-1]
        return y

    torch.testing.assert_close(step()[0], reference(x, w1, w2), rtol=3e-2, atol=3e-2)
    return step
