"""The shared matmul problem of the matmul probes: operands, a built cuDNN graph, and its calls.

C[1,M,N] = A[1,M,K] @ B[1,K,N] in bf16. Each `*_call` method returns a zero-argument callable that
makes one call of that form; probes combine them into their variants.
"""
from __future__ import annotations

from dataclasses import dataclass

from bench.cudnn_graphs import support as cs
from bench.measure.probe import Case, rel_err


def cube_sizes(config) -> list[str]:
    return [s.strip() for s in config.getoption("--hb-sizes").split(",") if s.strip()]


def mnk(size: str) -> tuple[int, int, int]:
    parts = [int(x) for x in size.split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


@dataclass
class Matmul:
    ctx: object
    a: object
    b: object
    c: object
    ref: object
    mg: cs.MatmulGraph
    vp: dict

    @classmethod
    def build(cls, ctx, size: str, b_view=None, cache=None) -> "Matmul":
        """b_view: optional torch tensor to bind as B (e.g. W.t().unsqueeze(0), a strided view)."""
        torch = ctx.torch
        m, n, k = mnk(size)
        a = ctx.randn(1, m, k, scale=k ** -0.5)
        b = b_view if b_view is not None else ctx.randn(1, k, n)
        c = torch.empty(1, m, n, dtype=torch.bfloat16, device=ctx.device)
        ref = torch.matmul(a.float(), b.float())
        key = cs.GraphCache.key(a, b, c)
        pinned = ctx.pinned_plans.get(key)
        mg = cs.build_matmul(ctx.cudnn, ctx.handle, a, b, c)
        t = mg.tensors
        vp = {t["A"]: a, t["B"]: b, t["C"]: c}
        if pinned is None or pinned not in mg.built:
            pinned = cs.pin_plan(mg, vp, ctx.handle, ctx.stream)
            ctx.pinned_plans[key] = pinned
        mg.pinned = pinned
        return cls(ctx, a, b, c, ref, mg, vp)

    # -- checks --------------------------------------------------------------------------------
    def check_out(self, out) -> float:
        is_tensor = isinstance(out, self.ctx.torch.Tensor)
        return rel_err(out if is_tensor else self.c, self.ref)

    def poison(self) -> None:
        self.c.fill_(float("nan"))

    def plan_note(self) -> str:
        mg = self.mg
        us = mg.plan_us.get(mg.pinned)
        return (f"pinned plan {mg.pinned} '{cs.plan_name(mg, mg.pinned)}' of {len(mg.built)} built"
                + (f" ({us:.2f} us by events)" if us else ""))

    def heuristic_note(self) -> str:
        i = getattr(self.mg.graph, "_plan_index", None)  # private; absent before 1.27
        return "execute runs the heuristic's pick" + (f": plan {i} '{cs.plan_name(self.mg, i)}'" if i is not None else "")

    def case(self, fn, note: str = "") -> Case:
        return Case(fn=fn, check=self.check_out, poison=self.poison, note=note)

    # -- call forms ------------------------------------------------------------------------------
    def torch_mm_call(self):
        a2, b2 = self.a[0], self.b[0]
        mm = self.ctx.torch.mm
        return lambda: mm(a2, b2)

    def generic_call(self):
        g, vp, ws, h = self.mg.graph, self.vp, self.mg.workspace, self.ctx.handle
        return lambda: g.execute(vp, ws, handle=h)

    def pinned_call(self):
        g, vp, ws, h, i = self.mg.graph, self.vp, self.mg.workspace, self.ctx.handle, self.mg.pinned
        return lambda: g.execute_plan_at_index(vp, ws, i, handle=h)

    def ordered_call(self, pinned: bool = False):
        if not self.ctx.caps.get("ordered"):
            raise cs.Unsupported("needs the ordered tensor_uids execute (frontend >= 1.31)")
        g, ws, h, i = self.mg.graph, self.mg.workspace, self.ctx.handle, self.mg.pinned
        bufs = (self.a, self.b, self.c)
        uids = tuple(cs.MatmulGraph.UIDS[k] for k in ("A", "B", "C"))
        if pinned:
            return lambda: g.execute_plan_at_index(bufs, ws, i, handle=h, tensor_uids=uids)
        return lambda: g.execute(bufs, ws, handle=h, tensor_uids=uids)

    def raw_floor_call(self):
        """PRIVATE frontend API (1.32 IR): the backend execute with a pre-normalised pointer pack."""
        g = self.mg.graph
        try:
            pack = g._normalize(g._uid_to_data(self.vp), self.mg.workspace)
            cpp_idx = g._materialize_backend_plan(self.mg.pinned).cpp_index
            lowered = g._lowered_graph
            fn = lowered._execute_with_raw_ptrs
            hb = self.ctx.handle.backend_handle
        except AttributeError as e:
            raise cs.Unsupported(f"needs the private raw-pointer execute of frontend 1.32 ({e})") from e
        addr, n, ws = pack.address, len(pack), pack.workspace
        self._keep = pack  # the pointer array must outlive every call
        return lambda: fn(addr, n, ws, hb, cpp_idx)


def try_case(make):
    """Runs a case factory, turning Unsupported (and friends) into the value a probe returns."""
    try:
        return make()
    except cs.Unsupported as e:
        return e
    except Exception as e:  # noqa: BLE001 - e.g. cudnnGraphNotSupportedError
        if cs.is_not_supported(e):
            return cs.Unsupported(str(e))
        raise
