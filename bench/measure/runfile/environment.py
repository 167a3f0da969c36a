"""The fingerprint, typed: what a run's figures were measured on and how the run went.

`Fingerprint` holds the fields every reader computes with; its objects (the machine, the commit,
the host state, the worker table) are typed too. A file's fingerprint is read with
`Fingerprint.from_dict` (every older file: missing keys take defaults, unknown ones are kept) and
written with `to_dict`, which gives back the keys read, in order (fields.py). fingerprint.py
collects the fields on the machine; run_format.py migrates an older layout before it is typed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from cudnn_hostbench.bench.measure.runfile import run_format
from cudnn_hostbench.bench.measure.runfile.fields import Fields
from cudnn_hostbench.bench.measure.runfile.run_format import WorkerInfo


def known(value: Any, missing: str = "?") -> Any:
    """A field's value for display, `missing` where the run does not record it."""
    return missing if value is None else value


@dataclass(eq=False)
class Machine(Fields):
    """The physical GPU, the boot and the host (machine.py reads them; `start` is one recorded by
    hand for runs from before machine identity)."""
    gpu_uuid: str | None = None
    gpu_serial: str | None = None
    vbios: str | None = None
    pci_bus_id: str | None = None
    power_limit_w: float | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    boot_id: str | None = None
    hostname: str | None = None
    start: str | None = None

    @property
    def start_id(self) -> str:
        """'<boot id>/<GPU UUID>' (one machine start), or '' when either is unknown."""
        if self.start:
            return str(self.start)
        return f"{self.boot_id}/{self.gpu_uuid}" if self.boot_id and self.gpu_uuid else ""


@dataclass(eq=False)
class Commit(Fields):
    """The harness's commit ('from': where its id came from, in `extra`)."""
    id: str | None = None
    dirty: bool | None = None


@dataclass(eq=False)
class HostState(Fields):
    """The host-state sentinel's summary: one worker's (hoststate.py), or a merged run's with each
    worker's in `per_worker`. Its histogram and budgets stay in `extra`."""
    NESTED: ClassVar[dict[str, type[Fields]]] = {}
    LISTS: ClassVar[dict[str, type[Fields]]] = {}
    floor_us: float | None = None
    unstable: bool | None = None
    unstable_workers: int | None = None
    per_worker: list = field(default_factory=list)
    fast_fraction: float | None = None
    gate_s: float | None = None
    focus_s: float | None = None
    gave_up: bool | None = None

    def waits(self) -> list[HostState]:
        """Each worker's summary (a run of one worker: its own)."""
        return [w for w in self.per_worker if isinstance(w, HostState)] or [self]


HostState.LISTS = {"per_worker": HostState}


@dataclass(eq=False)
class Fingerprint(Fields):
    """A run's environment and its account of itself (the keys of a run file's fingerprint)."""
    NESTED: ClassVar[dict[str, type[Fields]]] = {"commit_info": Commit, "machine": Machine, "host_state": HostState}
    LISTS: ClassVar[dict[str, type[Fields]]] = {"worker_table": WorkerInfo}
    # the formats (records.SCHEMA, MEASUREMENT_VERSION)
    schema: int | None = None
    measurement_version: int | None = None
    node_job: dict = field(default_factory=dict)
    datetime: str = ""
    # the host
    python: str | None = None
    platform: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    cpu_affinity: list = field(default_factory=list)
    clock_source: str | None = None
    cudnn_env: dict = field(default_factory=dict)
    commit_info: Commit = field(default_factory=Commit)
    argv: list = field(default_factory=list)
    packages: dict = field(default_factory=dict)
    # the GPU and its software
    torch: str | None = None
    cuda: str | None = None
    cudnn_torch: int | None = None
    gpu_name: str | None = None
    sm_count: int | None = None
    compute_capability: str | None = None
    gpu_memory_gib: float | None = None
    driver: str | None = None
    machine: Machine = field(default_factory=Machine)
    cudnn_frontend: str | None = None
    cudnn_backend: int | None = None
    cudnn_error: str | None = None
    capabilities: dict = field(default_factory=dict)
    cudnn_mismatch: bool | None = None
    # how the run went
    cpu_affinity_pinned: list = field(default_factory=list)
    calibration_us: dict = field(default_factory=dict)
    gpu_clocks: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    host_state: HostState = field(default_factory=HostState)
    gpu_clocks_end: dict = field(default_factory=dict)
    gpu_clocks_top_mhz: int | None = None
    suite_wall_s: float | None = None
    startup_s: float | None = None
    wall_s: dict = field(default_factory=dict)
    build_s: dict = field(default_factory=dict)
    plans_s: dict = field(default_factory=dict)
    time_s: dict = field(default_factory=dict)
    worker_table: list = field(default_factory=list)
    workers: int = 1
    few_processes: list = field(default_factory=list)
    budget_cut: dict = field(default_factory=dict)
    catch_up: dict = field(default_factory=dict)
    top_ups: list = field(default_factory=list)
    focus_workers: dict = field(default_factory=dict)
    ab_job: dict = field(default_factory=dict)

    @classmethod
    def of(cls, data: Any) -> Fingerprint:
        """From a dict (a file's, the engine's), or itself; None is an empty fingerprint."""
        return cls.from_dict(data if data is not None else {})

    @property
    def start(self) -> str:
        """The machine start it ran on ('' when unknown): see machine.py."""
        return self.machine.start_id

    @property
    def gpu_uuid(self) -> str:
        return str(self.machine.gpu_uuid or "")

    def top_ups_run(self) -> list[dict]:
        """The top-up workers' records (a catch-up worker in older runs), as the parent kept them."""
        return [top for top in self.top_ups or ([self.catch_up] if self.catch_up else []) if top]

    @property
    def focus_count(self) -> int:
        """How many focus-only workers the run had."""
        return int((self.focus_workers or {}).get("workers") or 0)

    def workers_table(self) -> list[WorkerInfo]:
        """The run's workers, one row each: a file read through run_format.migrate has its table;
        one made in memory in format 1's layout gets it from its per-worker lists."""
        rows = self.worker_table if "worker_table" in self else run_format.worker_table(self.to_dict())
        return [WorkerInfo.from_dict(row) if isinstance(row, dict) else row for row in rows
                if isinstance(row, (dict, WorkerInfo))]
