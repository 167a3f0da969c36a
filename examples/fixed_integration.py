"""The same linear layer as examples/naive_integration.py with the guide's fixes applied:
graph built once per (shape, stride, dtype), plan autotuned and pinned, stream set only when it
changes, pack and output built once, the weight bound as a strided W.t() view.
    hostbench audit examples/fixed_integration.py:make_step

The output buffer is reused: read it before the next call (or copy it) if you keep it.
"""
import inspect

import cudnn
import torch

M = N = K = 256
UIDS = (1, 2, 3)         # x, w_t, y: fixed so the ordered pack needs no lookups


def _raw_stream_fn(device):
    # torch's cheap pointer read; torch.cuda.current_stream() builds a Stream object per call
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return lambda: raw(device)
    return lambda: torch.cuda.current_stream(device).cuda_stream


def _has_kw(fn, kw):
    try:
        return kw in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return kw in (fn.__doc__ or "")


ORDERED = _has_kw(cudnn.pygraph.execute, "tensor_uids")   # frontend 1.31+


class _Built:
    """One built graph per (shape, stride, dtype): its pinned plan, workspace and output."""

    def __init__(self, layer, x):
        bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
        w_t = layer.w_t
        self.handle = layer.handle
        self.out = torch.empty(x.shape[0], x.shape[1], w_t.shape[2], dtype=x.dtype, device=x.device)
        g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=self.handle)
        a = g.tensor(name="x", dim=list(x.shape), stride=list(x.stride()), data_type=bf16)
        # the view's own strides: the backend reads W as column-major, no transpose kernel
        b = g.tensor(name="w_t", dim=list(w_t.shape), stride=list(w_t.stride()), data_type=bf16)
        y = g.matmul(name="mm", A=a, B=b, compute_data_type=f32)
        y.set_output(True).set_data_type(bf16).set_dim(list(self.out.shape)).set_stride(list(self.out.stride()))
        for t, uid in zip((a, b, y), UIDS):
            t.set_uid(uid)
        self.tensors = (a, b, y)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans(cudnn.build_plan_policy.ALL)
        self.graph = g
        built, ws = [], 0
        for i in range(g.get_execution_plan_count()):
            try:
                ws = max(ws, g.get_workspace_size_plan_at_index(i))
                built.append(i)
            except Exception:  # noqa: BLE001 - a plan that did not build
                continue
        self.ws = torch.empty(max(ws, 1), dtype=torch.uint8, device=x.device)
        self.kw = {"tensor_uids": UIDS} if ORDERED else {}
        self.plan = self._autotune(built, self.pack(x, w_t))

    def pack(self, x, w_t):
        """The one pack object every call with this input reuses: a tuple in uid order (1.31+), else a dict."""
        if ORDERED:
            return (x, w_t, self.out)
        a, b, y = self.tensors
        return {a: x, b: w_t, y: self.out}

    def run(self, pack, plan):
        self.graph.execute_plan_at_index(pack, self.ws, plan, handle=self.handle, **self.kw)

    def _autotune(self, plans, pack, calls=20):
        """Pins the plan with the least GPU time. A sleep kernel holds the stream while the calls
        are queued, so the events time the kernels, not the host's launch rate."""
        best, best_ms = None, float("inf")
        stream = torch.cuda.current_stream()
        sleep = getattr(torch.cuda, "_sleep", None)
        for i in plans:
            try:
                self.run(pack, i)
                stream.synchronize()
            except Exception:  # noqa: BLE001 - listed but not executable here
                continue
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if sleep is not None:
                sleep(2_000_000)
            start.record(stream)
            for _ in range(calls):
                self.run(pack, i)
            end.record(stream)
            end.synchronize()
            if start.elapsed_time(end) < best_ms:
                best, best_ms = i, start.elapsed_time(end)
        if best is None:
            raise RuntimeError("no cuDNN plan executes this matmul")
        return best


class FixedLinear:
    def __init__(self, weight):
        self.weight = weight                      # [out, in], as nn.Linear stores it
        self.w_t = weight.t().unsqueeze(0)        # [1, in, out] view, no copy
        self.handle = cudnn.create_handle()
        self._stream_now = _raw_stream_fn(weight.device.index or 0)
        self._stream = None
        self._graphs = {}                         # (shape, stride, dtype) -> _Built
        self._last = (None, None, None)           # (x, built, pack): the same input skips the key

    def _bind(self, x):
        last_x, built, pack = self._last
        if x is last_x:
            return built, pack
        key = (tuple(x.shape), tuple(x.stride()), x.dtype)
        built = self._graphs.get(key)
        if built is None:
            self._set_stream()                    # autotuning runs on the current stream
            built = self._graphs[key] = _Built(self, x)
        pack = built.pack(x, self.w_t)
        self._last = (x, built, pack)
        return built, pack

    def _set_stream(self):
        s = self._stream_now()
        if s != self._stream:                     # set_stream only when the stream changed
            cudnn.set_stream(handle=self.handle, stream=s)
            self._stream = s

    def __call__(self, x):
        built, pack = self._bind(x)
        self._set_stream()
        built.run(pack, built.plan)
        return built.out


def make_step():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    layer = FixedLinear(w)
    ref = (x.float() @ w.float().t()).to(torch.bfloat16)
    torch.testing.assert_close(layer(x), ref, rtol=2e-2, atol=2e-2)
    return lambda: layer(x)
