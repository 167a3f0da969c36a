"""Loading the cuDNN frontend and reading what it can do.

Works across the frontend's API eras (classic <=1.26, IR 1.27, IR+Handle 1.28+) by testing for
features rather than parsing version strings.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

FIX_HINT = ("install the frontend with `pip install nvidia-cudnn-frontend` and a libcudnn that matches "
            "torch's CUDA (`pip install nvidia-cudnn-cu12` or `nvidia-cudnn-cu13`), or point "
            "LD_LIBRARY_PATH at the folder holding libcudnn.so.9")


class CudnnUnavailable(RuntimeError):
    """The frontend or libcudnn cannot be loaded; the message says how to fix it."""


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
    except Exception as e:
        raise CudnnUnavailable(f"libcudnn is not loaded ({e}); fix: {FIX_HINT}") from e
    return cudnn


def has_kw(fn, kw: str) -> bool:
    try:
        return kw in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pybind builtins have no signature: read the docstring
        return kw in (getattr(fn, "__doc__", "") or "")


@dataclass(frozen=True)
class Capabilities:
    """Feature flags of the installed frontend (see the fact sheet, section 9)."""
    ir: bool = False
    handle_obj: bool = False
    raw_set_stream: bool = False
    ordered: bool = False              # execute(tuple, tensor_uids=...): the cheapest public call
    serialize_bytes: bool = False
    kernel_cache: bool = False
    plan_names: bool = False
    raw_ptrs: bool = False
    graph_key: bool = False
    native_cuda_graph: bool = False
    build_noarg_is_full: bool = False
    backend: int = 0
    dyn_kw: bool = False               # pygraph(is_dynamic_shape_enabled=...)
    gen_stats: bool = False            # sdpa(generate_stats=...) rather than is_inference
    diag_band: bool = False
    uid_kw: bool = False

    @classmethod
    def of(cls, cudnn) -> "Capabilities":
        pb = getattr(cudnn, "_pybind_module", None) or getattr(cudnn, "_compiled_module", None)
        g = cudnn.pygraph
        ir = getattr(g, "__module__", "") == "cudnn._pygraph"
        raw_owner = getattr(pb, "backend_graph", None) if ir else g
        try:
            backend = int(cudnn.backend_version())
        except Exception:  # noqa: BLE001
            backend = 0
        return cls(
            ir=ir,
            handle_obj=hasattr(cudnn, "Handle"),
            raw_set_stream=hasattr(pb, "_raw_set_stream"),
            ordered=ir and has_kw(g.execute, "tensor_uids"),
            serialize_bytes=has_kw(getattr(g, "serialize", None), "as_bytes"),
            kernel_cache=hasattr(cudnn, "create_kernel_cache"),
            plan_names=hasattr(g, "get_plan_name_at_index"),
            raw_ptrs=raw_owner is not None and hasattr(raw_owner, "_execute_with_raw_ptrs"),
            graph_key=hasattr(g, "key"),
            native_cuda_graph=hasattr(g, "populate_cuda_graph"),
            build_noarg_is_full=ir,
            backend=backend,
            dyn_kw=has_kw(g.__init__, "is_dynamic_shape_enabled"),
            gen_stats=ir or "generate_stats" in (getattr(g.sdpa, "__doc__", "") or ""),
            diag_band=hasattr(cudnn, "diagonal_alignment"),
            uid_kw=has_kw(g.tensor, "uid"),
        )


def create_handle(cudnn, stream_ptr: int):
    h = cudnn.create_handle()
    cudnn.set_stream(handle=h, stream=stream_ptr)
    return h


def raw_set_stream(cudnn, handle, stream_ptr: int) -> None:
    """A real backend cudnnSetStream, bypassing 1.28+'s same-stream cache."""
    pb = getattr(cudnn, "_pybind_module", None)
    if pb is not None and hasattr(pb, "_raw_set_stream") and hasattr(handle, "backend_handle"):
        pb._raw_set_stream(handle.backend_handle, stream_ptr)
        handle.stream = stream_ptr  # keep the frontend's cache true
    else:  # <=1.27: every set_stream reaches the backend
        cudnn.set_stream(handle=handle, stream=stream_ptr)


def last_error(cudnn) -> str:
    try:
        s = cudnn.get_last_error_string()
        return f" [{s.strip()[:300]}]" if s and s.strip() else ""
    except Exception:  # noqa: BLE001
        return ""
