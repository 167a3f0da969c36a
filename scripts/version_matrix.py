"""Run the probe suite under several nvidia-cudnn-frontend wheels and merge the runs.

    hostbench matrix --wheels .whlm .whl --out OUT/matrix -- --hb-sizes 256 -k "execute"

By default the versions run as one interleaved A/B job on this machine (scripts/matrix_ab.py):
worker processes alternate between them, and every version is judged against the reference
(--reference, default the newest) on its own pairs; its report is OUT/ab/ab.md. `--serial` runs
one suite per version instead, one after another, as described below.

With --serial, each wheel is installed with pip into its own folder (/tmp/fe-<ver>, --no-deps, nothing else
touched) and the suite runs in its own process with that folder first on PYTHONPATH, so the
versions never share an interpreter. `--cudnn-lib DIR` (repeatable) runs every version once per
cuDNN backend library folder, put first on LD_LIBRARY_PATH; without it the backend that torch
loads is used (the H200 device has only that one).

Outputs, all directly in --out:
  run-fe<ver>[-cudnn<lib>].json  one pytest-benchmark run per version (and backend)
  matrix.json                    per version: status (ok / install failed / import failed /
                                 timed out / failed), imported version, stderr tail, run file
  matrix.md                      status, median µs and µs above torch_mm per version, and the
                                 verdicts that change from one version to the next
Each finished part also goes into the history store (--store URL, else $HOSTBENCH_STORE, else
the default store, docs/history.md; `--store off` for none), where the dashboard's version view reads it.
`--gpus all` runs one version per GPU of the node at once, each pinned to its GPU and to cores of
its NUMA node (scripts/node/parallel_matrix.py; docs/node.md). `--only 1.20.0,1.26.0` splits a matrix over
several invocations;
`--merge-only [--from DIR...]` rebuilds matrix.md (and, with --from, a combined matrix.json)
from the outputs already written. Only the merge needs pandas and scipy; without them matrix.md
holds the status table alone.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: make `bench` and `reports` importable
    sys.path.insert(0, str(ROOT))

from cudnn_hostbench.scripts.cli import alias, exit_with  # noqa: E402
from cudnn_hostbench.scripts.matrix_merge import entries_for_merge, merge, read_matrices, shared_settings  # noqa: E402
from cudnn_hostbench.scripts.matrix_part import find_wheels, install, lib_label, run_one, store_part, store_problem  # noqa: E402
from cudnn_hostbench.scripts.node import parallel_matrix  # noqa: E402


def add_parser(command) -> None:
    ap = command("matrix", run, extra="after --", description=__doc__, epilog="arguments after -- go to pytest")
    ap.add_argument("--wheels", nargs="+", default=[".whlm", ".whl"], help="folders of frontend wheels")
    ap.add_argument("--out", default="results/matrix", help="folder for run files, matrix.json, matrix.md")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per version for the suite")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds for the whole matrix; versions that no longer fit are skipped (0: none)")
    ap.add_argument("--cudnn-lib", action="append", default=[], metavar="DIR",
                    help="cuDNN backend library folder, put first on LD_LIBRARY_PATH (repeatable)")
    ap.add_argument("--only", metavar="V1,V2", help="run only these frontend versions (to split a matrix)")
    ap.add_argument("--merge-only", action="store_true", help="only merge run files already written")
    ap.add_argument("--from", dest="sources", nargs="+", metavar="DIR",
                    help="with --merge-only: folders of earlier matrix outputs to merge (default --out)")
    ap.add_argument("--dashboard", metavar="DIR", help="also write a dashboard there (many files)")
    ap.add_argument("--store", metavar="URL",
                    help="history store for the parts (default $HOSTBENCH_STORE, else the default store: "
                         "docs/history.md; off: none)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for pip and pytest")
    ap.add_argument("--root", default=str(ROOT), help="where `probes/` is (the repository root)")
    ap.add_argument("--target-root", default="/tmp", help="where the fe-<ver> install folders go")
    parallel_matrix.add_arguments(ap)
    ap.add_argument("--serial", action="store_true",
                    help="one suite per version, one after another (the matrix before A/B jobs); default: one "
                         "interleaved A/B job over the versions (scripts/matrix_ab.py)")
    ap.add_argument("--reference", metavar="VER", help="the version every other is judged against (default: the newest)")
    ap.add_argument("--budget-min", type=float, default=20.0, help="minutes for the interleaved job (--deadline overrides)")
    ap.add_argument("--pairs", type=int, default=40, help="at most this many interleaved sets")
    ap.add_argument("--first-pairs", type=int, default=3, help="sets over every row before any is judged")


def run(args) -> int:
    out = Path(args.out).resolve()
    top = out   # the outermost folder this run makes
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    made = not top.exists()
    try:
        return _run(args, out)
    finally:   # a matrix that failed before writing anything leaves no empty folders behind
        gone = out
        while made and gone.is_dir() and not any(gone.iterdir()) and top in (gone, *gone.parents):
            gone.rmdir()
            gone = gone.parent


def _say(prog: str, text: str) -> int:
    print(f"{prog}: {text}", file=sys.stderr)
    return 2


def _merge_sources(args, out: Path):
    """--merge-only: (the matrices read, their entries), or 2 (said) for a bad source or store;
    checked before --out is made, so a bad source writes nothing."""
    try:
        docs = read_matrices(args.sources or ([out] if out.is_dir() else []))
    except ValueError as e:
        return _say(args.prog, str(e))
    entries = entries_for_merge(docs)
    # a store that cannot take the parts: said before anything is written (made only with a part to store)
    problem = store_problem(args.store) if any(e["status"] == "ok" for e in entries) else ""
    if problem:
        return _say(args.prog, problem)
    return docs, entries


def _wheels(args):
    """The wheels to run (--only picks some), or 2 (said) when there is none; checked before --out
    is made: no wheel writes nothing."""
    wheels = find_wheels(args.wheels)
    if args.only:
        wheels = {v: w for v, w in wheels.items() if v in args.only.split(",")}
    if not wheels:
        return _say(args.prog, f"no nvidia_cudnn_frontend-*.whl in {' '.join(args.wheels)}"
                    + (f" for --only {args.only}" if args.only else ""))
    return wheels


def _store_ok_part(args, part: Path) -> None:
    line = store_part(args.store, part)
    if line:
        print(line, flush=True)


def _merge_only(args, out: Path, docs, entries: list) -> None:
    """Store the parts merged from elsewhere (each run once) and write the combined status."""
    for e in entries:   # parts merged from elsewhere are stored too (each run once)
        if e["status"] == "ok":
            _store_ok_part(args, Path(e.get("path") or out / e["run_file"]))
    if args.sources:  # the combined status, beside the combined matrix.md
        doc = {"merged_from": args.sources, **shared_settings(docs), "versions": entries}
        (out / "matrix.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")


def _entry(args, ver: str, wheel: Path, lib, target: Path, installed: tuple, pytest_args, start: float) -> dict:
    """One version (and cuDNN library) of the serial matrix: run, or why not."""
    ok, log = installed
    left = args.deadline - (time.monotonic() - start) if args.deadline else float("inf")
    base = {"version": ver, "label": ver if lib is None else f"{ver}+cudnn{lib_label(lib)}",
            "cudnn_lib": lib, "wheel": wheel.name, "run_file": "", "detail": ""}
    if not ok:
        return {**base, "status": "install failed", "detail": log}
    if left < min(30, args.timeout):
        return {**base, "status": "skipped", "detail": "out of time (--deadline)"}
    return {"wheel": wheel.name, **run_one(args, ver, lib, target, pytest_args, min(args.timeout, left))}


def _serial(args, wheels: dict, pytest_args, out: Path) -> list:
    """The serial matrix: each version in turn, matrix.json rewritten after each; its entries."""
    entries: list = []
    start = time.monotonic()
    doc = {"pytest_args": pytest_args, "python": sys.version.split()[0], "versions": entries}
    for ver, wheel in wheels.items():
        target = Path(args.target_root) / f"fe-{ver}"
        installed = install(args.python, wheel, target)
        for lib in args.cudnn_lib or [None]:
            e = _entry(args, ver, wheel, lib, target, installed, pytest_args, start)
            entries.append(e)
            print(f"fe {e['label']}: {e['status']} {e.get('detail', '')[-200:]}".rstrip(), flush=True)
            if e["status"] == "ok":
                _store_ok_part(args, out / e["run_file"])
            # rewritten after every version, so a killed matrix keeps what it finished
            doc["wall_s"] = round(time.monotonic() - start, 1)
            (out / "matrix.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return entries


def _run(args, out: Path) -> int:
    pytest_args = args.rest
    if args.merge_only:
        sources = _merge_sources(args, out)
        if isinstance(sources, int):
            return sources
        docs, entries = sources
    else:
        wheels = _wheels(args)
        if isinstance(wheels, int):
            return wheels
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return _say(args.prog, f"--out {out}: cannot make the folder ({e.strerror or e})")
    args.out = str(out)
    if args.merge_only:
        _merge_only(args, out, docs, entries)
    elif args.gpus:   # one version per GPU, in parallel
        return parallel_matrix.main(args, wheels, pytest_args, out)
    elif not args.serial:   # one interleaved A/B job over the versions
        from cudnn_hostbench.scripts import matrix_ab
        return matrix_ab.run(args, wheels, pytest_args, out)
    else:
        entries = _serial(args, wheels, pytest_args, out)
    med = merge(out, entries, args.dashboard)
    if med is not None:
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
    print(f"wrote {out / 'matrix.md'}")
    return 0 if any(e["status"] == "ok" for e in entries) else 1


main = alias("matrix")   # python -m cudnn_hostbench.scripts.version_matrix: `hostbench matrix`

if __name__ == "__main__":
    exit_with(main())
