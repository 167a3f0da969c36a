"""The few CUDA runtime graph calls the frontend's native CUDA-graph API needs, through ctypes.

`populate_cuda_graph` fills an EMPTY cudaGraph_t the caller made, and `update_cuda_graph` rewrites
the pointers of that graph; creating, instantiating, launching and updating the executable are
the caller's (samples/cpp/misc/cudagraphs.cpp does the same in C++). torch exposes no cudaGraph_t
of its own, so these go to the libcudart torch has already loaded: no new dependency, and the
same runtime torch's graphs use. Signatures are the CUDA 12/13 ones (cudaGraphExecUpdate takes a
result-info struct since 12.0; cudaGraphInstantiateWithFlags is unchanged since 11.4).
"""
from __future__ import annotations

import ctypes
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile.status import Unsupported

_lib = None


def _loaded_path() -> str | None:
    """The libcudart torch mapped into this process (Linux), if any."""
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1]
            if "/libcudart.so" in path:
                return path
    except OSError:
        return None
    return None


def runtime():
    """The loaded CUDA runtime (ctypes.CDLL), or Unsupported saying why there is none."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for name in filter(None, (_loaded_path(), "libcudart.so.13", "libcudart.so.12", "libcudart.so")):
        try:
            lib = ctypes.CDLL(name)
            lib.cudaGraphCreate  # noqa: B018 - a library without the graph API is not one we can use
        except (OSError, AttributeError) as e:
            tried.append(f"{name}: {e}")
            continue
        _declare(lib)
        _lib = lib
        return lib
    raise Unsupported("the CUDA runtime (libcudart) is not loadable from this process: " + "; ".join(tried))


def _declare(lib) -> None:
    vp, u64 = ctypes.c_void_p, ctypes.c_ulonglong
    lib.cudaGraphCreate.argtypes = [ctypes.POINTER(vp), ctypes.c_uint]
    lib.cudaGraphInstantiateWithFlags.argtypes = [ctypes.POINTER(vp), vp, u64]
    lib.cudaGraphLaunch.argtypes = [vp, vp]
    lib.cudaGraphExecUpdate.argtypes = [vp, vp, vp]
    lib.cudaGraphExecDestroy.argtypes = [vp]
    lib.cudaGraphDestroy.argtypes = [vp]
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaGetErrorString.argtypes = [ctypes.c_int]


def check(lib, err: int, what: str) -> None:
    if err:
        msg = lib.cudaGetErrorString(err)
        raise RuntimeError(f"{what}: cudaError {err} ({msg.decode() if msg else '?'})")


class NativeGraph:
    """One cudaGraph_t that cuDNN populates, and its executable.

    launch() is one cudaGraphLaunch on `stream_ptr`; update(pack) is the frontend's
    update_cuda_graph on the template graph followed by cudaGraphExecUpdate of the executable
    (what an integration does when the pointers change between steps)."""

    def __init__(self, lib, stream_ptr: int):
        self.lib, self.stream = lib, ctypes.c_void_p(stream_ptr)
        self.graph, self.exec = ctypes.c_void_p(), ctypes.c_void_p()
        self._info = ctypes.create_string_buffer(64)   # cudaGraphExecUpdateResultInfo (24 bytes on 64-bit)
        check(lib, lib.cudaGraphCreate(ctypes.byref(self.graph), 0), "cudaGraphCreate")

    @property
    def graph_ptr(self) -> int:
        return int(self.graph.value or 0)

    def instantiate(self) -> None:
        check(self.lib, self.lib.cudaGraphInstantiateWithFlags(ctypes.byref(self.exec), self.graph, 0),
              "cudaGraphInstantiateWithFlags")

    def launch(self) -> None:
        err = self.lib.cudaGraphLaunch(self.exec, self.stream)
        if err:
            check(self.lib, err, "cudaGraphLaunch")

    def apply_update(self) -> None:
        """Pushes the (already updated) template graph into the executable."""
        err = self.lib.cudaGraphExecUpdate(self.exec, self.graph, self._info)
        if err:
            check(self.lib, err, "cudaGraphExecUpdate")

    def close(self) -> None:
        if self.exec:
            self.lib.cudaGraphExecDestroy(self.exec)
            self.exec = ctypes.c_void_p()
        if self.graph:
            self.lib.cudaGraphDestroy(self.graph)
            self.graph = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter teardown: the runtime may be gone
            pass
