"""Run the probe suite under several nvidia-cudnn-frontend wheels and merge the runs.

    hostbench matrix --wheels .whlm .whl --out OUT/matrix -- --hb-sizes 256 -k "execute"

Each wheel is installed with pip into its own folder (/tmp/fe-<ver>, --no-deps, nothing else
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
its NUMA node (scripts/node_matrix.py; docs/node.md). `--only 1.20.0,1.26.0` splits a matrix over
several invocations;
`--merge-only [--from DIR...]` rebuilds matrix.md (and, with --from, a combined matrix.json)
from the outputs already written. Only the merge needs pandas and scipy; without them matrix.md
holds the status table alone.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: make `bench` and `reports` importable
    sys.path.insert(0, str(ROOT))

from cudnn_hostbench.bench.measure import node  # noqa: E402
from cudnn_hostbench.reports import fmt, store  # noqa: E402  (no pandas until the merge)
from cudnn_hostbench.scripts import node_matrix  # noqa: E402
from cudnn_hostbench.scripts.cli import alias  # noqa: E402

WHEEL = re.compile(r"^nvidia_cudnn_frontend-([0-9][^-]*)-.*\.whl$")
TAIL = 2000
IMPORT_CHECK = (
    "import cudnn, sys\n"
    "print(getattr(cudnn, '__version__', '?'))\n"
    "print(cudnn.__file__)\n"
    "try:\n    print(cudnn.backend_version())\n"
    "except Exception as e:\n    print(f'backend_version failed: {e}')\n"
)


def find_wheels(dirs) -> dict[str, Path]:
    """{version: wheel} over the folders, first folder wins, ordered by version."""
    found: dict[str, Path] = {}
    for d in dirs:
        for w in sorted(Path(d).glob("*.whl")) if Path(d).is_dir() else []:
            m = WHEEL.match(w.name)
            if m and m.group(1) not in found:
                found[m.group(1)] = w
    return dict(sorted(found.items(), key=lambda kv: store.version_key(kv[0])))


def lib_label(d: str) -> str:
    """A backend folder's name in file names: its libcudnn.so.X.Y.Z version, else the folder name."""
    vers = sorted(re.findall(r"libcudnn\.so\.(\d+(?:\.\d+)*)", " ".join(os.listdir(d)))) if os.path.isdir(d) else []
    return max(vers, key=store.version_key) if vers else re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(d).name)


def tail(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return (text or "")[-TAIL:]


def run_proc(cmd, env, cwd, timeout) -> tuple[int | None, str, str]:
    """(returncode or None on timeout, stdout, stderr); a timeout kills the whole process group."""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def install(python: str, wheel: Path, target: Path) -> tuple[bool, str]:
    if target.exists():  # pip --target will not replace an existing package without --upgrade
        shutil.rmtree(target)
    cmd = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--disable-pip-version-check", "--target", str(target), str(wheel)]
    rc, out, err = run_proc(cmd, os.environ.copy(), None, 300)
    return rc == 0, tail(out + err)


def _prepend(path: str, existing: str | None) -> str:
    return os.pathsep.join([path] + ([existing] if existing else []))


def run_one(args, ver: str, lib: str | None, target: Path, pytest_args: list[str], timeout: float, slot=None) -> dict:
    """Import check, then the suite, for one frontend version (and backend folder)."""
    label = ver if lib is None else f"{ver}+cudnn{lib_label(lib)}"
    name = f"run-fe{ver}" + ("" if lib is None else f"-cudnn{lib_label(lib)}") + ".json"
    out_file = Path(args.out) / name
    entry = {"version": ver, "label": label, "cudnn_lib": lib, "run_file": name, "status": "", "detail": ""}
    env = os.environ.copy() if slot is None else node.gpu_env(os.environ, slot)   # --gpus: its GPU and place
    env["PYTHONPATH"] = _prepend(str(target), env.get("PYTHONPATH"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["HOSTBENCH_STORE"] = "off"   # the suite's own copy stays out of the store: the matrix stores its part
    if lib:
        env["LD_LIBRARY_PATH"] = _prepend(lib, env.get("LD_LIBRARY_PATH"))
    rc, out, err = run_proc([args.python, "-c", IMPORT_CHECK], env, str(args.root), min(120, timeout))
    if rc != 0:
        what = "timed out" if rc is None else f"rc {rc}"
        return {**entry, "status": "import failed", "detail": f"{what}: {tail(err or out)}"}
    lines = out.splitlines() + ["", "", ""]
    entry.update(imported=lines[0], imported_from=lines[1], backend=lines[2])
    if not lines[1].startswith(str(target)):
        return {**entry, "status": "import failed", "detail": f"cudnn came from {lines[1]}, not {target}"}
    out_file.unlink(missing_ok=True)
    from cudnn_hostbench.scripts.run import pinned_config
    cmd = [args.python, "-m", "pytest", "probes", "--benchmark-only", f"--benchmark-json={out_file}",
           "-q", "-p", "no:cacheprovider", *pinned_config(Path(args.root)), *pytest_args]
    if (Path(args.root) / "conftest.py").exists() and not any(a.startswith("--hb-out") for a in pytest_args):
        # the suite's own outputs (records.jsonl, run.json, tables) stay out of --out
        cmd += [f"--hb-out={target}-results"]
    cmd = cmd if slot is None else node.pinned(cmd, slot.cpus, args.python)   # --gpus: on its cores only
    t0 = time.monotonic()
    rc, out, err = run_proc(cmd, env, str(args.root), timeout)
    entry["seconds"] = round(time.monotonic() - t0, 1)
    entry["pytest_rc"] = rc
    if rc is None:
        return {**entry, "status": "timed out", "detail": f"after {timeout:.0f} s: {tail(err or out)}"}
    if not out_file.exists():
        return {**entry, "status": "failed", "detail": f"pytest rc {rc}, no run file: {tail(out + err)}"}
    # rc 1: some tests failed, the rest were measured and saved
    detail = "" if rc == 0 else f"pytest rc {rc}: {tail(out.strip().splitlines()[-1] if out.strip() else err)}"
    return {**entry, "status": "ok", "detail": detail}


def pivot(frame, value: str, labels: list[str]):
    """Rows (probe, variant, mode, size), one column of `value` per version label."""
    t = frame.pivot_table(index=["probe", "variant", "mode", "size"], columns="run", values=value,
                          aggfunc="median", sort=False)
    return t[[c for c in labels if c in t.columns]]


def frame_md(t) -> str:
    rows = [[*idx, *(fmt.num(v, 2, "-") for v in vals)] for idx, vals in zip(t.index, t.values)]
    return fmt.md_table(["probe", "variant", "mode", "size", *t.columns], rows)


def store_problem(url: str | None) -> str:
    """Why the history store cannot take parts, in one line; '' when it can (or is off)."""
    if url and url.lower() == "off":
        return ""
    try:
        from cudnn_hostbench.reports.history import db
    except ImportError:
        return ""    # store_part says so per part; the merge itself needs no store
    try:
        db.open_store(url or db.default_url(), create=True).close()
    except db.StoreError as e:
        return f"--store: {store.one_line(str(e))}"
    return ""


def store_part(url: str | None, path: Path) -> str:
    """Ingests one finished part into the history store; a line saying where, or why not."""
    if url and url.lower() == "off":
        return ""
    try:
        from cudnn_hostbench.bench.measure.records import RunFileError, load_run
        from cudnn_hostbench.reports.history import db
    except ImportError as e:
        return f"  not stored in the history store ({e})"
    try:
        st = db.open_store(url or db.default_url(), create=True)
        try:
            rid, new = st.ingest_run(load_run(path, need_records=True))
        finally:
            st.close()
    except (db.StoreError, RunFileError, OSError) as e:
        return f"  not stored in the history store: {store.one_line(str(e))}"
    return f"  history store: {f'run {rid} stored' if new else f'already stored as run {rid}'}"


def merge(out: Path, entries: list[dict], dashboard: str | None = None):
    """Loads the ok runs, writes matrix.md; returns the median µs table (or None without pandas)."""
    status = fmt.md_table(["version", "status", "seconds", "imported", "detail"],
                      [[e["label"], e["status"], e.get("seconds", ""), e.get("imported", ""),
                        (e.get("detail") or "")[-300:]] for e in entries])
    text = ["# nvidia-cudnn-frontend version matrix", "", status, ""]
    path = {e["label"]: Path(e.get("path") or out / e["run_file"]) for e in entries}
    files = [path[e["label"]] for e in entries if e["status"] == "ok"]
    try:
        import pandas  # noqa: F401
        import scipy  # noqa: F401
    except ImportError as e:
        text += [f"Merge skipped ({e}); run `hostbench matrix --merge-only --out {out}` "
                 "where pandas and scipy are installed."]
        (out / "matrix.md").write_text("\n".join(text) + "\n", encoding="utf-8")
        return None
    from cudnn_hostbench.reports import compare

    runs, errors = store.load_runs(files)
    by_path = {str(p): label for label, p in path.items()}
    runs = [r for r in runs if r.path in by_path]
    runs.sort(key=lambda r: store.version_key(by_path[r.path]))
    labels = [by_path[r.path] for r in runs]
    text += [f"- could not load: {e}" for e in errors]
    if not runs:
        (out / "matrix.md").write_text("\n".join(text + ["No run to merge."]) + "\n", encoding="utf-8")
        return None
    frame = store.records_frame(runs, labels)
    med = pivot(frame, "median_us", labels)
    above = pivot(frame[~frame.is_baseline], "above_us", labels)
    text += ["## Median µs per call (per op / step where the unit says so)", "", frame_md(med), "",
             "## µs above the baseline (torch_mm), same mode and size", "", frame_md(above), ""]
    from cudnn_hostbench.reports import pack_cost
    text += pack_cost.matrix_section(runs, labels)   # µs per extra pack tensor, per version
    changes = []
    for (la, a), (lb, b) in zip(zip(labels, runs), list(zip(labels, runs))[1:]):
        df = compare.compare(a, b)
        for r in df[df.verdict.isin(["SLOWER", "FASTER"])].itertuples(index=False):
            changes.append([f"{la} → {lb}", r.probe, r.variant, r.mode, r.size,
                            f"{r.base:.2f}", f"{r.new:.2f}", f"{r.change * 100:+.1f}%", r.verdict])
    gone = frame[frame.median_us.isna()]
    if not gone.empty:
        text += ["## Not measured", "", fmt.md_table(["version", "probe", "variant", "mode", "size", "status"],
                 gone[["run", "probe", "variant", "mode", "size", "status"]].values.tolist()), ""]
    text += ["## Verdicts from one version to the next (SLOWER/FASTER only; `hostbench compare` rule)", "",
             fmt.md_table(["versions", "probe", "variant", "mode", "size", "before", "after", "change", "verdict"],
                      changes) if changes else "No significant change between neighbouring versions.", ""]
    (out / "matrix.md").write_text("\n".join(text), encoding="utf-8")
    if dashboard:
        from cudnn_hostbench.reports import dashboard as dash
        dash.build(runs, dashboard, errors, order="version", title="nvidia-cudnn-frontend version matrix")
    return med


def read_matrices(folders) -> dict[Path, dict | None]:
    """Each folder's matrix.json (None where it has none), read once; ValueError in one line for a
    folder that does not exist or a matrix.json that is not JSON."""
    docs = {}
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise ValueError(f"--from {folder}: no such folder")
        mj = folder / "matrix.json"
        try:
            docs[folder] = json.loads(mj.read_text(encoding="utf-8")) if mj.exists() else None
        except (OSError, ValueError) as e:
            raise ValueError(f"{mj}: not a readable matrix.json ({e})") from None
        doc = docs[folder]
        if doc is not None and not (isinstance(doc, dict) and isinstance(doc.get("versions"), list) and all(
                isinstance(e, dict) and {"label", "run_file"} <= set(e) for e in doc["versions"])):
            raise ValueError(f"{mj}: not a matrix.json (no 'versions' list of entries with a label and run_file)")
    return docs


def entries_for_merge(docs: dict[Path, dict | None]) -> list[dict]:
    """matrix.json's entries, plus run-*.json files it does not list, from each folder; a later
    folder's entry for the same label wins (a re-run of one version)."""
    found: dict[str, dict] = {}
    for folder, doc in docs.items():
        entries = list(doc["versions"]) if doc else []
        known = {e["run_file"] for e in entries}
        for f in sorted(folder.glob("run-*.json")):
            if f.name not in known:
                m = re.match(r"run-fe(.+)\.json$", f.name)
                v = m.group(1).replace("-cudnn", "+cudnn") if m else f.stem
                entries.append({"version": v, "label": v, "run_file": f.name, "status": "ok", "detail": "found"})
        for e in entries:
            found[e["label"]] = {**e, "path": str(folder / e["run_file"])} if e.get("run_file") else e
    return sorted(found.values(), key=lambda e: store.version_key(e["label"]))


def shared_settings(docs: dict[Path, dict | None]) -> dict:
    """pytest_args and python of the merged matrices, where every one of them agrees (a split
    matrix is one measurement only if its parts ran the same suite)."""
    if not all(docs.values()):
        return {}
    first, *_ = docs.values()
    return {k: first[k] for k in ("pytest_args", "python") if all(k in d and d[k] == first[k] for d in docs.values())}


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
    node_matrix.add_arguments(ap)


def run(args) -> int:
    pytest_args = args.rest
    out = Path(args.out).resolve()
    if args.merge_only:  # checked before --out is made: a bad source writes nothing
        try:
            docs = read_matrices(args.sources or ([out] if out.is_dir() else []))
        except ValueError as e:
            print(f"version_matrix: {e}", file=sys.stderr)
            return 2
        entries = entries_for_merge(docs)
        # a store that cannot take the parts: said before anything is written (made only with a part to store)
        problem = store_problem(args.store) if any(e["status"] == "ok" for e in entries) else ""
        if problem:
            print(f"version_matrix: {problem}", file=sys.stderr)
            return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"version_matrix: --out {out}: cannot make the folder ({e.strerror or e})", file=sys.stderr)
        return 2
    args.out = str(out)
    if args.merge_only:
        for e in entries:   # parts merged from elsewhere are stored too (each run once)
            if e["status"] == "ok":
                line = store_part(args.store, Path(e.get("path") or out / e["run_file"]))
                if line:
                    print(line, flush=True)
        if args.sources:  # the combined status, beside the combined matrix.md
            doc = {"merged_from": args.sources, **shared_settings(docs), "versions": entries}
            (out / "matrix.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    else:
        wheels = find_wheels(args.wheels)
        if args.only:
            wheels = {v: w for v, w in wheels.items() if v in args.only.split(",")}
        if not wheels:
            print(f"no nvidia_cudnn_frontend-*.whl in {args.wheels}", file=sys.stderr)
            return 2
        if args.gpus:   # one version per GPU, in parallel
            return node_matrix.main(args, wheels, pytest_args, out)
        entries, start = [], time.monotonic()
        doc = {"pytest_args": pytest_args, "python": sys.version.split()[0], "versions": entries}
        for ver, wheel in wheels.items():
            target = Path(args.target_root) / f"fe-{ver}"
            ok, log = install(args.python, wheel, target)
            for lib in args.cudnn_lib or [None]:
                left = args.deadline - (time.monotonic() - start) if args.deadline else float("inf")
                base = {"version": ver, "label": ver if lib is None else f"{ver}+cudnn{lib_label(lib)}",
                        "cudnn_lib": lib, "wheel": wheel.name, "run_file": "", "detail": ""}
                if not ok:
                    e = {**base, "status": "install failed", "detail": log}
                elif left < min(30, args.timeout):
                    e = {**base, "status": "skipped", "detail": "out of time (--deadline)"}
                else:
                    e = {"wheel": wheel.name, **run_one(args, ver, lib, target, pytest_args,
                                                        min(args.timeout, left))}
                entries.append(e)
                print(f"fe {e['label']}: {e['status']} {e.get('detail', '')[-200:]}".rstrip(), flush=True)
                if e["status"] == "ok":
                    line = store_part(args.store, out / e["run_file"])
                    if line:
                        print(line, flush=True)
                # rewritten after every version, so a killed matrix keeps what it finished
                doc["wall_s"] = round(time.monotonic() - start, 1)
                (out / "matrix.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    med = merge(out, entries, args.dashboard)
    if med is not None:
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
    print(f"wrote {out / 'matrix.md'}")
    return 0 if any(e["status"] == "ok" for e in entries) else 1


main = alias("matrix")   # python -m cudnn_hostbench.scripts.version_matrix: `hostbench matrix`

if __name__ == "__main__":
    sys.exit(main())
