"""A matmul followed by a chain of pointwise adds, each add with its own input, ending in a ReLU:
Y = ReLU(A·B + X1 + … + Xk), bf16 I/O, fp32 compute. Its variant pack holds 3 + k tensors, so the
same problem family spans packs of 3 to ~16 tensors. The ReLU keeps the k = 0 graph a fused
matmul-pointwise graph too, so every pack size asks the backend for the same kind of engine.
"""
from __future__ import annotations

from cudnn_hostbench.bench.cudnn_graphs.build import Built, as_output, build_graph, new_graph, tensor_of
from cudnn_hostbench.bench.cudnn_graphs.problems import Checked

UID_BASE = 2001          # A, B, X1..Xk, Y get consecutive UIDs from here


class MatmulAddChain(Checked):
    def __init__(self, ctx, tensors: int, n: int = 256):
        if tensors < 3:
            raise ValueError(f"a matmul pack has at least 3 tensors, not {tensors}")
        torch = ctx.torch
        self.ctx, self.n, self.k = ctx, n, tensors - 3
        self.a = ctx.randn(1, n, n, scale=n ** -0.5)
        self.b = ctx.randn(1, n, n)
        self.xs = [ctx.randn(1, n, n, scale=0.25) for _ in range(self.k)]
        self.c = torch.empty(1, n, n, dtype=torch.bfloat16, device=ctx.device)
        acc = self.a.float() @ self.b.float()
        for x in self.xs:
            acc = acc + x.float()
        self.ref = torch.relu(acc)
        self.built: Built | None = None

    def output(self):
        return self.c

    def buffers(self) -> tuple:
        return (self.a, self.b, *self.xs, self.c)

    def build(self) -> Built:
        """Heuristic build (its selected plan is what generic execute runs); fixed UIDs.
        A backend that refuses the fused graph raises Unsupported."""
        ctx, cudnn = self.ctx, self.ctx.cudnn
        f32 = cudnn.data_type.FLOAT
        g = new_graph(ctx)
        A, B = tensor_of(ctx, g, self.a, "A"), tensor_of(ctx, g, self.b, "B")
        y = g.matmul(A=A, B=B, compute_data_type=f32, name="mm")
        xs = []
        for j, x in enumerate(self.xs):
            X = tensor_of(ctx, g, x, f"X{j + 1}")
            y = g.add(a=y, b=X, compute_data_type=f32, name=f"add{j + 1}")
            xs.append(X)
        Y = g.relu(input=y, compute_data_type=f32, name="relu")
        as_output(ctx, Y, self.c)
        tensors = [A, B, *xs, Y]
        for uid, t in enumerate(tensors, UID_BASE):
            t.set_uid(uid)
        self.built = build_graph(ctx, g, tensors, rejected_is_unsupported=True,
                                 what=f"matmul + {self.k} adds + relu graph")
        return self.built

    def dict_pack(self) -> dict:
        """{graph tensor: buffer}: the pack most integrations write."""
        return dict(zip(self.built.tensors, self.buffers()))
