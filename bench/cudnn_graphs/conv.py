"""The tutorial's convolution: Y = ReLU(conv2d(X, W, pad) + b), bf16, channels_last (NHWC strides).

Shared by the conv probe (fusion + CUDA-graph capture), the autotune probe and the kernel-cache
probe. Size labels look like 'n32c128hw56k256' (3x3 filter, padding 1, stride 1 unless 'r'/'p'
say otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass

from bench.cudnn_graphs import support as cs
from bench.cudnn_graphs import graphs
from bench.cudnn_graphs.cache_keys import problem_key


@dataclass
class ConvShape:
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int = 3
    pad: int = 1

    @classmethod
    def parse(cls, label: str) -> "ConvShape":
        d = graphs.parse_dims(label)
        missing = {"n", "c", "h", "w", "k"} - d.keys()
        if missing:
            raise ValueError(f"conv size {label!r} lacks {sorted(missing)}")
        return cls(d["n"], d["c"], d["h"], d["w"], d["k"], d.get("r", 3), d.get("p", d.get("r", 3) // 2))

    @property
    def out_hw(self) -> tuple[int, int]:
        return self.h + 2 * self.pad - self.r + 1, self.w + 2 * self.pad - self.r + 1

    def label(self) -> str:
        return f"n{self.n}c{self.c}hw{self.h}k{self.k}" if self.h == self.w else \
            f"n{self.n}c{self.c}h{self.h}w{self.w}k{self.k}"

    def with_batch(self, n: int) -> "ConvShape":
        return ConvShape(n, self.c, self.h, self.w, self.k, self.r, self.pad)


class ConvProblem:
    """Operands, an fp32 reference and graph builders for one conv shape."""

    def __init__(self, ctx, shape: ConvShape, weight=None, bias=None):
        torch = ctx.torch
        cl = torch.channels_last
        s = self.shape = shape
        self.ctx = ctx
        self.x = ctx.randn(s.n, s.c, s.h, s.w).contiguous(memory_format=cl)
        self.wt = weight if weight is not None else \
            ctx.randn(s.k, s.c, s.r, s.r, scale=(s.c * s.r * s.r) ** -0.5).contiguous(memory_format=cl)
        self.b = bias if bias is not None else ctx.randn(1, s.k, 1, 1, scale=0.5).contiguous(memory_format=cl)
        ho, wo = s.out_hw
        self.y = torch.empty(s.n, s.k, ho, wo, dtype=torch.bfloat16, device=ctx.device).contiguous(memory_format=cl)
        self.b_vec = self.b.reshape(s.k)
        self.b_nhwc = self.b.as_strided((1, s.k, 1, 1), (s.k, 1, s.k, s.k))   # bound with the declared strides
        F = torch.nn.functional
        self.ref = F.relu(F.conv2d(self.x.float(), self.wt.float(), self.b_vec.float(), padding=s.pad))

    # -- checks ------------------------------------------------------------------------------
    def check(self, out) -> float:
        return graphs.rel_err(out if isinstance(out, self.ctx.torch.Tensor) else self.y, self.ref)

    def poison(self) -> None:
        self.y.fill_(float("nan"))

    def case(self, fn, note: str = "") -> graphs.Case:
        return graphs.checked_case(fn, self.check, self.poison, note)

    def problem(self, modes: str = "A+FALLBACK") -> str:
        """Key for persisted plans: operands, conv attributes, and the heuristic modes that made
        the plan list (a plan index means nothing across lists made with other modes)."""
        return problem_key("conv_bias_relu", self.x, self.wt, self.b_nhwc, pad=self.shape.pad, stride=1,
                           modes=modes)

    # -- torch ---------------------------------------------------------------------------------
    def torch_unfused(self):
        """conv2d, then bias add, then ReLU: three kernels' worth of epilogue traffic."""
        F, torch = self.ctx.torch.nn.functional, self.ctx.torch
        x, w, b, p = self.x, self.wt, self.b, self.shape.pad
        return lambda: torch.relu(F.conv2d(x, w, padding=p) + b)

    def torch_bias_in_conv(self):
        """conv2d with its bias argument (torch hands it to cuDNN), then ReLU."""
        F, torch = self.ctx.torch.nn.functional, self.ctx.torch
        x, w, bv, p = self.x, self.wt, self.b_vec, self.shape.pad
        return lambda: torch.relu(F.conv2d(x, w, bv, padding=p))

    # -- cuDNN -----------------------------------------------------------------------------------
    def graph(self, kernel_cache=None, dynamic: bool = False):
        """The fused conv-bias-ReLU graph (unbuilt) and its operands in binding order."""
        ctx, s, cudnn = self.ctx, self.shape, self.ctx.cudnn
        kw = {}
        if kernel_cache is not None:
            kw["kernel_cache"] = kernel_cache
        if dynamic:
            kw["is_dynamic_shape_enabled"] = True
        g = graphs.new_graph(ctx, **kw)
        X = graphs.tensor_of(ctx, g, self.x, "X")
        W = graphs.tensor_of(ctx, g, self.wt, "W")
        # [1, K, 1, 1] in NHWC strides, as cuDNN's samples declare it (torch leaves size-1 dims' strides
        # at 1, which addresses the same K contiguous values)
        B = g.tensor(name="B", dim=[1, s.k, 1, 1], stride=[s.k, 1, s.k, s.k], data_type=cudnn.data_type.BFLOAT16)
        conv = g.conv_fprop(image=X, weight=W, padding=[s.pad, s.pad], stride=[1, 1], dilation=[1, 1],
                            compute_data_type=cudnn.data_type.FLOAT, name="conv")
        Y = g.relu(input=g.bias(input=conv, bias=B, name="bias"), name="relu")
        graphs.as_output(ctx, Y, self.y)
        return g, [X, W, B, Y]

    def build(self, modes=None, policy=None, kernel_cache=None, dynamic: bool = False) -> graphs.Built:
        g, ts = self.graph(kernel_cache, dynamic)
        return graphs.build(self.ctx, g, ts, modes=modes, policy=policy, what="conv-bias-relu graph")

    def buffers(self):
        return (self.x, self.wt, self.b_nhwc, self.y)


def require_conv(ctx) -> None:
    if not hasattr(ctx.cudnn.pygraph, "conv_fprop"):
        raise cs.Unsupported("needs pygraph.conv_fprop")
