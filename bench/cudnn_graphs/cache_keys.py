"""Cache keys that outlive a process: stable strings for a problem (winner store, saved plans).

`GraphCache.key` below is the in-process key (a tuple of shapes, strides and
dtypes, hashed by dict lookups). Files need a string that is identical across runs and
versions, readable in a diff, and free of anything that changes per process (pointers, ids).
"""
from __future__ import annotations

import re

_DTYPES = {
    "torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32", "torch.float64": "f64",
    "torch.int8": "i8", "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8",
}
_SAFE = re.compile(r"^[A-Za-z0-9_.:=x,+\-]+$")


def dtype_tag(dtype) -> str:
    """'torch.bfloat16' (or the dtype itself) -> 'bf16'; unknown dtypes keep their name."""
    s = str(dtype)
    return _DTYPES.get(s, s.replace("torch.", ""))


def row_major(shape) -> tuple:
    out, acc = [], 1
    for d in reversed(list(shape)):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def layout_tag(shape, stride) -> str:
    """'rm' for row-major, 'cl' for channels-last (4-D NHWC strides), else the strides themselves."""
    shape, stride = tuple(int(x) for x in shape), tuple(int(x) for x in stride)
    if len(shape) != len(stride):
        raise ValueError(f"shape {shape} and stride {stride} differ in rank")
    if stride == row_major(shape):
        return "rm"
    if len(shape) == 4:
        n, c, h, w = shape
        if stride == (c * h * w, 1, w * c, c):
            return "cl"
    return "s" + "x".join(str(s) for s in stride)


def tensor_tag(shape, stride, dtype) -> str:
    """One operand: '1x256x256:rm:bf16'."""
    return f"{'x'.join(str(int(d)) for d in shape)}:{layout_tag(shape, stride)}:{dtype_tag(dtype)}"


def operands_key(*tensors) -> str:
    """Stable string for torch-like operands (shape, stride(), dtype), in order."""
    return ",".join(tensor_tag(t.shape, t.stride(), t.dtype) for t in tensors)


def problem_key(kind: str, *tensors, **params) -> str:
    """'kind|operands|k=v,...': what a winner entry or a saved plan was made for.

    kind names the graph (e.g. 'matmul', 'conv_bias_relu'); params are graph attributes that
    the operands do not show (padding, activation, ...), sorted so argument order never matters.
    """
    if not kind or "|" in kind:
        raise ValueError(f"bad problem kind {kind!r}")
    parts = [kind, operands_key(*tensors)]
    if params:
        items = []
        for k in sorted(params):
            v = params[k]
            v = "x".join(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v)
            if not _SAFE.match(f"{k}={v}"):
                raise ValueError(f"problem parameter {k}={v!r} has characters a key cannot hold")
            items.append(f"{k}={v}")
        parts.append(",".join(items))
    return "|".join(parts)


class GraphCache:
    """Built graphs keyed by (shape, stride, dtype) of every bound tensor."""

    def __init__(self):
        self._graphs = {}
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*tensors, extra=()) -> tuple:
        return tuple((tuple(t.shape), tuple(t.stride()), str(t.dtype)) for t in tensors) + tuple(extra)

    def get(self, key, build):
        g = self._graphs.get(key)
        if g is None:
            self.misses += 1
            g = self._graphs[key] = build()
        else:
            self.hits += 1
        return g

    def __len__(self):
        return len(self._graphs)
