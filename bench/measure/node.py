"""The GPUs of one node, and the CPU cores each job gets: one job per GPU, each pinned to cores of
the NUMA node nearest its GPU, no two jobs on one core, so one job's host-side figures are not
disturbed by another's.

Where a GPU's nearest cores come from, first that answers:
  1. `nvidia-smi topo -m`: its "CPU Affinity" and "NUMA Affinity" columns;
  2. NVML: nvmlDeviceGetCpuAffinity (the same mask nvidia-smi prints);
  3. none: the cores this process may use (os.sched_getaffinity) split evenly.
GPUs that share a NUMA node split its cores between them, whole physical cores first (hyper-thread
siblings stay with one job). Read only: nothing here sets a GPU or its clocks.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field, replace

# NVLink multicast off in every job's environment unless the user set otherwise: the harness uses
# no NCCL, but a team's node image may load it, and multicast objects are shared across the node
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NODE_ENV = "HOSTBENCH_NODE"   # "<slot>/<jobs>;<gpu uuid>;<cpu list>;<basis>": the fingerprint's 'node_job'
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


@dataclass(frozen=True)
class Slot:
    """One job's place: its GPU and the cores it is pinned to."""
    gpu: Gpu
    cpus: tuple
    basis: str                  # where the cores came from (see the module docstring)
    jobs: int = 1               # slots planned on the node (jobs that may run at once)
    number: int = 0             # this slot's place among them, from 0

    @property
    def label(self) -> str:
        return self.gpu.label


def parse_cpu_list(text: str) -> frozenset:
    """'0-3,8,10-11' -> {0,1,2,3,8,10,11}; '' or 'N/A' -> empty."""
    cpus = set()
    for part in (text or "").replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2) or m.group(1))
            cpus.update(range(min(a, b), max(a, b) + 1))
    return frozenset(cpus)


def cpu_list_text(cpus) -> str:
    """{0,1,2,3,8} -> '0-3,8' (the form taskset and /sys use)."""
    out, run = [], []
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


def _run(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return p.stdout if p.returncode == 0 else ""


def from_nvidia_smi(run=_run) -> list[Gpu]:
    gpus = parse_query(run(QUERY))
    topo = parse_topo(run(TOPO)) if gpus else {}
    return [Gpu(g.index, g.uuid, g.name, g.bus_id, *topo.get(g.index, (frozenset(), None))) for g in gpus]


def from_nvml(nv=None) -> list[Gpu]:
    """The GPUs through NVML, each with nvmlDeviceGetCpuAffinity's cores; [] without NVML."""
    try:
        if nv is None:
            import pynvml as nv
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


def discover(run=_run, nv=None) -> tuple[list[Gpu], str]:
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


def _siblings(cpu: int) -> frozenset:
    text = ""
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        pass
    return parse_cpu_list(text) or frozenset({cpu})


def _split(cpus, n: int, siblings) -> list[list[int]]:
    """`cpus` into n contiguous shares of whole physical cores (hyper-thread siblings together),
    as even as the cores allow; per logical CPU when there are fewer physical cores than shares."""
    cores, seen = [], set()
    for c in sorted(cpus):
        if c not in seen:
            core = sorted(siblings(c) & set(cpus)) or [c]
            seen.update(core)
            cores.append(core)
    if len(cores) < n:
        cores = [[c] for c in sorted(cpus)]
    shares = []
    for i in range(n):
        part = cores[len(cores) * i // n: len(cores) * (i + 1) // n]
        shares.append(sorted(c for core in part for c in core))
    return shares


def plan(gpus: list[Gpu], basis: str, allowed=None, siblings=_siblings) -> list[Slot]:
    """One slot per GPU, in GPU order. GPUs with the same nearest cores split those cores (whole
    physical cores each, no core in two slots); without affinity, the allowed cores split evenly.
    NodeError (one line naming the GPU) when a GPU would get no core."""
    allowed = frozenset(os.sched_getaffinity(0) if allowed is None else allowed)
    groups: dict = {}
    for g in gpus:
        near = frozenset(g.cpus) & allowed if g.cpus and basis != EVEN else frozenset()
        groups.setdefault(near, []).append(g)
    sets = list(groups)
    overlap = any(a & b for i, a in enumerate(sets) for b in sets[i + 1:])
    if frozenset() in groups or overlap:   # a GPU without usable affinity, or odd masks: one even split
        groups = {allowed: list(gpus)}
        basis = EVEN
    cpus_of = {}
    for near, members in groups.items():
        for g, share in zip(members, _split(near, len(members), siblings)):
            if not share:
                raise NodeError(f"{g.label}: no CPU core of its own ({len(near)} core(s) for "
                                f"{len(members)} GPU(s) that share them)")
            cpus_of[g.index] = tuple(share)
    return [Slot(g, cpus_of[g.index], basis, len(gpus), i) for i, g in enumerate(gpus)]


def subset(slots: list[Slot], gpus: list[Gpu]) -> list[Slot]:
    """The slots of `gpus`, each keeping the cores it has in the whole node's plan (so a GPU run
    alone is pinned as it is beside the others); `jobs` becomes how many of them run at once."""
    want = [g.index for g in gpus]
    kept = [s for s in slots if s.gpu.index in want]
    return [replace(s, jobs=len(kept)) for s in kept]


def visible(gpus: list[Gpu], env=None) -> list[Gpu]:
    """The GPUs the user's CUDA_VISIBLE_DEVICES leaves (indices, or UUIDs and their prefixes, as
    CUDA takes them); all when it is unset."""
    spec = (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return list(gpus)
    items = [x.strip() for x in spec.split(",") if x.strip()]
    return [g for g in gpus if any(x == str(g.index) or (x.startswith("GPU-") and g.uuid.startswith(x)) for x in items)]


def gpu_env(base: dict, slot: Slot) -> dict:
    """A job's environment: its GPU only (by UUID, which no device-order setting renumbers), the
    multicast switches off unless set, one OpenMP thread per core it has, and its place."""
    env = dict(base)
    env["CUDA_VISIBLE_DEVICES"] = slot.gpu.uuid or str(slot.gpu.index)
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    for k, v in MULTICAST_OFF.items():
        env.setdefault(k, v)
    env.setdefault("OMP_NUM_THREADS", str(len(slot.cpus)))
    env[NODE_ENV] = f"{slot.number}/{slot.jobs};{slot.gpu.uuid or slot.gpu.index};{cpu_list_text(slot.cpus)};{slot.basis}"
    return env


PIN = "import os, sys; os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(',')}); os.execvp(sys.argv[2], sys.argv[2:])"


def pinned(cmd: list[str], cpus, python: str | None = None) -> list[str]:
    """`cmd` started on `cpus` only; its children inherit the mask. A one-line Python exec, so it
    needs no taskset on the node."""
    import sys
    return [python or sys.executable, "-c", PIN, ",".join(str(c) for c in sorted(cpus)), *cmd]


def job_fields(env=None) -> dict:
    """The fingerprint's 'node_job' entry of a job started by a node command ({} otherwise): it says the
    run shared its node with other jobs, on which cores, planned how."""
    text = (os.environ if env is None else env).get(NODE_ENV, "")
    parts = text.split(";")
    if len(parts) != 4 or "/" not in parts[0]:
        return {}
    slot, jobs = parts[0].split("/", 1)
    return {"slot": int(slot) if slot.isdigit() else slot, "jobs": int(jobs) if jobs.isdigit() else jobs,
            "gpu": parts[1], "cpus": parts[2], "basis": parts[3]}


@dataclass
class Plan:
    """What `hostbench node plan` prints: the slots, and where their cores came from."""
    slots: list = field(default_factory=list)
    basis: str = ""

    def lines(self) -> list[str]:
        out = [f"{len(self.slots)} GPU(s); cores from {self.basis}"]
        for s in self.slots:
            numa = f", NUMA node {s.gpu.numa}" if s.gpu.numa is not None else ""
            out.append(f"  {s.label} {s.gpu.name}{numa}: cores {cpu_list_text(s.cpus)} ({len(s.cpus)})")
        return out


def node_plan(spec: str | None = None, run=_run, nv=None, allowed=None, siblings=_siblings) -> Plan:
    """The node's GPUs (`spec` of them) planned over the whole node (the GPUs CUDA_VISIBLE_DEVICES
    leaves, when it is set); NodeError when there is none."""
    found, basis = discover(run, nv)
    gpus = visible(found)
    if not found:
        raise NodeError("no GPU found (nvidia-smi and NVML see none)")
    if not gpus:
        raise NodeError(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}: leaves none of the "
                        f"node's GPUs ({', '.join(str(g.index) for g in found)})")
    slots = plan(gpus, basis, allowed, siblings)
    return Plan(subset(slots, select(gpus, spec)), slots[0].basis)
