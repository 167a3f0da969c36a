"""After a run (hostbench run or bare pytest), the run goes into the history store; a store that
cannot take it is one line and the run file stays."""
from __future__ import annotations

from cudnn_hostbench.bench.measure.runfile.records import load_run
from cudnn_hostbench.reports import pytest_report
from cudnn_hostbench.reports.history import db
from tests.helpers import write_synthetic_run


def test_run_goes_into_the_store_beside_its_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("HOSTBENCH_STORE", raising=False)
    path = write_synthetic_run(tmp_path / "results" / "20261201-000000" / "run.json")
    line = pytest_report.store_run(load_run(path), path)
    assert "run 1 stored" in line and str(tmp_path / "results" / "history.db") in line
    assert "already stored as run 1" in pytest_report.store_run(load_run(path), path)
    st = db.open_store(f"sqlite:///{tmp_path / 'results' / 'history.db'}")
    assert st.count()[0] == 1
    st.close()


def test_store_off_and_store_from_env(tmp_path, monkeypatch):
    path = write_synthetic_run(tmp_path / "r" / "run.json")
    monkeypatch.setenv("HOSTBENCH_STORE", "off")
    assert pytest_report.store_run(load_run(path), path) == "history store: off (HOSTBENCH_STORE=off)"
    monkeypatch.setenv("HOSTBENCH_STORE", f"sqlite:///{tmp_path / 'team.db'}")
    assert "team.db" in pytest_report.store_run(load_run(path), path)
    assert (tmp_path / "team.db").exists()


def test_a_bad_store_is_one_line_and_the_run_file_stays(tmp_path, monkeypatch):
    path = write_synthetic_run(tmp_path / "r" / "run.json")
    before = path.read_bytes()
    (tmp_path / "bad.db").write_bytes(b"\0" * 2048 + b"not sqlite" * 100)
    monkeypatch.setenv("HOSTBENCH_STORE", f"sqlite:///{tmp_path / 'bad.db'}")
    line = pytest_report.store_run(load_run(path), path)
    assert line.startswith("history store: not stored") and "\n" not in line
    assert f"hostbench history ingest {path}" in line and path.read_bytes() == before


def test_version_matrix_parts_go_into_the_store(tmp_path):
    from cudnn_hostbench.bench.measure.runfile.records import run_document, write_run
    from cudnn_hostbench.reports.dashboard import page
    from cudnn_hostbench.scripts import version_matrix as vm
    from tests.helpers import FINGERPRINT, synthetic_records
    for i, v in enumerate(["1.20.0", "1.31.0"]):
        fp = {**FINGERPRINT, "cudnn_frontend": v, "datetime": f"2026-01-0{i + 1}T00:00:00+00:00"}
        write_run(tmp_path / "m" / f"run-fe{v}.json", run_document(synthetic_records(i, rounds=6), fp))
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert vm.main(["--merge-only", "--out", str(tmp_path / "m"), "--store", url]) == 0
    assert vm.main(["--merge-only", "--out", str(tmp_path / "m"), "--store", url]) == 0   # stored once
    st = db.open_store(url)
    runs = st.runs()
    assert sorted(r["frontend"] for r in runs) == ["1.20.0", "1.31.0"]
    view = page.version_view(st, runs)
    assert view["versions"] == ["1.20.0", "1.31.0"] and view["rows"]
    st.close()
    assert vm.main(["--merge-only", "--out", str(tmp_path / "m"), "--store", "off"]) == 0
