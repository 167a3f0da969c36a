"""The GPU context a probe builds on: one device, one side stream, random data.

Libraries the core knows nothing of (cuDNN) register a hook that runs as a context is made, and
keep their per-context objects through `attached`.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from cudnn_hostbench.bench.measure.core.options import SuiteOptions

_ON_CREATE: list = []


def on_create(hook: Callable[["GpuContext"], None]) -> None:
    """Runs hook(ctx) for every new context, before the main thread is pinned (so whatever the hook
    loads starts its threads unpinned, as CUDA's own do)."""
    if hook not in _ON_CREATE:
        _ON_CREATE.append(hook)


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
    def __init__(self, device: int = 0, seed: int = 1234, options: SuiteOptions | None = None):
        import torch
        if not torch.cuda.is_available():
            raise NoGpuError("no CUDA GPU visible to torch")
        self.torch = torch
        self.options = options or SuiteOptions()   # what the suite asked for (heavy sweeps, ...)
        torch.cuda.set_device(device)
        self.device = torch.device("cuda", device)
        torch.cuda.init()
        self.stream = torch.cuda.Stream()
        self.stream_ptr = self.stream.cuda_stream
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        self._attached: dict = {}
        for hook in _ON_CREATE:
            hook(self)
        self.affinity = pin_main_thread()

    def attached(self, key, make: Callable[[], Any]) -> Any:
        """The object stored under key for this context, made on first use."""
        if key not in self._attached:
            self._attached[key] = make()
        return self._attached[key]

    def close(self) -> None:
        """Releases what libraries attached, newest first (a cuDNN context before the state that
        holds its handle), after the stream's work is done."""
        try:
            self.sync()
        except Exception:  # noqa: BLE001 - a broken context still lets go of its objects
            pass
        while self._attached:
            _, obj = self._attached.popitem()
            close = getattr(obj, "close", None)
            if callable(close):
                close()
            del obj

    def sync(self) -> None:
        self.stream.synchronize()

    def randn(self, *shape, dtype=None, scale: float = 1.0):
        """Random data on the device (never zeros: they run faster and hide unwritten outputs)."""
        t = self.torch
        x = t.randn(*shape, generator=self.gen, device=self.device, dtype=t.float32) * scale
        return x.to(dtype or t.bfloat16)
