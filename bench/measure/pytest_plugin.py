"""The pytest plugin that turns probes into pytest-benchmark benchmarks whose stats are GPU-measured µs.

Each (probe, size, variant, mode) is one benchmark. The measurement happens in bench.measure.runner,
interleaved across the probe's variants; the test then hands its samples to pytest-benchmark
through `pedantic` with an injected clock, so the run file stores the measured per-call figures
(not pytest-benchmark's wall time around them).

With --hb-workers K > 1 (the default) this process is the parent: at the first probe it runs the
suite in K fresh worker processes one after another (bench.measure.workers), merges their records, and
its own tests report the merged figures. The one run file is pytest-benchmark's own JSON
(`--benchmark-json`, default <out>/run.json), so its stats come from pytest-benchmark's Stats.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import time
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure import progress, records, timing
from cudnn_hostbench.bench.measure.options import OptionError, SuiteOptions, check_config, split
from cudnn_hostbench.bench.measure.status import Status, error

DEFAULT_WORKERS = 3
DEFAULT_ROUNDS = 10      # per worker: 3 workers pool 30 kept rounds


class InjectedClock:
    """A 'timer' that advances only by the externally measured seconds of each round."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


CLOCK = InjectedClock()


def pytest_addoption(parser):
    g = parser.getgroup("hostbench")
    g.addoption("--hb-sizes", default="256,1024,4096", help="cube sizes M=N=K of the matmul probes (default %(default)s)")
    g.addoption("--hb-tokens", default="256,4096", help="token counts of the transpose probe (default %(default)s)")
    g.addoption("--hb-modes", default="eager,graph,device", help="timing modes to run (default %(default)s)")
    g.addoption("--hb-rounds", type=int, default=DEFAULT_ROUNDS,
                help="kept interleaved rounds per mode and worker (default %(default)s)")
    g.addoption("--hb-workers", type=int, default=DEFAULT_WORKERS,
                help="worker processes the suite runs in, one after another; 1 measures in this process "
                     "(a quick look) (default %(default)s)")
    g.addoption("--hb-warm-s", type=float, default=10.0,
                help="seconds the first worker waits at most for the host's fast state (later ones, which start "
                     "from its floor, a tenth) "
                     "(default %(default)s)")
    g.addoption("--hb-fast-wait-s", type=float, default=6.0,
                help="seconds each worker may spend in all waiting for the host's fast state before eager "
                     "rounds; 0 times them in whatever state the host is in (default %(default)s)")
    g.addoption("--hb-focus-wait-s", type=float, default=12.0,
                help="a separate budget per worker for the probes' headline sizes (the trap/fix ratios at "
                     "256): each may wait up to 4 s for the fast state; 0 treats them like the rest "
                     "(default %(default)s)")
    g.addoption("--hb-focus-workers", type=int, default=2,
                help="extra worker processes that time only the headline sizes' eager rows, after the "
                     "--hb-workers: those ratios vary most from process to process, so they get more "
                     "replicates (default %(default)s)")
    g.addoption("--hb-budget-s", type=float, default=300.0,
                help="seconds the whole run may take (not counting the first worker's wait for the host): "
                     "the focus-only and catch-up workers get what the others leave, and the summary "
                     "says what was cut; 0: no limit (default %(default)s)")
    g.addoption("--hb-out", default=None, help="folder for records.jsonl, run.json, table.csv/md (default results/<stamp>)")
    g.addoption("--hb-heavy", action="store_true", help="heavy sweeps (every plan, every size)")
    g.addoption("--hb-worker", default=None, help=argparse.SUPPRESS)   # set by the parent only
    g.addoption("--hb-only", default=None, help=argparse.SUPPRESS)     # a catch-up worker's blocks


def _cuda_ok() -> tuple[bool, str]:
    try:
        import torch
    except ImportError as e:
        return False, f"torch not importable ({e})"
    if not torch.cuda.is_available():
        return False, ("no CUDA GPU visible (torch.cuda.is_available() is False): probes need one; "
                       "`hostbench run` renders the committed reference run instead")
    return True, ""


VALUED = ("--benchmark-json", "--hb-out", "--hb-workers", "--hb-worker", "--hb-only", "--hb-focus-workers", "--hb-budget-s",
          "--benchmark-save")
FLAGS = ("--benchmark-autosave", "--benchmark-save-data")
MIN_FAST_WORKERS = 3   # a headline block timed fast by fewer workers gets a catch-up worker
EXTRA_FIXED_S = 14.0   # a focus-only or catch-up worker's cost besides waiting (H200: start-up 4-6 s,
#                        its six blocks' eager rounds 8-9 s)


class Parent:
    """The parent of K workers: runs them at its first probe, then serves their merged records."""

    def __init__(self, config, out: Path, k: int):
        self.config, self.out, self.k = config, out, k
        self.records: dict | None = None
        self.fingerprint: dict = {}
        self.t0 = time.perf_counter()

    def worker_args(self) -> list[str]:
        args, skip = [], False
        for a in self.config.invocation_params.args:
            if skip:
                skip = False
                continue
            name = a.split("=", 1)[0]
            if name in VALUED or name in FLAGS:   # the parent's outputs, not a worker's
                skip = "=" not in a and name in VALUED
                continue
            args.append(a)
        root = self.config.rootpath
        if not any(not a.startswith("-") for a in args):
            args = [str(root / "probes")] + args   # the bare `pytest --benchmark-only` at the root
        n = self.config.getoption("--hb-focus-workers")   # a worker retries no block when these will
        return [*args, "-q", "-p", "no:cacheprovider", "--hb-workers=1", f"--hb-focus-workers={n}", f"--rootdir={root}",
                "-o", "testpaths=probes"]

    def record(self, probe, size, variant, mode) -> records.Record:
        if self.records is None:
            self._run()
        rec = self.records.get((probe.name, variant, size, mode))
        return rec or records.Record(probe.name, variant, size, mode, status=str(error("not measured by any worker")))

    def _run(self) -> None:
        from cudnn_hostbench.bench.measure.workers import merge_runs, run_workers
        say = lambda m: progress.say(f"hostbench: {m}")  # noqa: E731
        say(f"running the suite in {self.k} worker processes, one after another (--hb-workers)")
        runs = self._load(run_workers(self.k, self.worker_args(), self.out, say=say), say)
        recs, self.fingerprint = merge_runs(runs, wall_s=time.perf_counter() - self.t0)
        extra: dict = {}
        focus = sorted(getattr(self.config, "_hb_focus", set()))
        wanted = self.config.getoption("--hb-focus-workers")
        eager = "eager" in self.config._hb_suite.modes
        cut: dict = {}
        if wanted > 0 and focus and runs and eager:
            n, per_block = self._fit(wanted, len(focus), 1.0)
            if n < wanted:
                cut["focus_workers_dropped"] = wanted - n
                say(f"--hb-budget-s: time for {n} focus-only worker(s) only")
            if n:
                say(f"{n} focus-only worker(s): eager rows of {', '.join(f'{p}/{s}' for p, s in focus)} "
                    "(--hb-focus-workers)")
                more = self._load(run_workers(n, self._eager_args(focus, per_block), self.out, say=say,
                                              start=len(runs) + 1, floor=self._floor()), say)
                runs = runs + more
                recs, self.fingerprint = merge_runs(runs, wall_s=time.perf_counter() - self.t0)
                extra["focus_workers"] = {"workers": len(more), "blocks": [f"{p}/{s}" for p, s in focus]}
        missing = self._thin_focus(runs)
        if missing and eager:
            k, per_block = self._fit(1, len(missing), 2.0)
            if k:
                recs = self._catch_up(runs, missing, say, per_block) or recs
            else:
                cut["catch_up_skipped"] = [f"{p}/{s}" for p, s in missing]
                say(f"--hb-budget-s: no time left for a catch-up worker ({', '.join(cut['catch_up_skipped'])})")
        if cut:
            extra["budget_cut"] = {"budget_s": self.config.getoption("--hb-budget-s"), **cut}
        self.fingerprint.update(extra)
        self.records = {r.key: r for r in recs}
        w = records.JsonlWriter(self.out / "records.jsonl")
        w.write({"kind": "fingerprint", "fingerprint": self.fingerprint})
        for r in recs:
            w.write({"kind": "record", "record": r.to_dict()})
        w.close()

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
        return (self.fingerprint.get("host_state") or {}).get("floor_us")

    def _eager_args(self, blocks, per_block: float) -> list[str]:
        """A worker's arguments for the eager rows of `blocks` only, each with `per_block` full
        focus allowances of waiting for the fast state."""
        from cudnn_hostbench.bench.measure.hoststate import FOCUS_BLOCK_S
        return [*self.worker_args(), "--hb-modes=eager", f"--hb-only={','.join(f'{p}/{s}' for p, s in blocks)}",
                f"--hb-focus-wait-s={per_block * FOCUS_BLOCK_S * len(blocks):g}"]

    def _thin_focus(self, runs) -> list[tuple[str, str]]:
        """Focus blocks (a trap probe's headline size) that fewer than MIN_FAST_WORKERS workers
        timed wholly in the host's fast state, judged by the run's floor: their headline ratios
        would be a median of one or two processes, which move 3-8 % from process to process."""
        from cudnn_hostbench.bench.measure.workers import truly_fast
        floor = self._floor()
        if not floor:
            return []
        focus = getattr(self.config, "_hb_focus", set())
        fast: dict = {}   # block -> workers that timed all its eager rows fast (blocks measured only)
        for run in runs:
            rows: dict = {}
            for r in run.records:
                if (r.probe, r.size) in focus and r.mode == "eager" and r.ok:
                    rows.setdefault((r.probe, r.size), []).append(truly_fast(r, floor))
            for b, oks in rows.items():
                fast[b] = fast.get(b, 0) + all(oks)
        return sorted(b for b, n in fast.items() if n < MIN_FAST_WORKERS)

    def _fit(self, n: int, blocks: int, per_block: float) -> tuple[int, float]:
        """How many extra workers (of n) fit in what is left of --hb-budget-s, and the focus
        allowances per block each may wait (at most per_block). The first worker's wait for the
        host floor is not counted: a fresh machine may take longer."""
        from cudnn_hostbench.bench.measure.hoststate import FOCUS_BLOCK_S
        budget = self.config.getoption("--hb-budget-s")
        if not budget:
            return n, per_block
        first = ((self.fingerprint.get("host_state") or {}).get("per_worker") or [{}])[0]
        left = budget - (time.perf_counter() - self.t0 - (first.get("waited_s") or 0.0))
        n = min(n, max(0, int(left // EXTRA_FIXED_S)))
        if not n:
            return 0, 0.0
        wait = left / n - EXTRA_FIXED_S
        return n, max(0.0, min(per_block, wait / (FOCUS_BLOCK_S * blocks)))

    def _catch_up(self, runs, missing, say, per_block: float = 2.0):
        """One more worker, for the focus blocks fewer than MIN_FAST_WORKERS workers timed in the
        fast state (by the run's floor): eager rounds of those blocks only, from the run's floor,
        each block with up to two full focus allowances (what --hb-budget-s leaves). Its records
        join the merge like any worker's: a fast figure of its own makes the row's figure fast
        (the merge keeps the fast figures whenever any worker has one); a block it does not catch
        stays as it was."""
        from cudnn_hostbench.bench.measure.workers import merge_runs, run_workers, truly_fast
        names = ", ".join(f"{p}/{s}" for p, s in missing)
        say(f"catch-up worker: {names} were timed in the host's fast state by fewer than {MIN_FAST_WORKERS} workers")
        floor = self._floor()
        extra = self._load(run_workers(1, self._eager_args(missing, per_block), self.out, say=say, start=len(runs) + 1,
                                       floor=floor), say)
        if not extra:
            return None
        recs, self.fingerprint = merge_runs(runs + extra, wall_s=time.perf_counter() - self.t0)
        own = [r for r in extra[0].records if r.mode == "eager" and r.ok and r.role != "baseline"]
        caught = [f"{p}/{s}" for p, s in missing
                  if any((r.probe, r.size) == (p, s) for r in own)
                  and all(truly_fast(r, floor) for r in own if (r.probe, r.size) == (p, s))]
        self.fingerprint["catch_up"] = {"worker": len(runs) + 1, "blocks": [f"{p}/{s}" for p, s in missing],
                                        "timed_fast": caught}
        say(f"catch-up worker: timed in the fast state: {', '.join(caught) or 'none'}")
        return recs

    def finish(self) -> None:
        if self.fingerprint:
            self.fingerprint["suite_wall_s"] = time.perf_counter() - self.t0

    def unmeasured(self) -> list:
        return [r for r in (self.records or {}).values() if not r.ok]


def _options(config) -> timing.Options:
    opt = timing.Options(rounds=config.getoption("--hb-rounds"))
    w = config.getoption("--hb-worker")
    if w:
        opt.rotation = int(w.split("/")[0]) - 1   # each worker its own variant order
    return opt


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "hostbench: a cudnn-hostbench probe benchmark")
    config._hb_session = None
    config._hb_run_path = None
    try:   # a bad --hb-* value: one usage line naming it and what is accepted
        check_config(config)
    except OptionError as e:
        raise pytest.UsageError(str(e)) from None
    config._hb_suite = SuiteOptions.from_config(config)
    ok, _ = _cuda_ok()
    bench_only = config.getoption("benchmark_only", False)
    from _pytest.config import Config
    if bench_only and getattr(config, "args_source", None) == Config.ArgsSource.TESTPATHS:
        # the bare `pytest --benchmark-only` at the root runs the probes, not the CPU tests
        config.args[:] = [str(config.rootpath / "probes")]
    worker = config.getoption("--hb-worker")
    k = config.getoption("--hb-workers")   # the user's numbers first: a bad one leaves no folder behind
    if k < 1:
        raise pytest.UsageError(f"--hb-workers: must be at least 1, got {k}")
    if config.getoption("--hb-budget-s") < 0:
        raise pytest.UsageError(f"--hb-budget-s: must be 0 (no limit) or more, got {config.getoption('--hb-budget-s'):g}")
    capman = config.pluginmanager.getplugin("capturemanager")
    if ok and (bench_only or worker) and capman is not None:
        progress.install(capman.global_and_fixture_disabled)   # progress lines reach the terminal
    out = Path(config.getoption("--hb-out") or config.rootpath / "results" / _dt.datetime.now().strftime("%Y%m%d-%H%M%S"))
    config._hb_out = out
    config._hb_json_tmp = None
    if ok and not worker and bench_only and config.getoption("benchmark_json", None) is None:
        out.mkdir(parents=True, exist_ok=True)
        config._hb_json_tmp = out / "run.json.tmp"
        config.option.benchmark_json = open(config._hb_json_tmp, "wb")  # noqa: SIM115 - pytest-benchmark closes it
    if ok and not worker and k > 1:
        config._hb_session = Parent(config, out, k)


def _session(config):
    if config._hb_session is None:
        from cudnn_hostbench.bench.measure.runner import Session
        modes = config._hb_suite.modes + ("host",)
        w = config.getoption("--hb-worker") or ""
        first = not w or w.startswith("1/")
        config._hb_session = Session(config._hb_out, _options(config), modes, worker=w,
                                     warm_max_s=config.getoption("--hb-warm-s") * (1.0 if first else 0.1),
                                     fast_wait_s=config.getoption("--hb-fast-wait-s"), suite=config._hb_suite,
                                     focus_wait_s=config.getoption("--hb-focus-wait-s"),
                                     # a worker's records come from records.jsonl, where a retried row's
                                     # last line wins; focus-only workers replace the retry: on the
                                     # H200 they timed 12 of 12 blocks fast, the retries 4 of 14
                                     retry_focus=bool(w) and config.getoption("--hb-focus-workers") == 0)
    return config._hb_session


def pytest_generate_tests(metafunc):
    if "hb_case" not in metafunc.fixturenames:
        return
    probe = metafunc.module.PROBE
    suite = metafunc.config._hb_suite
    modes = set(suite.modes) | {"host"}
    cases = [c for c in probe.cases(suite) if c[2] in modes]
    metafunc.parametrize("hb_case", cases, ids=[f"{s}-{v}-{m}" for s, v, m in cases])


def pytest_collection_modifyitems(config, items):
    ok, why = _cuda_ok()
    probe_items = [it for it in items if "hb_case" in getattr(it, "fixturenames", ())]
    for it in probe_items:
        size, variant, mode = it.callspec.params["hb_case"]
        probe = it.module.PROBE
        it.add_marker(pytest.mark.benchmark(timer=CLOCK, group=f"{probe.name}[{size}]-{mode}", disable_gc=False))
        it.add_marker(pytest.mark.hostbench)
        if not ok:
            it.add_marker(pytest.mark.skip(reason=why))
    probes = {it.module.PROBE.name: it.module.PROBE for it in probe_items}
    config._hb_focus = {(p.name, p.focus_size(config._hb_suite)) for p in probes.values()
                        if p.focus_size(config._hb_suite) is not None}
    only = config.getoption("--hb-only")
    if only:   # a catch-up worker: the eager rows of the named blocks, nothing else
        blocks = set(split(only))
        keep = [it for it in items if it not in probe_items or
                (f"{it.module.PROBE.name}/{it.callspec.params['hb_case'][0]}" in blocks
                 and it.callspec.params["hb_case"][2] == "eager")]
        dropped = [it for it in items if it not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        probe_items = [it for it in probe_items if it in keep]
    # every profiler session comes after every host-timed one (it can slow host dispatch for
    # the rest of the process); each worker takes the probes in its own rotated order
    w = config.getoption("--hb-worker")
    mods = list(dict.fromkeys(it.module.__name__ for it in probe_items))
    shift = (int(w.split("/")[0]) - 1) % len(mods) if w and mods else 0
    order = {m: i for i, m in enumerate(mods[shift:] + mods[:shift])}
    rank = {it: (1 if it.callspec.params["hb_case"][2] == "device" else 0, order[it.module.__name__])
            for it in probe_items}
    items.sort(key=lambda it: rank.get(it, (0, -1)))


def run_case(benchmark, request, case) -> records.Record:
    """The body every probe test shares: measure (once per probe/size), then report."""
    size, variant, mode = case
    probe = request.module.PROBE
    session = _session(request.config)
    try:
        rec = session.record(probe, size, variant, mode)
    except Exception as e:  # noqa: BLE001 - e.g. no GPU context: say why, keep the run going
        pytest.skip(f"cannot measure: {type(e).__name__}: {e}")
    if request.config.getoption("--hb-worker"):
        return rec   # a worker only writes records.jsonl; the parent reports the merged figures
    return report_record(benchmark, rec, f"{probe.name}/{variant}/{size}/{mode}")


def report_record(benchmark, rec: records.Record, where: str) -> records.Record:
    """Hands a record's measured samples to pytest-benchmark (or skips/fails with its status)."""
    benchmark.extra_info.update({k: v for k, v in rec.to_dict().items() if k != "samples"})
    kind = Status.parse(rec.status).kind
    if kind == "failed":
        pytest.fail(f"{where}: {rec.status}", pytrace=False)
    if not rec.ok:
        if kind == "error":
            pytest.fail(f"{where}: {rec.status}", pytrace=False)
        pytest.skip(rec.status)
    scale = records.UNIT_SECONDS.get(rec.unit, 1e-6)
    it = iter(rec.samples)

    def one_round():
        CLOCK.t += next(it) * scale

    benchmark.pedantic(one_round, rounds=len(rec.samples), iterations=1, warmup_rounds=0)
    return rec


@pytest.fixture
def hb_case(request):
    return request.param


@pytest.fixture
def hb_run(benchmark, request, hb_case):
    return lambda: run_case(benchmark, request, hb_case)


def pytest_benchmark_update_machine_info(config, machine_info):
    s = config._hb_session
    if s is not None and s.fingerprint:
        machine_info["hostbench"] = s.fingerprint


def pytest_benchmark_update_json(config, benchmarks, output_json):
    s = config._hb_session
    if s is None:
        return
    # only probe benchmarks belong in a hostbench run file (not CPU tests' own benchmarks)
    output_json["benchmarks"] = [b for b in output_json["benchmarks"] if (b.get("extra_info") or {}).get("probe")]
    unmeasured = s.unmeasured()
    output_json["hostbench"] = {"schema": records.SCHEMA, "unmeasured": [r.to_dict() for r in unmeasured]}


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Wraps pytest-benchmark's own finish (a wrapper that writes the run file before it yields):
    the fingerprint is complete before that write."""
    s = session.config._hb_session
    if s is not None:
        s.finish()
    yield
    _place_run_file(session.config)   # when no terminal summary ran (e.g. --no-summary)


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # the terminal reporter calls this inside sessionfinish, after pytest-benchmark wrote the run
    # file and before our wrapper resumes: place the file now so the report can read it
    _place_run_file(config)


def _place_run_file(config) -> None:
    """Renames the finished run file into place (once) and sets config._hb_run_path, which
    reports.pytest_report tabulates."""
    if getattr(config, "_hb_placed", False):
        return
    config._hb_placed = True
    s = config._hb_session
    tmp = config._hb_json_tmp
    path = None
    if tmp is not None:
        fh = config.option.benchmark_json
        if not fh.closed:
            fh.close()
        if tmp.exists() and tmp.stat().st_size > 0:
            path = tmp.with_name("run.json")
            os.replace(tmp, path)
        else:
            tmp.unlink(missing_ok=True)
    elif s is not None and not config.getoption("--hb-worker"):
        fh = config.getoption("benchmark_json", None)
        path = Path(fh.name) if fh is not None and Path(fh.name).exists() else None
        path = path if path is not None and path.stat().st_size > 0 else None
    config._hb_run_path = path


def pytest_unconfigure(config):
    progress.install(None)   # an in-process pytest.main() leaves no capture hook behind
