"""Execute-time shape overrides on one matmul graph: C[1,M,N] = A[1,M,K] @ B[1,K,N], M dynamic.

One graph is built at the largest M with `is_override_shape_enabled=True`; each execute names the
shape it runs through `override_uids` / `override_shapes` / `override_strides` (the 1.32 Python
execute forwards them to the backend's variant pack: cudnn/_pygraph.py `_execute`, C++
`create_variant_pack`). The backend must be cuDNN >= 9.21 for the graph
("Override shape support requires cudnn 9.21.0 and above", the frontend's operation-graph check)
and >= 9.23 for the workspace query with overrides ("Runtime workspace query with override shapes
requires cuDNN v9.23.0"); both strings are in the 1.32 wheel's compiled module.

A shape the graph cannot reach is a one-line error naming the shape (`Unreachable`), never a
traceback: checked in Python first (rank, the dimensions the graph fixes), then by running it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudnn_hostbench.bench.measure.runfile.status import Unsupported

NEEDS_BACKEND = 92100          # the operation graph with overrides
NEEDS_BACKEND_WS_QUERY = 92300  # get_workspace_size(handle, override_uids, ...)
UIDS = (1001, 1002, 1003)      # A, B, C
_LABEL = re.compile(r"^m(?P<ms>\d+(?:_\d+)*)k(?P<k>\d+)n(?P<n>\d+)$")


class Unreachable(ValueError):
    """A shape the override graph cannot run: the message is one line and names the shape."""


@dataclass(frozen=True)
class Dynamic:
    """The problem of one size label 'm64_128_256_512k1024n1024': several M, one K and N."""
    ms: tuple
    k: int
    n: int

    @classmethod
    def parse(cls, label: str) -> "Dynamic":
        got = _LABEL.match(label)
        if not got:
            raise ValueError(f"override size {label!r}: expected m<M>_<M>..k<K>n<N>, e.g. m64_128_256_512k1024n1024")
        return cls(tuple(int(x) for x in got["ms"].split("_")), int(got["k"]), int(got["n"]))

    @property
    def m_max(self) -> int:
        return max(self.ms)

    def shapes(self, m: int) -> list:
        """override_shapes for M: A, B, C in UIDS order."""
        return [[1, m, self.k], [1, self.k, self.n], [1, m, self.n]]

    def strides(self, m: int, b_stride) -> list:
        """override_strides for M: A and C row-major, B as bound."""
        return [[m * self.k, self.k, 1], list(b_stride), [m * self.n, self.n, 1]]


def one_line(error: BaseException, width: int = 240) -> str:
    """The first line of an exception's message, cut to width: what a row's status can hold."""
    text = str(error).strip().splitlines()
    head = text[0] if text else ""
    return f"{type(error).__name__}: {head[:width]}"


def shape_text(shapes) -> str:
    return " x ".join("[" + ",".join(str(d) for d in s) + "]" for s in shapes)


def reach_problem(declared: list, shapes: list) -> str | None:
    """Why an override cannot reach `shapes` on a graph declared with `declared` (both A, B, C
    dims), checked before anything runs; None where it may. The graph fixes K and N: only M
    (dim 1 of A and C) may move."""
    if len(shapes) != len(declared):
        return f"{len(shapes)} override shapes for {len(declared)} operands"
    for i, (d, s) in enumerate(zip(declared, shapes)):
        name = "ABC"[i]
        if len(s) != len(d):
            return f"{name} has rank {len(s)}, the graph declares rank {len(d)}"
        if any(int(x) < 1 for x in s):
            return f"{name} has a dimension below 1"
    (_, _, k), (_, k2, n), (_, _, n2) = declared
    (_, _, sk), (_, sk2, sn), (_, _, sn2) = shapes
    if (sk, sk2) != (k, k2) or (sn, sn2) != (n, n2):
        return f"K and N are fixed by the graph (K={k}, N={n}); only M may change"
    return None


def unreachable(shapes, built_m: int, why: str) -> Unreachable:
    return Unreachable(f"override cannot reach {shape_text(shapes)} on the graph built at M={built_m}: {why}")


def require(ctx) -> None:
    """Unsupported unless this frontend and backend can run overrides."""
    from cudnn_hostbench.bench.cudnn_graphs import calls
    if not calls.has_override(ctx.cudnn):
        raise calls.needs("override")
    be = ctx.caps.backend
    if 0 < be < NEEDS_BACKEND:
        raise Unsupported(f"execute-time shape overrides need cuDNN >= 9.21.0 (the frontend's operation-graph "
                          f"check: 'Override shape support requires cudnn 9.21.0 and above'); this backend is {be}")
