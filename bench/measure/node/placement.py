"""Where each job of a node runs: one job per GPU, each pinned to cores of the NUMA node nearest
its GPU (node_topo.py reads them), no two jobs on one core, so one job's host-side figures are
not disturbed by another's. GPUs that share a NUMA node split its cores between them, whole
physical cores first (hyper-thread siblings stay with one job). Also each job's environment and
the command that pins it. Read only: nothing here sets a GPU or its clocks.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from cudnn_hostbench.bench.measure.node.topology import (
    EVEN,
    Gpu,
    NodeError,
    cpu_list_text,
    discover,
    read_cmd,
    select,
    siblings_of,
    visible,
)

# NVLink multicast off in every job's environment unless the user set otherwise: the harness uses
# no NCCL, but a team's node image may load it, and multicast objects are shared across the node
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NODE_ENV = "HOSTBENCH_NODE"   # "<slot>/<jobs>;<gpu uuid>;<cpu list>;<basis>": the fingerprint's 'node_job'


@dataclass(frozen=True)
class Slot:
    """One job's place: its GPU and the cores it is pinned to."""
    gpu: Gpu
    cpus: tuple
    basis: str                  # where the cores came from: node_topo's TOPO_BASIS, NVML_BASIS or EVEN
    jobs: int = 1               # jobs that run at once (the node's GPUs, or those of a subset)
    number: int = 0             # this slot's place among them, from 0

    @property
    def label(self) -> str:
        return self.gpu.label


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


def plan(gpus: list[Gpu], basis: str, allowed=None, siblings=siblings_of) -> list[Slot]:
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


def node_plan(spec: str | None = None, run=read_cmd, nv=None, allowed=None, siblings=siblings_of) -> Plan:
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
