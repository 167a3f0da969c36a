"""examples/custom_op_integration.py with its findings fixed: the same cuDNN matmul
(Y = X @ W.t(), 256³ bf16, the graph built once, strided W.t() view, stream set only when it
changes, ordered execute) called directly in eager code instead of through
@torch.library.custom_op, with its output and variant pack built once and reused. The audit's
projection for the custom_op example ("what the step would cost fixed") is checked against this
step's measured eager time.
    hostbench audit examples/direct_op_integration.py:make_step

The output buffer is reused: read it before the next call (or copy it) if you keep it.
"""
import cudnn
import torch

M = N = K = 256
UIDS = (1, 2, 3)         # x, w_t, y


class DirectMatmul:
    """One built graph for [1, M, K] @ [1, K, N] bf16 with B bound as a strided W.t() view; the
    pack and the output are made once for the input it was built for."""

    def __init__(self, x, w_t):
        bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
        self.handle = cudnn.create_handle()
        self.out = torch.empty(x.shape[0], x.shape[1], w_t.shape[2], dtype=x.dtype, device=x.device)
        g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=self.handle)
        a = g.tensor(name="x", dim=list(x.shape), stride=list(x.stride()), data_type=bf16)
        b = g.tensor(name="w_t", dim=list(w_t.shape), stride=list(w_t.stride()), data_type=bf16)
        y = g.matmul(name="mm", A=a, B=b, compute_data_type=f32)
        y.set_output(True).set_data_type(bf16).set_dim(list(self.out.shape)).set_stride(list(self.out.stride()))
        for t, uid in zip((a, b, y), UIDS):
            t.set_uid(uid)
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        self.graph = g
        self.ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=x.device)
        self.ordered = _has_tensor_uids()
        self.pack = (x, w_t, self.out) if self.ordered else {a: x, b: w_t, y: self.out}
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        dev = x.device.index or 0
        self._stream_now = (lambda: raw(dev)) if raw is not None else (lambda: torch.cuda.current_stream(dev).cuda_stream)
        self._stream = None

    def __call__(self):
        s = self._stream_now()
        if s != self._stream:                     # set_stream only when the stream changed
            cudnn.set_stream(handle=self.handle, stream=s)
            self._stream = s
        if self.ordered:
            self.graph.execute(self.pack, self.ws, handle=self.handle, tensor_uids=UIDS)
        else:
            self.graph.execute(self.pack, self.ws, handle=self.handle)
        return self.out


def _has_tensor_uids():
    import inspect
    try:
        return "tensor_uids" in inspect.signature(cudnn.pygraph.execute).parameters
    except (TypeError, ValueError):
        return "tensor_uids" in (cudnn.pygraph.execute.__doc__ or "")


def make_step():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    mm = DirectMatmul(x, w.t().unsqueeze(0))      # [1, K, N] view of nn.Linear's [N, K], no copy
    ref = (x.float() @ w.float().t()).to(torch.bfloat16)
    torch.testing.assert_close(mm(), ref, rtol=2e-2, atol=2e-2)
    return mm
