"""Environment fingerprint stored with every run: what the numbers were measured on."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def process_age_s(stat: str | None = None, uptime: str | None = None, hz: int | None = None) -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere): at a worker's first
    probe it is what starting Python, torch and pytest's collection cost, outside the suite's
    own clock."""
    try:
        stat = stat if stat is not None else _read("/proc/self/stat")
        uptime = uptime if uptime is not None else _read("/proc/uptime")
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])   # field 22, counted after the name
        hz = hz or os.sysconf("SC_CLK_TCK")
        return max(0.0, float(uptime.split()[0]) - start_ticks / hz)
    except (IndexError, ValueError, OSError, AttributeError):
        return None


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def clock_source() -> str:
    return _read("/sys/devices/system/clocksource/clocksource0/current_clocksource") or "unknown"


def cudnn_env() -> dict:
    """CUDNN_* variables: frontend/backend logging changes host cost, so record them."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("CUDNN")}


def driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


COMMIT_ENV = "HOSTBENCH_COMMIT"   # the commit of a checkout copied without its git history (a CI job's tree)


def git_commit(root: str | os.PathLike = ".") -> dict:
    """{"id", "dirty"} of the checkout at `root`; $HOSTBENCH_COMMIT names it instead where set (a
    copied tree whose .git is missing or stale would otherwise record no commit, or the wrong one)."""
    given = os.environ.get(COMMIT_ENV, "").strip()
    if given:
        return {"id": given, "dirty": False, "from": COMMIT_ENV}
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5)
        if sha.returncode:
            return {}
        return {"id": sha.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def host_fingerprint(root: str | os.PathLike = ".") -> dict:
    """The parts that need no GPU; the commit is the one checked out at `root`."""
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        affinity = []
    from cudnn_hostbench.bench.measure.node.placement import job_fields
    job = job_fields()   # a job of a node command (one of N at once): its slot and cores
    return {
        **({"node_job": job} if job else {}),
        "datetime": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "clock_source": clock_source(),
        "cudnn_env": cudnn_env(),
        "commit_info": git_commit(root),
        "argv": sys.argv[:8],
        "packages": package_versions(),
    }


# the distributions whose version can move a figure, or the harness's reading of it
PACKAGES = ("cudnn-hostbench", "torch", "nvidia-cudnn-frontend", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13",
            "nvidia-cublas", "nvidia-cublas-cu12", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "triton",
            "numpy", "pytest", "pytest-benchmark", "nvtx", "nvidia-ml-py", "pandas", "scipy")


def package_versions(names=PACKAGES) -> dict:
    """Installed versions of `names` (those present), as the run's environment records them."""
    from importlib import metadata
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


_FIELDS: list = []


def add_fields(hook: Callable[[Any], dict]) -> None:
    """hook(ctx) -> fields a library adds to the fingerprint of a run on that context (cuDNN
    registers its frontend/backend versions and capabilities this way)."""
    if hook not in _FIELDS:
        _FIELDS.append(hook)


def gpu_fingerprint(device: int = 0) -> dict:
    """GPU, driver, CUDA, torch and torch's cuDNN versions."""
    fp: dict = {}
    try:
        import torch
    except ImportError:
        return {"torch": None}
    fp["torch"] = torch.__version__
    fp["cuda"] = torch.version.cuda
    fp["cudnn_torch"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(device)
        fp["gpu_name"] = p.name
        fp["sm_count"] = p.multi_processor_count
        fp["compute_capability"] = f"{p.major}.{p.minor}"
        fp["gpu_memory_gib"] = round(p.total_memory / 2**30, 1)
        fp["driver"] = driver_version()
        from cudnn_hostbench.bench.measure.runfile.machine import identity
        fp["machine"] = identity(device)
    return fp


def fingerprint(ctx=None, root: str | os.PathLike = ".") -> dict:
    """Host and GPU fields, then whatever the registered hooks add for ctx; `root` is the
    repository whose commit the run records."""
    from cudnn_hostbench.bench.measure.runfile.records import MEASUREMENT_VERSION, SCHEMA
    fp = {"schema": SCHEMA, "measurement_version": MEASUREMENT_VERSION, **host_fingerprint(root)}
    fp.update(gpu_fingerprint())
    if ctx is not None:
        for hook in _FIELDS:
            fp.update(hook(ctx))
    return fp


def gpu_slug(fingerprint: dict) -> str:
    """Folder name for a GPU's runs, e.g. 'NVIDIA H200' -> 'h200'."""
    name = (fingerprint.get("gpu_name") or "cpu").lower().replace("nvidia", "").strip()
    return "-".join(name.split()) or "gpu"
