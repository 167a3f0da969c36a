"""GPU clock readings through NVML, read only: clocks are never set, locked or reset here.

A round whose SM clock is below CLOCK_FRACTION of the clock the same work usually runs at (a power
or thermal step) is thrown away and redone, like nvbench throws away throttled samples. The
reference is per workload, not the run's top clock: on the H200 a 4096^3 matmul runs steadily
power-capped at 1800-1920 MHz against 1980 MHz for small work, and judging it against 1980 threw
away every one of its rounds.
"""
from __future__ import annotations

from typing import Any

CLOCK_FRACTION = 0.95


class Clocks:
    """SM / memory clock and clock-event reasons of one GPU; every read is None without NVML."""

    def __init__(self, device: int = 0):
        self.error = None
        self._nv: Any = None   # the pynvml module, once it loaded
        self._h: Any = None
        try:
            import pynvml as nv
            nv.nvmlInit()
            self._h = nv.nvmlDeviceGetHandleByIndex(device)
            self._nv = nv
        except Exception as e:  # noqa: BLE001 - no NVML (package or driver): clocks unknown
            self.error = f"{type(e).__name__}: {e}"
        self.top = 0

    @property
    def ok(self) -> bool:
        return self._nv is not None

    def sm_mhz(self) -> int | None:
        if not self.ok:
            return None
        try:
            mhz = int(self._nv.nvmlDeviceGetClockInfo(self._h, self._nv.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001
            return None
        self.top = max(self.top, mhz)
        return mhz

    def snapshot(self) -> dict:
        """SM and memory clocks and the active clock-event reasons, for the fingerprint."""
        if not self.ok:
            return {"error": self.error}
        nv, h = self._nv, self._h
        out: dict[str, Any] = {"sm_mhz": self.sm_mhz()}
        try:
            out["mem_mhz"] = int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
            out["sm_max_mhz"] = int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
            get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                nv.nvmlDeviceGetCurrentClocksThrottleReasons
            out["reasons"] = reason_names(int(get(h)), nv)
        except Exception as e:  # noqa: BLE001
            out["error"] = f"{type(e).__name__}: {e}"
        return out

    def dropped(self, mhz: int | None, ref: float | None = None) -> bool:
        """True when a reading is below CLOCK_FRACTION of `ref` (the workload's usual clock),
        or of the top clock seen in this process when no reference is given."""
        ref = ref or self.top
        return mhz is not None and ref > 0 and mhz < CLOCK_FRACTION * ref


def reason_names(mask: int, nv) -> list[str]:
    names = []
    for attr in dir(nv):
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            if attr.startswith(prefix) and attr not in (prefix + "None", prefix + "All"):
                bit = getattr(nv, attr)
                if isinstance(bit, int) and bit and mask & bit:
                    names.append(attr.removeprefix(prefix))
    return sorted(set(names))
