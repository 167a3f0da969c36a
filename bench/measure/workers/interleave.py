"""Interleaved worker processes over K environments ("sides") on one machine: the engine of an A/B
job (`hostbench ab`, `hostbench matrix`). No verdict here: what to run next is the caller's.

Processes run one at a time in sets of K, one process per side, the sides' order within a set
Williams-balanced (for two sides AB BA BA AB, repeating: ABBA BAAB), so a drift in time and the
position inside a set fall on every side alike. The processes of a set share their worker number
(probe order, first-worker warm-up) and hash seed, so two sides of a pair differ only in their side.

The job folder is the job's memory: `ab-job.json` (the sides, the cases, the options) and a
folder per process, `procs/pNNNN-S` (S the side's index), holding the worker's job, records.jsonl
as it is written, its log and `done.json` once it has exited. A process without done.json did not
finish (a killed job): it is never used and its number is not reused.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic

JOB_FILE = "ab-job.json"
JOB_VERSION = 1
ROTATIONS = 3          # worker numbers the sets cycle through: each set its own probe order


class JobFolderError(ValueError):
    """A job folder that cannot be used; the message names it and what is wrong."""


@dataclass
class Side:
    label: str
    spec: str = "current"                  # as the user wrote it
    pythonpath: list = field(default_factory=list)       # folders put first on PYTHONPATH
    ld_library_path: list = field(default_factory=list)  # folders put first on LD_LIBRARY_PATH
    env: dict = field(default_factory=dict)              # extra environment variables
    wheel: str = ""                        # the frontend wheel it installs, if any
    cudnn_only: bool = True                # it differs from the current environment in cuDNN or the frontend alone

    def environ(self, base: dict) -> dict:
        env = dict(base)
        for var, extra in (("PYTHONPATH", self.pythonpath), ("LD_LIBRARY_PATH", self.ld_library_path)):
            if extra:
                env[var] = os.pathsep.join([*extra, *filter(None, [base.get(var)])])
        env.update(self.env)
        return env


@dataclass
class JobSpec:
    sides: list                 # Side
    cases: list                 # [probe file, probe, size, variant, mode], collection order
    options: dict = field(default_factory=dict)   # --hb-* options every process gets, as text
    reference: int = 0          # the side every other is judged against
    selection: str = ""         # what chose the cases (the user's -k, sizes), to refuse a mismatched resume
    version: int = JOB_VERSION

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "kind": "hostbench ab"}, indent=1)

    @classmethod
    def load(cls, folder: Path) -> "JobSpec":
        path = folder / JOB_FILE
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise JobFolderError(f"{folder}: not an A/B job folder (no {JOB_FILE})") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise JobFolderError(f"{path}: cannot read the job ({e})") from e
        if not isinstance(d, dict) or d.get("kind") != "hostbench ab" or not isinstance(d.get("sides"), list):
            raise JobFolderError(f"{path}: not an A/B job file")
        if d.get("version", 0) > JOB_VERSION:
            raise JobFolderError(f"{path}: job version {d['version']} is newer than this harness reads ({JOB_VERSION})")
        try:
            sides = [Side(**s) for s in d["sides"]]
            return cls(sides=sides, cases=d["cases"], options=d.get("options") or {}, reference=d.get("reference", 0),
                       selection=d.get("selection", ""), version=d.get("version", JOB_VERSION))
        except (TypeError, KeyError) as e:
            raise JobFolderError(f"{path}: malformed job ({e})") from e


def williams(sides: int) -> list[list[int]]:
    """Orders of `sides` sides, each side in each position equally often and after every other side
    equally often (Williams 1949): `sides` rows for an even count, twice that for an odd one."""
    if sides == 2:
        return [[0, 1], [1, 0], [1, 0], [0, 1]]      # ABBA BAAB: a linear drift cancels within four sets
    first, lo, hi = [0], 1, sides - 1
    while len(first) < sides:
        first.append(lo)
        lo += 1
        if len(first) < sides:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % sides for x in first] for i in range(sides)]
    return rows if sides % 2 == 0 else rows + [r[::-1] for r in rows]


def set_order(sides: int, index: int) -> list[int]:
    rows = williams(sides)
    return rows[index % len(rows)]


@dataclass
class Proc:
    """One finished or unfinished process of the job."""
    index: int
    side: int
    folder: Path
    done: dict | None = None    # done.json: rc, wall_s, error

    @property
    def ok(self) -> bool:
        return self.done is not None and self.done.get("rc") == 0 and (self.folder / "records.jsonl").exists()

    @property
    def records(self) -> Path:
        return self.folder / "records.jsonl"


def side_file(job: Path, label: str) -> Path:
    """sides/LABEL.json: a side's processes merged as one run, its label made a file name."""
    return job / "sides" / ("".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in label) + ".json")


def proc_folder(job: Path, index: int, side: int) -> Path:
    return job / "procs" / f"p{index:04d}-{side}"


def processes(job: Path, sides: int) -> list[Proc]:
    """The job's processes in order, finished or not."""
    out = []
    for d in sorted((job / "procs").glob("p*-*")) if (job / "procs").is_dir() else []:
        try:
            index, side = (int(x) for x in d.name[1:].split("-"))
        except ValueError:
            continue
        if not (d / "job.json").exists():
            continue      # started ahead, no turn came (a killed job): it measured nothing
        done = None
        try:
            done = json.loads((d / "done.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        out.append(Proc(index, side, d, done if isinstance(done, dict) else None))
    return out


def pairs(procs: list[Proc], sides: int, reference: int = 0) -> dict[int, list[tuple[Proc, Proc]]]:
    """{side: [(reference's process, its process) per set in which both finished]} for every other side."""
    by_set: dict = {}
    for p in procs:
        by_set.setdefault(p.index // sides, {})[p.side] = p
    out: dict = {s: [] for s in range(sides) if s != reference}
    for members in by_set.values():
        ref = members.get(reference)
        if ref is None or not ref.ok:
            continue
        for s in out:
            other = members.get(s)
            if other is not None and other.ok:
                out[s].append((ref, other))
    return out


def next_index(procs: list[Proc], sides: int) -> int:
    """The first process number of the next set (a set left unfinished is not resumed)."""
    if not procs:
        return 0
    return (max(p.index for p in procs) // sides + 1) * sides


AHEAD_AFTER_S = 10.0   # the next process starts this long into the one before (its imports, 4.5-6.5 s, then it
#                        waits for its job): past the worker's warm-up, as the suite's own engine does
#                        (workers.OVERLAP_AFTER_S); a process shorter than this gets no overlap


class Ahead:
    """At most one process started before its turn: it imports what measuring needs, then waits for
    its job (worker.wait_for), which run_process writes when the turn comes."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.log: IO[str] | None = None

    def start(self, folder: Path, env: dict) -> None:
        from cudnn_hostbench.bench.measure.workers.worker import COMMAND
        self.close()
        folder.mkdir(parents=True, exist_ok=True)
        self.log = open(folder / "worker.log", "w", encoding="utf-8")  # noqa: SIM115 - closed by take/close
        self.proc = subprocess.Popen([*COMMAND, str(folder / "job.json")], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.folder = folder

    def take(self, folder: Path):
        """(process, log) started for `folder`, or None; the caller owns them from here."""
        if self.folder != folder or self.proc is None:
            return None
        got = (self.proc, self.log)
        self.folder, self.proc, self.log = None, None, None
        return got

    def close(self) -> None:
        """Ends a process no turn came for and removes its folder (a log of imports, no job)."""
        if self.proc is not None:
            _kill(self.proc)
            if self.log is not None:
                self.log.close()
            if self.folder is not None and not (self.folder / "job.json").exists():
                import shutil
                shutil.rmtree(self.folder, ignore_errors=True)
        self.folder, self.proc, self.log = None, None, None


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass
    proc.wait()


def run_process(folder: Path, env: dict, cases: list, options: dict, worker: str, floor: float | None,
                timeout_s: float, ahead: Ahead | None = None, then=None) -> dict:
    """Runs one worker process on `cases` ([file, probe, size, variant, mode]) in `env` (the one
    `ahead` started for `folder`, if any); writes and returns done.json: {rc, wall_s, error}. A
    worker that outlives `timeout_s` is killed. `then()` is called once, AHEAD_AFTER_S into it (to
    start the next process ahead)."""
    from cudnn_hostbench.bench.measure.workers.worker import COMMAND, job_for
    folder.mkdir(parents=True, exist_ok=True)
    args = [k if k == "--hb-heavy" else f"{k}={v}" for k, v in options.items()]   # a flag, as pytest takes it
    job = job_for(args, cases, worker, folder)
    job.floor_us = floor
    started = ahead.take(folder) if ahead is not None else None
    if started is None:
        log = open(folder / "worker.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
        p = subprocess.Popen([*COMMAND, str(folder / "job.json")], env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
    else:
        p, log = started
    write_text_atomic(folder / "job.json", job.to_json())      # the waiting worker starts on it
    t0 = time.perf_counter()
    error, rc = "", None
    try:
        rc = _wait(p, t0, timeout_s, then)
        if rc is None:
            _kill(p)
            rc, error = -9, f"killed after {timeout_s:.0f} s"
    except BaseException:     # Ctrl-C: the worker goes with the job, its folder stays unfinished
        _kill(p)
        raise
    finally:
        log.close()
    if rc != 0 and not error:
        error = last_line(folder / "worker.log") or f"exit {rc}"
    done = {"rc": rc, "wall_s": round(time.perf_counter() - t0, 2), "error": error, "worker": worker}
    write_text_atomic(folder / "done.json", json.dumps(done))
    return done


def _wait(proc: subprocess.Popen, started: float, timeout_s: float, then) -> int | None:
    """The process's exit code, or None once it outlived `timeout_s`; `then()` once, AHEAD_AFTER_S in."""
    while True:
        left = timeout_s - (time.perf_counter() - started)
        if left <= 0:
            return None
        step = min(left, 0.2 if then is not None else left)
        try:
            return proc.wait(timeout=step)
        except subprocess.TimeoutExpired:
            if then is not None and time.perf_counter() - started >= AHEAD_AFTER_S:
                then()
                then = None


def last_line(path: Path) -> str:
    """The last line of a log that says something (the worker's error)."""
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    keep = [ln for ln in lines if not ln.startswith(("host:", "nanobind"))]
    return (keep or lines or [""])[-1][:300]


def worker_of(set_index: int, k_sides: int) -> str:
    """The worker number of a set's processes: its probe order (schedule.order) and warm-up."""
    return f"{set_index % ROTATIONS + 1}/{ROTATIONS}"


def hash_seed(set_index: int) -> str:
    return str(set_index % 1000)
