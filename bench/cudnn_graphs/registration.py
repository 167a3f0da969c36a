"""Registering one op implementation with PyTorch the ways integrations do, so the registration
probe can call the same cuDNN call through each: `@torch.library.custom_op` (with a fake, and
optionally an autograd formula) and `torch.library.Library` define + impl.

Every registration gets a fresh op name (a counter), because a name can be registered once per
process and a probe builds once per size. The Library object is returned with the op: the op is
deregistered when it is garbage collected, so the caller keeps it alive.

Pure torch: the CPU tests register a torch.mm implementation on the CPU key.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

SCHEMA = "(Tensor a, Tensor b) -> Tensor"      # a 2-input matmul-like op returning a new tensor
_ids = itertools.count()


@dataclass
class Registered:
    call: Callable          # what user code calls: the CustomOpDef, or the OpOverload
    via_ops: Callable       # the same op looked up through torch.ops.<ns>.<name> (the overload packet)
    qualname: str           # "ns::name"
    keep: Any = None        # keeps the registration alive


class Registry:
    """The registrations a probe made on one GPU context, closed by the context's close().
    torch keeps a registered implementation alive from C++ even after its op is deregistered
    (seen on torch 2.11 and 2.13: custom_op and Library alike), and with it what the function
    closes over: a built cuDNN graph, which the frontend then reports as leaked at exit. So close()
    also empties the closure cells of every implementation given to `release`: what torch keeps
    is then a function with no state. The body itself stays untouched (no per-call indirection)."""

    def __init__(self):
        self.items: list[Registered] = []
        self.impls: list[Callable] = []

    def add(self, reg: "Registered") -> "Registered":
        self.items.append(reg)
        return reg

    def release(self, impl: Callable) -> Callable:
        """impl, whose captured state close() drops."""
        self.impls.append(impl)
        return impl

    def close(self) -> None:
        try:
            from torch._library import custom_ops
            tables = [getattr(custom_ops, n, {}) for n in ("OPDEFS", "OPDEF_TO_LIB")]
        except ImportError:
            tables = []
        while self.items:
            reg = self.items.pop()
            lib = getattr(reg.keep, "_lib", reg.keep)     # a CustomOpDef's Library, or the Library
            destroy = getattr(lib, "_destroy", None)
            if callable(destroy):
                destroy()
            for t in tables:
                t.pop(reg.qualname, None)
        while self.impls:
            for cell in self.impls.pop().__closure__ or ():
                cell.cell_contents = None


def _ops_packet(torch, ns: str, name: str):
    return getattr(getattr(torch.ops, ns), name)


def matmul_fake(a, b):
    """Shape of a [..., M, K] @ [..., K, N] result, for torch.compile/fake tensors."""
    return a.new_empty((*a.shape[:-1], b.shape[-1]))


def matmul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return grad @ b.transpose(-1, -2), a.transpose(-1, -2) @ grad


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def custom_op(impl: Callable, device_type: str = "cuda", autograd: bool = False,
              ns: str = "hostbench_co", fake: Callable = matmul_fake) -> Registered:
    """impl(a, b) -> new tensor, registered with @torch.library.custom_op (schema given, so impl
    needs no annotations) plus register_fake, and with `autograd` a matmul register_autograd."""
    import torch
    name = f"mm{next(_ids)}"
    op = torch.library.custom_op(f"{ns}::{name}", mutates_args=(), device_types=device_type, schema=SCHEMA)(impl)
    op.register_fake(fake)
    if autograd:
        op.register_autograd(matmul_backward, setup_context=_matmul_setup)
    return Registered(op, _ops_packet(torch, ns, name), f"{ns}::{name}", keep=op)


def library_op(impl: Callable, dispatch_key: str = "CUDA", ns: str = "hostbench_lib") -> Registered:
    """impl(a, b) -> new tensor, registered with torch.library.Library(ns, "FRAGMENT"): define + impl
    for one dispatch key; no fake, no autograd formula (the dispatcher's fallthrough runs)."""
    import torch
    name = f"mm{next(_ids)}"
    lib = torch.library.Library(ns, "FRAGMENT")
    lib.define(f"{name}{SCHEMA}")
    lib.impl(name, impl, dispatch_key)
    packet = _ops_packet(torch, ns, name)
    return Registered(packet.default, packet, f"{ns}::{name}", keep=lib)
