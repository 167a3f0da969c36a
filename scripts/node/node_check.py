"""Shows that the parallel version matrix is safe: one frontend version measured alone on a GPU and
on the same GPU alongside N-1 other jobs must agree within the gate's same-start floors on eager,
graph and device rows (scripts/node/safety.py).

    hostbench node-check --wheels .whlm .whl --version 1.32.0 --out results/node-check \\
        -- --hb-sizes 256 -k "execute or set_stream or wrapper or pack_size"

Three phases, each pinned as in the parallel matrix (the whole node's plan):
  alone/      the version on --gpu (default the first GPU), every other GPU idle;
  alongside/  the same, while every other GPU runs the suite under another version of --wheels
              (cycled; the same version where there is no other), each in its own install folder;
  alone2/     alone again (unless --once): the control, how far a row moves with no neighbours.
Then check.md: alongside against each alone run, and alone against alone. Exit 0 safe, 1 not
shown safe, 2 bad input or a job that failed (one line naming its GPU and version; the other
phases' files are kept). These runs stay out of the history store: they are a test of the node.
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.node.jobs import Job
from cudnn_hostbench.scripts.cli import alias, exit_with
from cudnn_hostbench.scripts.node import parallel_matrix as node_matrix


def add_parser(command) -> None:
    from cudnn_hostbench.scripts.version_matrix import ROOT
    ap = command("node-check", run, extra="after --", description=__doc__,
                 epilog="arguments after -- go to pytest")
    ap.add_argument("--wheels", nargs="+", default=[".whlm", ".whl"], help="folders of frontend wheels")
    ap.add_argument("--version", required=True, help="the frontend version to check (its wheel must be in --wheels)")
    ap.add_argument("--gpu", type=int, help="GPU index it runs on (default: the first of --gpus)")
    ap.add_argument("--gpus", default="all", help="GPUs of the node to load (all, or indices / UUIDs)")
    ap.add_argument("--out", default="results/node-check", help="folder for alone/, alongside/, alone2/, check.md")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per suite")
    ap.add_argument("--once", action="store_true", help="no second alone run (no control)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for pip and pytest")
    ap.add_argument("--root", default=str(ROOT), help="where `probes/` is (the repository root)")
    ap.add_argument("--target-root", default="/tmp", help="where the install folders go")


def jobs_for(args, wheels: dict, slots: list, check_gpu: int, out: Path) -> dict[str, list[Job]]:
    """Each phase's jobs: the checked version on its GPU; alongside, one load job per other GPU."""
    target = Path(args.target_root)
    me = lambda phase: Job(f"fe {args.version} ({phase})", {  # noqa: E731
        "version": args.version, "lib": None, "wheel": wheels[args.version], "label": args.version,
        "target": target / f"fe-{args.version}", "out": out / phase}, gpu=check_gpu)
    others = [v for v in wheels if v != args.version] or [args.version]
    load = []
    for s, ver in zip([s for s in slots if s.gpu.index != check_gpu], itertools.cycle(others)):
        k = s.gpu.index
        load.append(Job(f"fe {ver} (load)", {"version": ver, "lib": None, "wheel": wheels[ver], "label": ver,
                                             "target": target / f"fe-{ver}-gpu{k}",
                                             "out": out / "alongside" / f"gpu{k}"}, gpu=k))
    phases = {"alone": [me("alone")], "alongside": [me("alongside"), *load]}
    if not args.once:
        phases["alone2"] = [me("alone2")]
    return phases


def run(args) -> int:
    from cudnn_hostbench.scripts.matrix_part import find_wheels
    from cudnn_hostbench.scripts.node import safety as node_safety

    wheels = find_wheels(args.wheels)
    if args.version not in wheels:
        print(f"{args.prog}: --version {args.version}: no wheel for it in {' '.join(args.wheels)}", file=sys.stderr)
        return 2
    try:
        plan, check_gpu = _plan(args)
    except placement.NodeError as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    for line in plan.lines():
        print(line, flush=True)
    phases = jobs_for(args, wheels, plan.slots, check_gpu, out)
    node_matrix.install_all(args, [j for js in phases.values() for j in js])
    failed, coverage = _run_phases(args, phases, plan, out)
    for line in failed:
        print(f"{args.prog}: {line}", file=sys.stderr)
    runs = _load_runs(args, phases, out, failed)
    pairs = [("alone", "alongside"), ("alone2", "alongside"), ("alone", "alone2")]
    checks = [node_safety.check(runs[a], runs[b], f"{b} vs {a}") for a, b in pairs if a in runs and b in runs]
    text = "# Alone against alongside: the parallel matrix's safety check\n\n" + node_safety.render(checks) + coverage + "\n"
    (out / "check.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {out / 'check.md'}")
    if failed:
        return 2
    judged = [c for c in checks if "alongside" in c.label]
    return 0 if judged and all(c.safe for c in judged) else 1


def _plan(args) -> tuple:
    """(the node's plan, the GPU checked); raises NodeError where the check cannot run on them."""
    plan = placement.node_plan(args.gpus)
    check_gpu = plan.slots[0].gpu.index if args.gpu is None else args.gpu
    if check_gpu not in [s.gpu.index for s in plan.slots]:
        raise placement.NodeError(f"GPU {check_gpu}: not among --gpus {args.gpus}")
    if len(plan.slots) < 2:
        raise placement.NodeError(f"{plan.slots[0].label}: the only GPU; alongside needs two or more")
    return plan, check_gpu


def _run_phases(args, phases: dict, plan, out: Path) -> tuple[list, str]:
    """Runs each phase's jobs in parallel on their GPUs; (the failures, the load's coverage text)."""
    from cudnn_hostbench.scripts.node import safety as node_safety

    pytest_args = args.rest
    failed: list = []
    coverage = ""
    args.deadline, args.store = 0, "off"
    for phase, jobs in phases.items():
        (out / phase).mkdir(parents=True, exist_ok=True)
        for job in jobs:
            Path(job.data["out"]).mkdir(parents=True, exist_ok=True)
        slots = placement.subset(plan.slots, [s.gpu for s in plan.slots if s.gpu.index in {job.gpu for job in jobs}])
        print(f"{phase}: {len(jobs)} job(s) on GPU(s) {', '.join(str(s.gpu.index) for s in slots)}", flush=True)
        doc = {"pytest_args": pytest_args, "phase": phase, "versions": [],
               "node": {"basis": plan.basis, "gpus": [node_matrix.slot_info(s) for s in slots]}}
        results = node_matrix.run_parallel(args, jobs, slots, pytest_args, doc, out / phase,
                                           say=lambda message: print(message, flush=True), store=False)
        failed += node_matrix.failures(results)
        if phase == "alongside":
            coverage = node_safety.load_coverage(results, jobs[0].name)
    return failed, coverage


def _load_runs(args, phases: dict, out: Path, failed: list) -> dict:
    """phase -> its run file; the first one that does not load is a failure (when none failed before)."""
    from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run

    runs = {}
    for phase in phases:
        path = out / phase / f"run-fe{args.version}.json"
        try:
            runs[phase] = load_run(path, need_records=True)
        except RunFileError as e:
            if not failed:
                failed.append(str(e))
                print(f"{args.prog}: {e}", file=sys.stderr)
    return runs

main = alias("node-check")   # python -m cudnn_hostbench.scripts.node.node_check: `hostbench node-check`

if __name__ == "__main__":
    exit_with(main())
