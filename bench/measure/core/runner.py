"""Runs probes: builds and checks every variant, then times them in interleaved rounds.

Host modes (eager, graph) of a (probe, size) are measured together on first request; device
mode is measured separately and must come after every host measurement in the process.
Every record is written to a JSON-lines file the moment it exists.
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.core import passes, plan_clock, progress, timing
from cudnn_hostbench.bench.measure.core.gpu_context import GpuContext, NoGpuError
from cudnn_hostbench.bench.measure.core.gpustate import Clocks
from cudnn_hostbench.bench.measure.core.hoststate import GIVE_UP_S, HostState
from cudnn_hostbench.bench.measure.core.kernels import family_of
from cudnn_hostbench.bench.measure.core.kernels import mismatch as kernel_mismatch
from cudnn_hostbench.bench.measure.core.nvtx_ranges import nvtx_range
from cudnn_hostbench.bench.measure.core.options import SuiteOptions
from cudnn_hostbench.bench.measure.runfile import fingerprint as fpmod
from cudnn_hostbench.bench.measure.runfile import records, run_format, stats, trust
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.environment import HostState as HostSummary
from cudnn_hostbench.bench.measure.runfile.records import Record
from cudnn_hostbench.bench.measure.runfile.run_format import WorkerInfo
from cudnn_hostbench.bench.measure.runfile.status import OK, Status, Unsupported, error, failed

# where a worker's time goes, in the order a run summary lists it
PHASES = ("startup", "warm", "build", "eager", "wait_fast", "graph", "device", "host", "other")


def host_state_of(host, before: float | None, after: float | None) -> tuple[str, float | None]:
    """The host state of a stretch of host-mode work from sentinel readings taken before and
    after it: 'fast' when both were fast, else 'slow'; ('', None) without a floor."""
    if host is None or not host.floor or before is None or after is None:
        return "", None
    return ("fast" if host.fast(before) and host.fast(after) else "slow"), max(before, after)


AROUND = ("pointwise", "copy")   # kernel families that run around a plan, not in it (_check_shared_plans)


class Session:
    def __init__(self, out_dir: str | Path, opt: timing.Options | None = None, modes=records.CALL_MODES,
                 worker: str = "", warm_max_s: float = 60.0, fast_wait_s: float = 10.0,
                 suite: SuiteOptions | None = None, focus_wait_s: float = 0.0, retry_focus: bool = False,
                 deadline: float | None = None, eager_passes: int = 1):
        self.out_dir = Path(out_dir)
        self.worker = worker            # "2/3" in a worker process: progress lines name it
        self.warm_max_s = warm_max_s
        self.fast_wait_s = fast_wait_s  # budget for waiting on the fast host state before eager cycles
        self.focus_wait_s = focus_wait_s  # a budget of its own for the probes' focus blocks
        self.retry_focus = retry_focus    # time slow focus blocks again before the profiler phase
        self.deadline = deadline          # wall clock (time.time()) after which nothing more is measured
        self._retry: list = []
        self.retries: dict = {}
        self.eager_passes = eager_passes  # passes over each block's eager rounds (passes.py)
        self._passed: list = []           # (probe, size) whose first eager pass is recorded
        self.watch = timing.Watch()
        self.opt = opt or timing.Options()
        self.modes = tuple(modes)
        self.suite = suite or SuiteOptions()
        self.records: dict = {}
        self._cases: dict = {}
        self._plans: dict = {}    # (probe, variant, size) -> (declared plan rule, plan run)
        self._ctx: GpuContext | None = None
        self.ctx_error: str | None = None
        self.fingerprint: Fingerprint = Fingerprint.of({})
        self.writer = records.JsonlWriter(self.out_dir / "records.jsonl")
        self.t0 = time.perf_counter()
        self.startup_s = fpmod.process_age_s()   # before the suite's clock: imports and collection
        self.wall_s: dict = {}      # seconds spent per probe/size/phase: the suite's time budget
        self.build_s: dict = {}     # seconds building (and checking) per probe/size
        self.plans_s: dict = {}     # of which in cuDNN's build steps: what plan sharing could save
        self.phase_s: dict = {}     # seconds per kind of work (PHASES): where a worker's time went
        self._blocks: list = []     # (probe/size, first, end) of the watch's eager cycle log, for the host trace

    # -- context ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _phase(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phase_s[name] = self.phase_s.get(name, 0.0) + time.perf_counter() - t0

    def time_s(self) -> dict:
        """Where this process's time went (s): start-up, warm, build, eager (waits for the fast
        state taken out as wait_fast), graph, device, host and the rest (other)."""
        p = dict(self.phase_s)
        host = self.watch.host
        wait = (host.gate_s + host.focus_s) if host is not None else 0.0
        p["eager"] = max(0.0, p.get("eager", 0.0) - wait)
        p["wait_fast"] = wait
        wall = time.perf_counter() - self.t0
        p["other"] = max(0.0, wall - sum(p.values()))
        p["startup"] = self.startup_s or 0.0
        return {k: round(p.get(k, 0.0), 2) for k in PHASES}

    def context(self) -> GpuContext:
        if self._ctx is None and self.ctx_error is None:
            with self._phase("warm"):
                self._start()
        if self._ctx is None:
            raise NoGpuError(self.ctx_error)
        return self._ctx

    def _start(self) -> None:
        if self._ctx is None and self.ctx_error is None:
            try:
                self._ctx = GpuContext(options=self.suite)
            except NoGpuError as e:
                self.ctx_error = str(e)
            else:
                self.fingerprint = Fingerprint.of(fpmod.fingerprint(self._ctx, root=self.suite.root))
                self.fingerprint.cpu_affinity_pinned = self._ctx.affinity
                self.watch = timing.Watch(host=HostState(), clocks=Clocks(self._ctx.device.index or 0))
                self.say(f"warming the host (learning its fast-state floor, at most {self.warm_max_s:.0f} s)")
                self.watch.host.warm(max_s=self.warm_max_s, say=self.say)
                self.watch.host.gate_budget_s = self.fast_wait_s if self.fast_wait_s > 0 else None
                self.watch.host.focus_budget_s = max(0.0, self.focus_wait_s)
                self.watch.host.give_up_s, self.watch.host.tell = GIVE_UP_S, self.say
                self.say(f"host floor {self.watch.host.floor:.2f} µs"
                         + ("" if self.watch.host.held else " (never held: the host is mostly in its slow state)")
                         + f" after {self.watch.host.waited_s:.1f} s")
                self.fingerprint.calibration_us = {"before": timing.calibration_us()}
                self.fingerprint.gpu_clocks = self.watch.clocks.snapshot()
                self.fingerprint.options = vars(self.opt)
                self.writer.write({"kind": "fingerprint", "fingerprint": self.fingerprint})

    def say(self, msg: str) -> None:
        progress.say(f"hostbench{' worker ' + self.worker if self.worker else ''}: {msg}")

    def _trust(self, rec: Record, meta: dict) -> Record:
        """Stamps what the watch threw away (and why) and the flags it earns on a record."""
        rec.rounds_discarded = {k: v for k, v in meta.get("discarded", {}).items() if v}
        if meta.get("sentinel"):
            rec.sentinel_us = statistics.median(meta["sentinel"])
        if meta.get("sm_mhz"):
            rec.clock_mhz = {"sm_min": min(meta["sm_mhz"]), "sm_max": max(meta["sm_mhz"]), "top": meta.get("top_mhz")}
        if rec.mode == "eager":
            rec.host_state = meta.get("host_state") or ""
        rec.flags = trust.flags_for(rec)
        if meta.get("fell_back"):  # too few clean cycles: every cycle kept, and flagged
            extra = "host_unstable" if rec.mode == "eager" else "clock_drop"
            rec.flags = [f for f in trust.FLAGS if f in set(rec.flags) | {extra}]
        return rec

    # -- records ---------------------------------------------------------------------------
    def _put(self, rec: Record) -> Record:
        rule, plan = self._plans.get(rec.key[:3], ("", ""))
        rec.plan_rule, rec.plan = rec.plan_rule or rule, rec.plan or plan
        self.records[rec.key] = rec
        self.writer.write({"kind": "record", "record": rec.to_dict()})
        return rec

    def _mark_all(self, probe, size, names, status: Status, modes=None) -> None:
        """Stamps status on the variants' records, in `modes` only when given (a failure of one
        mode must not overwrite figures another mode already measured)."""
        for n in names:
            v = probe.variant(n)
            for m in v.modes:
                if m in self.modes and (modes is None or m in modes):
                    self._put(Record(probe.name, n, size, m, status=str(status), role=v.role, unit=v.unit, label=v.label))

    def record(self, probe, size: str, variant: str, mode: str) -> Record:
        key = (probe.name, variant, size, mode)
        if key not in self.records and self.deadline is not None and time.time() > self.deadline:
            # a top-up worker past its share of the run's budget: its rows stay with the others
            late = error("not measured: past this worker's deadline")
            return self._put(Record(probe.name, variant, size, mode, status=str(late)))
        if key not in self.records:
            phase = {"device": "device", "host": "host"}.get(mode, "eager+graph")
            t0 = time.perf_counter()
            if mode == "device":
                self.measure_device(probe, size)
            elif mode == "host":
                self.measure_custom(probe, size)
            else:
                self.measure_host(probe, size)
            k = f"{probe.name}/{size}/{phase}"
            self.wall_s[k] = self.wall_s.get(k, 0.0) + time.perf_counter() - t0
        return self.records.get(key) or self._put(Record(probe.name, variant, size, mode, status=str(error("not measured"))))

    # -- building and checking ---------------------------------------------------------------
    def cases(self, probe, size) -> dict:
        """Built, numerically checked cases of a (probe, size); failures become records."""
        key = (probe.name, size)
        if key in self._cases:
            return self._cases[key]
        gpu = self.context()
        t0, p0 = time.perf_counter(), plan_clock.total()
        try:
            with self._phase("build"):
                return self._build(probe, size, key, gpu)
        finally:
            k = f"{probe.name}/{size}"
            self.build_s[k] = self.build_s.get(k, 0.0) + time.perf_counter() - t0
            self.plans_s[k] = self.plans_s.get(k, 0.0) + plan_clock.total() - p0

    def _build(self, probe, size, key, gpu) -> dict:
        names = [v.name for v in probe.variants]
        good: dict = {}
        try:
            ctx = probe.context(gpu)
            built = probe.build(ctx, size)
        except Exception as e:  # noqa: BLE001 - becomes the status of every variant
            self._mark_all(probe, size, names, Status.of(e))
            self._cases[key] = good
            return good
        for name in names:
            if set(probe.variant(name).modes) <= {"host"}:
                continue  # build-time rows: measured by probe.extra["measure"], not built here
            case = built.get(name, Unsupported("not built for this size"))
            if isinstance(case, BaseException):
                self._mark_all(probe, size, [name], Status.of(case))
                continue
            status = self._check(case, gpu)
            if not status.ok:
                self._mark_all(probe, size, [name], status)
                continue
            good[name] = case
            rule = probe.extra.get("plans", {}).get(name, "")
            self._plans[(probe.name, name, size)] = (rule, case.plan if rule else "")
        self._cases[key] = good
        return good

    @staticmethod
    def _check(case, ctx) -> Status:
        try:
            with ctx.torch.cuda.stream(ctx.stream):
                case.poison()
                out = case.fn()
            ctx.sync()
            err = case.check(out)
        except Exception as e:  # noqa: BLE001
            return Status.of(e)
        if err is not None and (math.isnan(err) or err > case.tol):
            return failed(f"numerics rel_err={err:.3g} > tol {case.tol:g} vs torch reference")
        return OK

    def _ratio(self, probe, samples: dict, name: str):
        base = probe.baseline
        if not base or base not in samples or name == base:
            return None
        return stats.ratio_summary(samples[name], samples[base])

    # -- host modes ----------------------------------------------------------------------------
    def measure_host(self, probe, size) -> None:
        cases = self.cases(probe, size)
        tag = f"{probe.name}/{size}"
        calls = {}
        if "eager" in self.modes:
            got = self._measure_eager(probe, size, cases, tag)
            if got is not None:
                recs, calls, meta = got
                for r in recs:
                    self._put(r)
                self._progress(tag, "eager", meta)
                if self.retry_focus and self._is_focus(probe, size) and meta.get("host_state") != "fast":
                    self._retry.append((probe, size))
                if self.eager_passes > 1:
                    self._passed.append((probe, size))
        if "graph" in self.modes:
            with self._phase("graph"):
                self._measure_graph(probe, size, cases, calls, tag)

    def _is_focus(self, probe, size) -> bool:
        host = self.watch.host
        return host is not None and host.focus_budget_s > 0 and size == probe.focus_size(self.suite)

    def _measure_eager(self, probe, size, cases, tag):
        """Times the eager variants; returns (records, calls per round, watch meta), or None when
        there is nothing to time or timing was refused (then the records say so)."""
        ctx = self.context()
        eager = {n: c.fn for n, c in cases.items() if "eager" in probe.variant(n).modes}
        if not eager:
            return None
        focus = self.watch.host.focused() if self._is_focus(probe, size) else contextlib.nullcontext()
        first = len(self.watch.cycle_log)
        try:
            with self._phase("eager"), focus, ctx.torch.cuda.stream(ctx.stream), nvtx_range(f"{tag}/eager"):
                res = timing.measure_eager(eager, ctx.sync, self.opt, ranges=lambda n: nvtx_range(f"{tag}/{n}/eager"),
                                           watch=self.watch)
            meta = self.watch.meta()
        except timing.ContaminatedError as e:
            self._mark_all(probe, size, list(eager), error(str(e)), modes=("eager",))
            return None
        finally:
            self._blocks.append((tag, first, len(self.watch.cycle_log)))
        per = {n: [x / probe.variant(n).ops_per_call for x in s] for n, (s, _) in res.items()}
        recs, calls = [], {}
        for n, (_, c) in res.items():
            calls[n] = c
            v = probe.variant(n)
            recs.append(self._trust(Record(
                probe.name, n, size, "eager", role=v.role, unit=v.unit, samples=per[n],
                calls_per_round=c, ratio=self._ratio(probe, per, n),
                baseline=probe.baseline or "", label=v.label, note=cases[n].note), meta))
        return recs, calls, meta

    def retry_focus_blocks(self) -> None:
        """Times once more, before the profiler phase, the focus blocks whose eager figures ended
        outside the host's fast state: a slow stretch of the host lasts seconds to minutes, so a
        minute later it has often passed. A retry that lands in the fast state replaces the
        records (records.jsonl: the last line of a row wins); one that does not leaves them."""
        todo, self._retry = self._retry, []
        host = self.watch.host
        if not todo or host is None or timing.profiler_has_run():
            return
        # the retries may wait half the focus budget again, on top of what the first pass left
        host.focus_budget_s = max(host.focus_budget_s, host.focus_s) + self.focus_wait_s / 2
        for probe, size in todo:
            tag = f"{probe.name}/{size}"
            got = self._measure_eager(probe, size, self.cases(probe, size), tag)
            kept = got is not None and got[2].get("host_state") == "fast"
            if kept:
                for r in got[0]:
                    self._put(r)
            self.retries[tag] = "fast" if kept else "not fast: first figures kept"
            self.say(f"{tag} eager retried for the host's fast state: {self.retries[tag]}")

    def more_passes(self) -> None:
        """The eager passes past the first over every block timed so far (passes.py), once."""
        todo, self._passed = self._passed, []
        if todo and not timing.profiler_has_run():
            passes.run(self, todo)

    def _measure_graph(self, probe, size, cases, calls, tag) -> None:
        ctx = self.context()
        captured = {}
        for n, case in cases.items():
            v = probe.variant(n)
            if "graph" not in v.modes:
                continue
            try:
                with nvtx_range(f"{tag}/{n}/capture"):
                    cap = timing.capture(case.fn, calls.get(n, self.opt.min_calls * 4), ctx.stream)
                with ctx.torch.cuda.stream(ctx.stream):
                    case.poison()  # after capture, so only the replay can write the output
                    cap.graph.replay()
                ctx.sync()
                err = case.check(cap.last)
            except timing.CaptureError as e:
                self._put(Record(probe.name, n, size, "graph", status=str(Status("capture_failed", str(e))), role=v.role,
                                 unit=v.unit, label=v.label))
                continue
            except Exception as e:  # noqa: BLE001
                self._put(Record(probe.name, n, size, "graph", status=str(Status.of(e)), role=v.role, unit=v.unit, label=v.label))
                continue
            if err is not None and (math.isnan(err) or err > case.tol):
                self._put(Record(probe.name, n, size, "graph", role=v.role, unit=v.unit, label=v.label,
                                 status=str(failed(f"output after replay rel_err={err:.3g} > tol {case.tol:g}"))))
                continue
            captured[n] = cap
        if not captured:
            return
        try:
            with nvtx_range(f"{tag}/graph"):
                res = timing.measure_graph(captured, ctx.stream, self.opt,
                                           ranges=lambda n: nvtx_range(f"{tag}/{n}/graph"), watch=self.watch)
            meta = self.watch.meta()
        except timing.ContaminatedError as e:
            self._mark_all(probe, size, list(captured), error(str(e)), modes=("graph",))
            return
        finally:
            del captured
        per = {n: [x / probe.variant(n).ops_per_call for x in s] for n, s in res.items()}
        for n in res:
            v = probe.variant(n)
            self._put(self._trust(Record(
                probe.name, n, size, "graph", role=v.role, unit=v.unit, samples=per[n],
                calls_per_round=calls.get(n, self.opt.min_calls * 4), ratio=self._ratio(probe, per, n),
                baseline=probe.baseline or "", label=v.label, note=cases[n].note), meta))
        self._progress(tag, "graph", meta)

    # -- device mode ---------------------------------------------------------------------------
    def measure_device(self, probe, size) -> None:
        ctx = self.context()
        self.more_passes()          # the last chance to time eager in this process
        self.retry_focus_blocks()
        cases = self.cases(probe, size)
        fns = {n: c.fn for n, c in cases.items() if "device" in probe.variant(n).modes}
        if not fns:
            return
        tag = f"{probe.name}/{size}"
        try:
            with self._phase("device"), ctx.torch.cuda.stream(ctx.stream), nvtx_range(f"{tag}/device"):
                res = timing.measure_device(fns, ctx.sync, self.opt, ranges=lambda n: nvtx_range(f"{tag}/{n}/device"),
                                            watch=self.watch)
            meta = self.watch.meta()
        except Exception as e:  # noqa: BLE001 - the profiler itself failed: record, keep going
            self._mark_all(probe, size, list(fns), error(f"profiler: {type(e).__name__}: {e}"), modes=("device",))
            return
        per = {n: [d.per_call_us / probe.variant(n).ops_per_call for d in ds] for n, ds in res.items()}
        for n, ds in res.items():
            v = probe.variant(n)
            kpc = sorted(d.kernels_per_call for d in ds)[len(ds) // 2] / v.ops_per_call
            last = ds[-1]
            names = [f"{k} x{c / self.opt.device_calls:g}" for k, c in last.names.most_common()]
            # a call that ran other kernels than its variant declares is not the variant: say so
            bad = kernel_mismatch(v.kernels, last.families)
            self._put(self._trust(Record(
                probe.name, n, size, "device", status=str(failed(bad)) if bad else "ok",
                role=v.role, unit=v.unit, samples=per[n],
                calls_per_round=self.opt.device_calls, kernels_per_call=kpc, kernel_names=names,
                ratio=self._ratio(probe, per, n), baseline=probe.baseline or "", label=v.label,
                note=cases[n].note), meta))
        self._check_shared_plans(probe, size, {n: ds[-1] for n, ds in res.items()})
        self._progress(tag, "device", meta)

    def _check_shared_plans(self, probe, size, last: dict) -> None:
        """A trap/fix pair declared to share the plan must run the same kernels; where it does
        not, the fix's device record says so (its ratio would carry an engine effect)."""
        for pair in probe.extra.get("pairs", []):
            trap, fix, shares = pair[:3]
            if not shares or trap not in last or fix not in last:
                continue
            # the plan's kernels: elementwise and copy kernels around it (a capture's, a copy-in's)
            # are not the plan, and would fail a pair that runs the same plan
            kt, kf = (sorted(k for k in last[n].names if timing.is_kernel(k) and family_of(k) not in AROUND)
                      for n in (trap, fix))
            rec = self.records.get((probe.name, fix, size, "device"))
            if kt != kf and rec is not None and rec.ok:
                rec.status = str(failed(f"plan check: declared to share {trap}'s plan, but ran {', '.join(kf)}; "
                                        f"{trap} ran {', '.join(kt)}"))
                self._put(rec)

    def _progress(self, tag: str, mode: str, meta: dict) -> None:
        disc = meta.get("discarded") or {}
        note = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in disc.items() if v)
        self.say(f"{tag} {mode}" + (f": discarded {note}" if note else "")
                 + (" (too few clean rounds: all kept, flagged)" if meta.get("fell_back") else ""))

    # -- custom (build-time) probes -------------------------------------------------------------
    def measure_custom(self, probe, size) -> None:
        gpu = self.context()
        host = self.watch.host
        before = host.await_fast() if host is not None else None
        try:
            with self._phase("host"):
                recs = probe.extra["measure"](probe.context(gpu), size, self.opt)
        except Exception as e:  # noqa: BLE001
            self._mark_all(probe, size, [v.name for v in probe.variants], Status.of(e), modes=("host",))
            return
        state = host_state_of(host, before, host.read()) if host is not None else ("", None)
        for r in recs:
            if r.mode == "host" and state[0]:
                # build-time rows are host-bound: the slow state about doubles them (log
                # 2026-12-01-1223), so they say which state timed them, like eager
                r.host_state, r.sentinel_us = state
                r.flags = trust.flags_for(r)
            self._put(r)

    # -- end of run -------------------------------------------------------------------------------
    def finish(self, name: str | None = None) -> Path | None:
        """Completes the fingerprint (and appends it to records.jsonl, where the last one wins);
        writes a run file only when `name` is given: under pytest the plugin writes it
        (pytest_plugin.place_run_file)."""
        if self._ctx is not None:
            self.more_passes()
            self.retry_focus_blocks()
            self.fingerprint.calibration_us = cal = self.fingerprint.calibration_us
            cal["after"] = timing.calibration_us()
            if cal.get("before"):
                cal["after_over_before"] = cal["after"] / cal["before"]
            cal["profiler_ran"] = timing.profiler_has_run()
            host = self.watch.host
            if host is not None:
                eager = [r for r in self.records.values() if r.mode == "eager" and r.ok]
                fell = sum(1 for r in eager if "host_unstable" in r.flags)
                host.unstable = host.held is False and fell * 2 > len(eager)
                self.fingerprint.host_state = HostSummary.from_dict({**host.summary(), "focus_retries": dict(self.retries)})
                self._write_trace(host)
            if self.watch.clocks is not None:
                self.fingerprint.gpu_clocks_end = self.watch.clocks.snapshot()
                self.fingerprint.gpu_clocks_top_mhz = self.watch.clocks.top or None
            self._account_time()
            self.writer.write({"kind": "fingerprint", "fingerprint": self.fingerprint})
        self.writer.close()
        if not self.records or name is None:
            return None
        doc = records.run_document(self.records.values(), self.fingerprint)
        return records.write_run(self.out_dir / name, doc)

    def _account_time(self) -> None:
        """The fingerprint's account of where this process's time went, and its worker row."""
        fp = self.fingerprint
        fp.suite_wall_s = time.perf_counter() - self.t0
        fp.startup_s = self.startup_s
        fp.wall_s = {k: round(v, 2) for k, v in self.wall_s.items()}
        fp.build_s = {k: round(v, 2) for k, v in self.build_s.items()}
        fp.plans_s = {k: round(v, 2) for k, v in self.plans_s.items()}
        fp.time_s = self.time_s()
        fp.worker_table = [WorkerInfo.from_dict(run_format.row_of(1, fp.to_dict()))]

    def _write_trace(self, host) -> None:
        """host_trace.json: every sentinel reading and every eager cycle of this process, on one
        clock, so how long the host's states last and which cycles straddled a switch can be read
        offline."""
        import json
        t0 = self.t0
        cycles = [[round(a - t0, 5), round(b - t0, 5), k] for a, b, k in self.watch.cycle_log]
        # given_us: the floor the earlier workers handed this one (HostState.prior), not HostState.given
        doc = {"version": 1, "floor_us": host.floor, "given_us": host.prior, "tol": host.tol, "worker": self.worker,
               "readings": [[round(t - t0, 5), round(us, 4)] for t, us in host.trace],
               "cycles": cycles, "blocks": [list(b) for b in self._blocks]}
        try:
            (self.out_dir / "host_trace.json").write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
        except OSError as e:   # the trace is a diagnostic: its loss never costs the run
            self.say(f"host trace not written: {e}")

    def unmeasured(self) -> list:
        return [r for r in self.records.values() if not r.ok]

    def close(self) -> None:
        """Drops the built cases (graphs, plans, packs), then the GPU context and what is attached
        to it (the cuDNN handle), and collects: the frontend's objects go while its module lives."""
        self._cases.clear()
        self._retry.clear()
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            ctx.close()
        import gc
        gc.collect()
