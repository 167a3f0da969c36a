"""A training step through a torch.autograd.Function whose forward AND backward call cuDNN.

On CUDA, torch's autograd engine runs the backward on its own device thread while the main thread
waits in `loss.backward()`: the audit must see the backward's traps there as it sees the forward's.
Y = X @ W.t() (W in nn.Linear layout [out, in]); the backward computes dX = dY @ W with cuDNN,
dW = dY.t() @ X with torch.mm (cuBLAS), and dX again with cuDNN for a second consumer, so one
cuBLAS call sits between two cuDNN calls. Traps planted, one per marked line:
    hostbench audit examples/autograd_backward_integration.py:make_step
forward and backward: (3) set_stream with a Stream object queried for its pointer per call,
(2) generic execute, (4) a new dict pack and a new output per call; the backward also (7) issues
a cuBLAS call between two cuDNN calls.
"""
import cudnn
import torch

M = N = K = 256          # 256³ bf16: the kernels are nearly free, so host overhead shows


def _matmul_graph(handle, a_like, b_like, out_like):
    """A built cuDNN matmul graph C = A @ B for these shapes/strides (set-up, built once)."""
    bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    a = g.tensor(name="A", dim=list(a_like.shape), stride=list(a_like.stride()), data_type=bf16)
    b = g.tensor(name="B", dim=list(b_like.shape), stride=list(b_like.stride()), data_type=bf16)
    c = g.matmul(name="mm", A=a, B=b, compute_data_type=f32)
    c.set_output(True).set_data_type(bf16).set_dim(list(out_like.shape)).set_stride(list(out_like.stride()))
    g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=out_like.device)
    return g, (a, b, c), ws


class Graphs:
    def __init__(self, x, w):
        self.handle = cudnn.create_handle()
        w_t = w.t().unsqueeze(0)                     # bound as a strided view (no copy)
        y = torch.empty(1, M, N, dtype=x.dtype, device=x.device)
        self.fwd = _matmul_graph(self.handle, x, w_t, y)
        self.dgrad = _matmul_graph(self.handle, y, w.unsqueeze(0), x)
        self.w_t, self.w3 = w_t, w.unsqueeze(0)

    def run(self, graph, a, b, out_shape, like):
        g, (ta, tb, tc), ws = graph
        out = torch.empty(out_shape, dtype=like.dtype, device=like.device)                  # trap 4
        cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)  # trap 3
        g.execute({ta: a, tb: b, tc: out}, ws, handle=self.handle)                           # traps 2, 4
        return out


class CudnnLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, graphs):
        ctx.save_for_backward(x)
        ctx.graphs = graphs
        return graphs.run(graphs.fwd, x, graphs.w_t, (1, M, N), x)

    @staticmethod
    def backward(ctx, dy):                          # on CUDA: runs on the autograd engine's thread
        (x,) = ctx.saved_tensors
        gr = ctx.graphs
        dy = dy.contiguous()
        dx = gr.run(gr.dgrad, dy, gr.w3, (1, M, K), x)         # cuDNN
        dw = torch.mm(dy[0].t(), x[0])                         # trap 7: cuBLAS between two cuDNN calls
        dx2 = gr.run(gr.dgrad, dy, gr.w3, (1, M, K), x)        # cuDNN again (a second consumer's dX)
        return dx + dx2, dw, None


def make_step():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16).requires_grad_()
    w = torch.randn(N, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16).requires_grad_()
    graphs = Graphs(x.detach(), w.detach())

    def step():
        x.grad = w.grad = None
        y = CudnnLinear.apply(x, w, graphs)
        y.float().sum().backward()
        return y

    y = step()
    ref = (x.detach().float() @ w.detach().float().t()).to(torch.bfloat16)
    torch.testing.assert_close(y.detach(), ref, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(x.grad.float(), 2 * w.detach().float().sum(0).expand(1, M, K), rtol=3e-2, atol=3e-2)
    return step
