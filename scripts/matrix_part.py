"""One part of the frontend version matrix (`hostbench matrix`, scripts/version_matrix.py): find the
wheels, install one into its own folder, check what it imports, run the suite under it, and put the
finished part into the history store. scripts/node/parallel_matrix.py runs the same parts one per GPU.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.reports import store

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


def lib_label(folder: str) -> str:
    """A backend folder's name in file names: its libcudnn.so.X.Y.Z version, else the folder name."""
    names = " ".join(os.listdir(folder)) if os.path.isdir(folder) else ""
    vers = sorted(re.findall(r"libcudnn\.so\.(\d+(?:\.\d+)*)", names))
    return max(vers, key=store.version_key) if vers else re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(folder).name)


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
    env = os.environ.copy() if slot is None else placement.gpu_env(os.environ, slot)   # --gpus: its GPU and place
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
    cmd = cmd if slot is None else placement.pinned(cmd, slot.cpus, args.python)   # --gpus: on its cores only
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
        from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run
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
