"""Jobs over the slots of a node (bench.measure.node.placement): at most one job per GPU at a time, each
job's failure kept to its own result, so the other jobs' results stand.

The first wave is fixed (job i on the i-th slot it may use), so a job that must run on a given GPU
(the alone-vs-alongside check) and a plain matrix both start the same way every time; later jobs
take the first slot that frees.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Job:
    name: str                   # what it runs, in the failure line: e.g. 'fe 1.32.0'
    data: dict = field(default_factory=dict)
    gpu: int | None = None      # run only on this GPU index (None: any)


def one_line(text: str, limit: int | None = 300) -> str:
    """The last non-blank line of `text`, its last `limit` characters (a log line's end says most)."""
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return last[-limit:] if limit else last


def gpu_label(info: dict) -> str:
    """'GPU 3 (GPU-8f2c...)' from a result's 'gpu' entry (slot_info)."""
    return f"GPU {info.get('index', '?')}" + (f" ({info['uuid']})" if info.get("uuid") else "")


def failure_line(result: dict) -> str:
    """The one line a failed job gets: its GPU, the job (its version), and why."""
    detail = one_line(result.get("detail") or "", None)   # a log's or traceback's last line says most
    why = f"{result.get('status', 'failed')}" + (f": {detail}" if detail else "")
    return f"{gpu_label(result.get('gpu') or {})}: {result.get('job', '?')}: {why}"


def _eligible(job: Job, slot) -> bool:
    return job.gpu is None or job.gpu == slot.gpu.index


def run_jobs(jobs: list[Job], slots: list, work: Callable, done: Callable | None = None) -> list[dict]:
    """work(job, slot) -> result dict for every job, one job per slot at a time; results in job
    order, each with 'gpu' (the slot), 'job', and 'started_s'/'ended_s' (seconds from the start).
    An exception in work becomes that job's result {'status': 'failed', 'detail': ...};
    done(job, slot, result) runs under a lock as each ends (to write progress files). A job whose
    GPU is not among the slots fails without running."""
    lock = threading.Lock()
    results: dict[int, dict] = {}
    pending = list(range(len(jobs)))
    known = {s.gpu.index for s in slots}
    for i in [i for i in pending if jobs[i].gpu is not None and jobs[i].gpu not in known]:
        pending.remove(i)
        results[i] = {"status": "failed", "detail": "that GPU is not among the GPUs used", "job": jobs[i].name,
                      "gpu": {"index": jobs[i].gpu}}

    def take(slot):
        for i in pending:
            if _eligible(jobs[i], slot):
                pending.remove(i)
                return i
        return None

    first = {}
    for s in slots:   # the fixed first wave
        i = take(s)
        if i is not None:
            first[s.number] = i

    t0 = time.monotonic()

    def loop(slot):
        i = first.get(slot.number)
        while i is not None:
            job = jobs[i]
            started = time.monotonic() - t0
            try:
                res = dict(work(job, slot) or {})
            except Exception as e:  # noqa: BLE001 - one job's failure stays its own
                res = {"status": "failed", "detail": f"{type(e).__name__}: {' '.join(str(e).split())}"}
            res.setdefault("status", "ok")
            res.update(gpu=slot_info(slot), job=job.name, started_s=round(started, 2),
                       ended_s=round(time.monotonic() - t0, 2))
            with lock:
                results[i] = res
                if done is not None:
                    done(job, slot, res)
                i = take(slot)

    threads = [threading.Thread(target=loop, args=(s,), daemon=True, name=f"gpu{s.gpu.index}") for s in slots]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.2)
    except KeyboardInterrupt:
        with lock:
            pending.clear()   # no slot starts another job while the running ones are killed
        kill_children()
        raise
    return [results[i] for i in range(len(jobs)) if i in results]


def slot_info(slot) -> dict:
    from cudnn_hostbench.bench.measure.node.placement import cpu_list_text
    g = slot.gpu
    return {"index": g.index, "uuid": g.uuid, "name": g.name, "bus_id": g.bus_id, "numa": g.numa,
            "cpus": cpu_list_text(slot.cpus), "basis": slot.basis}


def kill_children(proc: str = "/proc") -> list[int]:
    """Kills the process group of each child of this process (jobs start in their own session,
    so Ctrl-C does not reach them); returns their pids."""
    me, killed = os.getpid(), []
    for d in os.listdir(proc) if os.path.isdir(proc) else []:
        if not d.isdigit():
            continue
        try:
            with open(f"{proc}/{d}/stat", encoding="utf-8") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            try:
                os.killpg(int(d), signal.SIGKILL)
                killed.append(int(d))
            except OSError:
                pass
    return killed
