"""The pytest plugin that turns probes into pytest-benchmark benchmarks whose stats are GPU-measured µs.

Each (probe, size, variant, mode) is one benchmark. The measurement happens in bench.measure.core.runner,
interleaved across the probe's variants; the test then hands its samples straight to
pytest-benchmark's stats (`hand_over`: nothing timed, no clock), so the run file stores the
measured per-call figures (not pytest-benchmark's wall time around them).

The plugin is one object per run, HostbenchSession (config._hostbench); the hooks delegate to it.
With --hb-workers K > 1 (the default) this process is the parent: at the first probe it runs the
suite in K fresh worker processes one after another (bench.measure.workers.parent, bench.measure.workers.replicas),
merges their records, and its own tests report the merged figures. The engine writes the run file,
<out>/run.json (records.run_document), itself; pytest-benchmark's JSON (`--benchmark-json`) is an
export whose stats are the engine's samples, handed over as above.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.core import progress, timing
from cudnn_hostbench.bench.measure.core.options import OptionError, SuiteOptions, check_config
from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.fields import plain
from cudnn_hostbench.bench.measure.runfile.status import Status
from cudnn_hostbench.bench.measure.workers import schedule

DEFAULT_WORKERS = 3
DEFAULT_FULL_WORKERS = 1   # workers that run graph and device too; the others, eager rows only
DEFAULT_ROUNDS = 24      # eager rounds per worker. An eager ratio's process-to-process spread is its rounds'
#                          sampling error (the rounds are uncorrelated, and the spread between workers
#                          is what their rounds' spread predicts: log 2026-12-01-2119), so rounds narrow
#                          it as processes do, at 10 ms a cycle instead of a process each
GRAPH_ROUNDS = timing.GRAPH_ROUNDS


TIMER = "hostbench"   # what a probe's pytest-benchmark entry names as its timer: the engine's own clocks


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
    g.addoption("--hb-full-workers", type=int, default=DEFAULT_FULL_WORKERS,
                help="of the --hb-workers, how many run every mode; the rest time eager rows only, since graph "
                     "and device rows agree within 0.5 %% between processes of one start and eager rows do not "
                     "(default %(default)s)")
    g.addoption("--hb-engine", choices=("pytest", "own"), default="own",
                help="how workers run: child pytest sessions, or the harness's own worker processes, which "
                     "import no pytest and collect nothing (bench/measure/workers/worker.py) (default %(default)s)")
    g.addoption("--hb-target-se", type=float, default=1.0,
                help="eager rounds stop once every variant's median is known to this relative standard error, "
                     "in %% (after 8 rounds; at most --hb-rounds): 1 is half the process-to-process spread of an "
                     "eager ratio (2 %% on the H200); 0 always runs --hb-rounds (default %(default)s)")
    g.addoption("--hb-warm-s", type=float, default=5.0,
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
    g.addoption("--hb-focus-workers", type=int, default=0,
                help="extra worker processes that time only the headline sizes' eager rows, after the "
                     "--hb-workers: those ratios vary most from process to process, so they get more "
                     "replicates (default %(default)s)")
    g.addoption("--hb-budget-s", type=float, default=240.0,
                help="seconds the whole run may take, from the start of the pytest process (the first "
                     "worker's wait for the host included): the top-up and focus-only workers get what the "
                     "full workers leave, and the summary says what was cut; 0: no limit (default %(default)s)")
    g.addoption("--hb-out", default=None, help="folder for records.jsonl, run.json, table.csv/md (default results/<stamp>)")
    g.addoption("--hb-heavy", action="store_true", help="heavy sweeps (every plan, every size)")
    g.addoption("--hb-wide", action="store_true",
                help="the table with every column and the run summary in full (default: fit the terminal)")
    g.addoption("--hb-worker", default=None, help=argparse.SUPPRESS)   # set by the parent only
    g.addoption("--hb-only", default=None, help=argparse.SUPPRESS)     # a catch-up worker's blocks
    g.addoption("--hb-deadline", type=float, default=None, help=argparse.SUPPRESS)   # a top-up worker's end (epoch s)


def _cuda_ok() -> tuple[bool, str]:
    try:
        import torch
    except ImportError as e:
        return False, (f"torch not importable ({e}): probes need torch and a CUDA GPU; "
                       "`hostbench run` renders the committed reference run instead")
    if not torch.cuda.is_available():
        return False, ("no CUDA GPU visible (torch.cuda.is_available() is False): probes need one; "
                       "`hostbench run` renders the committed reference run instead")
    return True, ""


# --hb-* options a worker gets from its parent, as parsed (its outputs, worker count, role and
# budget are the parent's own)
TO_WORKERS = ("hb_sizes", "hb_tokens", "hb_modes", "hb_rounds", "hb_warm_s", "hb_fast_wait_s", "hb_focus_wait_s",
              "hb_target_se")


class RunFileTarget(os.PathLike):
    """What the plugin hands pytest-benchmark as --benchmark-json when the user gave none.

    pytest-benchmark 4.x-5.2 take an open file (`with self.json as fh: fh.write(...)`), 5.3+ a path
    (`open(self.json, "wb")`): this is both, so the run file lands at `path` under either.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.name = str(self.path)
        self._fh = None

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __enter__(self):
        self._fh = open(self.path, "wb")
        return self._fh

    def __exit__(self, *exc):
        self._fh.close()

    @property
    def closed(self) -> bool:
        return self._fh is None or self._fh.closed

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def user_json_path(value) -> Path | None:
    """The path of a --benchmark-json the user gave: a path (pytest-benchmark 5.3+) or the file
    argparse opened (4.x-5.2, whose `.name` is the string the user typed)."""
    if value is None or isinstance(value, RunFileTarget):
        return None
    raw = value.name if hasattr(value, "write") else value
    return Path(os.fsdecode(raw)).resolve()


class HostbenchSession:
    """The plugin's one object per pytest run (config._hostbench); the hooks below delegate to it.

    Roles: the parent of K workers (the default: it orchestrates, bench.measure.workers.parent), a worker
    (--hb-worker, writes records.jsonl only), or a single process (--hb-workers 1).
    """

    def __init__(self, config):
        self.config = config
        try:   # a bad --hb-* value: one usage line naming it and what is accepted
            check_config(config)
        except OptionError as e:
            raise pytest.UsageError(str(e)) from None
        self.suite = SuiteOptions.from_config(config)
        self.worker = config.getoption("--hb-worker")
        self.k = config.getoption("--hb-workers")   # the user's numbers first: a bad one leaves no folder behind
        if self.k < 1:
            raise pytest.UsageError(f"--hb-workers: must be at least 1, got {self.k}")
        self.full = config.getoption("--hb-full-workers")
        if self.full < 1:
            raise pytest.UsageError(f"--hb-full-workers: must be at least 1, got {self.full}")
        if (config.getoption("--hb-target-se") or 0.0) < 0:
            raise pytest.UsageError(f"--hb-target-se: must be 0 (every round) or more, got "
                                    f"{config.getoption('--hb-target-se'):g}")
        if config.getoption("--hb-budget-s") < 0:
            raise pytest.UsageError(f"--hb-budget-s: must be 0 (no limit) or more, got {config.getoption('--hb-budget-s'):g}")
        self.gpu_ok, self.why = _cuda_ok()
        self.bench_only = bool(config.getoption("benchmark_only", False))
        self.out = Path(config.getoption("--hb-out")
                        or config.rootpath / "results" / _dt.datetime.now().strftime("%Y%m%d-%H%M%S"))
        self.focus: set = set()
        self.cases: list = []        # the collected probe cases, for the own engine's jobs
        self.measure = None          # a runner.Session (worker or single process) or a parent.Parent
        self.run_path: Path | None = None
        self.reported: list = []     # the measured records pytest reported, in its order
        self._placed = False
        self._target: RunFileTarget | None = None
        self._user_json = user_json_path(config.getoption("benchmark_json", None))
        self.owner = self.gpu_ok and not self.worker and self.bench_only   # this process writes the run file
        if self.owner and self._user_json is None:
            self.out.mkdir(parents=True, exist_ok=True)
            self._target = RunFileTarget(self.out / "run.json.tmp")
            config.option.benchmark_json = self._target
        if self.gpu_ok and not self.worker and self.k > 1:
            from cudnn_hostbench.bench.measure.workers.parent import Parent
            self.measure = Parent(self.out, self.k, self.worker_args(), focus_workers=config.getoption("--hb-focus-workers"),
                                  budget_s=config.getoption("--hb-budget-s"), modes=self.suite.modes,
                                  full_workers=self.full, engine=config.getoption("--hb-engine") or "pytest")

    # -- workers -----------------------------------------------------------------------------
    def worker_args(self) -> list[str]:
        """A worker's pytest command line, built from the parsed options (not filtered out of argv)."""
        c, o = self.config, self.config.option
        root = c.rootpath
        paths = [self._absolute(a) for a in c.args] or [str(root / "probes")]
        args = [*paths, "--benchmark-only"]
        if getattr(o, "keyword", ""):
            args += ["-k", o.keyword]
        if getattr(o, "markexpr", ""):
            args += ["-m", o.markexpr]
        for p in getattr(o, "plugins", None) or []:
            args += ["-p", p]
        for ov in getattr(o, "override_ini", None) or []:
            args += ["-o", ov]
        for dest in TO_WORKERS:
            args.append(f"--{dest.replace('_', '-')}={getattr(o, dest)}")
        if o.hb_heavy:
            args.append("--hb-heavy")
        n = o.hb_focus_workers   # a worker retries no block when focus-only workers follow
        ini = [f"-c={c.inipath}"] if getattr(c, "inipath", None) else []   # the parent's settings, found once
        return [*args, "-q", "-p", "no:cacheprovider", "--hb-workers=1", f"--hb-focus-workers={n}", f"--rootdir={root}",
                *ini, "-o", "testpaths=probes", "-o", f"python_files={' '.join(c.getini('python_files'))}"]

    def _absolute(self, arg: str) -> str:
        path, sep, rest = str(arg).partition("::")
        p = Path(path)
        if not p.is_absolute():
            p = Path(self.config.invocation_params.dir) / p
        return f"{p}{sep}{rest}"

    # -- measuring ---------------------------------------------------------------------------
    def runner(self):
        if self.measure is None:
            from cudnn_hostbench.bench.measure.core.runner import Session
            c = self.config
            modes = self.suite.modes + ("host",)
            w = self.worker or ""
            first = schedule.worker_number(w) == 1
            self.measure = Session(self.out, _options(c), modes, worker=w,
                                   warm_max_s=c.getoption("--hb-warm-s") * (1.0 if first else 0.1),
                                   fast_wait_s=c.getoption("--hb-fast-wait-s"), suite=self.suite,
                                   focus_wait_s=c.getoption("--hb-focus-wait-s"),
                                   # a worker's records come from records.jsonl, where a retried row's
                                   # last line wins; focus-only workers replace the retry: a fresh
                                   # worker finds the fast state far more often than an in-worker
                                   # retry does (log 2026-11-29-2341)
                                   # top-up workers (parent.Parent) replace the retries: a retry
                                   # spends its worker's time before replication does
                                   retry_focus=False, deadline=c.getoption("--hb-deadline"))
        return self.measure

    @property
    def fingerprint(self) -> dict:
        """The run's fingerprint as the run file's JSON object (the parent's is typed)."""
        return plain(getattr(self.measure, "fingerprint", None) or {})

    def unmeasured(self) -> list:
        return self.measure.unmeasured() if self.measure is not None else []

    # -- the run file ------------------------------------------------------------------------
    def place_run_file(self) -> None:
        """Writes the engine's run file (once) and sets run_path, which the report plugin
        tabulates: <out>/run.json, or the user's --benchmark-json export where one was given.
        pytest-benchmark's own file becomes run.json only where the engine measured nothing (a
        plain pytest-benchmark test under the plugin)."""
        if self._placed:
            return
        self._placed = True
        own = self._write_own_run_file()
        path = None
        if self._target is not None:
            self._target.close()
            tmp = self._target.path
            if own is None and tmp.exists() and tmp.stat().st_size > 0:
                path = tmp.with_name("run.json")
                os.replace(tmp, path)
            else:
                tmp.unlink(missing_ok=True)
                path = own
        elif self.owner and self._user_json is not None:
            fh = self.config.getoption("benchmark_json", None)
            if hasattr(fh, "write") and not fh.closed:
                fh.close()
            p = self._user_json
            path = p if p.exists() and p.stat().st_size > 0 else None
        self.run_path = path

    def _write_own_run_file(self) -> Path | None:
        """<out>/run.json from the engine: the figures pytest reported, in its order, then the
        records with no figure (the order a pytest-benchmark run file had them in); None where the
        engine measured nothing, or the user's export is that very file."""
        target = self.out / "run.json"
        if not self.owner or self.measure is None or self._user_json == target.resolve():
            return None
        recs = [*self.reported, *self.unmeasured()]
        if not recs:
            return None
        return records.write_run(target, records.run_document(recs, self.fingerprint))

    def close(self) -> None:
        """Releases the frontend's objects in order (built graphs and plans, then the handle)
        while the interpreter is whole: left to interpreter teardown they outlive the frontend's
        nanobind module, which then reports them as leaks."""
        m, self.measure = self.measure, None
        if m is not None and hasattr(m, "close"):
            m.close()


def _options(config) -> timing.Options:
    rounds = config.getoption("--hb-rounds")
    opt = timing.Options(rounds=rounds, graph_rounds=min(rounds, GRAPH_ROUNDS),
                         target_se=(config.getoption("--hb-target-se") or 0.0) / 100)
    w = config.getoption("--hb-worker")
    if w:
        opt.rotation = schedule.worker_number(w) - 1   # each worker its own variant order
    return opt


def _hb(config) -> HostbenchSession | None:
    return getattr(config, "_hostbench", None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "hostbench: a cudnn-hostbench probe benchmark")
    from _pytest.config import Config
    if config.getoption("benchmark_only", False) and getattr(config, "args_source", None) == Config.ArgsSource.TESTPATHS:
        # the bare `pytest --benchmark-only` at the root runs the probes, not the CPU tests
        probes = config.rootpath / "probes"
        if probes.is_dir():
            config.args[:] = [str(probes)]
    hb = config._hostbench = HostbenchSession(config)
    capman = config.pluginmanager.getplugin("capturemanager")
    if hb.gpu_ok and (hb.bench_only or hb.worker) and capman is not None:
        progress.install(capman.global_and_fixture_disabled)   # progress lines reach the terminal


def pytest_generate_tests(metafunc):
    if "hb_case" not in metafunc.fixturenames:
        return
    probe = metafunc.module.PROBE
    suite = metafunc.config._hostbench.suite
    modes = set(suite.modes) | {"host"}
    cases = [c for c in probe.cases(suite) if c[2] in modes]
    metafunc.parametrize("hb_case", cases, ids=[f"{s}-{v}-{m}" for s, v, m in cases])


def pytest_itemcollected(item):
    """Markers as each probe test is collected, so that -m selects on them."""
    if "hb_case" not in getattr(item, "fixturenames", ()):
        return
    hb = item.config._hostbench
    size, variant, mode = item.callspec.params["hb_case"]
    item.add_marker(pytest.mark.benchmark(group=f"{item.module.PROBE.name}[{size}]-{mode}", disable_gc=False))
    item.add_marker(pytest.mark.hostbench)
    if not hb.gpu_ok:
        item.add_marker(pytest.mark.skip(reason=hb.why))


@pytest.hookimpl(trylast=True)   # after -k / -m deselection: the engine measures only the tests that run
def pytest_collection_modifyitems(config, items):
    hb = config._hostbench
    probe_items = [it for it in items if "hb_case" in getattr(it, "fixturenames", ())]
    probes = {it.module.PROBE.name: it.module.PROBE for it in probe_items}
    hb.focus = {(p.name, p.focus_size(hb.suite)) for p in probes.values() if p.focus_size(hb.suite) is not None}
    if hasattr(hb.measure, "focus"):
        hb.measure.focus = set(hb.focus)
    only = config.getoption("--hb-only")
    mode_of = lambda it: it.callspec.params["hb_case"][2]  # noqa: E731
    if only:   # a catch-up worker: the eager rows of the named blocks, nothing else
        chosen = set(schedule.select(probe_items, lambda it: f"{it.module.PROBE.name}/{it.callspec.params['hb_case'][0]}",
                                     mode_of, (), only))
        keep = [it for it in items if it not in probe_items or it in chosen]
        dropped = [it for it in items if it not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        probe_items = [it for it in probe_items if it in keep]
    # [probe file, probe, size, variant, mode] in collection order: the own engine's jobs (worker.job_for)
    hb.cases = [[it.module.__file__, it.module.PROBE.name, *it.callspec.params["hb_case"]] for it in probe_items]
    if hasattr(hb.measure, "cases"):
        hb.measure.cases = hb.cases
    ordered = schedule.order(probe_items, lambda it: it.module.__name__, mode_of, config.getoption("--hb-worker"))
    rank = {it: i for i, it in enumerate(ordered)}
    items.sort(key=lambda it: rank.get(it, -1))


def run_case(benchmark, request, case) -> records.Record:
    """The body every probe test shares: measure (once per probe/size), then report."""
    size, variant, mode = case
    probe = request.module.PROBE
    hb = request.config._hostbench
    try:
        rec = hb.runner().record(probe, size, variant, mode)
    except Exception as e:  # noqa: BLE001 - e.g. no GPU context: say why, keep the run going
        pytest.skip(f"cannot measure: {type(e).__name__}: {e}")
    if hb.worker:
        return rec   # a worker only writes records.jsonl; the parent reports the merged figures
    if rec.ok:
        hb.reported.append(rec)
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
    hand_over(benchmark, rec)
    return rec


def hand_over(benchmark, rec: records.Record) -> None:
    """Gives pytest-benchmark the engine's samples as its stats (seconds), one round each: its
    table, JSON and --benchmark-compare show what the engine measured. Nothing is timed here, and
    no clock is faked; the fixture counts as used (its own `_mode`), as a pedantic call would make it."""
    benchmark._mode = "hostbench: samples measured by the engine"
    if benchmark.disabled:
        return
    scale = records.UNIT_SECONDS.get(rec.unit, 1e-6)
    stats = benchmark._make_stats(1)
    for x in rec.samples:
        stats.update(x * scale)


@pytest.fixture
def hb_case(request):
    return request.param


@pytest.fixture
def hb_run(benchmark, request, hb_case):
    return lambda: run_case(benchmark, request, hb_case)


def pytest_benchmark_update_machine_info(config, machine_info):
    hb = _hb(config)
    if hb is not None and hb.fingerprint:
        machine_info["hostbench"] = hb.fingerprint


def pytest_benchmark_update_json(config, benchmarks, output_json):
    hb = _hb(config)
    if hb is None or hb.measure is None:
        return
    # only probe benchmarks belong in a hostbench run file (not CPU tests' own benchmarks)
    output_json["benchmarks"] = [b for b in output_json["benchmarks"] if (b.get("extra_info") or {}).get("probe")]
    for b in output_json["benchmarks"]:   # the samples are the engine's, not pytest-benchmark's timer's
        b.setdefault("options", {})["timer"] = TIMER
    output_json["hostbench"] = {"schema": records.SCHEMA, "unmeasured": [r.to_dict() for r in hb.unmeasured()]}


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Wraps pytest-benchmark's own finish (a wrapper that writes the run file before it yields):
    the fingerprint is complete before that write."""
    hb = _hb(session.config)
    if hb is not None and hb.measure is not None:
        hb.measure.finish()
    yield
    if hb is not None:
        hb.place_run_file()   # when no terminal summary ran (e.g. --no-summary)


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # the terminal reporter calls this inside sessionfinish, after pytest-benchmark wrote the run
    # file and before our wrapper resumes: place the file now so the report can read it
    hb = _hb(config)
    if hb is not None:
        hb.place_run_file()
    if hb is not None and not hb.gpu_ok:   # "N skipped", exit 0: say here that nothing was measured, and why
        n = sum(hb.why in str(getattr(r, "longrepr", "")) for r in terminalreporter.stats.get("skipped", []))
        if n:
            terminalreporter.write_line(f"hostbench: nothing measured, {n} probe case(s) skipped: {hb.why}",
                                        yellow=True, bold=True)


def pytest_unconfigure(config):
    hb = _hb(config)
    if hb is not None:
        hb.close()
    progress.install(None)   # an in-process pytest.main() leaves no capture hook behind
