"""Counting calls that go through the PyTorch dispatcher from Python: ops registered with
`@torch.library.custom_op` (with or without an autograd formula) and ops defined with
`torch.library.Library` reached through `torch.ops`. Used by the counting pass (bench.audit.count).

Both paths end in `OpOverload.__call__` or `OpOverloadPacket.__call__` (a CustomOpDef calls its
OpOverload), so those two are wrapped, counting the outermost call only. Torch's own namespaces
(aten, prims, ...) are left out: user code reaching them through torch.ops is not a registration.
The frontend's own ops (`torch.ops.cudnn.*`) are not the user's registration either: a call made by
`cudnn.torch.sdpa_provider` (its forward, registered on aten's cuDNN attention op) counts as a call
of the provider's path, any other as `fe_op_calls` (unpriced: the provider probe's fix row).
"""
from __future__ import annotations

import sys
from collections import Counter

FRONTEND_NS = "cudnn"

# torch's own op namespaces: a call into them is not a user registration
BUILTIN_NS = frozenset({"aten", "prim", "prims", "quantized", "_quantized", "profiler", "c10d", "_c10d_functional",
                        "_c10d_functional_autograd", "_dtensor", "debugprims", "rngprims", "inductor",
                        "higher_order", "mkldnn", "mkl", "_nested_tensor", "fbgemm", "_test", "onednn"})


def qualname(op) -> str | None:
    """'ns::name' of an OpOverload (`_name`) or an OpOverloadPacket (`_qualified_op_name`)."""
    name = getattr(op, "_qualified_op_name", None) or getattr(op, "_name", None)
    return name if isinstance(name, str) and "::" in name else None


def kind_of(name: str | None, opdefs: dict) -> str | None:
    """The count an op call goes to: custom_op_autograd_calls / custom_op_calls for ops made by
    @torch.library.custom_op (in torch's OPDEFS registry), dispatcher_calls for other user ops,
    None for torch's own namespaces."""
    if not name or name.split("::", 1)[0] in BUILTIN_NS:
        return None
    opdef = opdefs.get(name)
    if opdef is None:
        return "dispatcher_calls"
    return "custom_op_autograd_calls" if getattr(opdef, "_backward_fn", None) is not None else "custom_op_calls"


def _opdefs(torch) -> dict:
    try:
        from torch._library import custom_ops
        return custom_ops.OPDEFS
    except (ImportError, AttributeError):
        return {}


def frontend_kind(name: str | None, caller_module: str, provider_module: str) -> str | None:
    """The count of a call into the frontend's own op namespace: sdpa_provider_calls (its forward)
    or sdpa_provider_bwd_calls when `cudnn.torch.sdpa_provider` made it, else fe_op_calls; None for
    another namespace."""
    if not name or name.split("::", 1)[0] != FRONTEND_NS:
        return None
    if provider_module and caller_module == provider_module:
        return "sdpa_provider_bwd_calls" if "bwd" in name.split("::", 1)[1] else "sdpa_provider_calls"
    return "fe_op_calls"


def wrap_ops(patcher, tally, torch) -> None:
    """Wraps OpOverload/OpOverloadPacket.__call__ (p: count.Patcher; tally: count.Tally)."""
    ops = getattr(torch, "_ops", None)
    opdefs = _opdefs(torch)
    tally.names.setdefault("op", Counter())

    def make(orig):
        def wrapper(self, *args, **kwargs):
            outer = tally.depth["op"] == 0
            tally.depth["op"] += 1
            try:
                return orig(self, *args, **kwargs)
            finally:
                tally.depth["op"] -= 1
                if outer:
                    name = qualname(self)
                    caller = sys._getframe(1).f_globals.get("__name__", "")
                    kind = frontend_kind(name, caller, getattr(tally, "provider_module", "")) or kind_of(name, opdefs)
                    if kind is not None:
                        tally.add(kind)
                        tally.name("op", f"{name} ({kind.removesuffix('_calls').replace('_', ' ')})")
        return wrapper
    for cls in ("OpOverload", "OpOverloadPacket"):
        patcher.patch(getattr(ops, cls, None), "__call__", make)
