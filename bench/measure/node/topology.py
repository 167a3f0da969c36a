"""What a node has: its GPUs (nvidia-smi, else NVML) and the CPU cores nearest each, read from,
first that answers:
  1. `nvidia-smi topo -m`: its "CPU Affinity" and "NUMA Affinity" columns;
  2. NVML: nvmlDeviceGetCpuAffinity (the same mask nvidia-smi prints);
  3. none: the cores this process may use (os.sched_getaffinity), split evenly by the plan.
Read only: nothing here sets a GPU or its clocks. The plan and the jobs' places: node.py.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

QUERY = ["nvidia-smi", "--query-gpu=index,uuid,name,pci.bus_id", "--format=csv,noheader"]
TOPO = ["nvidia-smi", "topo", "-m"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")   # nvidia-smi underlines the topo header with escape codes
TOPO_BASIS, NVML_BASIS, EVEN = "nvidia-smi topo -m", "NVML cpu affinity", "even split of this process's cores"


class NodeError(ValueError):
    """A node that cannot be planned: the message is one line naming the GPU."""


@dataclass(frozen=True)
class Gpu:
    index: int                  # nvidia-smi / NVML index (PCI bus order)
    uuid: str = ""
    name: str = ""
    bus_id: str = ""
    cpus: frozenset = frozenset()   # the GPU's nearest cores; empty: unknown
    numa: int | None = None

    @property
    def label(self) -> str:
        return f"GPU {self.index}" + (f" ({self.uuid})" if self.uuid else "")


def parse_cpu_list(text: str) -> frozenset:
    """'0-3,8,10-11' -> {0,1,2,3,8,10,11}; '' or 'N/A' -> empty."""
    cpus: set[int] = set()
    for part in (text or "").replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2) or m.group(1))
            cpus.update(range(min(a, b), max(a, b) + 1))
    return frozenset(cpus)


def cpu_list_text(cpus) -> str:
    """{0,1,2,3,8} -> '0-3,8' (the form taskset and /sys use)."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_query(text: str) -> list[Gpu]:
    """`nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader` lines."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 4 and parts[0].isdigit():
            gpus.append(Gpu(int(parts[0]), parts[1], ", ".join(parts[2:-1]), parts[-1]))
    return gpus


def parse_topo(text: str) -> dict[int, tuple[frozenset, int | None]]:
    """{GPU index: (its CPU Affinity cores, its NUMA Affinity node or None)} from `nvidia-smi topo -m`.

    The format is nvidia-smi's documented matrix (`nvidia-smi topo -h`; NVIDIA's DGX user guides
    print it): a header of device columns (GPU0.., NIC0.., or mlx5_0..) then 'CPU Affinity',
    'NUMA Affinity' and, on newer drivers, 'GPU NUMA ID'; one row per device, its label first, one
    link cell per device column ('X', 'NV18', 'SYS', ...), then the affinities ('0-47,96-143', '0',
    or 'N/A'); then a legend. Cells are tab-separated; splitting on any white space also works,
    since link cells are one word each."""
    lines = [ANSI.sub("", ln) for ln in text.splitlines()]
    head = next((ln for ln in lines if "CPU Affinity" in ln), None)
    if head is None:
        return {}
    devices = head.split("CPU Affinity")[0].split()
    out = {}
    for ln in lines:
        cells = ln.split()
        m = re.fullmatch(r"GPU(\d+)", cells[0]) if cells else None
        if not m or len(cells) < 2 + len(devices):
            continue
        cpus = parse_cpu_list(cells[1 + len(devices)])
        numa = cells[2 + len(devices)] if len(cells) > 2 + len(devices) else ""
        out[int(m.group(1))] = (cpus, int(numa) if numa.isdigit() else None)
    return out


def mask_cpus(words, bits: int = 64) -> frozenset:
    """NVML's cpuSet (an array of `bits`-bit words, CPU 0 in word 0's lowest bit) as core numbers."""
    return frozenset(i * bits + b for i, w in enumerate(words) for b in range(bits) if int(w) >> b & 1)


def read_cmd(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return p.stdout if p.returncode == 0 else ""


def from_nvidia_smi(run=read_cmd) -> list[Gpu]:
    gpus = parse_query(run(QUERY))
    topo = parse_topo(run(TOPO)) if gpus else {}
    return [Gpu(g.index, g.uuid, g.name, g.bus_id, *topo.get(g.index, (frozenset(), None))) for g in gpus]


def from_nvml(nv=None) -> list[Gpu]:
    """The GPUs through NVML, each with nvmlDeviceGetCpuAffinity's cores; [] without NVML."""
    try:
        if nv is None:
            import pynvml as nv  # type: ignore[no-redef]
        nv.nvmlInit()
        n = nv.nvmlDeviceGetCount()
    except Exception:  # noqa: BLE001 - no package, no driver
        return []
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731
    words = ((os.cpu_count() or 64) + 63) // 64
    gpus = []
    for i in range(n):
        try:
            h = nv.nvmlDeviceGetHandleByIndex(i)
            uuid, name = text(nv.nvmlDeviceGetUUID(h)), text(nv.nvmlDeviceGetName(h))
        except Exception:  # noqa: BLE001 - a GPU NVML cannot read: left out, named by the plan's count
            continue
        try:
            bus = text(nv.nvmlDeviceGetPciInfo(h).busId)
        except Exception:  # noqa: BLE001
            bus = ""
        try:
            cpus = mask_cpus(nv.nvmlDeviceGetCpuAffinity(h, words))
        except Exception:  # noqa: BLE001 - NOT_SUPPORTED in some VMs: the even split covers it
            cpus = frozenset()
        try:
            numa = int(nv.nvmlDeviceGetNumaNodeId(h))
        except Exception:  # noqa: BLE001 - older drivers: unknown
            numa = None
        gpus.append(Gpu(i, uuid, name, bus, cpus, numa))
    return gpus


def discover(run=read_cmd, nv=None) -> tuple[list[Gpu], str]:
    """(the node's GPUs, where their cores came from)."""
    gpus = from_nvidia_smi(run)
    if gpus and all(g.cpus for g in gpus):
        return gpus, TOPO_BASIS
    nvml = from_nvml(nv)
    if nvml and all(g.cpus for g in nvml):
        return nvml, NVML_BASIS
    return (gpus or nvml), EVEN


def select(gpus: list[Gpu], spec: str | None) -> list[Gpu]:
    """`all` (or None) or '0,3' or UUIDs: the GPUs asked for; NodeError naming one not found."""
    if not spec or spec == "all":
        return list(gpus)
    out = []
    for s in (x.strip() for x in spec.split(",") if x.strip()):
        g = next((g for g in gpus if str(g.index) == s or (g.uuid and g.uuid == s)), None)
        if g is None:
            raise NodeError(f"GPU {s}: not on this node (it has {', '.join(str(g.index) for g in gpus) or 'no GPU'})")
        if g not in out:
            out.append(g)
    return out


def siblings_of(cpu: int) -> frozenset:
    text = ""
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        pass
    return parse_cpu_list(text) or frozenset({cpu})


def visible(gpus: list[Gpu], env=None) -> list[Gpu]:
    """The GPUs the user's CUDA_VISIBLE_DEVICES leaves (indices, or UUIDs and their prefixes, as
    CUDA takes them); all when it is unset."""
    spec = (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return list(gpus)
    items = [x.strip() for x in spec.split(",") if x.strip()]
    return [g for g in gpus if any(x == str(g.index) or (x.startswith("GPU-") and g.uuid.startswith(x)) for x in items)]
