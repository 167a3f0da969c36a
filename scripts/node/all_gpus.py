"""`hostbench run --all-gpus`: which GPU of the node is slow. The GPU-bound rows (graph and device
modes, unless --hb-modes says otherwise) run on every GPU at once, one `hostbench run` per GPU,
each pinned to its GPU and to cores of its NUMA node (bench.measure.node.placement). Then each GPU's factor
against the node's median, with its UUID, and a flag on a GPU slower than the others beyond its
noise (scripts/node/slow_gpu.py).

Outputs in --out (default results/node-<stamp>): gpu<i>/ (one run folder per GPU: run.json,
table, the job's log), node.md and node.json. Every run goes into the history store with its GPU's
identity (its fingerprint's 'machine'), one after another once the jobs end. A job that fails is
one line naming its GPU and the frontend version; the other GPUs' runs are kept, reported and
stored, and the exit status is 2.
"""
from __future__ import annotations

import datetime as _dt
import os
import signal
import subprocess
import sys
from pathlib import Path

from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.node.jobs import Job, failure_line, one_line, run_jobs

GPU_MODES = "--hb-modes=graph,device"
ROOT = Path(__file__).resolve().parents[2]   # as scripts/run.py has it (run imports this module)


def add_arguments(parser) -> None:
    """The options `hostbench run` gets for a node."""
    parser.add_argument("--all-gpus", action="store_true",
                   help="run the GPU-bound rows (graph, device) on every GPU of the node at once, each pinned to "
                        "cores of its NUMA node; report each GPU's factor against the node's median and flag a "
                        "slow GPU (docs/node.md)")
    parser.add_argument("--gpus", metavar="0,1|UUID,...",
                   help="with --all-gpus: only these GPUs (pinned as in the whole node's plan)")
    parser.add_argument("--job-timeout", type=float, default=1800.0, help="with --all-gpus: seconds per GPU's run")
    parser.add_argument("--fail-on-slow", action="store_true", help="with --all-gpus: exit 1 when a GPU is flagged slow")


def frontend_version() -> str:
    from importlib import metadata
    try:
        return f"frontend {metadata.version('nvidia-cudnn-frontend')}"
    except metadata.PackageNotFoundError:
        return "frontend not installed"


def package_home() -> str:
    """The folder `cudnn_hostbench` imports from (the checkout, or site-packages)."""
    import cudnn_hostbench
    return str(Path(cudnn_hostbench.__file__).resolve().parent.parent)


def job_command(out: Path, pytest_args: list[str]) -> list[str]:
    """One GPU's `hostbench run`, GPU-bound modes unless the user chose modes."""
    modes = [] if any(a.startswith("--hb-modes") for a in pytest_args) else [GPU_MODES]
    return [sys.executable, "-m", "cudnn_hostbench.scripts.cli", "run", "--out", str(out), *modes, *pytest_args]


def job_env(slot) -> dict:
    env = placement.gpu_env(os.environ, slot)
    env["HOSTBENCH_STORE"] = "off"   # the parent stores each run once the jobs end (one writer)
    env["PYTHONPATH"] = os.pathsep.join([package_home(), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


def reason(log: str) -> str:
    """The line of a job's log that says why it ended without a run file: the last error or
    `hostbench run:` line (no GPU, a bad option), else the last line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith("hostbench run:") or "Error" in ln.split(":", 1)[0]]
    return one_line((said or lines or [""])[-1])


def kept(out: Path) -> str:
    """Where a job that did not finish left what it measured (its workers write records.jsonl as
    they go), or ''."""
    parts = sorted(out.glob("workers/*/records.jsonl")) + sorted(out.glob("records.jsonl"))
    return f"; measured so far: {', '.join(map(str, parts))}" if parts else ""


def runner(pytest_args: list[str], timeout: float, root: Path):
    def work(job: Job, slot) -> dict:
        out = Path(job.data["out"])
        out.mkdir(parents=True, exist_ok=True)
        log = out / "hostbench.log"
        cmd = placement.pinned(job_command(out, pytest_args), slot.cpus)
        with open(log, "w", encoding="utf-8") as fh:
            p = subprocess.Popen(cmd, env=job_env(slot), cwd=str(root), stdout=fh, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return {"status": "timed out", "detail": f"after {timeout:.0f} s{kept(out)} (log {log})"}
        run = out / "run.json"
        if not run.exists():
            tail = reason(log.read_text(encoding="utf-8", errors="replace"))
            return {"status": "failed", "detail": f"exit {rc}, no run file: {tail}{kept(out)} (log {log})"}
        # rc 1: some probes failed their numerics; what was measured is in the run file
        return {"status": "ok", "run_file": str(run), "detail": "" if rc == 0 else f"exit {rc} (log {log})"}
    return work


def store_runs(runs: dict, out: Path, say) -> None:
    """Each GPU's run into the history store, one after another: $HOSTBENCH_STORE, else history.db
    beside the node's folder (results/history.db, as for a single-GPU run in results/<stamp>/)."""
    from cudnn_hostbench.reports import pytest_report
    url = pytest_report.store_url_for(out / "node.json")
    if url is None:
        say("history store: off (HOSTBENCH_STORE=off)")
        return
    later = f"ingest later: hostbench history ingest {out}/gpu*/run.json"
    try:
        from cudnn_hostbench.reports.history import db
    except ImportError as e:   # sqlalchemy missing: the run files are the archive
        say(f"history store: not stored ({e}); {later}")
        return
    try:
        st = db.open_store(url, create=True)
    except (db.StoreError, OSError) as e:
        say(f"history store: not stored ({e}); {later}")
        return
    try:
        for label, run in runs.items():
            try:
                rid, new = st.ingest_run(run)
                say(f"{label}: history store: run {rid} {'stored' if new else 'was already stored'} in {db._shown(url)}")
            except (db.StoreError, OSError) as e:
                say(f"{label}: history store: not stored ({e}); hostbench history ingest {run.path}")
    finally:
        st.close()


def run(args) -> int:
    """`hostbench run --all-gpus [--gpus ...] [--out DIR] [pytest args]`."""
    from cudnn_hostbench.scripts.node import slow_gpu as report

    prog = getattr(args, "prog", "hostbench run")
    pytest_args = list(getattr(args, "pytest_args", None) or [])
    try:
        plan, out = _plan_and_out(args)
    except _BadOption as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    for line in plan.lines():
        print(line, flush=True)
    fe = frontend_version()
    jobs = [Job(fe, {"out": out / f"gpu{s.gpu.index}"}, gpu=s.gpu.index) for s in plan.slots]

    def done(job, slot, res):
        res["gpu_label"] = slot.label
        print(f"{slot.label}: {res['status']} {res.get('detail') or ''}".rstrip(), flush=True)

    results = run_jobs(jobs, plan.slots, runner(pytest_args, args.job_timeout, ROOT), done)
    failed = [failure_line(r) for r in results if r.get("status") != "ok"]
    runs = _load_runs(results, failed)
    store_runs(runs, out, lambda message: print(message, flush=True))
    fs = report.factors(runs)
    (out / "node.md").write_text(report.markdown(fs, failed, runs), encoding="utf-8")
    (out / "node.json").write_text(report.to_json(fs, failed), encoding="utf-8")
    print(report.render_text(fs, failed), end="")
    print(f"wrote {out / 'node.md'}, {out / 'node.json'}")
    for line in failed:
        print(f"{prog}: {line}", file=sys.stderr)
    if failed:
        return 2
    return 1 if args.fail_on_slow and any(f.slow for f in fs) else 0


class _BadOption(Exception):
    """An option run cannot go on with; its message says which and why."""


def _plan_and_out(args) -> tuple:
    """(the node's plan, the output folder); raises _BadOption saying which option is wrong."""
    if not args.all_gpus:
        raise _BadOption(f"--gpus {args.gpus}: only with --all-gpus")
    if getattr(args, "reference", False):
        raise _BadOption("--reference: not with --all-gpus (it measures; --reference only renders)")
    try:
        plan = placement.node_plan(args.gpus)
    except placement.NodeError as e:
        raise _BadOption(f"--all-gpus: {e}") from e
    out = Path(args.out or ROOT / "results" / f"node-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and not out.is_dir():
        raise _BadOption(f"--out {out}: exists and is not a folder")
    return plan, out


def _load_runs(results: list, failed: list) -> dict:
    """gpu label -> its run file, for each job that ran; one that does not load is a failure."""
    from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run

    runs = {}
    for res in results:
        if res.get("status") == "ok":
            try:
                runs[res["gpu_label"]] = load_run(res["run_file"], need_records=True)
            except RunFileError as e:
                res["status"] = "failed"
                failed.append(failure_line({**res, "status": "failed", "detail": str(e)}))
    return runs
