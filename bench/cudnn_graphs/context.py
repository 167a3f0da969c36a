"""cuDNN on a GPU context: the frontend module, one handle on the context's stream, capabilities.

Loaded once per GpuContext as it is made (a hook the core runs before pinning its thread), and
handed to cuDNN probes by `prepare`, their Probe.prepare. The fingerprint gets the frontend and
backend versions and the capabilities through a registered hook.
"""
from __future__ import annotations

import dataclasses

from cudnn_hostbench.bench.cudnn_graphs.load import Capabilities, CudnnUnavailable, create_handle, load_cudnn
from cudnn_hostbench.bench.measure.core import gpu_context
from cudnn_hostbench.bench.measure.runfile import fingerprint
from cudnn_hostbench.bench.measure.runfile.status import Unsupported


class Cudnn:
    """The cuDNN state of one GpuContext; `error` says why it is unusable when `cudnn` is None."""

    def __init__(self, gpu):
        self.cudnn = None
        self.handle = None
        self.caps = Capabilities()
        self.error = None
        self.pinned_plans = {}     # problem key -> plan index, so a rebuild does not re-tune
        try:
            self.cudnn = load_cudnn()
            self.handle = create_handle(self.cudnn, gpu.stream_ptr)
            self.caps = Capabilities.of(self.cudnn)
        except CudnnUnavailable as e:
            self.error = str(e)

    def close(self) -> None:
        """Drops the pinned plans and the handle (the handle last: graphs were built on it)."""
        self.pinned_plans.clear()
        self.handle = None
        self.cudnn = None

    @classmethod
    def of(cls, gpu) -> "Cudnn":
        return gpu.attached(cls, lambda: cls(gpu))

    def fingerprint(self) -> dict:
        fp = {}
        if self.cudnn is not None:
            fp["cudnn_frontend"] = getattr(self.cudnn, "__version__", None)
            try:
                fp["cudnn_backend"] = int(self.cudnn.backend_version())
            except Exception as e:  # noqa: BLE001 - record, never fail the run for it
                fp["cudnn_backend"] = None
                fp["cudnn_backend_error"] = str(e)
        fp["cudnn_error"] = self.error
        fp["capabilities"] = dataclasses.asdict(self.caps) if self.cudnn is not None else {}
        return fp


class CudnnContext:
    """What cuDNN probes build on: the GPU context (torch, stream, randn, ...) plus cudnn, handle, caps."""

    def __init__(self, gpu, state: Cudnn):
        self.gpu = gpu
        self.state = state
        self.cudnn, self.handle, self.caps = state.cudnn, state.handle, state.caps
        self.pinned_plans = state.pinned_plans

    def close(self) -> None:
        self.cudnn = self.handle = self.caps = self.state = None

    def __getattr__(self, name):      # everything else is the GPU context's
        return getattr(self.gpu, name)


def prepare(gpu) -> CudnnContext:
    """Probe.prepare of every cuDNN probe: the context with cuDNN, or Unsupported saying why not."""
    state = Cudnn.of(gpu)
    if state.cudnn is None:
        raise Unsupported(f"cuDNN unavailable: {state.error}")
    return gpu.attached(CudnnContext, lambda: CudnnContext(gpu, state))


def _fields(gpu) -> dict:
    fp = Cudnn.of(gpu).fingerprint()
    if "cudnn_backend" in fp:
        import torch
        tb = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        be = fp["cudnn_backend"]
        fp["cudnn_mismatch"] = bool(tb and be and tb != be)
    return fp


gpu_context.on_create(Cudnn.of)
fingerprint.add_fields(_fields)
