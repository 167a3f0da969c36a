"""cuDNN Frontend helpers: robust loading, capability flags, a graph cache, matmul graphs and plan pinning.

Works across the frontend's API eras (classic <=1.26, IR 1.27, IR+Handle 1.28+) by testing for
features rather than parsing version strings.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field

FIX_HINT = ("install the frontend with `pip install nvidia-cudnn-frontend` and a libcudnn that matches "
            "torch's CUDA (`pip install nvidia-cudnn-cu12` or `nvidia-cudnn-cu13`), or point "
            "LD_LIBRARY_PATH at the folder holding libcudnn.so.9")


class CudnnUnavailable(RuntimeError):
    """The frontend or libcudnn cannot be loaded; the message says how to fix it."""


class Unsupported(Exception):
    """A variant this frontend/backend/GPU cannot run; the message says what it needs."""


def is_not_supported(e: BaseException) -> bool:
    """Unsupported, or the frontend's cudnnGraphNotSupportedError (which is not a RuntimeError)."""
    return isinstance(e, Unsupported) or "NotSupported" in type(e).__name__


def status_of(e: BaseException) -> str:
    """The record status of a failure: 'unsupported: …' or 'error: <type>: …'."""
    if is_not_supported(e):
        return f"unsupported: {e}"
    return f"error: {type(e).__name__}: {e}"


def load_cudnn():
    """Imports the frontend after torch has loaded its libcudnn, and checks the backend answers."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.init()  # torch loads libcudnn.so.9 and libcudart first: the frontend reuses them
            torch.backends.cudnn.version()
    except ImportError:
        pass
    try:
        import cudnn
    except ImportError as e:
        raise CudnnUnavailable(f"cannot import the cuDNN frontend ({e}); fix: {FIX_HINT}") from e
    except OSError as e:
        raise CudnnUnavailable(f"the cuDNN frontend cannot load libcudnn ({e}); fix: {FIX_HINT}") from e
    try:
        cudnn.backend_version()
    except Exception as e:  # noqa: BLE001 - 'Unable to find symbol cudnnGetVersion' is a RuntimeError
        raise CudnnUnavailable(f"libcudnn is not loaded ({e}); fix: {FIX_HINT}") from e
    return cudnn


def has_kw(fn, kw: str) -> bool:
    try:
        return kw in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pybind builtins have no signature: read the docstring
        return kw in (getattr(fn, "__doc__", "") or "")


def capabilities(cudnn) -> dict:
    """Feature flags of this frontend (see the fact sheet, section 9)."""
    pb = getattr(cudnn, "_pybind_module", None) or getattr(cudnn, "_compiled_module", None)
    g = cudnn.pygraph
    ir = getattr(g, "__module__", "") == "cudnn._pygraph"
    raw_owner = getattr(pb, "backend_graph", None) if ir else g
    return {
        "ir": ir,
        "handle_obj": hasattr(cudnn, "Handle"),
        "raw_set_stream": hasattr(pb, "_raw_set_stream"),
        "ordered": ir and has_kw(g.execute, "tensor_uids"),
        "serialize_bytes": has_kw(getattr(g, "serialize", None), "as_bytes"),
        "kernel_cache": hasattr(cudnn, "create_kernel_cache"),
        "plan_names": hasattr(g, "get_plan_name_at_index"),
        "raw_ptrs": raw_owner is not None and hasattr(raw_owner, "_execute_with_raw_ptrs"),
        "graph_key": hasattr(g, "key"),
        "native_cuda_graph": hasattr(g, "populate_cuda_graph"),
        "build_noarg_is_full": ir,
    }


def create_handle(cudnn, stream_ptr: int):
    h = cudnn.create_handle()
    cudnn.set_stream(handle=h, stream=stream_ptr)
    return h


def raw_set_stream(cudnn, h, stream_ptr: int) -> None:
    """A real backend cudnnSetStream, bypassing 1.28+'s same-stream cache."""
    pb = getattr(cudnn, "_pybind_module", None)
    if pb is not None and hasattr(pb, "_raw_set_stream") and hasattr(h, "backend_handle"):
        pb._raw_set_stream(h.backend_handle, stream_ptr)
        h.stream = stream_ptr  # keep the frontend's cache true
    else:  # <=1.27: every set_stream reaches the backend
        cudnn.set_stream(handle=h, stream=stream_ptr)


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


def torch_to_cudnn_dtype(cudnn, dtype):
    import torch
    return {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF,
            torch.float32: cudnn.data_type.FLOAT}[dtype]


def build_steps(cudnn, g, modes=None, policy=None) -> dict:
    """The five build steps, timed one by one (ms). Raises Unsupported for an unsupported graph."""
    modes = modes or [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK]
    policy = policy if policy is not None else cudnn.build_plan_policy.HEURISTICS_CHOICE
    steps = (("validate", g.validate), ("build_operation_graph", g.build_operation_graph),
             ("create_execution_plans", lambda: g.create_execution_plans(modes)),
             ("check_support", g.check_support), ("build_plans", lambda: g.build_plans(policy)))
    ms = {}
    for name, step in steps:
        t0 = time.perf_counter()
        try:
            step()
        except cudnn.cudnnGraphNotSupportedError as e:
            raise Unsupported(f"{name}: {e}") from e
        ms[name] = (time.perf_counter() - t0) * 1e3
    return ms


@dataclass
class MatmulGraph:
    """C[b,M,N] = A[b,M,K] @ B[b,K,N] (bf16 in/out, fp32 compute), B with any strides.

    UIDs are fixed (A=1001, B=1002, C=1003) so packs can be keyed by int or by tensor.
    """
    graph: object
    tensors: dict                      # name -> cudnn tensor
    workspace: object
    plan_count: int
    built: list                        # plan indices that built
    build_ms: dict = field(default_factory=dict)
    pinned: int | None = None
    plan_us: dict = field(default_factory=dict)

    UIDS = {"A": 1001, "B": 1002, "C": 1003}


def build_matmul(cudnn, handle, a, b, c, policy_all=True, name="mm") -> MatmulGraph:
    """Builds the matmul graph for the given torch operands (their shapes and strides)."""
    import torch
    dt = torch_to_cudnn_dtype(cudnn, a.dtype)
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    A = g.tensor(name="A", dim=list(a.shape), stride=list(a.stride()), data_type=dt)
    B = g.tensor(name="B", dim=list(b.shape), stride=list(b.stride()), data_type=dt)
    C = g.matmul(name=name, A=A, B=B, compute_data_type=cudnn.data_type.FLOAT)
    C.set_output(True).set_data_type(dt).set_dim(list(c.shape)).set_stride(list(c.stride()))
    for t, k in ((A, "A"), (B, "B"), (C, "C")):
        t.set_uid(MatmulGraph.UIDS[k])
    policy = cudnn.build_plan_policy.ALL if policy_all else cudnn.build_plan_policy.HEURISTICS_CHOICE
    try:
        ms = build_steps(cudnn, g, policy=policy)
    except (ValueError, RuntimeError) as e:
        raise Unsupported(f"graph rejected: {e}") from e
    count = g.get_execution_plan_count()
    ws_size = 0
    built = []
    for i in range(count):
        try:
            ws_size = max(ws_size, g.get_workspace_size_plan_at_index(i))
            built.append(i)
        except Exception:  # noqa: BLE001 - a plan that did not build
            continue
    ws_size = max(ws_size, g.get_workspace_size())
    ws = torch.empty(max(ws_size, 1), dtype=torch.uint8, device=a.device)
    return MatmulGraph(g, {"A": A, "B": B, "C": C}, ws, count, built, ms)


SPIN_CYCLES = 2_000_000


def pin_plan(mg: MatmulGraph, vp: dict, handle, stream, calls: int = 20, rounds: int = 3) -> int:
    """Times every built plan once with execute_plan_at_index (CUDA events, kernel time) and pins
    the fastest."""
    import torch
    best, best_us = None, float("inf")
    with torch.cuda.stream(stream):
        for i in mg.built:
            try:
                for _ in range(3):
                    mg.graph.execute_plan_at_index(vp, mg.workspace, i, handle=handle)
                stream.synchronize()
            except Exception:  # noqa: BLE001 - listed but not executable here
                continue
            times = []
            for _ in range(rounds):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                # hold the stream with a ~1 ms spin so every launch is queued before the start
                # event fires: the events then time the kernels, not the host's launch rate
                # (at 256^3 the host is slower than the GPU and would pick plans at random)
                torch.cuda._sleep(SPIN_CYCLES)
                s.record(stream)
                for _ in range(calls):
                    mg.graph.execute_plan_at_index(vp, mg.workspace, i, handle=handle)
                e.record(stream)
                e.synchronize()
                times.append(s.elapsed_time(e) * 1e3 / calls)
            us = sorted(times)[len(times) // 2]
            mg.plan_us[i] = us
            if us < best_us:
                best, best_us = i, us
    if best is None:
        raise Unsupported("no built plan executes")
    mg.pinned = best
    return best


def plan_name(mg: MatmulGraph, i: int) -> str:
    try:
        return mg.graph.get_plan_name_at_index(i)
    except Exception:  # noqa: BLE001
        return f"plan{i}"
