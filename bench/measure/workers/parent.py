"""The parent of K worker processes: runs the suite in them at its first probe, adds focus-only
and catch-up workers within the time budget, and serves their merged records.

Kept out of the pytest plugin: it takes a worker's command line (built from the parsed options by
the plugin) and plain numbers, so it can be driven and tested without pytest.
"""
from __future__ import annotations

import time
from pathlib import Path

from cudnn_hostbench.bench.measure.core import progress
from cudnn_hostbench.bench.measure.core.hoststate import SLOW_SHARE
from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint, HostState
from cudnn_hostbench.bench.measure.runfile.status import error
from cudnn_hostbench.bench.measure.workers import schedule

MIN_FAST_WORKERS = 3   # a headline block timed fast by fewer workers gets a catch-up worker
EXTRA_FIXED_S = 14.0   # a focus-only or catch-up worker's cost besides waiting: its start-up, then its
#                        six blocks' eager rounds
MAX_TOP_UPS = 3        # top-up workers after the full ones, while eager rows stand on < MIN_PROCESSES
TOP_UP_MIN_S = 8.0     # a top-up worker starts when this much is left: start-up 4-6 s, then blocks in
#                        order until its deadline, about a block a second (log 2026-12-01-1223)
END_RESERVE_S = 8.0    # the parent's own work after the workers: merge, run file, table, history
TOP_UP_SHARE = 0.5     # a top-up waits for the fast state within this share of what is left, so the
#                        next one has time for what it leaves thin: a top-up free to wait spends the
#                        run's last seconds waiting, and blocks stay on 2 processes (log 2026-12-01-1550)
SLOW_HOST_FAST = SLOW_SHARE  # the last worker's host fast under this share of its readings: a top-up
#                        does not wait for the fast state. It would not come, and any state serves a
#                        block split 2 + 2 or 1 fast + 2 slow; five processes always hold three of one
#                        state; a top-up that waits on a slow host leaves no time for the next, and
#                        its blocks stay on 2 processes (log 2026-12-01-1550). The last worker alone:
#                        the host's state lasts minutes, longer than a worker, so the workers before
#                        the last say little of the host the top-up will find; judged by them, a top-up
#                        waited on a host that had turned slow and left rows thin (log 2026-12-04-1647)


def thin_blocks(recs) -> list[tuple[str, str]]:
    """(probe, size) blocks with an eager row that stands on fewer than MIN_PROCESSES worker
    processes of one host state (a worker in the other state is left out of the merge): a figure
    of one or two processes moves 3-30 % between processes, so it is not yet a figure."""
    return sorted({(r.probe, r.size) for r in recs
                   if r.mode == "eager" and r.ok and r.processes < records.MIN_PROCESSES})


class Parent:
    """The parent of K workers: runs them at its first probe, then serves their merged records."""

    def __init__(self, out: Path, k: int, args: list[str], focus_workers: int = 2, budget_s: float = 300.0,
                 modes: tuple = ("eager", "graph", "device"), focus: set | None = None, full_workers: int | None = None,
                 engine: str = "pytest"):
        self.out, self.k = out, k
        self.full = k if full_workers is None else max(1, min(k, full_workers))   # the rest: eager rows only
        self.args = list(args)             # a worker's command line, built from parsed options
        self.focus_workers = focus_workers
        self.budget_s = budget_s
        self.modes = tuple(modes)
        self.focus = set(focus or ())      # (probe, size) headline blocks, known after collection
        self.records: dict | None = None
        self.failure: str | None = None    # why the run failed: every later row says so, nothing runs again
        self.roles: list[str] = []         # per worker: full, eager (eager rows only), top-up, focus
        self.engine = engine               # "pytest": child pytest sessions; "own": bench.measure.workers.worker jobs
        self.cases: list = []              # [probe file, probe, size, variant, mode], set after collection
        self.run_floor: float | None = None
        self.fingerprint: Fingerprint = Fingerprint.of({})
        self._ahead: dict = {}             # own engine: the next worker's process, started during the last one
        # the budget is the parent process's wall time, its start-up (imports, collection) included
        from cudnn_hostbench.bench.measure.runfile.fingerprint import process_age_s
        self.t0 = time.perf_counter() - (process_age_s() or 0.0)

    def worker_args(self) -> list[str]:
        return list(self.args)

    def _workers(self, k: int, args: list[str], **kw) -> list:
        """replicas.run_workers for k workers with these (pytest-style) arguments, on this engine."""
        from cudnn_hostbench.bench.measure.workers import replicas
        if self.engine == "own":   # each call's last worker starts the next call's first (a top-up may follow)
            kw.update(cases=self.cases, ahead=self._ahead, lookahead=True)
        return replicas.run_workers(k, args, self.out, **kw)

    def record(self, probe, size, variant, mode) -> records.Record:
        if self.records is None and self.failure is None:
            try:
                self._run()
            except Exception as e:  # noqa: BLE001 - said once, every row says it; the suite never runs again
                self.failure = f"the run failed in its parent (workers or merge): {type(e).__name__}: {e}"
                progress.say(f"hostbench: {self.failure} (the workers' records stay in {self.out / 'workers'})")
        if self.failure is not None:
            return records.Record(probe.name, variant, size, mode, status=str(error(self.failure)))
        rec = (self.records or {}).get((probe.name, variant, size, mode))
        return rec or records.Record(probe.name, variant, size, mode, status=str(error("not measured by any worker")))

    def _run(self) -> None:
        from cudnn_hostbench.bench.measure.workers.replicas import end_ahead
        try:
            self._run_workers()
        finally:   # the process started for a worker that never came
            end_ahead(self._ahead)

    def _run_workers(self) -> None:
        from cudnn_hostbench.bench.measure.workers.replicas import merge_runs
        say = lambda message: progress.say(f"hostbench: {message}")  # noqa: E731
        runs = self._full_then_eager(say)
        recs, self.fingerprint = merge_runs(runs, wall_s=time.perf_counter() - self.t0)
        self.run_floor = self._floor()   # the full workers' floor: every later merge judges each worker's own against it
        extra: dict = {}
        cut: dict = {}
        runs, recs, tops = self._top_ups(runs, recs, say, cut)
        if tops:
            extra["catch_up"], extra["top_ups"] = tops[0], tops
        runs, recs = self._focus_workers(runs, recs, say, cut, extra)
        few = thin_blocks(recs)
        if few:
            extra["few_processes"] = [f"{p}/{s}" for p, s in few]
        if cut:
            extra["budget_cut"] = {"budget_s": self.budget_s, **cut}
        self.fingerprint.update(extra)      # by the run file's names, in the order the file keeps them
        for row, role in zip(self.fingerprint.workers_table(), self.roles):
            row.role = role
        self.records = {r.key: r for r in recs}
        self._write_records(recs)

    def _top_ups(self, runs: list, recs: list, say, cut: dict) -> tuple[list, list, list]:
        """Replication first: every eager row on at least MIN_PROCESSES processes of one host state.
        Returns the runs and merged records after the top-up workers, and their fingerprints."""
        tops: list = []
        while "eager" in self.modes and runs and len(tops) < MAX_TOP_UPS:
            # a host stuck in its slow state: replication only (headline blocks timed fast wait for it)
            slow = self._host_mostly_slow()
            missing = sorted((set() if slow else set(self._thin_focus(runs))) | set(thin_blocks(recs)))
            if not missing:
                break
            workers, per_block = self._fit(1, len(missing), 2.0, TOP_UP_MIN_S, share=0.0 if slow else TOP_UP_SHARE)
            if not workers:
                cut["catch_up_skipped"] = [f"{p}/{s}" for p, s in missing]
                say(f"--hb-budget-s: no time left for a top-up worker ({', '.join(cut['catch_up_skipped'])})")
                break
            if slow:
                say(f"the host ran its last worker in the slow state (fast under {SLOW_HOST_FAST:.0%} of "
                    "the time): the top-up does not wait for the fast state")
            got = self._catch_up(runs, missing, say, per_block)
            if got is None:
                break
            recs, runs = got
            self.roles.append("top-up")
            tops.append(self.fingerprint.catch_up)
        return runs, recs, tops

    def _focus_workers(self, runs: list, recs: list, say, cut: dict, extra: dict) -> tuple[list, list]:
        """The focus-only workers (--hb-focus-workers) the budget has time for; the runs and merged
        records after them."""
        from cudnn_hostbench.bench.measure.workers.replicas import merge_runs
        focus = sorted(self.focus)
        wanted = self.focus_workers
        if not (wanted > 0 and focus and runs and "eager" in self.modes):
            return runs, recs
        count, per_block = self._fit(wanted, len(focus), 1.0)
        if count < wanted:
            cut["focus_workers_dropped"] = wanted - count
            say(f"--hb-budget-s: time for {count} focus-only worker(s) only")
        if count:
            say(f"{count} focus-only worker(s): eager rows of {', '.join(f'{p}/{s}' for p, s in focus)} "
                "(--hb-focus-workers)")
            more = self._load(self._workers(count, self._eager_args(focus, per_block), say=say,
                                          start=len(runs) + 1, floor=self._floor()), say)
            runs = runs + more
            self.roles += ["focus"] * len(more)
            recs, self.fingerprint = merge_runs(runs, wall_s=time.perf_counter() - self.t0, floor=self.run_floor)
            extra["focus_workers"] = {"workers": len(more), "blocks": [f"{p}/{s}" for p, s in focus]}
        return runs, recs

    def _write_records(self, recs: list) -> None:
        """The merged run's records.jsonl: the fingerprint, then each record."""
        writer = records.JsonlWriter(self.out / "records.jsonl")
        writer.write({"kind": "fingerprint", "fingerprint": self.fingerprint})
        for rec in recs:
            writer.write({"kind": "record", "record": rec.to_dict()})
        writer.close()

    def _full_then_eager(self, say) -> list:
        """The first self.full workers run every mode; the rest of the k time eager rows only (graph
        and device rows of one start agree within 0.2-0.5 % between processes, eager rows move 3-30 %),
        each from the floor the earlier ones learned."""
        eager_only = self.k - self.full if "eager" in self.modes and set(self.modes) - {"eager"} else 0
        full = self.k - eager_only
        say(f"running the suite in {self.k} worker processes, one after another (--hb-workers): "
            + (f"{full} with every mode, {eager_only} with eager rows only (--hb-full-workers)" if eager_only
               else "each with every mode"))
        runs = self._load(self._workers(full, self.worker_args(), say=say), say)
        self.roles = ["full"] * len(runs)
        if eager_only:
            from cudnn_hostbench.bench.measure.workers.replicas import floor_of
            floors = [f for f in (floor_of(r.fingerprint) for r in runs) if f]
            floor = min(floors) if floors else None
            more = self._load(self._workers(eager_only, [*self.worker_args(), "--hb-modes=eager"], say=say,
                                          start=full + 1, floor=floor), say)
            runs += more
            self.roles += ["eager"] * len(more)
        return runs

    def _host_mostly_slow(self) -> bool:
        """Whether the last worker found the host's fast state under SLOW_HOST_FAST of the time."""
        per = self.fingerprint.host_state.per_worker
        seen = [w.fast_fraction for w in per if isinstance(w, HostState) and w.fast_fraction is not None]
        return bool(seen) and seen[-1] < SLOW_HOST_FAST

    @staticmethod
    def _load(paths, say) -> list:
        runs = []
        for p in paths:
            try:
                runs.append(records.load_run(p))
            except records.RunFileError as e:
                say(f"skipping a worker's records: {e}")
        return runs

    def _floor(self) -> float | None:
        from cudnn_hostbench.bench.measure.workers.replicas import floor_of
        return floor_of(self.fingerprint)

    def _eager_args(self, blocks, per_block: float) -> list[str]:
        """A worker's arguments for the eager rows of `blocks` only, each with `per_block` full
        focus allowances of waiting for the fast state; within a budget, a deadline (the budget's
        end less the parent's own end work) after which it measures nothing more."""
        from cudnn_hostbench.bench.measure.core.hoststate import FOCUS_BLOCK_S
        args = [*self.worker_args(), "--hb-modes=eager", f"--hb-only={','.join(f'{p}/{s}' for p, s in blocks)}",
                f"--hb-focus-wait-s={per_block * FOCUS_BLOCK_S * len(blocks):g}"]
        if self.budget_s:
            end = time.time() + self.budget_s - END_RESERVE_S - (time.perf_counter() - self.t0)
            args.append(f"--hb-deadline={end:.1f}")
        return args

    def _thin_focus(self, runs) -> list[tuple[str, str]]:
        """Focus blocks (a trap probe's headline size) that fewer than MIN_FAST_WORKERS workers
        timed wholly in the host's fast state, each judged by its own floor against the run's
        (replicas.judging_floor): their headline ratios would be a median of one or two processes,
        which move 3-8 % from process to process."""
        from cudnn_hostbench.bench.measure.workers.replicas import judging_floor, truly_fast
        floor = self._floor()
        if not floor:
            return []
        focus = self.focus
        fast: dict = {}   # block -> workers that timed all its eager rows fast (blocks measured only)
        for run in runs:
            rows: dict = {}
            own = judging_floor(run, floor)
            for r in run.records:
                if (r.probe, r.size) in focus and r.mode == "eager" and r.ok:
                    rows.setdefault((r.probe, r.size), []).append(truly_fast(r, own))
            for b, oks in rows.items():
                fast[b] = fast.get(b, 0) + all(oks)
        return sorted(b for b, n in fast.items() if n < MIN_FAST_WORKERS)

    def _fit(self, n: int, blocks: int, per_block: float, fixed_s: float = EXTRA_FIXED_S,
             share: float = 1.0) -> tuple[int, float]:
        """How many extra workers (of n) fit in what is left of --hb-budget-s, each costing
        fixed_s besides waiting, and the focus allowances per block each may wait (at most
        per_block) within `share` of what is left."""
        from cudnn_hostbench.bench.measure.core.hoststate import FOCUS_BLOCK_S
        # the whole run counts, the first worker's wait for the host included: a user's budget
        # is wall time from the command to its table
        left = self.budget_s - END_RESERVE_S - (time.perf_counter() - self.t0) if self.budget_s else None
        return schedule.fit(n, blocks, per_block, left, fixed_s, FOCUS_BLOCK_S, share)

    def _catch_up(self, runs, missing, say, per_block: float = 2.0):
        """One more worker, for the focus blocks fewer than MIN_FAST_WORKERS workers timed in the
        fast state (each by its own floor): eager rounds of those blocks only, from the run's floor,
        each block with up to two full focus allowances (what --hb-budget-s leaves). Its records
        join the merge like any worker's: a fast figure of its own makes the row's figure fast
        (the merge keeps the fast figures whenever any worker has one); a block it does not catch
        stays as it was."""
        from cudnn_hostbench.bench.measure.workers.replicas import judging_floor, merge_runs, truly_fast
        names = ", ".join(f"{p}/{s}" for p, s in missing)
        say(f"top-up worker: {names}: eager rows on fewer than {MIN_FAST_WORKERS} processes of one host state")
        floor = self._floor()
        extra = self._load(self._workers(1, self._eager_args(missing, per_block), say=say, start=len(runs) + 1,
                                       floor=floor), say)
        if not extra:
            return None
        keep = {k: self.fingerprint[k] for k in ("catch_up", "focus_workers") if k in self.fingerprint}
        recs, self.fingerprint = merge_runs(runs + extra, wall_s=time.perf_counter() - self.t0, floor=self.run_floor)
        self.fingerprint.update(keep)
        own = [r for r in extra[0].records if r.mode == "eager" and r.ok and r.role != "baseline"]
        judge = judging_floor(extra[0], self.run_floor or floor)
        caught = [f"{p}/{s}" for p, s in missing
                  if any((r.probe, r.size) == (p, s) for r in own)
                  and all(truly_fast(r, judge) for r in own if (r.probe, r.size) == (p, s))]
        self.fingerprint.catch_up = {"worker": len(runs) + 1, "blocks": [f"{p}/{s}" for p, s in missing],
                                        "timed_fast": caught}
        say(f"top-up worker: timed in the fast state: {', '.join(caught) or 'none'}")
        return recs, runs + extra

    def finish(self) -> None:
        if self.fingerprint:
            self.fingerprint.suite_wall_s = time.perf_counter() - self.t0

    def unmeasured(self) -> list:
        return [r for r in (self.records or {}).values() if not r.ok]
