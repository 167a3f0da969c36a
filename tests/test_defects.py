"""Defects of issue 40, each held by a test on CPU: bad input is one line and exit 2 and costs
nothing already stored; a failed command leaves no folder; --out is checked before the report;
temporary folders go however a command ends; messages name what works."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile.records import Record, run_document, write_run
from cudnn_hostbench.reports.history import db
from cudnn_hostbench.scripts import cli, run
from cudnn_hostbench.scripts.maint.scratch import scratch
from tests.helpers import write_synthetic_run

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reports" / "reference" / "h200"


def one_line_exit_2(capsys, *args) -> str:
    assert cli.main(list(args)) == 2
    out = capsys.readouterr()
    assert out.err.strip() and "\n" not in out.err.strip() and "Traceback" not in out.err, out.err
    assert not out.out.strip(), f"printed before the error: {out.out[:300]}"
    return out.err.strip()


def stored_runs(url: str) -> int:
    st = db.open_store(url)
    try:
        return len(st.runs())
    finally:
        st.close()


# -- the history store -----------------------------------------------------------------------------

def test_history_bench_with_no_runs_is_one_line(capsys):
    assert "--runs 0: must be at least 1" in one_line_exit_2(capsys, "history-bench", "--runs", "0")


@pytest.fixture
def export(tmp_path, capsys):
    """A history export of three runs (and the store it came from)."""
    url = f"sqlite:///{tmp_path / 'src.db'}"
    for seed in range(3):
        write_synthetic_run(tmp_path / "runs" / f"run{seed}.json", seed=seed)
    assert cli.main(["history", "ingest", str(tmp_path / "runs"), "--store", url]) == 0
    out = tmp_path / "all.hbx.jsonl.gz"
    assert cli.main(["history", "export", str(out), "--store", url]) == 0
    capsys.readouterr()
    return out, url


def test_export_of_a_gpu_the_store_does_not_hold_is_one_line(export, tmp_path, capsys):
    _, url = export
    err = one_line_exit_2(capsys, "history", "export", str(tmp_path / "x.hbx.jsonl.gz"), "--gpu", "B999",
                          "--store", url)
    assert "no run of GPU 'B999'" in err and not (tmp_path / "x.hbx.jsonl.gz").exists()


def _cut_gzip(src: Path, dst: Path) -> Path:
    raw = src.read_bytes()
    dst.write_bytes(raw[: len(raw) * 2 // 3])
    return dst


def _cut_line(src: Path, dst: Path) -> Path:
    text = gzip.decompress(src.read_bytes())
    dst.write_bytes(gzip.compress(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1]))   # mid last run
    return dst


@pytest.mark.parametrize("cut", [_cut_gzip, _cut_line], ids=["gzip cut", "jsonl cut"])
def test_a_truncated_export_stores_nothing_of_itself(export, tmp_path, capsys, cut):
    src, _ = export
    bad = cut(src, tmp_path / "cut.hbx.jsonl.gz")
    url = f"sqlite:///{tmp_path / 'new' / 'h.db'}"
    assert "not a readable history export" in one_line_exit_2(capsys, "history", "ingest", str(bad), "--store", url)
    assert not (tmp_path / "new").exists()   # not one run of it: no store made
    # into a store that holds runs: none of the cut file's runs join them
    url = f"sqlite:///{tmp_path / 'old.db'}"
    assert cli.main(["history", "ingest", str(write_synthetic_run(tmp_path / "r.json", seed=9)), "--store", url]) == 0
    capsys.readouterr()
    one_line_exit_2(capsys, "history", "ingest", str(bad), "--store", url)
    assert stored_runs(url) == 1


def test_ingest_of_an_empty_folder_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    url = f"sqlite:///{tmp_path / 'h.db'}"
    err = one_line_exit_2(capsys, "history", "ingest", str(tmp_path / "empty"), "--store", url)
    assert "no run file or history export" in err and not (tmp_path / "h.db").exists()


def test_a_store_url_of_another_database_names_the_supported_ones(capsys):
    err = one_line_exit_2(capsys, "history", "list", "--store", "mysql://me:secret@db.example/hist")
    assert "sqlite:///" in err and "postgresql://" in err and "MySQLdb" not in err and "secret" not in err


# -- hostbench run without a GPU -------------------------------------------------------------------

def test_run_with_arguments_and_no_gpu_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run, "cuda_available", lambda: (False, "torch sees no CUDA GPU"))
    err = one_line_exit_2(capsys, "run", "-k", "execute", "--out", str(tmp_path / "o"))
    assert "-k execute" in err and "--out" in err and not (tmp_path / "o").exists()
    one_line_exit_2(capsys, "run", "--hb-sizes", "256")
    assert cli.main(["run"]) == 0          # no arguments: the committed reference run, as scripts/bench.sh shows it
    assert "reference run" in capsys.readouterr().out


# -- no debris from a failed command ---------------------------------------------------------------

def test_crossover_and_matrix_that_fail_leave_no_folder(tmp_path, capsys):
    out = tmp_path / "a" / "b"
    one_line_exit_2(capsys, "crossover", "--out", str(out))             # this machine has no GPU
    err = one_line_exit_2(capsys, "matrix", "--wheels", str(tmp_path), "--out", str(out))
    assert err.startswith("hostbench matrix: no nvidia_cudnn_frontend-*.whl")
    assert sorted(os.listdir(tmp_path)) == []


def test_out_is_checked_before_the_report_is_printed(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad_out = str(blocker / "sub")
    one_line_exit_2(capsys, "table", str(REF / "run.json"), "--out", bad_out)
    recs = [Record("engine", f"plan_{i}", "256", m, samples=[v] * 3, calls_per_round=10,
                   note=f"plan {i} 'eng{i}' of 2 built; execute_plan_at_index(...)")
            for i, v in ((0, 16.0), (1, 14.0)) for m in ("eager", "graph", "device")]
    f = write_run(tmp_path / "run.json", run_document(recs, {"gpu_name": "H200"}))
    one_line_exit_2(capsys, "engines", str(f), "--out", bad_out)
    one_line_exit_2(capsys, "reprice", str(REF / "audit-naive"), "--run-file", str(REF / "run.json"), "--out", bad_out)
    if Path("/proc/self").is_dir():   # a folder the permission bits allow but no file can be made in (even as root)
        one_line_exit_2(capsys, "table", str(REF / "run.json"), "--out", "/proc/hostbench-out")
    assert sorted(os.listdir(tmp_path)) == ["file", "run.json"]


# -- temporary folders -----------------------------------------------------------------------------

def test_a_scratch_folder_goes_on_an_error_ctrl_c_and_sigterm():
    handler = signal.getsignal(signal.SIGTERM)
    for end in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(end)), scratch("hostbench-t-") as folder:
            (folder / "x").write_text("")
            raise end
        assert not folder.exists()
    with pytest.raises(KeyboardInterrupt), scratch("hostbench-t-") as folder:
        os.kill(os.getpid(), signal.SIGTERM)   # becomes KeyboardInterrupt inside the block only
        for _ in range(100):
            pass
    assert not folder.exists() and signal.getsignal(signal.SIGTERM) == handler   # SIGTERM is itself again


def test_history_bench_killed_leaves_no_temporary_store(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    p = subprocess.Popen([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "history-bench", "--runs", "100000"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):   # until it has made its store
            if any(tmp_path.glob("hostbench-bench-*/history.db")):
                break
            if p.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"])
        p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=60)[1]
    finally:
        p.kill()
    assert p.returncode == 130 and "interrupted" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_swallowed_interrupt_still_ends_the_command_and_its_folder(tmp_path):
    """CI (oldest versions): `history-bench` SIGTERMed mid-ingest still ran 60 s later; the
    KeyboardInterrupt of a signal raised inside a __del__ or a callback is printed and lost."""
    code = ("import time\n"
            "from cudnn_hostbench.scripts.maint import scratch as s\n"
            "s.GRACE_S = 0.5\n"
            "with s.scratch('hostbench-t-') as f:\n"
            "    said = False\n"
            "    while True:\n"
            "        try:\n"
            "            if not said:\n"
            "                said = print(f, flush=True) or True\n"
            "            time.sleep(0.01)\n"
            "        except KeyboardInterrupt:\n"
            "            pass\n")
    p = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp_path)},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        folder = Path(p.stdout.readline().strip())
        assert folder.is_dir()
        p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=30)[1]
    finally:
        p.kill()
    assert p.returncode == 130 and "still unwinding after 0.5 s, ended" in err, err
    assert not folder.exists() and list(tmp_path.iterdir()) == []


def test_an_interrupt_caught_inside_extension_code_still_exits_130(tmp_path):
    """CI (oldest versions): `python -m ... history-bench`, SIGTERMed, printed its one line and then
    died of SIGINT (-2): the KeyboardInterrupt was raised in code a Cython module ran through
    PyRun_String, which sets CPython's unhandled-interrupt flag even though the command caught it."""
    (tmp_path / "interrupted_in_ext.py").write_text(
        "import ctypes\n"
        "from cudnn_hostbench.scripts.cli import exit_with\n"
        "run = ctypes.pythonapi.PyRun_StringFlags\n"
        "run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.c_void_p]\n"
        "run.restype = ctypes.py_object\n"
        "def main():\n"
        "    try:\n"
        "        run(b'raise KeyboardInterrupt', 257, {}, {}, None)\n"   # 257: Py_file_input
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', flush=True)\n"
        "        return 130\n"
        "    return 0\n"
        "exit_with(main())\n")
    p = subprocess.run([sys.executable, "-m", "interrupted_in_ext"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 130 and p.stdout == "interrupted\n", (p.returncode, p.stdout, p.stderr)

def test_bench_sh_installs_into_a_folder_of_its_own():
    text = (ROOT / "scripts" / "bench.sh").read_text()
    assert "/tmp/hb-" not in text and "mktemp -d" in text and "trap 'rm -rf" in text


# -- messages --------------------------------------------------------------------------------------

def test_a_history_export_given_as_a_run_says_what_to_do(capsys):
    err = one_line_exit_2(capsys, "table", str(REF / "history.hbx.jsonl.gz"))
    assert "history export" in err and "hostbench history ingest" in err


def test_verdict_check_on_a_run_file_says_why_nothing_is_judged(capsys):
    err = one_line_exit_2(capsys, "verdict-check", str(REF / "run.json"))
    assert "1 run on 1 history key" in err and "nothing to judge" in err and "measurement 1" not in err


def test_every_commands_help_ends_a_sentence():
    for name, p in cli.parser().commands.items():
        first = (p.description or "").strip().split("\n\n")[0].rstrip()
        assert first.endswith((".", ")", ":", "?")), f"hostbench {name} --help stops mid-sentence: ...{first[-60:]!r}"


def test_node_check_errors_are_the_commands(tmp_path, capsys):
    err = one_line_exit_2(capsys, "node-check", "--wheels", str(tmp_path), "--version", "9.9.9")
    assert err.startswith("hostbench node-check: --version 9.9.9")
