"""Where stores are and who makes them: the suite never touches a person's store, only ingest
makes a store, a store path that cannot be one is one line and exit 2, and an installed harness
keeps its results and its default store out of site-packages (issue 28)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.reports.history import db, where
from cudnn_hostbench.scripts import cli
from cudnn_hostbench.scripts import version_matrix as vm
from tests import checkout, store_guard
from tests.helpers import write_synthetic_run

pytest_plugins = ["tests.pg_server"]

ROOT = Path(__file__).resolve().parents[1]


def one_line_exit_2(capsys, *args) -> str:
    assert cli.main(list(args)) == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err
    return err


# -- 1: the suite runs on a temporary store ----------------------------------------------------------

def test_the_suite_runs_on_a_temporary_store(temporary_history_store):
    url = db.default_url()
    assert url == store_guard.temporary_url(temporary_history_store) == os.environ["HOSTBENCH_STORE"]
    assert all(str(p) not in url for p in store_guard.default_stores())
    assert ROOT / "results" / "history.db" in store_guard.default_stores()


def test_the_guard_sees_a_store_made_changed_or_removed(tmp_path):
    p = tmp_path / "history.db"
    before = store_guard.snapshot([p])
    assert store_guard.changed(before) == []
    p.write_bytes(b"a run")
    assert store_guard.changed(before) == [f"{p}: made by the tests"]
    before = store_guard.snapshot([p])
    p.write_bytes(b"a rum")   # same size; the bytes differ
    assert store_guard.changed(before) == [f"{p}: changed by the tests"]
    before = store_guard.snapshot([p])
    p.unlink()
    assert store_guard.changed(before) == [f"{p}: removed by the tests"]


# -- 2: a store path whose parent is a file ----------------------------------------------------------

def test_a_store_under_a_file_is_one_line_everywhere(tmp_path, capsys):
    (tmp_path / "afile").write_text("not a folder")
    url = f"sqlite:///{tmp_path / 'afile' / 'h.db'}"
    run = write_synthetic_run(tmp_path / "m" / "run-fe1.20.0.json")
    for args in (["history", "ingest", str(run)], ["history", "check"], ["history", "list"],
                 ["history", "export", str(tmp_path / "x.hbx.jsonl.gz")]):
        err = one_line_exit_2(capsys, *args, "--store", url)
        assert "afile" in err
    assert "afile is a file, not a folder" in one_line_exit_2(capsys, "history", "ingest", str(run), "--store", url)
    err = one_line_exit_2(capsys, "dashboard", "--store", url, "--out", str(tmp_path / "site"))
    assert "afile" in err and not (tmp_path / "site").exists()
    err = one_line_exit_2(capsys, "dashboard", str(run), "--store", url, "--out", str(tmp_path / "site"))
    assert "afile is a file, not a folder" in err
    assert vm.main(["--merge-only", "--out", str(tmp_path / "m"), "--store", url]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "afile is a file, not a folder" in err
    assert not (tmp_path / "m" / "matrix.md").exists()          # nothing written
    assert vm.main(["--merge-only", "--out", str(tmp_path / "afile" / "m"), "--store", "off"]) == 2
    assert "cannot make the folder" in capsys.readouterr().err
    assert (tmp_path / "afile").read_text() == "not a folder"


# -- 3: only ingest makes a store ---------------------------------------------------------------------

def test_reading_a_store_that_is_not_there_makes_nothing(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'typo' / 'history.db'}"
    for args in (["history", "check"], ["history", "check", "latest"], ["history", "list"], ["history", "show", "1"],
                 ["history", "export", str(tmp_path / "out.hbx.jsonl.gz")], ["history", "exclude", "1"],
                 ["history", "include", "1"], ["history", "upgrade"]):
        err = one_line_exit_2(capsys, *args, "--store", url)
        assert "typo/history.db: no store there" in err, err
    one_line_exit_2(capsys, "dashboard", "--store", url, "--out", str(tmp_path / "site"))
    assert sorted(os.listdir(tmp_path)) == []     # no folder, no database, no export


def test_a_failed_ingest_leaves_no_store(tmp_path, capsys):
    (tmp_path / "broken.json").write_text('{"benchmarks": [')
    url = f"sqlite:///{tmp_path / 'new' / 'history.db'}"
    assert cli.main(["history", "ingest", str(tmp_path / "broken.json"), "--store", url]) == 2
    out = capsys.readouterr()   # the reason in one line, nothing else: no store made
    assert not out.out and len(out.err.splitlines()) == 1 and "broken.json" in out.err
    assert not (tmp_path / "new").exists()
    assert cli.main(["history", "ingest", str(write_synthetic_run(tmp_path / "run.json")), "--store", url]) == 0
    assert (tmp_path / "new" / "history.db").is_file()


def test_an_empty_postgresql_database_is_not_made_a_store_by_reading(pg_server, capsys):
    from sqlalchemy import create_engine, inspect
    url = pg_server.new_database("hb_empty_read")
    err = one_line_exit_2(capsys, "history", "list", "--store", url)
    assert "holds no hostbench store yet" in err
    eng = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        assert inspect(eng).get_table_names() == []
    finally:
        eng.dispose()


def test_a_plain_path_is_a_sqlite_store(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["history", "ingest", str(write_synthetic_run(tmp_path / "run.json")), "--store", "h.db"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sqlite:///h.db: stored 1 run(s)")   # shown as it can be typed from here
    assert cli.main(["history", "list", "--store", "h.db"]) == 0


# -- 6: an installed harness keeps its data out of the package ---------------------------------------

def test_the_default_store_is_the_checkouts_when_run_from_one(monkeypatch):
    monkeypatch.delenv("HOSTBENCH_STORE")
    assert where.checkout() == ROOT
    assert db.default_url() == f"sqlite:///{ROOT / 'results' / 'history.db'}"


def test_installed_the_default_store_is_the_projects_or_the_users(tmp_path, monkeypatch):
    site = tmp_path / "site-packages" / "cudnn_hostbench"
    site.mkdir(parents=True)
    monkeypatch.setattr(where, "PACKAGE_ROOT", site)   # as installed: no checkout around the package
    monkeypatch.delenv("HOSTBENCH_STORE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    proj = tmp_path / "home" / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "pyproject.toml").write_text("")
    monkeypatch.chdir(proj / "sub")
    assert where.checkout() is None
    assert db.default_url() == f"sqlite:///{proj / 'results' / 'history.db'}"
    monkeypatch.chdir(tmp_path / "home")             # no project here: the user's data folder
    assert where.default_store() == tmp_path / "data" / "cudnn-hostbench" / "results" / "history.db"
    assert site not in where.default_store().parents


@pytest.mark.slow
def test_an_installed_harness_keeps_its_store_out_of_site_packages(tmp_path):
    """A real install (the wheel into a --target folder), run from another folder."""
    (tmp_path / "w").mkdir()
    r = checkout.build_wheel(tmp_path / "w", "-q")   # in a copy: the checkout gets no build/
    if r.returncode != 0 and "No module named" in r.stderr:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-2000:]
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                        str(next((tmp_path / "w").glob("*.whl")))], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    work = tmp_path / "home" / "work"
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(site), "HOME": str(tmp_path / "home"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("HOSTBENCH_STORE")
    code = ("import json, cudnn_hostbench.reports.history.db as db, cudnn_hostbench.reports.history.where as w;"
            "print(json.dumps([db.__file__, db.default_url(), str(w.results_dir())]))")
    r = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    module, url, results = json.loads(r.stdout)
    assert module.startswith(str(site))                  # the installed copy, not this checkout
    assert url == f"sqlite:///{tmp_path / 'data' / 'cudnn-hostbench' / 'results' / 'history.db'}"
    assert not results.startswith(str(site))


def test_the_reference_run_is_named_by_a_path_that_works_from_here(tmp_path, monkeypatch, capsys):
    from cudnn_hostbench.scripts import run
    monkeypatch.chdir(tmp_path)
    assert run.render_reference() == 0
    named = [line.split("reference run ", 1)[1] for line in capsys.readouterr().out.splitlines()
             if line.startswith("reference run ")]
    assert named and all(Path(p).is_file() for p in named)


def test_installed_hostbench_run_writes_its_results_beside_the_default_store(tmp_path, monkeypatch):
    """`hostbench run` on a GPU, installed: results/<stamp> in the project, where the finished run
    goes into history.db beside it, the default store (pytest itself is not run here)."""
    import pytest as pytest_module

    from cudnn_hostbench.scripts import run
    monkeypatch.setattr(where, "PACKAGE_ROOT", tmp_path / "site-packages" / "cudnn_hostbench")
    monkeypatch.delenv("HOSTBENCH_STORE")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".git").mkdir()
    monkeypatch.chdir(proj)
    seen = []
    monkeypatch.setattr(run, "cuda_available", lambda: (True, ""))
    monkeypatch.setattr(pytest_module, "main", lambda args: seen.append(args) or pytest_module.ExitCode.USAGE_ERROR)
    assert run.main() == 2
    out = Path(next(a for a in seen[0] if a.startswith("--hb-out=")).split("=", 1)[1])
    assert out.parent == proj / "results" and out.parent / "history.db" == where.default_store()


def test_a_store_turned_off_is_one_line_for_the_history_commands(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HOSTBENCH_STORE", "off")
    assert "the store is off" in one_line_exit_2(capsys, "history", "list")
    run = write_synthetic_run(tmp_path / "run.json")
    assert "the store is off" in one_line_exit_2(capsys, "history", "ingest", str(run))
    assert not (Path.cwd() / "off").exists()


def test_a_dashboard_of_unreadable_runs_makes_no_store(tmp_path, capsys):
    (tmp_path / "broken.json").write_text('{"benchmarks": [')
    url = f"sqlite:///{tmp_path / 'new' / 'h.db'}"
    assert cli.main(["dashboard", str(tmp_path / "broken.json"), "--store", url, "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert "broken.json" in err and "no store there" in err
    assert not (tmp_path / "new").exists() and not (tmp_path / "site").exists()
    run = write_synthetic_run(tmp_path / "run.json")
    assert cli.main(["dashboard", str(run), "--store", url, "--out", str(tmp_path / "site")]) == 0
    assert (tmp_path / "new" / "h.db").is_file()
