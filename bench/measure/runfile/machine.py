"""Which machine a run ran on: the physical GPU (NVML: UUID, serial, VBIOS, power limit, max
clocks), the boot, and the host name. Read only, never set.

A *start* is (boot id, GPU UUID): one machine start. Runs of one start share the GPU's own speed
(on the H200 fleet GPU-bound rows move together by about ±1.5 % between starts, and agree within
0.5 % inside one), so a same-start twin replicates a run; it does not confirm it.
"""
from __future__ import annotations

import socket

from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint

FIELDS = ("gpu_uuid", "gpu_serial", "vbios", "pci_bus_id", "power_limit_w", "max_sm_clock_mhz",
          "max_mem_clock_mhz", "boot_id", "hostname")


def boot_id(path: str = "/proc/sys/kernel/random/boot_id") -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_handle(nv, device: int):
    """NVML's handle for torch's device `device`: by its UUID or PCI bus id where torch knows
    them (CUDA_VISIBLE_DEVICES renumbers torch's devices but not NVML's), else by index."""
    try:
        import torch
        p = torch.cuda.get_device_properties(device)
        uuid = getattr(p, "uuid", None)
        if uuid:
            u = str(uuid)
            return nv.nvmlDeviceGetHandleByUUID(u if u.startswith(("GPU-", "MIG-")) else f"GPU-{u}")
    except Exception:  # noqa: BLE001 - fall through to the index
        pass
    return nv.nvmlDeviceGetHandleByIndex(device)


def gpu_identity(device: int = 0) -> dict:
    """The physical GPU's identity and limits through NVML; {} without NVML (each field that
    NVML refuses is left out)."""
    try:
        import pynvml as nv
        nv.nvmlInit()
        h = _nvml_handle(nv, device)
    except Exception:  # noqa: BLE001 - no NVML (package or driver)
        return {}
    reads = {
        "gpu_uuid": lambda: _text(nv.nvmlDeviceGetUUID(h)),
        "gpu_serial": lambda: _text(nv.nvmlDeviceGetSerial(h)),
        "vbios": lambda: _text(nv.nvmlDeviceGetVbiosVersion(h)),
        "pci_bus_id": lambda: _text(nv.nvmlDeviceGetPciInfo(h).busId),
        "power_limit_w": lambda: round(nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0, 1),
        "max_sm_clock_mhz": lambda: int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        "max_mem_clock_mhz": lambda: int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
    }
    out = {}
    for k, read in reads.items():
        try:
            out[k] = read()
        except Exception:  # noqa: BLE001 - NVML_ERROR_NOT_SUPPORTED and friends: unknown
            continue
    return out


def identity(device: int = 0) -> dict:
    """The run's machine: GPU identity, boot id, host name."""
    return {**gpu_identity(device), "boot_id": boot_id(), "hostname": socket.gethostname()}


def start_of(fingerprint) -> str:
    """'<boot id>/<GPU UUID>' of a fingerprint (environment.Fingerprint, or its dict), or '' when
    either is unknown (an old run, or a start recorded by hand as its machine's 'start')."""
    return Fingerprint.of(fingerprint).start


def gpu_of(fingerprint) -> str:
    """The physical GPU's UUID, or ''."""
    return Fingerprint.of(fingerprint).gpu_uuid
