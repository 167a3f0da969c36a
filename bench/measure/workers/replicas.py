"""Worker processes as the unit of replication (as pyperf and asv do): the suite runs in K
fresh processes one after another, each with its own rotation of probe and variant order, and
the parent merges their records.

Per row the merged record keeps every worker's kept rounds (pooled samples), each worker's median
and median paired ratio, and reports the median over workers with the between-worker spread.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.core import progress
from cudnn_hostbench.bench.measure.core.hoststate import FLOOR_ENV, TOL, process_floor
from cudnn_hostbench.bench.measure.runfile import run_format, stats, trust
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint, HostState
from cudnn_hostbench.bench.measure.runfile.records import MIN_PROCESSES, Record, Run, WorkerFigure, load_run
from cudnn_hostbench.bench.measure.runfile.run_format import WorkerInfo

PROGRESS_PREFIXES = ("hostbench", "host:")   # a worker's progress lines (runner.Session.say, hoststate)

# flags a merged row carries when most of its workers carried them
MAJORITY_FLAGS = ("host_unstable", "clock_drop")


def _ratio_values(rec: Record, base: Record | None) -> list[float]:
    if base is None or not base.ok or len(base.samples) != len(rec.samples):
        return []
    return stats.paired_ratios(rec.samples, base.samples)


def stale_host(per_worker: list[list[Record]], floor: float | None, tol: float = TOL,
               floors: list | None = None) -> list[list[Record]]:
    """Flags eager records whose sentinel sat above the floor that judges their worker (`floors`,
    one per worker, from judging_floor; the run's `floor` without them): they were judged against
    a floor their worker learned while its host was still slow."""
    if not floor:
        return per_worker
    out = []
    for i, recs in enumerate(per_worker):
        own = floors[i] if floors else floor
        fixed = []
        for r in recs:
            if (r.mode == "eager" and r.host_state == "fast" and r.sentinel_us
                    and not truly_fast(r, own, tol) and "host_unstable" not in r.flags):
                r = copy.copy(r)
                r.flags = [*r.flags, "host_unstable"]
            fixed.append(r)
        out.append(fixed)
    return out


def truly_fast(rec: Record, floor: float | None, tol: float = TOL) -> bool:
    """An eager record timed in the fast state by `floor`, its worker's floor as that worker
    ended (judging_floor), not only by the floor it knew when it timed it: a worker can learn a floor
    in the slow state before it sees the fast one."""
    return (rec.mode == "eager" and rec.host_state == "fast" and floor is not None and floor > 0
            and rec.sentinel_us is not None and rec.sentinel_us <= floor * (1 + tol))


def figure_state(states: list[str]) -> str:
    """The one host state a merged figure takes from its workers' states: the fast one when
    MIN_PROCESSES workers timed it fast; else a state that many workers share (a figure of three
    slow processes is a figure, marked slow; one of a single fast process is not, since top-ups
    cannot be relied on to add fast ones on a slow host); else fast when any worker was fast (a
    top-up may still add to it), else the commonest."""
    if not states:
        return ""
    n = {s: states.count(s) for s in set(states)}
    if n.get("fast", 0) >= MIN_PROCESSES:
        return "fast"
    many = [s for s, k in n.items() if k >= MIN_PROCESSES]
    if many:
        return max(many, key=lambda s: n[s])
    return "fast" if "fast" in n else max(n, key=lambda s: n[s])


def merge_records(per_worker: list[list[Record]], host_unstable: bool = False) -> list[Record]:
    """One record per (probe, variant, size, mode) over the workers' records (worker i = index i+1)."""
    groups: dict = {}
    for worker, recs in enumerate(per_worker, 1):
        for rec in recs:
            groups.setdefault(rec.key, []).append((worker, rec))
    index = [{rec.key: rec for rec in recs} for recs in per_worker]
    out = []
    for items in groups.values():
        ok = [(worker, rec) for worker, rec in items if rec.ok]
        if not ok:
            out.append(copy.deepcopy(items[0][1]))
            continue
        out.append(_merge_group(ok, index, host_unstable))
    return out


def _append_note(rec: Record, text: str) -> None:
    rec.note = (rec.note + " | " if rec.note else "") + text


def _steady_workers(worker_records: list) -> tuple[list, list, list, str]:
    """(the workers kept, those left out for no steady host state, those left out for another host
    state, the merged figure's host state)."""
    # workers that kept every cycle (no steady host state) are left out when most workers had
    # one; when most did not, all stay and the merged figure carries their flag
    unsteady = [worker for worker, rec in worker_records if rec.mode == "eager" and "host_unstable" in (rec.flags or ())]
    if unsteady and len(unsteady) * 2 >= len(worker_records):
        unsteady = []
    worker_records = [(worker, rec) for worker, rec in worker_records if worker not in unsteady]
    state = figure_state([rec.host_state for _, rec in worker_records if rec.host_state])
    left_out = [worker for worker, rec in worker_records if rec.host_state and rec.host_state != state]
    # one host state per merged figure
    worker_records = [(worker, rec) for worker, rec in worker_records if worker not in left_out]
    return worker_records, unsteady, left_out, state


def _merge_group(worker_records: list, index: list, host_unstable: bool) -> Record:
    """The merged record of one key's workers that ran it."""
    worker_records, unsteady, left_out, state = _steady_workers(worker_records)
    merged = copy.deepcopy(worker_records[0][1])
    merged.host_state = state
    merged.samples, merged.workers = [], []
    folded = _fold_workers(merged, worker_records, index)
    disc = folded["discarded"]
    if left_out:
        disc["worker_other_host_state"] = len(left_out)
        _append_note(merged, f"workers {left_out} measured in the other host state: left out")
    if unsteady:
        disc["worker_no_host_state"] = len(unsteady)
        _append_note(merged, f"workers {unsteady} found no steady host state: left out")
    merged.rounds_discarded = disc
    merged.sentinel_us = stats.median(folded["sentinels"]) if folded["sentinels"] else None
    clocks, ratios = folded["clocks"], folded["ratios"]
    if clocks:
        merged.clock_mhz = {"sm_min": min(c["sm_min"] for c in clocks), "sm_max": max(c["sm_max"] for c in clocks),
                            "top": max(c.get("top") or 0 for c in clocks) or None}
    if ratios:
        merged.ratio = stats.summarize(ratios).with_median(
            stats.median([w.ratio for w in merged.workers if w.ratio is not None]))
    _merge_kernels(merged, folded["names"])
    judged = ([w.ratio for w in merged.workers] if ratios and merged.mode == "eager"
              else [w.median for w in merged.workers])
    merged.spread = stats.relative_spread(judged)
    _merge_flags(merged, worker_records, host_unstable)
    return merged


def _fold_workers(merged: Record, worker_records: list, index: list) -> dict:
    """Each kept worker's samples and figure into `merged`; returns what is merged after: its
    ratios, discarded rounds, sentinels, clocks and kernel names (names -> workers)."""
    folded: dict = {"ratios": [], "discarded": {}, "sentinels": [], "clocks": [], "names": {}}
    for worker, rec in worker_records:
        base = index[worker - 1].get((rec.probe, rec.baseline, rec.size, rec.mode)) if rec.baseline else None
        ratios = _ratio_values(rec, base) if rec.variant != rec.baseline else []
        folded["ratios"] += ratios
        merged.samples += rec.samples
        merged.workers.append(WorkerFigure(worker, len(rec.samples), stats.median(rec.samples),
                                           stats.median(ratios) if ratios else None, rec.sentinel_us))
        for key, count in (rec.rounds_discarded or {}).items():
            folded["discarded"][key] = folded["discarded"].get(key, 0) + count
        if rec.sentinel_us is not None:
            folded["sentinels"].append(rec.sentinel_us)
        if rec.clock_mhz:
            folded["clocks"].append(rec.clock_mhz)
        if rec.kernel_names:
            folded["names"].setdefault(tuple(rec.kernel_names), []).append(worker)
    return folded


def _merge_kernels(merged: Record, names: dict) -> None:
    """The kernels most workers ran; say so when workers disagree."""
    if names:
        merged.kernel_names = list(max(names.items(), key=lambda kv: len(kv[1]))[0])
        if len(names) > 1:
            alt = "; ".join(f"workers {ws}: {', '.join(n[:2])}" for n, ws in names.items())
            _append_note(merged, f"workers ran different kernels ({alt})")


def _merge_flags(merged: Record, worker_records: list, host_unstable: bool) -> None:
    """The merged figure's own flags, and those most of its workers carry."""
    flags = set(trust.flags_for(merged, host_unstable=host_unstable))
    for flag in MAJORITY_FLAGS:
        if sum(1 for _, rec in worker_records if flag in (rec.flags or ())) * 2 > len(worker_records):
            flags.add(flag)
    merged.flags = [f for f in trust.FLAGS if f in flags]

def merge_fingerprints(fps: list, wall_s: float | None = None) -> Fingerprint:
    """The first worker's environment, plus the run's host state over all workers (each
    fingerprint typed, or a dict)."""
    fps = [Fingerprint.of(f) for f in fps if f]
    if not fps:
        return Fingerprint.of({})
    fp = copy.deepcopy(fps[0])
    hosts = [copy.deepcopy(f.host_state) for f in fps]
    floors = [h.floor_us for h in hosts if h.floor_us]
    unstable = sum(1 for h in hosts if h.unstable)
    fp.workers = len(fps)
    fp.host_state = HostState.from_dict({"floor_us": min(floors) if floors else None,
                                         "unstable": unstable * 2 > len(fps), "unstable_workers": unstable,
                                         "per_worker": hosts})
    fp.wall_s, fp.build_s, fp.plans_s = (_summed([getattr(f, name) for f in fps])
                                         for name in ("wall_s", "build_s", "plans_s"))
    # a row per worker (run_format.WorkerInfo): its wall, start-up, time per phase; the parent sets roles
    fp.worker_table = [WorkerInfo.from_dict(run_format.row_of(i, f.to_dict())) for i, f in enumerate(fps, 1)]
    fp.calibration_us = {"per_worker": [f.calibration_us if "calibration_us" in f else None for f in fps],
                         **fps[0].calibration_us}
    if wall_s is not None:
        fp.suite_wall_s = wall_s
    return fp


def _summed(per_worker: list[dict]) -> dict:
    """Seconds per probe/size, summed over the workers."""
    got: dict = {}
    for times in per_worker:
        for key, secs in (times or {}).items():
            got[key] = round(got.get(key, 0.0) + secs, 2)
    return got


def floor_of(fingerprint) -> float | None:
    """The host floor a fingerprint (typed, or a dict) records: a worker's as it ended, or a merged run's."""
    return Fingerprint.of(fingerprint).host_state.floor_us


def judging_floor(run: Run, floor: float | None) -> float | None:
    """The floor that judges a worker's records: its own, against the run's `floor`
    (hoststate.process_floor)."""
    return process_floor(floor_of(run.fingerprint), floor)


def merge_runs(runs: list[Run], wall_s: float | None = None, floor: float | None = None) -> tuple[list[Record], Fingerprint]:
    """Merged records and fingerprint; `floor` fixes the run's host floor (the full workers'), so
    a later top-up worker that learns a lower one does not turn figures the full workers timed
    fast into stale ones: otherwise each top-up would thin blocks it never ran."""
    fp = merge_fingerprints([r.fingerprint for r in runs], wall_s)
    hs = fp.host_state
    if floor and "host_state" in fp:
        hs.floor_us = floor
    run_floor = hs.floor_us
    per = stale_host([r.records for r in runs], run_floor, floors=[judging_floor(r, run_floor) for r in runs])
    return merge_records(per, bool(hs.unstable)), fp


def _relay(process, log, relay, on_line=None) -> int:
    """Relays a started worker's stderr: all of it to `log`, its progress lines also to `relay`
    (the rest, such as the cuDNN frontend's nanobind 'leaked' objects at exit, stays out of the
    user's terminal); `on_line()` after each line. Returns its exit code."""
    for line in process.stderr:
        log.write(line)
        log.flush()   # the child writes its stdout to the same file description
        if line.startswith(PROGRESS_PREFIXES):
            relay(line.rstrip("\n"))
        if on_line is not None:
            on_line()
    return process.wait()


def _run_relaying(cmd: list[str], env: dict, log, relay) -> int:
    """Runs a worker with its stdout in `log` and its stderr relayed (_relay)."""
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                         errors="replace")
    return _relay(p, log, relay)


OVERLAP_AFTER_S = 10.0   # the own engine starts the next worker's process this long into a worker: its
#                          start-up (imports, several seconds) overlaps that worker's tail, not the
#                          first worker's host warm-up


def _seed_env(env: dict, worker: int, hash_seed_set: bool) -> dict:
    env = dict(env)
    if not hash_seed_set:
        # worker i hashes strings with seed i in every run: the workers still differ (as
        # pyperf's do), but two runs' worker i share dict layouts, so run-to-run comparisons
        # are paired instead of drawing fresh layouts each time
        env["PYTHONHASHSEED"] = str(worker)
    return env


def run_workers(workers: int, pytest_args: list[str], out: Path, say=print, env=None, start: int = 1,
                floor: float | None = None, relay=None, cases: list | None = None, ahead: dict | None = None,
                lookahead: bool = False) -> list[Path]:
    """Runs the suite in `workers` fresh processes, one after another (numbered from `start`); returns
    their records.jsonl files. Each is a child pytest session with `pytest_args`, or with `cases`
    (the own engine, --hb-engine own) a bench.measure.workers.worker process running the job those args
    and cases make (worker.job_for), with no pytest in it; the own engine starts each next
    worker's process during the one before (it imports, then waits for its job).

    Each later worker starts from the host floor the earlier ones learned (or `floor`), so it
    need not relearn it; it judges by its own once it has one (hoststate.process_floor).

    `ahead` (own engine): the caller's processes started early, by worker number, shared across
    calls; with `lookahead`, the last worker also starts the process of the worker after it, for
    the caller's next call (which may not come: the caller ends what it leaves, end_ahead).
    """
    relay = relay or progress.say
    env = dict(os.environ if env is None else env)
    env["PYTHONUNBUFFERED"] = "1"
    hash_seed_set = "PYTHONHASHSEED" in env   # the user's own choice stands
    if cases is not None:
        from cudnn_hostbench.bench.measure.workers.worker import package_root
        env["PYTHONPATH"] = os.pathsep.join([package_root(), *filter(None, [env.get("PYTHONPATH")])])
    paths = []
    last = start + workers - 1
    shared = ahead is not None
    ahead = {} if ahead is None else ahead    # own engine: worker number -> (process, log), started early
    try:
        for i in range(start, last + 1):
            wdir = out / "workers" / f"w{i}"
            wdir.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            say(f"worker {i}/{last}: starting")
            if cases is None:
                if floor is not None:
                    env[FLOOR_ENV] = f"{floor:.6f}"
                cmd = [sys.executable, "-m", "pytest", *pytest_args, f"--hb-worker={i}/{last}", f"--hb-out={wdir}"]
                logname = "pytest.log"
                with open(wdir / logname, "w", encoding="utf-8") as log:
                    rc = _run_relaying(cmd, _seed_env(env, i, hash_seed_set), log, relay)
            else:
                logname = "worker.log"
                p, log = ahead.pop(i, None) or _start_own(wdir, _seed_env(env, i, hash_seed_set))
                _write_job(wdir, pytest_args, cases, f"{i}/{last}", floor)

                def early(worker=i, started=t0):
                    if ((worker < last or lookahead) and worker + 1 not in ahead
                            and time.perf_counter() - started > OVERLAP_AFTER_S):
                        w = out / "workers" / f"w{worker + 1}"
                        w.mkdir(parents=True, exist_ok=True)
                        ahead[worker + 1] = _start_own(w, _seed_env(env, worker + 1, hash_seed_set))
                with log:
                    rc = _relay(p, log, relay, early)
            say(f"worker {i}/{last}: done in {time.perf_counter() - t0:.0f} s (exit {rc}; log {wdir / logname})")
            path = wdir / "records.jsonl"
            if path.exists():
                paths.append(path)
                try:
                    f = floor_of(load_run(path).fingerprint)
                except Exception:  # noqa: BLE001 - a broken worker file is reported by the merge
                    f = None
                if f:
                    floor = f if floor is None else min(floor, f)
    finally:   # started early, never given a job (the parent stopped), except the caller's next
        end_ahead(ahead, keep=last + 1 if shared else None)
    return paths


def end_ahead(ahead: dict, keep: int | None = None) -> None:
    """Ends the processes started early and never given a job, all but worker `keep`'s, and
    removes their folders (a log of imports, no records)."""
    import shutil
    for i in [i for i in ahead if i != keep]:
        p, log = ahead.pop(i)
        p.kill()
        p.wait()
        log.close()
        wdir = Path(log.name).parent
        if not (wdir / "job.json").exists():
            shutil.rmtree(wdir, ignore_errors=True)


def _start_own(wdir: Path, env: dict):
    """An own-engine worker process for `wdir`: it imports, then waits for wdir/job.json."""
    from cudnn_hostbench.bench.measure.workers.worker import COMMAND
    log = open(wdir / "worker.log", "w", encoding="utf-8")  # noqa: SIM115 - closed once its worker ends
    p = subprocess.Popen([*COMMAND, str(wdir / "job.json")], env=env, stdout=log, stderr=subprocess.PIPE, text=True,
                         encoding="utf-8", errors="replace")
    return p, log


def _write_job(wdir: Path, args: list[str], cases: list, worker: str, floor: float | None) -> None:
    """The job, written whole (a temporary file renamed): the waiting worker starts on it."""
    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    from cudnn_hostbench.bench.measure.workers.worker import job_for
    job = job_for(args, cases, worker, wdir)
    job.floor_us = floor
    write_text_atomic(wdir / "job.json", job.to_json())
