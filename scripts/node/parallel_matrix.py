"""The frontend version matrix on every GPU of a node (version_matrix --gpus): N versions at once,
one per GPU, each job pinned to its GPU (CUDA_VISIBLE_DEVICES) and to cores of the NUMA node
nearest it (bench.measure.node.placement). The outputs are version_matrix's, plus in matrix.json the wall
time of the whole matrix, each version's GPU and cores, and the node's plan.

Every wheel is installed first, one after another (pip into its own folder, as version_matrix
does); then the suites run in parallel. A job that fails is one line naming its GPU and version;
the other jobs' results are kept, merged and stored; the exit status is then 2.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.node.jobs import Job, failure_line, run_jobs, slot_info
from cudnn_hostbench.reports import store as runstore
from cudnn_hostbench.scripts import matrix_merge, matrix_part

OK = ("ok", "skipped")   # statuses that are not a failed job (skipped: --deadline said so)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--gpus", metavar="all|0,1,...",
                    help="run the versions in parallel, one per GPU (all: every GPU of the node; or indices / "
                         "UUIDs), each pinned to cores of its GPU's NUMA node; without it, one version at a time "
                         "on the default GPU, as before")


def plan_jobs(wheels: dict, libs: list, target_root: str) -> list[Job]:
    """One job per (version, backend folder), in version order; each version installs once."""
    jobs = []
    for ver, wheel in wheels.items():
        for lib in libs or [None]:
            label = ver if lib is None else f"{ver}+cudnn{matrix_part.lib_label(lib)}"
            jobs.append(Job(f"fe {label}", {"version": ver, "lib": lib, "wheel": wheel, "label": label,
                                             "target": Path(target_root) / f"fe-{ver}"}))
    return jobs


def install_all(args, jobs: list[Job], say=print) -> None:
    """pip-installs each job's wheel into its folder once (serially: pip is not run in parallel)."""
    done: dict = {}
    for j in jobs:
        key = (str(j.data["wheel"]), str(j.data["target"]))
        if key not in done:
            done[key] = matrix_part.install(args.python, j.data["wheel"], j.data["target"])
            if not done[key][0]:
                say(f"{j.name}: install failed")
        j.data["installed"], j.data["install_log"] = done[key]


def runner(args, pytest_args: list[str], deadline_at: float | None):
    """work(job, slot) for run_jobs: one version's import check and suite on its slot."""

    def work(job: Job, slot) -> dict:
        d = job.data
        base = {"version": d["version"], "label": d["label"], "cudnn_lib": d["lib"], "wheel": Path(d["wheel"]).name,
                "run_file": "", "detail": ""}
        left = deadline_at - time.monotonic() if deadline_at else float("inf")
        if not d["installed"]:
            return {**base, "status": "install failed", "detail": d["install_log"]}
        if left < min(30, args.timeout):
            return {**base, "status": "skipped", "detail": "out of time (--deadline)"}
        job_args = argparse.Namespace(**{**vars(args), "out": str(d.get("out") or args.out)})
        return {"wheel": base["wheel"], **matrix_part.run_one(job_args, d["version"], d["lib"], d["target"], pytest_args,
                                                     min(args.timeout, left), slot=slot)}
    return work


def run_parallel(args, jobs: list[Job], slots: list, pytest_args: list[str], doc: dict, out: Path,
                 say=print, store=True) -> list[dict]:
    """Runs the jobs over the slots; each finished entry goes into doc['versions'] (sorted by
    version), the history store and matrix.json at once, so a killed matrix keeps what it finished."""
    entries = doc.setdefault("versions", [])
    t0 = time.monotonic()
    deadline_at = t0 + args.deadline if getattr(args, "deadline", 0) else None

    def done(job: Job, slot, entry: dict) -> None:
        entries.append(entry)
        entries.sort(key=lambda x: runstore.version_key(x.get("label") or ""))
        say(f"{slot.label}: {job.name}: {entry['status']} {(entry.get('detail') or '')[-200:]}".rstrip())
        if store and entry["status"] == "ok":
            line = matrix_part.store_part(args.store, Path(job.data.get("out") or out) / entry["run_file"])
            if line:
                say(line)
        doc["wall_s"] = round(time.monotonic() - t0, 1)
        (out / "matrix.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")

    results = run_jobs(jobs, slots, runner(args, pytest_args, deadline_at), done)
    doc["wall_s"] = round(time.monotonic() - t0, 1)
    (out / "matrix.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    return results


def gpu_section(doc: dict, basis: str) -> str:
    """matrix.md's note on where each version ran: versions on different GPUs differ also by their
    GPUs' own speed (GPU-bound rows about 1.5 % between GPUs; the graph/device floors are 4 %)."""
    from cudnn_hostbench.reports import fmt
    rows = [[e["label"], (e.get("gpu") or {}).get("index", "–"), (e.get("gpu") or {}).get("uuid") or "–",
             (e.get("gpu") or {}).get("cpus", "–"), e["status"], e.get("seconds", "")] for e in doc["versions"]]
    return "\n".join(["", f"## Where each version ran (in parallel, one per GPU; cores from {basis})", "",
                      fmt.md_table(["version", "GPU", "UUID", "cores", "status", "seconds"], rows), "",
                      f"Matrix wall time {doc.get('wall_s', 0):.0f} s. Each version ran on its own GPU: GPU-bound rows "
                      "differ between GPUs by about 1.5 % (hostbench run --all-gpus measures it), within the 4 % "
                      "graph/device floors of the verdicts above.", ""])


def failures(results: list[dict]) -> list[str]:
    """One line per failed job: its GPU, its version, why."""
    return [failure_line(r) for r in results if r.get("status") not in OK]


def main(args, wheels: dict, pytest_args: list[str], out: Path) -> int:
    """version_matrix's matrix with --gpus: plan, install, run in parallel, merge."""
    try:
        plan = placement.node_plan(args.gpus)
    except placement.NodeError as e:
        print(f"{args.prog}: --gpus {args.gpus}: {e}", file=sys.stderr)
        return 2
    for line in plan.lines():
        print(line, flush=True)
    t0 = time.monotonic()
    jobs = plan_jobs(wheels, args.cudnn_lib, args.target_root)
    install_all(args, jobs)
    doc = {"pytest_args": pytest_args, "python": sys.version.split()[0], "versions": [],
           "node": {"basis": plan.basis, "gpus": [slot_info(s) for s in plan.slots]}}
    results = run_parallel(args, jobs, plan.slots, pytest_args, doc, out, say=lambda message: print(message, flush=True))
    doc["wall_s"] = round(time.monotonic() - t0, 1)   # installs included, as in the serial matrix
    (out / "matrix.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    med = matrix_merge.merge(out, doc["versions"], args.dashboard)
    with open(out / "matrix.md", "a", encoding="utf-8") as fh:
        fh.write(gpu_section(doc, plan.basis))
    if med is not None:
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
    print(f"wrote {out / 'matrix.md'} ({doc['wall_s']:.0f} s on {len(plan.slots)} GPU(s))")
    bad = failures(results)
    for line in bad:
        print(f"{args.prog}: {line}", file=sys.stderr)
    if bad:
        return 2
    return 0 if any(e["status"] == "ok" for e in doc["versions"]) else 1
