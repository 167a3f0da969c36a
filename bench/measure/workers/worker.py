"""A measuring worker without pytest (`--hb-engine own`): it runs the cases its job names, in the
job's order, and writes records.jsonl with its fingerprint last, as a pytest worker does.

    python -c 'from cudnn_hostbench.bench.measure.workers.worker import entry; entry()' JOB.json

(an internal entry, not a user command: it has no parser of its own; `COMMAND` is that line).

The job (the worker protocol, `Job`) is written by the parent (bench.measure.workers.parent) from the cases
pytest collected: which cases, in which order (bench.measure.workers.schedule), with which options. The
worker imports no pytest and collects nothing; exit 0 when it measured (a case's failure is that
case's record), 2 on a job it cannot read (one line naming the file).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from cudnn_hostbench.bench.measure.core.options import DEFAULT_MODES, DEFAULT_SIZES, DEFAULT_TOKENS, split

JOB_VERSION = 1
MIN_PASS_ROUNDS = 3   # an eager pass's rounds: a median of fewer is one round's luck


class JobError(ValueError):
    """A job file that cannot be run; the message names the file and what is wrong."""


@dataclass
class Job:
    worker: str                      # "i/n": its number picks its probe and variant order
    out: str                         # folder for records.jsonl
    cases: list                      # [probe file, size, variant, mode], in measuring order
    sizes: tuple = DEFAULT_SIZES
    tokens: tuple = DEFAULT_TOKENS
    heavy: bool = False
    modes: tuple = DEFAULT_MODES
    root: str = "."
    rounds: int = 24
    graph_rounds: int = 4
    warm_s: float = 5.0              # the first worker's wait for the host's fast state; later ones a tenth
    fast_wait_s: float = 6.0
    focus_wait_s: float = 12.0
    deadline: float | None = None    # epoch s after which nothing more is measured (a top-up worker)
    floor_us: float | None = None    # the host floor earlier workers learned (hoststate.FLOOR_ENV)
    target_se: float = 0.0           # eager rounds stop at this relative standard error (timing.Options)
    device_rounds: int | None = None  # profiler rounds per row (None: timing.Options')
    device_more: int | None = None    # more of them where the first spread (None: timing.Options')
    eager_passes: int = 1             # passes the eager rounds are split over (core/passes.py)
    version: int = JOB_VERSION

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def load(cls, path: str | Path) -> "Job":
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise JobError(f"{path}: cannot read the worker job ({e})") from e
        if not isinstance(d, dict) or not isinstance(d.get("cases"), list):
            raise JobError(f"{path}: not a worker job (no 'cases' list)")
        if not isinstance(d.get("version", JOB_VERSION), int) or d.get("version", JOB_VERSION) > JOB_VERSION:
            raise JobError(f"{path}: job version {d['version']!r} is newer than this worker reads ({JOB_VERSION})")
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            job = cls(**{k: v for k, v in d.items() if k in names})
        except TypeError as e:
            raise JobError(f"{path}: malformed worker job ({e})") from e
        bad = [c for c in job.cases if not (isinstance(c, list) and len(c) == 4 and all(isinstance(x, str) for x in c))]
        if bad:
            raise JobError(f"{path}: malformed case {bad[0]!r} (expected [probe file, size, variant, mode])")
        job.sizes, job.tokens, job.modes = tuple(job.sizes), tuple(job.tokens), tuple(job.modes)
        return job


# the --hb-* options a worker takes from the parent's arguments: option -> (Job field, its value from text)
FROM_ARGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--hb-sizes": ("sizes", split), "--hb-tokens": ("tokens", split), "--hb-modes": ("modes", split),
    "--hb-rounds": ("rounds", int), "--hb-warm-s": ("warm_s", float), "--hb-fast-wait-s": ("fast_wait_s", float),
    "--hb-focus-wait-s": ("focus_wait_s", float), "--hb-target-se": ("target_se", lambda v: float(v) / 100),
    "--hb-deadline": ("deadline", lambda v: None if v == "None" else float(v)), "--rootdir": ("root", str),
    "--hb-graph-rounds": ("graph_rounds", int), "--hb-device-rounds": ("device_rounds", int),
    "--hb-device-more": ("device_more", int), "--hb-eager-passes": ("eager_passes", int)}


def job_for(args: list[str], cases: list, worker: str, out: str | Path) -> Job:
    """The job of a worker the parent would have started as `pytest ARGS --hb-worker=...`: the
    collected `cases` ([probe file, probe name, size, variant, mode], collection order) its
    --hb-modes or --hb-only select, in its order (bench.measure.workers.schedule), with its --hb-* options
    (an option not given keeps the Job's default, which is the option's)."""
    from cudnn_hostbench.bench.measure.core.timing import GRAPH_ROUNDS
    from cudnn_hostbench.bench.measure.workers import schedule
    # the parent writes each option as --name=value (HostbenchSession.worker_args, Parent._eager_args)
    # and a later one wins; everything else (paths, -k, -p, -o) chose the cases, which come collected
    got = {k: v for k, _, v in (a.partition("=") for a in args if a.startswith("--") and "=" in a)}
    job = Job(worker=worker, out=str(out), cases=[], heavy="--hb-heavy" in args,
              **{name: read(got[opt]) for opt, (name, read) in FROM_ARGS.items() if opt in got})
    job.graph_rounds = min(job.rounds, job.graph_rounds if "--hb-graph-rounds" in got else GRAPH_ROUNDS)
    mode, block = (lambda c: c[4]), (lambda c: f"{c[1]}/{c[2]}")
    chosen = schedule.select([list(c) for c in cases], block, mode, job.modes, got.get("--hb-only"))
    job.cases = [[c[0], *c[2:]] for c in schedule.order(chosen, lambda c: c[0], mode, worker)]
    return job


def package_root() -> str:
    """The folder `cudnn_hostbench` imports from, so a worker process finds the harness as its
    parent did (an editable install, a checkout on PYTHONPATH, or pytest's rootdir)."""
    import cudnn_hostbench
    return str(Path(cudnn_hostbench.__file__).resolve().parent.parent)


def load_probes(files) -> dict:
    """{probe file: its PROBE}, each module imported once under its own name (as pytest imports
    probes/probe_x.py: the package's module when the folder is a package)."""
    out = {}
    for f in dict.fromkeys(files):
        path = Path(f)
        name = f"{path.parent.name}.{path.stem}" if (path.parent / "__init__.py").exists() else path.stem
        mod = sys.modules.get(name)
        if mod is None or Path(getattr(mod, "__file__", "") or "").resolve() != path.resolve():
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise JobError(f"{path}: not a probe module")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
        out[f] = mod.PROBE
    return out


def session_for(job: Job):
    """The runner.Session a worker measures in, with the options a pytest worker would get."""
    from cudnn_hostbench.bench.measure.core import timing
    from cudnn_hostbench.bench.measure.core.options import SuiteOptions
    from cudnn_hostbench.bench.measure.core.runner import Session
    from cudnn_hostbench.bench.measure.workers.schedule import worker_number
    suite = SuiteOptions(sizes=job.sizes, tokens=job.tokens, heavy=job.heavy, modes=job.modes, root=job.root)
    passes = max(1, job.eager_passes)
    opt = timing.Options(rounds=max(MIN_PASS_ROUNDS, job.rounds // passes), graph_rounds=job.graph_rounds,
                         target_se=job.target_se)
    if job.device_rounds is not None:
        opt.device_rounds = job.device_rounds
    if job.device_more is not None:
        opt.device_more = job.device_more
    opt.rotation = worker_number(job.worker) - 1          # each worker its own variant order
    first = worker_number(job.worker) == 1
    return Session(job.out, opt, job.modes + ("host",), worker=job.worker,
                   warm_max_s=job.warm_s * (1.0 if first else 0.1), fast_wait_s=job.fast_wait_s, suite=suite,
                   focus_wait_s=job.focus_wait_s, retry_focus=False, deadline=job.deadline, eager_passes=passes)


def run(job: Job) -> int:
    """Measures the job's cases in order; a case that raises is recorded as that case's error."""
    from cudnn_hostbench.bench.measure.runfile.records import Record
    from cudnn_hostbench.bench.measure.runfile.status import error
    try:
        probes = load_probes(c[0] for c in job.cases)
    except Exception as e:  # noqa: BLE001 - a probe module that does not import: one line, nothing measured
        print(f"hostbench worker {job.worker}: cannot import a probe: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    from cudnn_hostbench.bench.measure.core import progress
    blocks = len({(c[0], c[1]) for c in job.cases})
    progress.say(f"hostbench worker {job.worker}: {len(job.cases)} case(s) in {blocks} block(s)")
    s = session_for(job)
    try:
        for f, size, variant, mode in job.cases:
            p = probes[f]
            try:
                s.record(p, size, variant, mode)
            except Exception as e:  # noqa: BLE001 - e.g. no GPU context: the case says why, the rest go on
                s._put(Record(p.name, variant, size, mode, status=str(error(f"cannot measure: {type(e).__name__}: {e}"))))
        s.finish()
    finally:
        s.close()
    return 0


COMMAND = [sys.executable, "-c", "from cudnn_hostbench.bench.measure.workers.worker import entry; entry()"]


def wait_for(path: Path, poll_s: float = 0.01) -> bool:
    """A worker started ahead of its turn: imports what measuring needs, then waits for its job
    (written whole by the parent when the worker before it ends). False when the parent is gone."""
    import os
    import time
    parent = os.getppid()
    try:   # the start-up this overlaps: torch (and the frontend, if any) and the harness's runner
        import torch

        import cudnn_hostbench.bench.measure.core.runner  # noqa: F401
        try:   # what a custom op's first call imports (torch.compile's machinery): 2-3 s the
            import torch._dynamo  # noqa: F401  # registration block's building paid in every worker
        except Exception:  # noqa: BLE001 - an older or stripped torch: the first call imports it
            pass
        try:
            import cudnn  # type: ignore[import-not-found]  # noqa: F401
        except Exception:  # noqa: BLE001 - no frontend here: its probes say so when they run
            pass
    except ImportError:
        pass
    t0 = time.monotonic()
    while not path.exists():
        if os.getppid() != parent or time.monotonic() - t0 > WAIT_MAX_S:
            return False
        time.sleep(poll_s)
    return True


WAIT_MAX_S = 1800.0     # a worker started ahead waits at most this long for its job


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("hostbench worker: expected one argument, the job file (an internal entry: the parent "
              "starts it)", file=sys.stderr)
        return 2
    if not Path(argv[0]).exists() and not wait_for(Path(argv[0])):
        print(f"hostbench worker: {argv[0]}: no job came (its parent ended, or {WAIT_MAX_S:.0f} s passed)",
              file=sys.stderr)
        return 2
    try:
        job = Job.load(argv[0])
    except JobError as e:
        print(f"hostbench worker: {e}", file=sys.stderr)
        return 2
    if job.floor_us:
        import os

        from cudnn_hostbench.bench.measure.core.hoststate import FLOOR_ENV
        os.environ[FLOOR_ENV] = f"{job.floor_us:.6f}"
    return run(job)


def entry() -> None:
    """The worker process: main(), then an exit that skips interpreter teardown, where the
    frontend's nanobind module reports objects as leaks (Session.close released the worker's)."""
    import os
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
