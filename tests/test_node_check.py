"""scripts/node/node_check.py, the alone-vs-alongside check, on CPU: stand-in GPUs, and each suite replaced
by a synthetic run written where the matrix part (scripts/matrix_part.py) writes it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.node import jobs as node_jobs
from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.runfile.records import run_document, write_run
from cudnn_hostbench.scripts import matrix_part
from cudnn_hostbench.scripts.node import node_check
from tests.helpers import FINGERPRINT
from tests.test_compare import fake_wheel
from tests.test_node import two_gpus
from tests.test_node_report import tight_records


@pytest.fixture
def setup(tmp_path, monkeypatch):
    two_gpus(monkeypatch)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for v in ("1.31.0", "1.32.0"):
        fake_wheel(wheels, v, f'__version__ = "{v}"\n')
    calls, behaviour = [], {"slow": 1.01, "fail": None}

    def run_one(args, ver, lib, target, pytest_args, timeout, slot=None):
        phase = Path(args.out).name if Path(args.out).name in ("alone", "alongside", "alone2") else "load"
        calls.append((phase, ver, slot.gpu.index, Path(target).name, pytest_args))
        if ver == behaviour["fail"]:
            return {"version": ver, "label": ver, "run_file": "", "status": "import failed",
                    "detail": "rc 1: Traceback ...\nImportError: libcudnn.so.9: cannot open shared object file"}
        slow = behaviour["slow"] if phase == "alongside" else 1.0
        fp = {**FINGERPRINT, "cudnn_frontend": ver, "machine": {"gpu_uuid": slot.gpu.uuid, "boot_id": "b"}}
        name = f"run-fe{ver}.json"
        write_run(Path(args.out) / name, run_document(tight_records(slow, seed=len(calls)), fp))
        return {"version": ver, "label": ver, "run_file": name, "status": "ok", "detail": "", "seconds": 1.0}

    monkeypatch.setattr(matrix_part, "run_one", run_one)
    base = ["--wheels", str(wheels), "--version", "1.32.0", "--target-root", str(tmp_path / "t")]
    return base, calls, behaviour, tmp_path


def test_alone_alongside_alone_on_one_gpu_while_the_others_carry_load(setup, capsys):
    base, calls, _, tmp = setup
    out = tmp / "check"
    assert node_check.main([*base, "--out", str(out), "--", "-k", "execute"]) == 0
    assert [c[:4] for c in calls] == [
        ("alone", "1.32.0", 0, "fe-1.32.0"),
        ("alongside", "1.32.0", 0, "fe-1.32.0"), ("load", "1.31.0", 1, "fe-1.31.0-gpu1"),
        ("alone2", "1.32.0", 0, "fe-1.32.0")]
    assert {c[4] == ["-k", "execute"] for c in calls} == {True}
    md = (out / "check.md").read_text()
    assert "alongside vs alone: SAFE" in md and "alongside vs alone2: SAFE" in md and "alone2 vs alone: SAFE" in md
    assert "\nLoad: 1 job(s) ran beside the checked run for " in md
    assert (out / "alongside" / "gpu1" / "run-fe1.31.0.json").exists()
    assert (out / "alone" / "matrix.json").exists() and capsys.readouterr().err == ""


def test_neighbours_that_slow_the_gpu_bound_rows_are_not_shown_safe(setup):
    base, calls, behaviour, tmp = setup
    behaviour["slow"] = 1.08
    assert node_check.main([*base, "--out", str(tmp / "c"), "--once"]) == 1
    assert [c[0] for c in calls] == ["alone", "alongside", "load"]
    text = (tmp / "c" / "check.md").read_text()
    assert "alongside vs alone: NOT SHOWN SAFE" in text and "kernel k: +" in text   # one kernel, every row


def test_a_load_job_that_fails_is_one_line_and_the_check_is_kept(setup, capsys):
    base, _, behaviour, tmp = setup
    behaviour["fail"] = "1.31.0"
    assert node_check.main([*base, "--out", str(tmp / "c"), "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hostbench node-check: GPU 1 (GPU-fake1): fe 1.31.0 (load): import failed: "
                   "ImportError: libcudnn.so.9: cannot open shared object file"]
    assert "alongside vs alone: SAFE" in (tmp / "c" / "check.md").read_text()


def test_bad_input_is_one_line(setup, capsys):
    base, calls, _, tmp = setup
    assert node_check.main([*base[:2], "--version", "9.9.9", "--out", str(tmp / "x")]) == 2
    assert capsys.readouterr().err.strip().startswith("hostbench node-check: --version 9.9.9: no wheel for it in ")
    assert node_check.main([*base, "--gpus", "1"]) == 2
    assert capsys.readouterr().err.strip() == "hostbench node-check: GPU 1 (GPU-fake1): the only GPU; alongside needs two or more"
    assert node_check.main([*base, "--gpu", "4"]) == 2
    assert capsys.readouterr().err.strip() == "hostbench node-check: GPU 4: not among --gpus all"
    assert not calls and not (tmp / "x").exists()


def test_ctrl_c_kills_the_jobs_started_in_their_own_session():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        time.sleep(0.2)
        assert p.pid in node_jobs.kill_children()
        assert p.wait(timeout=10) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
    assert placement.job_fields({placement.NODE_ENV: "bad"}) == {}
