"""NVTX ranges around each measurement, so an nsys timeline maps to table rows.

Uses the `nvtx` package where installed, else torch.cuda.nvtx, else nothing.
"""
from __future__ import annotations

import contextlib

try:  # the nvtx package's ranges are cheapest and carry a domain
    import nvtx as _nvtx
except ImportError:  # pragma: no cover - depends on the machine
    _nvtx = None


@contextlib.contextmanager
def nvtx_range(name: str):
    if _nvtx is not None:
        with _nvtx.annotate(name, domain="hostbench"):
            yield
        return
    try:
        import torch
        use_torch = torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        use_torch = False
    if use_torch:
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()
    else:
        yield


def backend() -> str:
    return "nvtx" if _nvtx is not None else "torch.cuda.nvtx"
