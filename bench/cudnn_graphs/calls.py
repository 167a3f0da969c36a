"""The frontend calls the issue-67 probes time, and from which frontend version each exists.

One table, so a probe's skip reason always names the call and its first version in the same words
("needs <call> (frontend >= X)"): the version matrix lists a row that an older wheel cannot run
under "Not measured" with that reason, which is how matrix.md says from which version a call
exists. Versions were read from the wheels (1.30.0, 1.31.0, 1.32.0) and the cudnn-frontend git
tags; each entry says where. Detection tests the call itself (hasattr / keyword), never the
version string, as bench/cudnn_graphs/load.py does.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from cudnn_hostbench.bench.cudnn_graphs.load import has_kw
from cudnn_hostbench.bench.measure.runfile.status import Unsupported


@dataclass(frozen=True)
class Call:
    name: str        # how the reason names it
    since: str       # first frontend version that has it
    source: str      # where that was read


CALLS = {
    # execute(override_uids=...) exists from 1.18, but 1.18-1.23's Python execute dropped the
    # overrides silently (fixed in 1.24); the pygraph keyword is_override_shape_enabled is 1.20+
    "override": Call("execute(override_uids=, override_shapes=, override_strides=) with "
                     "pygraph(is_override_shape_enabled=True)", "1.24",
                     "cudnn/_pygraph.py execute / _normalize (1.32 wheel); python/cudnn/__init__.py (tags)"),
    "populate_cuda_graph": Call("pygraph.populate_cuda_graph / update_cuda_graph", "1.8",
                                "python/pygraph/pygraph.cpp (tags); cudnn/_pygraph.py _cuda_graph_call (1.32)"),
    "graph_wrapper": Call("cudnn.Graph (the frontend's torch wrapper)", "1.15", "cudnn/wrapper.py (1.32 wheel)"),
    "sdpa_provider": Call("cudnn.torch.sdpa_provider", "1.30",
                          "cudnn/torch/sdpa_provider.py (1.30.0, 1.31.0, 1.32.0 wheels)"),
    "python_engines": Call("the ranked plan list with python engines (pygraph.plans, selected_engine)", "1.27",
                           "cudnn/_pygraph.py, cudnn/engines/ (1.32 wheel)"),
}


def needs(key: str, extra: str = "") -> Unsupported:
    """The Unsupported a probe raises when the installed frontend lacks CALLS[key]."""
    c = CALLS[key]
    return Unsupported(f"needs {c.name} (frontend >= {c.since}){'; ' + extra if extra else ''}")


def version(cudnn) -> tuple:
    """The frontend's version as a tuple of ints ((0,) when unreadable)."""
    out = []
    for part in str(getattr(cudnn, "__version__", "0")).split("."):
        digits = re.match(r"\d*", part)[0]     # '0rc1' -> 0: a pre-release counts as its release
        if not digits:
            break
        out.append(int(digits))
        if len(digits) < len(part):
            break
    return tuple(out) or (0,)


def has_override(cudnn) -> bool:
    """Overrides that reach the backend: the pygraph keyword (1.20+) and an execute that forwards
    them (1.24+: 1.18-1.23 dropped them, which no keyword test can see)."""
    g = cudnn.pygraph
    return has_kw(g.__init__, "is_override_shape_enabled") and has_kw(g.execute, "override_uids") \
        and version(cudnn) >= (1, 24)


def has_native_cuda_graph(cudnn) -> bool:
    g = cudnn.pygraph
    return hasattr(g, "populate_cuda_graph") and hasattr(g, "update_cuda_graph")


def has_graph_wrapper(cudnn) -> bool:
    try:
        return hasattr(cudnn, "Graph") and cudnn.Graph is not None
    except ImportError:    # 1.27+ imports the wrapper lazily, and it needs torch
        return False


def has_python_engines(cudnn) -> bool:
    g = cudnn.pygraph
    return getattr(g, "__module__", "") == "cudnn._pygraph" and hasattr(g, "plans") and hasattr(g, "select_plan")


def sdpa_provider(cudnn):
    """cudnn.torch.sdpa_provider, or Unsupported saying why it cannot be imported."""
    try:
        mod = importlib.import_module("cudnn.torch.sdpa_provider")
    except ImportError as e:
        raise needs("sdpa_provider", f"import failed: {e}") from e
    if not hasattr(mod, "_fwd"):
        raise needs("sdpa_provider", "this version has no _fwd (the forward install() registers)")
    return mod
