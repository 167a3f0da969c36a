"""A transformer-block-like projection step on bf16, the way a framework integrator might first
wire cuDNN Frontend matmuls into a model: M=512 tokens, hidden D=2048.

    qkv = x @ W_qkv.t()            cuDNN matmul, [1, M, D] x [1, D, 3D] (W_qkv in nn.Linear [out, in])
    qkv = silu(qkv)                torch, in place (stand-in for the attention/gating in between)
    o   = qkv @ W_o.t()            cuDNN matmul, [1, M, 3D] x [1, 3D, D]
    o  += x                        torch residual add
    loss = o.float().mean().item() host sync, read every step (the user's own; it stays when fixed)

The graphs are cached by (shape, stride, dtype), so nothing is rebuilt per call, but the layer
still hits several integration traps, each marked with a comment:
    (a) the cache key is recomputed (shape/stride tuples) on every call
    (b) generic graph.execute(dict, ...) instead of a pinned execute_plan_at_index
    (c) cudnn.set_stream(torch.cuda.current_stream().cuda_stream) on every call
    (d) a new variant-pack dict and a new torch.empty output on every call
    (e) W.t().contiguous() (a transpose copy kernel) on every call
Compare attn_proj_fixed_integration.py, which does the same work without them.
"""
import cudnn
import torch
import torch.nn.functional as F

M, D = 512, 2048          # tokens, hidden
D3 = 3 * D                # fused QKV width


class ProjLinear:
    """Y = X @ W.t() on cuDNN with W in nn.Linear layout [out, in]; X is [1, M, in]."""

    def __init__(self, weight, handle):
        self.weight = weight                      # [out, in], as nn.Linear stores it
        self.handle = handle
        self._graphs = {}                         # key -> (graph, a, b, y, workspace)

    def _build(self, x, w_t):
        bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
        out_shape = [x.shape[0], x.shape[1], w_t.shape[2]]
        out_stride = [x.shape[1] * w_t.shape[2], w_t.shape[2], 1]
        g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32,
                          handle=self.handle)
        a = g.tensor(name="x", dim=list(x.shape), stride=list(x.stride()), data_type=bf16)
        b = g.tensor(name="w_t", dim=list(w_t.shape), stride=list(w_t.stride()), data_type=bf16)
        y = g.matmul(name="mm", A=a, B=b, compute_data_type=f32)
        y.set_output(True).set_data_type(bf16).set_dim(out_shape).set_stride(out_stride)
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=x.device)
        return g, a, b, y, ws

    def __call__(self, x):
        if x.dtype != torch.bfloat16:
            raise TypeError("ProjLinear is bf16 only")
        w_t = self.weight.t().contiguous().unsqueeze(0)          # trap (e): transpose copy every call
        key = (tuple(x.shape), tuple(x.stride()), x.dtype,
               tuple(w_t.shape), tuple(w_t.stride()))             # trap (a): key recomputed every call
        entry = self._graphs.get(key)
        if entry is None:
            entry = self._graphs[key] = self._build(x, w_t)
        g, a, b, y, ws = entry
        out = torch.empty(x.shape[0], x.shape[1], w_t.shape[2],
                          dtype=x.dtype, device=x.device)         # trap (d): new output every call
        cudnn.set_stream(handle=self.handle,
                         stream=torch.cuda.current_stream().cuda_stream)  # trap (c): every call
        g.execute({a: x, b: w_t, y: out}, ws, handle=self.handle)  # traps (b) generic execute, (d) new pack
        return out


def weights():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, D, device="cuda", generator=gen).to(torch.bfloat16)
    w_qkv = torch.randn(D3, D, device="cuda", generator=gen).mul_(D ** -0.5).to(torch.bfloat16)   # [out, in]
    w_o = torch.randn(D, D3, device="cuda", generator=gen).mul_(D3 ** -0.5).to(torch.bfloat16)    # [out, in]
    return x, w_qkv, w_o


def reference(x, w_qkv, w_o):
    """float32 reference, rounded to bf16 where the step stores bf16 intermediates: [M, D]."""
    h = (x[0].float() @ w_qkv.float().t()).to(torch.bfloat16).float()
    h = F.silu(h).to(torch.bfloat16).float()
    o = (h @ w_o.float().t()).to(torch.bfloat16).float()
    return o + x[0].float()


def make_step():
    x, w_qkv, w_o = weights()
    handle = cudnn.create_handle()
    qkv_proj = ProjLinear(w_qkv, handle)
    out_proj = ProjLinear(w_o, handle)

    def step():
        h = qkv_proj(x)                              # cuDNN: [1, M, 3D]
        F.silu(h, inplace=True)                      # torch
        o = out_proj(h)                              # cuDNN: [1, M, D]
        o.add_(x)                                    # torch residual
        loss = o.float().mean().item()               # host sync every step: the user's own, kept
        return o, loss

    out, loss = step()
    torch.testing.assert_close(out[0].float(), reference(x, w_qkv, w_o), rtol=3e-2, atol=3e-2)
    if loss != loss:
        raise FloatingPointError("non-finite loss")
    return step
