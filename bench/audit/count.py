"""The audit's counting pass: runs a step with cudnn and torch entry points wrapped, and counts
per step what it calls.

Kept apart from timing: the wrappers exist only inside `count_step` and are removed in a
`finally`, so they never touch a timed call. They replace attributes on the objects user code
looks them up from (`cudnn.set_stream`, `torch.empty`, methods of `cudnn.pygraph` and
`torch.Tensor`); a name bound earlier by `from cudnn import set_stream` is not seen.

Variant-pack dicts cannot be wrapped, so a pack is "new" when execute gets a container object it
has not seen before in this pass (every pack seen is kept alive until the pass ends, so a freed
dict's id cannot be reused by the next one).

The pieces that decide what a count means are plain functions, testable without a GPU:
`allocator_requests` (the caching allocator's statistics), `lib_switches` (cuDNN↔cuBLAS switches,
step boundaries included) and `copy_kind` (what a copy materializes, from shape and strides).
"""
from __future__ import annotations

import bisect
import dis
import sys
import time
from collections import Counter
from pathlib import Path

from cudnn_hostbench.bench.audit import dispatch, usercode

BUILD_STEPS = ("validate", "build_operation_graph", "create_execution_plans", "check_support",
               "build_plans", "build_plan_at_index", "build", "deserialize")
EXECUTES = ("execute", "execute_plan_at_index")
ALLOC_FNS = ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
             "empty_strided")
ALLOC_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full")
CUBLAS_FNS = ("mm", "matmul", "bmm", "addmm", "baddbmm")
CUBLAS_METHODS = ("mm", "matmul", "__matmul__")
# Tensor methods that wait for the device when called on a CUDA tensor, and the name shown
SYNC_METHODS = {"item": ".item()", "cpu": ".cpu()", "tolist": ".tolist()", "__bool__": "bool(tensor)",
                "__int__": "int(tensor)", "__float__": "float(tensor)"}
COPY_KINDS = ("transposed", "channels_last", "other")
# Tensor methods that make a view (or index) per call; counted when user code calls them
VIEW_METHODS = ("view", "view_as", "reshape", "reshape_as", "unsqueeze", "squeeze", "t", "transpose", "permute",
                "expand", "expand_as", "flatten", "unflatten", "narrow", "select", "as_strided", "__getitem__")
# reads of a tensor's layout that build a cache key or a graph's description per call
META_METHODS = ("stride", "size", "dim")
NO_LINES = ("build_us", "execute_us", "pack_tensors", "pack_tensors_dict", "pack_extra_tensors_dict",
            *(f"copy_bytes_{k}" for k in COPY_KINDS))
ALLOC_STAT = "allocation.all.allocated"    # allocator requests, cached blocks included
MIN_STEPS = 2                              # a step boundary must be seen to count switches across it

# issue 67's counts: execute-time shape overrides, the native CUDA-graph API per step, the
# frontend's cudnn.Graph wrapper and its SDPA provider per call, the stream pointer read through a
# Stream object, and executes on pointers the plan was not built for (misaligned)
NEW_CALL_KEYS = (
    "override_executes", "cuda_graph_populates", "cuda_graph_updates", "cuda_graph_updates_moved",
    "fe_wrapper_calls", "fe_wrapper_positional", "fe_wrapper_named", "fe_wrapper_auto_handle",
    "sdpa_provider_calls", "sdpa_provider_bwd_calls", "fe_op_calls",
    "stream_ptr_queries", "misaligned_executes", "lib_switches_within",
)
# counts the frontend's own paths (cudnn.Graph.__call__, cudnn.torch.sdpa_provider) make inside
# themselves: the path's row in the probes already holds their cost, so they are kept apart
# (under "_in_fe_path:<key>") rather than priced a second time by their own rules
PATH_HIDES = frozenset({
    "execute", "execute_plan_at_index", "execute_ordered", "new_packs", "pack_tensors", "pack_tensors_dict",
    "pack_extra_tensors_dict", "set_stream", "set_stream_backend", "set_stream_cached", "stream_queries",
    "stream_ptr_queries", "cuda_factory_calls", "cuda_allocs_explicit", "custom_op_calls",
    "custom_op_autograd_calls", "dispatcher_calls", "fe_op_calls", "override_executes", "misaligned_executes",
    "copies", *(f"copies_{k}" for k in COPY_KINDS), *(f"copy_bytes_{k}" for k in COPY_KINDS),
})

# every per-step count the pass reports, so absent ones read as 0
COUNT_KEYS = (
    "graphs_created", *BUILD_STEPS, "graph_builds", "build_us", "execute_us",
    "execute", "execute_plan_at_index", "execute_ordered", "executes", "new_packs",
    "set_stream", "set_stream_backend", "set_stream_cached", "stream_queries",
    "cuda_allocs", "cuda_allocs_explicit", "cuda_factory_calls",
    "copies", *(f"copies_{k}" for k in COPY_KINDS), *(f"copy_bytes_{k}" for k in COPY_KINDS),
    "cublas_calls", "lib_switches", "syncs",
    # bench.audit.dispatch: registered ops reached through the dispatcher; tensors per variant pack
    "custom_op_calls", "custom_op_autograd_calls", "dispatcher_calls",
    "pack_tensors", "pack_tensors_dict", "pack_extra_tensors_dict",
    # per-call views and layout reads made by user code (bench.audit.rules: views, metadata)
    "tensor_views", "stride_reads", "shape_reads",
    # issue 67: the calls integrations make today (bench.audit.rules: override, cuda_graph_update,
    # fe_wrapper, sdpa_provider, raw_stream, alignment)
    *NEW_CALL_KEYS,
)
EXECUTE_PROBE_PACK = 3    # tensors in the execute probe's pack: what its per-call figures already include
ALIGN_BYTES = 16          # the frontend's Python API declares every tensor 16-byte aligned


# -- plain functions: what the counts mean ---------------------------------------------------------

def allocator_requests(stats) -> int | None:
    """Allocation requests so far from torch.cuda.memory_stats(); None when the allocator does not
    keep them (caching disabled, another backend, no stats)."""
    if not isinstance(stats, dict):
        return None
    v = stats.get(ALLOC_STAT)
    return int(v) if isinstance(v, (int, float)) else None


def allocs_per_step(before, after, steps: int) -> float | None:
    """Allocator requests per step between two memory_stats() dicts; None when either lacks them."""
    a, b = allocator_requests(before), allocator_requests(after)
    if a is None or b is None or b < a or steps < 1:
        return None
    return (b - a) / steps


def lib_switches(per_step: list) -> float:
    """cuDNN↔cuBLAS switches per step from the library of each call, one list per consecutive step.

    In steady state one step follows another, so the switch from a step's last call to the next
    step's first counts too: within-step switches per step, plus the switches seen at the step
    boundaries per boundary. A single step wraps onto itself.
    """
    steps = len(per_step)
    if steps == 0:
        return 0.0
    within = sum(sum(1 for a, b in zip(s, s[1:]) if a != b) for s in per_step)
    calls = [s for s in per_step if s]
    if steps == 1:
        s = per_step[0]
        return float(within + (1 if s and s[-1] != s[0] else 0))
    across = sum(1 for a, b in zip(calls, calls[1:]) if a[-1] != b[0])
    return within / steps + across / (steps - 1)


def lib_switches_within(per_step: list) -> float:
    """cuDNN↔cuBLAS switches per step inside the step alone (no step boundary). One library call
    between two of the other (cuDNN, cuBLAS, cuDNN) makes 2 here and 2 with the boundary, the same
    as a phased step's cyclic count: only this count tells the sandwich from the phased step (1)."""
    if not per_step:
        return 0.0
    return sum(sum(1 for a, b in zip(s, s[1:]) if a != b) for s in per_step) / len(per_step)


def misaligned(pack, align: int = ALIGN_BYTES) -> int:
    """Tensors (or raw pointers) of a variant pack whose address is not `align`-byte aligned: a
    plan built on aligned pointers run on an offset view (the frontend declares 16-byte alignment)."""
    items = pack.values() if isinstance(pack, dict) else pack if isinstance(pack, (list, tuple)) else ()
    n = 0
    for v in items:
        ptr = v if isinstance(v, int) and not isinstance(v, bool) else None
        if ptr is None and hasattr(v, "data_ptr"):
            try:
                ptr = int(v.data_ptr())
            except Exception:  # noqa: BLE001 - a tensor without storage: no pointer to judge
                ptr = None
        if ptr and ptr % align:
            n += 1
    return n


def pointers(pack) -> tuple:
    """A variant pack's (key, address) pairs: tensors by data_ptr(), raw pointers as given."""
    items = pack.items() if isinstance(pack, dict) else enumerate(pack) if isinstance(pack, (list, tuple)) else ()
    out = []
    for k, v in items:
        ptr = v.data_ptr() if hasattr(v, "data_ptr") else v if isinstance(v, int) else id(v)
        out.append((str(k), ptr))
    return tuple(sorted(out))


_NEXT = {}    # code object -> ([offsets of its instructions], [(opname, argval)]), caches left out


def reads_attr_next(frame, attr: str) -> bool:
    """Whether the caller's next instruction after its current call reads `attr` of the result
    (`torch.cuda.current_stream().cuda_stream`): the idiom, read from the bytecode."""
    code = frame.f_code
    got = _NEXT.get(code)
    if got is None:
        ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG")]
        got = _NEXT[code] = ([i.offset for i in ins], [(i.opname, i.argval) for i in ins])
    offsets, ops = got
    # f_lasti can point into the call's inline cache (3.11+): the call is the last instruction at or before it
    k = bisect.bisect_right(offsets, frame.f_lasti)
    if k <= 0 or k >= len(ops):
        return False
    op, arg = ops[k]
    return op.startswith("LOAD_ATTR") and arg == attr


def _dense_order(shape, stride) -> tuple | None:
    """Dims of size > 1, outermost first, if the tensor is a permutation of a contiguous one;
    None if it is not dense (a slice, a broadcast)."""
    dims = [d for d, n in enumerate(shape) if n > 1]
    order = sorted(dims, key=lambda dim: -stride[dim])
    expect = 1
    for d in reversed(order):
        if stride[d] != expect:
            return None
        expect *= shape[d]
    return tuple(order)


def is_transposed_view(shape, stride) -> bool:
    """Strides are a permutation of a contiguous tensor's, in another order (e.g. W.t())."""
    order = _dense_order(shape, stride)
    return order is not None and list(order) != sorted(order)


def is_channels_last(shape, stride) -> bool:
    """A 4-D (N, C, H, W) tensor laid out NHWC, or 5-D laid out NDHWC."""
    order = _dense_order(shape, stride)
    if order is None or len(shape) not in (4, 5):
        return False
    want = tuple(d for d in ((0, 2, 3, 1) if len(shape) == 4 else (0, 2, 3, 4, 1)) if shape[d] > 1)
    return order == want and list(order) != sorted(order)


def copy_kind(shape, src_stride, out_stride=None) -> str:
    """What a copy of a tensor (shape, src_stride) into out_stride (None: contiguous) materializes:
    "channels_last" (into or out of NHWC), "transposed" (a transposed view made contiguous),
    else "other"."""
    shape, src = tuple(shape), tuple(src_stride)
    out = tuple(out_stride) if out_stride is not None else contiguous_strides(shape)
    if len(out) != len(shape):
        return "other"
    if is_channels_last(shape, src) != is_channels_last(shape, out):
        return "channels_last"
    if is_transposed_view(shape, src) and _dense_order(shape, out) == tuple(d for d, n in enumerate(shape) if n > 1):
        return "transposed"
    return "other"


def contiguous_strides(shape) -> tuple:
    out, s = [], 1
    for n in reversed(tuple(shape)):
        out.append(s)
        s *= max(n, 1)
    return tuple(reversed(out))


# -- the tally of one pass ---------------------------------------------------------------------------

class Tally:
    """Counts of one pass; `step_start` opens each counted step."""

    def __init__(self):
        self.total = Counter()
        self.depth = Counter()           # re-entrancy per family: count outermost calls only
        self.seen_packs = {}             # id -> pack, kept alive for the whole pass
        self.libs = []                   # per counted step: "cudnn"/"cublas" in call order
        self.names = {"alloc": Counter(), "sync": Counter(), "op": Counter(), "pack": Counter()}
        self.copies = Counter()          # (call, where, kind, shape, dtype, stride, transposed, bytes) -> n
        self.counting = False
        self.where = {}                  # count key -> Counter of the user lines it came from
        self.path_modules = frozenset()  # module names of the frontend's own paths (PATH_HIDES)
        self.provider_module = ""        # cudnn.torch.sdpa_provider's module name
        self.graph_ptrs = {}             # (pygraph, CUDA graph) -> the pointers last populated/updated

    def in_fe_path(self, frame) -> bool:
        """Whether `frame` or a frame above it runs in one of the frontend's own call paths (on any
        thread: a backward on the autograd thread has its own stack)."""
        mods = self.path_modules
        f = frame
        while f is not None and mods:
            if f.f_globals.get("__name__") in mods:
                return True
            f = f.f_back
        return False

    def add(self, key: str, n: float = 1) -> None:
        if self.counting:
            if key in PATH_HIDES and self.in_fe_path(sys._getframe(1)):
                key = "_in_fe_path:" + key
            self.total[key] += n
            if not key.startswith("_") and key not in NO_LINES:
                line = usercode.innermost_user_line(sys._getframe(1)) or "(no user line)"
                self.where.setdefault(key, Counter())[line] += 1

    def name(self, family: str, name: str) -> None:
        if self.counting:
            self.names[family][name] += 1

    def lib(self, name: str) -> None:
        if self.counting and self.libs:
            self.libs[-1].append(name)

    def step_start(self) -> None:
        if self.counting:
            self.libs.append([])

    def graph_pack(self, args, kwargs) -> bool:
        """populate/update_cuda_graph(self, handle, pack, workspace, graph): whether the pack's pointers
        differ from the last ones given for this graph (an update with the same pointers is the trap)."""
        pack = args[2] if len(args) > 2 else kwargs.get("tensor_dict", kwargs.get("variant_pack"))
        graph = args[4] if len(args) > 4 else kwargs.get("cuda_graph", kwargs.get("graph"))
        key = (id(args[0]) if args else 0, graph if isinstance(graph, int) else id(graph))
        ptrs = pointers(pack)
        moved = self.graph_ptrs.get(key, ptrs) != ptrs
        self.graph_ptrs[key] = ptrs
        return moved

    def pack(self, obj) -> None:
        if isinstance(obj, (dict, list, tuple)) and id(obj) not in self.seen_packs:
            self.seen_packs[id(obj)] = obj
            self.add("new_packs")

    def pack_size(self, obj, ordered: bool) -> None:
        """Tensors bound per execute: a tuple's length, a dict's non-None values."""
        if isinstance(obj, dict):
            n = sum(1 for v in obj.values() if v is not None)
        elif isinstance(obj, (list, tuple)):
            n = len(obj)
        else:
            return
        form = "ordered" if ordered else ("dict" if isinstance(obj, dict) else "sequence")
        self.add("pack_tensors", n)
        if form == "dict":
            self.add("pack_tensors_dict", n)
            self.add("pack_extra_tensors_dict", max(0, n - EXECUTE_PROBE_PACK))
        self.name("pack", f"{n} tensors, {form}")

    def copy(self, call: str, where: str, src, out_stride) -> None:
        if not self.counting:
            return
        shape, stride = tuple(src.shape), tuple(src.stride())
        kind = copy_kind(shape, stride, out_stride)
        nbytes = src.numel() * src.element_size()
        dtype = str(src.dtype).replace("torch.", "")
        self.copies[(call, where, kind, shape, dtype, stride, is_transposed_view(shape, stride), nbytes)] += 1
        self.add("copies")
        self.add(f"copies_{kind}")
        self.add(f"copy_bytes_{kind}", nbytes)


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


def _on_device(value, device_type: str) -> bool:
    dev = getattr(value, "device", None)
    return getattr(dev, "type", None) == device_type


def _caller(depth: int = 2) -> str:
    """file:line of the user code that made the call (for naming copies)."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return "?"
    return f"{Path(f.f_code.co_filename).name}:{f.f_lineno}"


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
                t0 = time.perf_counter()     # time the call, not the bookkeeping
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


def _wrap_cudnn(patcher: Patcher, tally: Tally, cudnn) -> None:
    cls = getattr(cudnn, "pygraph", None)
    if isinstance(cls, type):
        patcher.patch(cls, "__init__", lambda orig: _nested(tally, "init", "graphs_created", orig))
        for name in BUILD_STEPS:
            # every build step counts; the outermost build call carries the time
            patcher.patch(cls, name, lambda orig, attr=name: _build_wrapper(tally, attr, orig))

        def before_exec(name):
            def before(args, kwargs):
                pack = args[1] if len(args) > 1 else kwargs.get("tensor_dict")
                tally.pack(pack)
                tally.pack_size(pack, kwargs.get("tensor_uids") is not None)
                tally.lib("cudnn")
                tally.add("executes")
                tally.add("execute_ordered" if kwargs.get("tensor_uids") is not None else name)
                if kwargs.get("override_uids") or kwargs.get("override_shapes"):
                    tally.add("override_executes")     # a shape named per call (probe: override)
                if misaligned(pack):
                    tally.add("misaligned_executes")   # an aligned plan on an offset view (probe: alignment)
            return before
        for name in EXECUTES:
            patcher.patch(cls, name, lambda orig, attr=name: _nested(tally, "execute", "_calls_" + attr, orig, timed="execute_us",
                                                         before=before_exec(attr)))
        # the native CUDA-graph API: populating a graph is set-up, once; updating it is for new pointers
        patcher.patch(cls, "populate_cuda_graph", lambda orig: _nested(tally, "graph_api", "cuda_graph_populates", orig,
                                                              before=lambda args, kwargs: tally.graph_pack(args, kwargs)))

        def update_before(args, kwargs):
            moved = tally.graph_pack(args, kwargs)
            tally.add("cuda_graph_updates_moved" if moved else "cuda_graph_updates")
        patcher.patch(cls, "update_cuda_graph", lambda orig: _nested(tally, "graph_api", "_graph_api_calls", orig,
                                                            before=update_before))
    _wrap_fe_paths(patcher, tally, cudnn)
    pb = getattr(cudnn, "_pybind_module", None)
    has_raw = pb is not None and hasattr(pb, "_raw_set_stream")
    if has_raw:
        patcher.patch(pb, "_raw_set_stream", lambda orig: _nested(tally, "raw", "set_stream_backend", orig))

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
    patcher.patch(cudnn, "set_stream", set_stream)


def _wrap_fe_paths(patcher: Patcher, tally: Tally, cudnn) -> None:
    """The frontend's own torch-facing paths: `cudnn.Graph.__call__` (its wrapper: a new pack, a
    generic execute, a new output, per call; a handle="auto" graph also re-binds the handle's stream)
    and `cudnn.torch.sdpa_provider` (seen where it calls torch.ops.cudnn.sdpa_fwd/bwd,
    bench.audit.dispatch). What they call inside is kept apart (PATH_HIDES): their rows price it."""
    mods = set()
    graph = getattr(cudnn, "Graph", None)
    if isinstance(graph, type) and "__call__" in vars(graph):
        mods.add(graph.__module__)

        def call(orig):
            def wrapper(self, *args, **kwargs):
                outer = tally.depth["fe_wrapper"] == 0
                tally.depth["fe_wrapper"] += 1
                try:
                    return orig(self, *args, **kwargs)
                finally:
                    tally.depth["fe_wrapper"] -= 1
                    if outer:
                        tally.add("fe_wrapper_calls")
                        if "handle" not in kwargs and getattr(self, "_Graph__handle", None) == "auto":
                            tally.add("fe_wrapper_auto_handle")
                        elif len(args) == 1 and isinstance(args[0], dict):
                            tally.add("fe_wrapper_named")
                        else:
                            tally.add("fe_wrapper_positional")
            return wrapper
        patcher.patch(graph, "__call__", call)
    provider = f"{getattr(cudnn, '__name__', 'cudnn')}.torch.sdpa_provider"
    mods.add(provider)
    tally.provider_module = provider
    tally.path_modules = frozenset(mods)


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


def _copy_wrapper(tally, call, orig, device_type, made):
    """made(args, kwargs, out) -> (source tensor, strides of what it was copied into) when the
    call copied a device tensor, else None."""
    def wrapper(*args, **kwargs):
        outer = tally.depth["copy"] == 0
        tally.depth["copy"] += 1
        try:
            out = orig(*args, **kwargs)
        finally:
            tally.depth["copy"] -= 1
        if outer and tally.counting:
            got = made(args, kwargs, out)
            if got is not None and _on_device(got[0], device_type) and got[0].numel() > 0:
                tally.copy(call(args, kwargs), usercode.innermost_user_line(sys._getframe(1)) or _caller(), *got)
        return out
    return wrapper


def _fmt_kw(kwargs, name="memory_format") -> str:
    mf = kwargs.get(name)
    return f"{name}={mf}" if mf is not None else ""


def _wrap_copies(patcher: Patcher, tally: Tally, Tensor, device_type: str) -> None:
    def new_tensor(args, kwargs, out):   # .contiguous/.to/.clone: a copy when a new tensor comes back
        src = args[0]
        if out is src or getattr(out, "stride", None) is None:
            return None
        return src, tuple(out.stride())

    def into(args, kwargs, out):         # dst.copy_(src), device to device
        src = args[1] if len(args) > 1 else kwargs.get("src")
        if src is None or not hasattr(src, "stride") or src is out or not _on_device(out, device_type):
            return None
        # a broadcast into another shape is a plain copy: no strides to compare
        return src, tuple(out.stride()) if tuple(src.shape) == tuple(out.shape) else ()

    def to_layout(args, kwargs, out):    # .to(...) counts only as a layout conversion
        return new_tensor(args, kwargs, out) if kwargs.get("memory_format") is not None else None

    patcher.patch(Tensor, "contiguous", lambda orig: _copy_wrapper(
        tally, lambda args, kwargs: f".contiguous({_fmt_kw(kwargs)})", orig, device_type, new_tensor))
    patcher.patch(Tensor, "to", lambda orig: _copy_wrapper(
        tally, lambda args, kwargs: f".to({_fmt_kw(kwargs)})", orig, device_type, to_layout))
    patcher.patch(Tensor, "clone", lambda orig: _copy_wrapper(
        tally, lambda args, kwargs: f".clone({_fmt_kw(kwargs)})", orig, device_type, new_tensor))
    patcher.patch(Tensor, "copy_", lambda orig: _copy_wrapper(tally, lambda args, kwargs: ".copy_()", orig, device_type, into))


def _from_user(depth: int = 2) -> bool:
    """Whether the call `depth` frames up came straight from user code (torch's own Python
    makes views and reads strides all the time: those are the op's cost, not the user's)."""
    try:
        return usercode.is_user(sys._getframe(depth).f_code.co_filename)
    except ValueError:
        return False


def _wrap_views(patcher: Patcher, tally: Tally, Tensor, device_type: str) -> None:
    def counted(key, orig):
        def wrapper(self, *args, **kwargs):
            if tally.counting and _on_device(self, device_type) and _from_user():
                tally.add(key)
            return orig(self, *args, **kwargs)
        return wrapper
    for name in VIEW_METHODS:
        patcher.patch(Tensor, name, lambda orig: counted("tensor_views", orig))
    for name in META_METHODS:
        patcher.patch(Tensor, name, lambda orig, attr=name: counted("stride_reads" if attr == "stride" else "shape_reads", orig))
    shape = getattr(Tensor, "shape", None)
    if shape is not None and hasattr(shape, "__get__"):
        def make(orig):
            def get(self):
                if tally.counting and _on_device(self, device_type) and _from_user():
                    tally.add("shape_reads")
                return orig.__get__(self, type(self))
            return property(get)
        patcher.patch(Tensor, "shape", make)


def _wrap_torch(patcher: Patcher, tally: Tally, torch, device_type: str) -> None:
    def alloc(name):
        def after(args, kwargs, out):
            if _on_device(out, device_type):
                tally.add("cuda_factory_calls")
                if out.numel() * out.element_size() > 0:
                    tally.add("cuda_allocs_explicit")
                    tally.name("alloc", name)
                else:  # no allocator request, but still a tensor made per step
                    tally.name("alloc", name + " (0 bytes)")
        return after

    def blas(args, kwargs, out):
        if _on_device(out, device_type):
            tally.add("cublas_calls")
            tally.lib("cublas")

    def sync_on_self(name):
        def before(args, kwargs):
            if args and _on_device(args[0], device_type):
                tally.add("syncs")
                tally.name("sync", name)
        return before

    def sync(name):
        def before(args, kwargs):
            tally.add("syncs")
            tally.name("sync", name)
        return before

    for name in ALLOC_FNS:
        patcher.patch(torch, name, lambda orig, attr=name: _nested(tally, "alloc", "_alloc_calls", orig,
                                                                 after=alloc(f"torch.{attr}")))
    Tensor = getattr(torch, "Tensor", None)
    for name in ALLOC_METHODS:
        patcher.patch(Tensor, name, lambda orig, attr=name: _nested(tally, "alloc", "_alloc_calls", orig,
                                                                  after=alloc(f"Tensor.{attr}")))
    for name in CUBLAS_FNS:
        patcher.patch(torch, name, lambda orig: _nested(tally, "blas", "_blas_calls", orig, after=blas))
    for name in CUBLAS_METHODS:
        patcher.patch(Tensor, name, lambda orig: _nested(tally, "blas", "_blas_calls", orig, after=blas))
    nn = getattr(torch, "nn", None)
    patcher.patch(getattr(nn, "functional", None), "linear",
            lambda orig: _nested(tally, "blas", "_blas_calls", orig, after=blas))
    for name, shown in SYNC_METHODS.items():
        patcher.patch(Tensor, name, lambda orig, text=shown: _nested(tally, "sync", "_sync_calls", orig,
                                                                   before=sync_on_self(text)))
    _wrap_copies(patcher, tally, Tensor, device_type)
    _wrap_views(patcher, tally, Tensor, device_type)

    cuda = getattr(torch, "cuda", None)

    def pointer_read(args, kwargs, out):
        # `torch.cuda.current_stream().cuda_stream`: a Stream object built to read its pointer, where
        # torch._C._cuda_getCurrentRawStream(device) reads it alone (probe: set_stream/query_raw_stream)
        try:
            caller = sys._getframe(2)    # this <- _nested's wrapper <- the caller
        except ValueError:
            return
        if reads_attr_next(caller, "cuda_stream"):
            tally.add("stream_ptr_queries")
    patcher.patch(cuda, "current_stream", lambda orig: _nested(tally, "stream", "stream_queries", orig, after=pointer_read))
    patcher.patch(cuda, "synchronize", lambda orig: _nested(tally, "sync", "_sync_calls", orig,
                                                    before=sync("torch.cuda.synchronize")))
    for cls_name in ("Stream", "Event"):
        patcher.patch(getattr(cuda, cls_name, None), "synchronize",
                lambda orig, owner=cls_name: _nested(tally, "sync", "_sync_calls", orig, before=sync(f"{owner}.synchronize")))


# -- per-step results ----------------------------------------------------------------------------------

def per_step(total: Counter, steps: int) -> dict:
    out = {k: 0.0 for k in COUNT_KEYS}
    for k, v in total.items():
        if not k.startswith("_"):
            out[k] = v / steps
    out["graph_builds"] = max(out["build_plans"] + out["build_plan_at_index"] + out["deserialize"],
                              out["create_execution_plans"], out["graphs_created"])
    out["steps"] = steps
    return out


def _results(tally: Tally, steps: int, stats_before, stats_after) -> dict:
    out = per_step(tally.total, steps)
    out["lib_switches"] = lib_switches(tally.libs)
    out["lib_switches_within"] = lib_switches_within(tally.libs)
    from_stats = allocs_per_step(stats_before, stats_after, steps)
    explicit = out["cuda_allocs_explicit"]
    # the allocator sees every request; factory calls are the floor when it keeps no statistics
    out["cuda_allocs"] = max(from_stats, explicit) if from_stats is not None else explicit
    out["alloc_counted_by"] = "allocator" if from_stats is not None else "factory calls"
    out["alloc_calls"] = {k: v / steps for k, v in sorted(tally.names["alloc"].items())}
    out["sync_calls"] = {k: v / steps for k, v in sorted(tally.names["sync"].items())}
    out["op_calls"] = {k: v / steps for k, v in sorted(tally.names["op"].items())}
    out["pack_sizes"] = {k: v / steps for k, v in sorted(tally.names["pack"].items())}
    out["lines"] = {k: {w: n / steps for w, n in c.most_common()} for k, c in sorted(tally.where.items())}
    out["copy_list"] = [
        {"call": call, "where": where, "kind": kind, "shape": list(shape), "dtype": dtype, "stride": list(stride),
         "transposed_view": transposed, "bytes": nbytes, "per_step": n / steps}
        for (call, where, kind, shape, dtype, stride, transposed, nbytes), n in tally.copies.items()]
    return out


def _default_stats(torch, device_type: str):
    cuda = getattr(torch, "cuda", None)
    if device_type == "cuda" and cuda is not None and cuda.is_available():
        return cuda.memory_stats
    return None


def _read(stats_fn):
    try:
        return stats_fn() if stats_fn is not None else None
    except Exception:  # noqa: BLE001 - an allocator without statistics: counted from factory calls
        return None


def count_step(step, steps: int = 10, *, cudnn=None, torch=None, device_type: str = "cuda",
               memory_stats=None) -> dict:
    """Per-step counts over `steps` calls of step (at least MIN_STEPS), after one uncounted call
    inside the wrapped window (so packs and graphs made before the pass are known, and lazy set-up
    is done). CUDA allocations come from `memory_stats()` read around the counted steps
    (default torch.cuda.memory_stats on CUDA; tests pass fakes), else from factory calls alone.

    cudnn/torch default to the imported modules; tests pass fakes. Whatever happens, every
    wrapped attribute is restored before this returns or raises.
    """
    steps = max(int(steps), MIN_STEPS)
    if torch is None:
        import torch
    if cudnn is None:
        try:
            import cudnn
        except (ImportError, OSError):
            cudnn = None
    if memory_stats is None:
        memory_stats = _default_stats(torch, device_type)
    tally = Tally()
    p = Patcher()
    try:
        if cudnn is not None:
            _wrap_cudnn(p, tally, cudnn)
        _wrap_torch(p, tally, torch, device_type)
        dispatch.wrap_ops(p, tally, torch)
        step()
        before = _read(memory_stats)
        tally.counting = True
        for _ in range(steps):
            tally.step_start()
            step()
        tally.counting = False
        after = _read(memory_stats)
    finally:
        tally.counting = False
        p.restore()
    return _results(tally, steps, before, after)
