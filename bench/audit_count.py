"""The audit's counting pass: runs a step with cudnn and torch entry points wrapped, and counts
per step what it calls.

Kept apart from timing: the wrappers exist only inside `count_step` and are removed in a
`finally`, so they never touch a timed call. They replace attributes on the objects user code
looks them up from (`cudnn.set_stream`, `torch.empty`, methods of `cudnn.pygraph` and
`torch.Tensor`); a name bound earlier by `from cudnn import set_stream` is not seen.

Variant-pack dicts cannot be wrapped, so a pack is "new" when execute gets a container object it
has not seen before in this pass (every pack seen is kept alive until the pass ends, so a freed
dict's id cannot be reused by the next one).
"""
from __future__ import annotations

import time
from collections import Counter

BUILD_STEPS = ("validate", "build_operation_graph", "create_execution_plans", "check_support",
               "build_plans", "build_plan_at_index", "build", "deserialize")
EXECUTES = ("execute", "execute_plan_at_index")
ALLOC_FNS = ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
             "empty_strided")
ALLOC_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full")
CUBLAS_FNS = ("mm", "matmul", "bmm", "addmm", "baddbmm")
CUBLAS_METHODS = ("mm", "matmul", "__matmul__")
SYNC_METHODS = ("item", "cpu", "tolist")

# every per-step count the pass reports, so absent ones read as 0
COUNT_KEYS = (
    "graphs_created", *BUILD_STEPS, "graph_builds", "build_us",
    "execute", "execute_plan_at_index", "execute_ordered", "executes", "new_packs",
    "set_stream", "set_stream_backend", "set_stream_cached", "stream_queries",
    "cuda_allocs", "contiguous_copies", "cublas_calls", "lib_switches", "syncs",
)


class Tally:
    """Counts of one pass; `step_start`/`step_end` bracket each step."""

    def __init__(self):
        self.total = Counter()
        self.depth = Counter()           # re-entrancy per family: count outermost calls only
        self.seen_packs = {}             # id -> pack, kept alive for the whole pass
        self.libs = []                   # "cudnn"/"cublas" in call order, this step
        self.counting = False

    def add(self, key: str, n: float = 1) -> None:
        if self.counting:
            self.total[key] += n

    def lib(self, name: str) -> None:
        if self.counting:
            self.libs.append(name)

    def step_start(self) -> None:
        self.libs = []

    def step_end(self) -> None:
        switches = sum(1 for a, b in zip(self.libs, self.libs[1:]) if a != b)
        self.add("lib_switches", switches)

    def pack(self, obj) -> None:
        if isinstance(obj, (dict, list, tuple)) and id(obj) not in self.seen_packs:
            self.seen_packs[id(obj)] = obj
            self.add("new_packs")


class Patcher:
    """Replaces attributes and puts the originals back, inherited ones by deleting the override."""

    def __init__(self):
        self._undo = []

    def patch(self, owner, name: str, make):
        if owner is None or not hasattr(owner, name):
            return False
        own = name in vars(owner)
        raw = vars(owner)[name] if own else None
        orig = getattr(owner, name)
        setattr(owner, name, make(orig))
        self._undo.append((owner, name, own, raw))
        return True

    def restore(self) -> None:
        while self._undo:
            owner, name, own, raw = self._undo.pop()
            if own:
                setattr(owner, name, raw)
            else:
                delattr(owner, name)


def _on_device(x, device_type: str) -> bool:
    dev = getattr(x, "device", None)
    return getattr(dev, "type", None) == device_type


# -- wrapper factories: each returns make(orig) -> wrapper ------------------------------------

def _nested(tally, family, key, orig, before=None, after=None, timed=None):
    """Counts the outermost call of a family (a build() that calls validate() still counts its
    steps, because each step has its own family)."""
    def wrapper(*args, **kwargs):
        outer = tally.depth[family] == 0
        tally.depth[family] += 1
        t0 = time.perf_counter()
        try:
            if outer and before:
                before(args, kwargs)
            out = orig(*args, **kwargs)
            if outer and after:
                after(args, kwargs, out)
            return out
        finally:
            tally.depth[family] -= 1
            if outer:
                tally.add(key)
                if timed:
                    tally.add(timed, (time.perf_counter() - t0) * 1e6)
    return wrapper


def _wrap_cudnn(p: Patcher, tally: Tally, cudnn) -> None:
    cls = getattr(cudnn, "pygraph", None)
    if isinstance(cls, type):
        p.patch(cls, "__init__", lambda o: _nested(tally, "init", "graphs_created", o))
        for name in BUILD_STEPS:
            # every build step counts; the outermost build call carries the time
            p.patch(cls, name, lambda o, n=name: _build_wrapper(tally, n, o))

        def before_exec(name):
            def before(args, kwargs):
                pack = args[1] if len(args) > 1 else kwargs.get("tensor_dict")
                tally.pack(pack)
                tally.lib("cudnn")
                tally.add("executes")
                tally.add("execute_ordered" if kwargs.get("tensor_uids") is not None else name)
            return before
        for name in EXECUTES:
            p.patch(cls, name, lambda o, n=name: _nested(tally, "execute", "_calls_" + n, o,
                                                         before=before_exec(n)))
    pb = getattr(cudnn, "_pybind_module", None)
    has_raw = pb is not None and hasattr(pb, "_raw_set_stream")
    if has_raw:
        p.patch(pb, "_raw_set_stream", lambda o: _nested(tally, "raw", "set_stream_backend", o))

    def set_stream(orig):
        def wrapper(*args, **kwargs):
            before = tally.total["set_stream_backend"]
            out = orig(*args, **kwargs)
            tally.add("set_stream")
            if not has_raw:  # <=1.27: every call reaches cudnnSetStream
                tally.add("set_stream_backend")
            elif tally.total["set_stream_backend"] == before:
                tally.add("set_stream_cached")
            return out
        return wrapper
    p.patch(cudnn, "set_stream", set_stream)


def _build_wrapper(tally, name, orig):
    inner = _nested(tally, "build:" + name, name, orig)

    def wrapper(*args, **kwargs):
        outer = tally.depth["build"] == 0
        tally.depth["build"] += 1
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            tally.depth["build"] -= 1
            if outer:
                tally.add("build_us", (time.perf_counter() - t0) * 1e6)
    return wrapper


def _wrap_torch(p: Patcher, tally: Tally, torch, device_type: str) -> None:
    def if_device(key, lib=None):
        def after(args, kwargs, out):
            if _on_device(out, device_type):
                tally.add(key)
                if lib:
                    tally.lib(lib)
        return after

    def on_self(key):
        def before(args, kwargs):
            if args and _on_device(args[0], device_type):
                tally.add(key)
        return before

    for name in ALLOC_FNS:
        p.patch(torch, name, lambda o: _nested(tally, "alloc", "_alloc_calls", o, after=if_device("cuda_allocs")))
    Tensor = getattr(torch, "Tensor", None)
    for name in ALLOC_METHODS:
        p.patch(Tensor, name, lambda o: _nested(tally, "alloc", "_alloc_calls", o, after=if_device("cuda_allocs")))
    for name in CUBLAS_FNS:
        p.patch(torch, name, lambda o: _nested(tally, "blas", "_blas_calls", o,
                                                after=if_device("cublas_calls", "cublas")))
    for name in CUBLAS_METHODS:
        p.patch(Tensor, name, lambda o: _nested(tally, "blas", "_blas_calls", o,
                                                 after=if_device("cublas_calls", "cublas")))
    nn = getattr(torch, "nn", None)
    p.patch(getattr(nn, "functional", None), "linear",
            lambda o: _nested(tally, "blas", "_blas_calls", o, after=if_device("cublas_calls", "cublas")))
    for name in SYNC_METHODS:
        p.patch(Tensor, name, lambda o: _nested(tally, "sync", "_sync_calls", o, before=on_self("syncs")))

    def contiguous_before(args, kwargs):
        t = args[0]
        if _on_device(t, device_type) and not t.is_contiguous():
            tally.add("contiguous_copies")
    p.patch(Tensor, "contiguous", lambda o: _nested(tally, "contig", "_contiguous_calls", o, before=contiguous_before))

    cuda = getattr(torch, "cuda", None)
    p.patch(cuda, "current_stream", lambda o: _nested(tally, "stream", "stream_queries", o))
    p.patch(cuda, "synchronize", lambda o: _nested(tally, "sync", "syncs", o))
    for cls_name in ("Stream", "Event"):
        p.patch(getattr(cuda, cls_name, None), "synchronize", lambda o: _nested(tally, "sync", "syncs", o))


def per_step(total: Counter, steps: int) -> dict:
    out = {k: 0.0 for k in COUNT_KEYS}
    for k, v in total.items():
        if not k.startswith("_"):
            out[k] = v / steps
    out["graph_builds"] = max(out["build_plans"] + out["build_plan_at_index"] + out["deserialize"],
                              out["create_execution_plans"], out["graphs_created"])
    out["steps"] = steps
    return out


def count_step(step, steps: int = 10, *, cudnn=None, torch=None, device_type: str = "cuda") -> dict:
    """Per-step counts over `steps` calls of step, after one uncounted call inside the wrapped
    window (so packs and graphs made before the pass are known, and lazy set-up is done).

    cudnn/torch default to the imported modules; tests pass fakes. Whatever happens, every
    wrapped attribute is restored before this returns or raises.
    """
    if torch is None:
        import torch
    if cudnn is None:
        try:
            import cudnn
        except (ImportError, OSError):
            cudnn = None
    tally = Tally()
    p = Patcher()
    try:
        if cudnn is not None:
            _wrap_cudnn(p, tally, cudnn)
        _wrap_torch(p, tally, torch, device_type)
        tally.step_start()
        step()
        tally.counting = True
        for _ in range(steps):
            tally.step_start()
            step()
            tally.step_end()
    finally:
        tally.counting = False
        p.restore()
    return per_step(tally.total, steps)
