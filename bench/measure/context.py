"""The GPU context a probe builds on: one device, one side stream, one cuDNN handle on it."""
from __future__ import annotations

import os

from bench.cudnn_graphs import support as cs


class NoGpuError(RuntimeError):
    pass


def pin_main_thread() -> list:
    """Pins the calling thread to one core (the last allowed), after CUDA's own threads exist."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) > 1:
            os.sched_setaffinity(0, {allowed[-1]})
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


class GpuContext:
    def __init__(self, device: int = 0, seed: int = 1234):
        import torch
        if not torch.cuda.is_available():
            raise NoGpuError("no CUDA GPU visible to torch")
        self.torch = torch
        torch.cuda.set_device(device)
        self.device = torch.device("cuda", device)
        torch.cuda.init()
        self.stream = torch.cuda.Stream()
        self.stream_ptr = self.stream.cuda_stream
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        self.cudnn_error = None
        self.cudnn = None
        self.handle = None
        self.caps = {}
        try:
            self.cudnn = cs.load_cudnn()
            self.handle = cs.create_handle(self.cudnn, self.stream_ptr)
            self.caps = cs.capabilities(self.cudnn)
        except cs.CudnnUnavailable as e:
            self.cudnn_error = str(e)
        self.affinity = pin_main_thread()
        self.pinned_plans = {}     # (probe key) -> plan index, so a rebuild does not re-tune

    def sync(self) -> None:
        self.stream.synchronize()

    def require_cudnn(self):
        if self.cudnn is None:
            raise cs.Unsupported(f"cuDNN unavailable: {self.cudnn_error}")
        return self.cudnn

    def randn(self, *shape, dtype=None, scale: float = 1.0):
        """Random data on the device (never zeros: they run faster and hide unwritten outputs)."""
        t = self.torch
        x = t.randn(*shape, generator=self.gen, device=self.device, dtype=t.float32) * scale
        return x.to(dtype or t.bfloat16)
