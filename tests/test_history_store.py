"""The history store on SQLite and on a real PostgreSQL server (tests/pg_server.py): ingest is
idempotent and atomic, safe with two writers, and every bad store is one line and exit 2 with
nothing stored lost."""
from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from cudnn_hostbench.reports.history import db, ingest
from cudnn_hostbench.scripts import cli
from tests.helpers import write_synthetic_run
from tests.history_store import EXPORT, RUNS, ingested, sample_export, stored_url  # RUNS: the export's runs (docs/history.md)

pytest_plugins = ["tests.pg_server"]   # the pg_server and store_url fixtures

ROOT = Path(__file__).resolve().parents[1]


def hb(*args: str) -> int:
    return cli.main(["history", *args])


def stored(url: str) -> tuple[int, int]:
    st = db.open_store(url)
    try:
        return st.count()
    finally:
        st.close()


def complete(url: str) -> bool:
    """Every stored run has all the figures it was stored with (no half run)."""
    st = db.open_store(url)
    try:
        with st.engine.connect() as c:
            bad = c.execute(text("SELECT count(*) FROM hb_runs r WHERE r.n_figures <> "
                                 "(SELECT count(*) FROM hb_figures f WHERE f.run_id = r.id)")).scalar()
        return bad == 0
    finally:
        st.close()


@pytest.mark.slow
def test_reference_export_ingests_once(store_url, capsys, tmp_path):
    # a fifth of the committed export (both GPUs and measurement versions): the whole of it is
    # ingested by the killed-midway test below and by every process's stored_url
    export = sample_export(tmp_path, every=5)
    n = sum(1 for line in gzip.decompress(export.read_bytes()).decode().splitlines() if line.strip())
    assert hb("ingest", str(export), "--store", store_url) == 0
    runs, figs = stored(store_url)
    assert runs == n and figs > n * 30
    assert hb("ingest", str(export), "--store", store_url) == 0
    assert stored(store_url) == (runs, figs)
    assert f"stored 0 run(s), {n} already stored" in capsys.readouterr().out
    assert complete(store_url)


def test_same_run_file_twice_is_stored_once(store_url, tmp_path, capsys):
    run = write_synthetic_run(tmp_path / "a" / "run.json", seed=1)
    copy = tmp_path / "b" / "run.json"
    copy.parent.mkdir()
    copy.write_bytes(run.read_bytes())
    assert hb("ingest", str(run), str(copy), str(run), "--store", store_url) == 0
    assert "stored 1 run(s), 2 already stored" in capsys.readouterr().out
    assert stored(store_url)[0] == 1


@pytest.mark.slow
def test_export_round_trip(store_url, tmp_path):
    assert hb("ingest", str(sample_export(tmp_path)), "--store", store_url) == 0
    out = tmp_path / "again.hbx.jsonl.gz"
    assert hb("export", str(out), "--store", store_url) == 0
    url2 = f"sqlite:///{tmp_path / 'two.db'}"
    assert hb("ingest", str(out), "--store", url2) == 0
    assert stored(url2) == stored(store_url)
    # an export keeps ingest.DIGITS significant digits: exported again, the same figures
    out2 = tmp_path / "third.hbx.jsonl.gz"
    assert hb("export", str(out2), "--store", url2) == 0
    assert _docs(out2) == _docs(out)


def _docs(export: Path) -> list:
    """An export's runs, each with its figures in row order (a store may list them in any order)."""
    docs = [json.loads(x) for x in gzip.decompress(export.read_bytes()).decode().splitlines()]
    for d in docs:
        d["figures"].sort(key=lambda f: (f["probe"], f["variant"], f["size"], f["mode"]))
    return docs


def test_an_export_keeps_seven_significant_digits_of_a_figure():
    fig = {"value": 2.602453430493673, "workers": [2.6118495410546325, 911.1700123456], "spread": None,
           "median_us": float("nan"), "probe": "transpose"}
    got = ingest._rounded(fig)
    assert got["value"] == 2.602453 and got["workers"] == [2.61185, 911.17] and got["spread"] is None
    assert got["probe"] == "transpose" and got["median_us"] != got["median_us"]


def test_unreadable_run_among_good_ones_is_one_line(tmp_path, capsys):
    good = write_synthetic_run(tmp_path / "runs" / "run.json", seed=2)
    (tmp_path / "runs" / "broken.json").write_text('{"benchmarks": [')
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert hb("ingest", str(good.parent), "--store", url) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.json" in err[0]
    assert stored(url)[0] == 1


def one_line_exit_2(capsys, *args) -> str:
    assert hb(*args) == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err
    return err


def test_corrupt_database_file(tmp_path, capsys):
    bad = tmp_path / "history.db"
    junk = os.urandom(4096)
    bad.write_bytes(junk)
    run = write_synthetic_run(tmp_path / "run.json")
    err = one_line_exit_2(capsys, "ingest", str(run), "--store", f"sqlite:///{bad}")
    assert str(bad) in err
    assert bad.read_bytes() == junk   # left as it was


def test_foreign_sqlite_database(tmp_path, capsys):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE customers (id INTEGER)")
    err = one_line_exit_2(capsys, "check", "--store", f"sqlite:///{other}")
    assert "not a hostbench store" in err


def test_newer_schema_is_refused_and_kept(store_url, tmp_path, capsys):
    run = write_synthetic_run(tmp_path / "run.json")
    assert hb("ingest", str(run), "--store", store_url) == 0
    st = db.open_store(store_url)
    with st.engine.begin() as c:
        c.execute(text("UPDATE hb_meta SET value = '99' WHERE name = 'schema_version'"))
    st.close()
    err = one_line_exit_2(capsys, "ingest", str(write_synthetic_run(tmp_path / "r2.json", seed=3)), "--store", store_url)
    assert "schema version 99 is newer" in err
    st = db.Store.__new__(db.Store)   # read it back without the check: still one run, nothing lost
    from sqlalchemy import create_engine
    eng = create_engine(store_url.replace("postgresql://", "postgresql+psycopg://"))
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM hb_runs")).scalar() == 1
    eng.dispose()


def test_unreachable_postgresql(capsys):
    t0 = time.monotonic()
    err = one_line_exit_2(capsys, "check", "--store", "postgresql://nobody:secret@127.0.0.1:9/none")
    assert "127.0.0.1:9" in err and "secret" not in err
    assert time.monotonic() - t0 < 30


def test_locked_database_retries_then_one_line(tmp_path, capsys, monkeypatch):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert hb("ingest", str(write_synthetic_run(tmp_path / "r1.json", seed=1)), "--store", url) == 0
    monkeypatch.setattr(db, "LOCK_RETRIES", 2)
    monkeypatch.setattr(db, "LOCK_WAIT_S", 0.2)
    holder = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        err = one_line_exit_2(capsys, "ingest", str(write_synthetic_run(tmp_path / "r2.json", seed=2)),
                              "--store", url)
        assert "locked by another writer" in err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert stored(url)[0] == 1
    # a lock released within the retries is waited for
    holder = sqlite3.connect(tmp_path / "h.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.3, lambda: (holder.execute("ROLLBACK"), holder.close())).start()
    assert hb("ingest", str(write_synthetic_run(tmp_path / "r3.json", seed=3)), "--store", url) == 0
    assert stored(url)[0] == 2


def _ingest_process(url: str, *paths) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "history", "ingest", *map(str, paths),
                             "--store", url], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_writers_at_once(store_url, tmp_path):
    runs = [write_synthetic_run(tmp_path / f"r{i}.json", seed=i) for i in range(6)]
    procs = [_ingest_process(store_url, *runs), _ingest_process(store_url, *reversed(runs))]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert stored(store_url)[0] == 6 and complete(store_url)


@pytest.mark.slow
def test_ingest_killed_midway_leaves_whole_runs(store_url):
    p = _ingest_process(store_url, EXPORT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if stored(store_url)[0] >= 2:
                break
        except db.StoreError:
            pass
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    n = stored(store_url)[0]
    assert n < RUNS, "the ingest finished before it was killed"
    assert complete(store_url)
    assert hb("ingest", str(EXPORT), "--store", store_url) == 0
    assert stored(store_url)[0] == RUNS and complete(store_url)


@pytest.mark.slow   # the process's first test of the committed store pays its ingest
def test_excluded_run_leaves_every_history(tmp_path, capsys):
    url = stored_url(tmp_path)   # the committed export, ingested once per process
    assert hb("exclude", "3", "--why", "bad machine", "--store", url) == 0
    st = db.open_store(url)
    assert [r["excluded"] for r in st.runs() if r["id"] == 3] == ["bad machine"]
    st.close()
    one_line_exit_2(capsys, "exclude", "999", "--store", url)


def test_export_file_damaged_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.hbx.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b not gzip")
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert hb("ingest", str(bad), "--store", url) == 2
    assert "x.hbx.jsonl.gz" in capsys.readouterr().err


@pytest.mark.slow   # as above
def test_ingest_api_counts(tmp_path):
    # the ingest API's result for the committed export into an empty store, kept from the one
    # ingest this process makes of it (tests/history_store.py)
    res = ingested(tmp_path)
    assert len(res.stored) == RUNS and not res.errors and not res.already
    assert len({rid for _, rid in res.stored}) == RUNS


# -- migrations (Alembic) ----------------------------------------------------------------------------

def _revision(url: str) -> str | None:
    from cudnn_hostbench.reports.history import migrate
    st = db.open_store(url, create=True)
    try:
        with st.engine.connect() as c:
            return migrate.revision_of(c)
    finally:
        st.close()


def test_a_new_store_is_at_the_migrations_head(store_url, capsys):
    from cudnn_hostbench.reports.history import migrate
    assert _revision(store_url) == migrate.head() == "0003"
    assert hb("upgrade", "--store", store_url) == 0
    assert "schema revision 0003, nothing to do" in capsys.readouterr().out


# the columns revision 0002 added: a store without them is a store of schema 1
SCHEMA_2 = {"hb_runs": ("start", "gpu_uuid", "machine_json", "probes"), "hb_figures": ("plan_rule", "plan")}


def make_schema_1(url: str, revision: bool = True) -> None:
    """Turns a store into what hostbench made before schema 2: those columns gone, schema 1, and
    revision 0001 (or, with revision=False, no revision table: a store from before migrations)."""
    st = db.open_store(url)
    with st.engine.begin() as c:
        for table, cols in SCHEMA_2.items():
            for col in cols:
                c.execute(text(f"ALTER TABLE {table} DROP COLUMN {col}"))
        c.execute(text("DROP TABLE hb_ab_rows"))   # revision 0003's table (schema 3)
        c.execute(text("UPDATE hb_meta SET value = '1' WHERE name = 'schema_version'"))
        if revision:
            c.execute(text("UPDATE hb_alembic_version SET version_num = '0001'"))
        else:
            c.execute(text("DROP TABLE hb_alembic_version"))
    st.close()


def test_a_store_made_before_migrations_is_stamped_on_open(store_url, tmp_path, capsys):
    run = write_synthetic_run(tmp_path / "run.json")
    assert hb("ingest", str(run), "--store", store_url) == 0
    make_schema_1(store_url, revision=False)
    err = one_line_exit_2(capsys, "check", "--store", store_url)     # stamped 0001, then refused
    assert "schema version 1 is older than 3" in err
    assert hb("upgrade", "--store", store_url) == 0
    assert "schema revision 0003 (was 0001)" in capsys.readouterr().out
    assert _revision(store_url) == "0003" and stored(store_url)[0] == 1


def test_a_schema_1_store_is_migrated_and_its_runs_are_unknown_starts(store_url, tmp_path, capsys):
    from cudnn_hostbench.reports.judge import check
    runs = [write_synthetic_run(tmp_path / f"run{i}.json", seed=i) for i in range(3)]
    assert hb("ingest", *map(str, runs), "--store", store_url) == 0
    before = stored(store_url)
    make_schema_1(store_url)
    err = one_line_exit_2(capsys, "ingest", str(runs[0]), "--store", store_url)
    assert "schema version 1 is older than 3" in err and "hostbench history upgrade" in err
    assert hb("upgrade", "--store", store_url) == 0
    assert "schema revision 0003 (was 0001)" in capsys.readouterr().out
    assert stored(store_url) == before
    st = db.open_store(store_url)
    rs = st.runs()
    assert [(r["start"], r["gpu_uuid"], r["probes"]) for r in rs] == [("", "", "execute")] * 3
    target, vs = check.check(st, rs[-1]["id"])
    assert target["start"] == "" and any(v.n == 2 for v in vs)
    st.close()


SECOND = '''"""test only: schema 4 adds a column"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade():
    with op.batch_alter_table("hb_runs") as b:
        b.add_column(sa.Column("note", sa.Text, nullable=True))
'''


def test_an_older_schema_is_refused_then_upgraded_in_place(store_url, tmp_path, monkeypatch, capsys):
    # a store at schema 3, and a hostbench whose migrations go one revision further
    import shutil

    from cudnn_hostbench.reports.history import migrate
    from cudnn_hostbench.reports.history import schema as S
    run = write_synthetic_run(tmp_path / "run.json")
    assert hb("ingest", str(run), "--store", store_url) == 0
    newer = tmp_path / "migrations"
    shutil.copytree(migrate.HERE, newer, ignore=shutil.ignore_patterns("__pycache__"))
    (newer / "versions" / "0004_test_note.py").write_text(SECOND, encoding="utf-8")
    monkeypatch.setattr(migrate, "HERE", newer)
    monkeypatch.setattr(migrate, "SCHEMA_OF_REVISION", {"0001": 1, "0002": 2, "0003": 3, "0004": 4})
    monkeypatch.setattr(S, "SCHEMA_VERSION", 4)
    err = one_line_exit_2(capsys, "check", "--store", store_url)
    assert "schema version 3 is older than 4" in err and "hostbench history upgrade" in err
    assert hb("upgrade", "--store", store_url) == 0
    assert "schema revision 0004 (was 0003)" in capsys.readouterr().out
    st = db.open_store(store_url)             # now opens: schema 4, the run kept, the column there
    with st.engine.connect() as c:
        assert c.execute(text("SELECT value FROM hb_meta WHERE name = 'schema_version'")).scalar() == "4"
        assert c.execute(text("SELECT count(*) FROM hb_runs WHERE note IS NULL")).scalar() == 1
    st.close()


# -- one run is one run, whatever its bytes (issue 28) ---------------------------------------------------

def _reserialized(src: Path, dst: Path) -> Path:
    """The same run written again: other indentation and key order, so other bytes."""
    import json
    doc = json.loads(src.read_text())
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(doc, indent=3, sort_keys=True))
    assert dst.read_bytes() != src.read_bytes()
    return dst


def test_a_rewritten_copy_of_a_stored_run_is_that_run(store_url, tmp_path, capsys):
    run = write_synthetic_run(tmp_path / "a" / "run.json", seed=1)
    assert hb("ingest", str(run), "--store", store_url) == 0
    copy = _reserialized(run, tmp_path / "b" / "run.json")
    capsys.readouterr()
    assert hb("ingest", str(copy), "--store", store_url) == 0
    out = capsys.readouterr().out
    assert f"{copy}: already stored as run 1" in out and "stored 0 run(s), 1 already stored" in out
    assert stored(store_url)[0] == 1
    # through an export and back, and as the partial records.jsonl of the same run (µs, not seconds)
    exp = tmp_path / "e.hbx.jsonl.gz"
    assert hb("export", str(exp), "--store", store_url) == 0
    from cudnn_hostbench.bench.measure.runfile.records import JsonlWriter, load_run
    r = load_run(run)
    w = JsonlWriter(tmp_path / "c" / "records.jsonl")
    w.write({"kind": "fingerprint", "fingerprint": r.fingerprint})
    for rec in r.records:
        w.write({"kind": "record", "record": rec.to_dict()})
    w.close()
    assert hb("ingest", str(exp), str(tmp_path / "c" / "records.jsonl"), "--store", store_url) == 0
    assert stored(store_url)[0] == 1


def test_a_run_with_the_same_start_but_other_figures_is_another_run(store_url, tmp_path):
    a = write_synthetic_run(tmp_path / "a.json", seed=1)
    b = write_synthetic_run(tmp_path / "b.json", seed=2)    # same fingerprint, start time and commit
    assert hb("ingest", str(a), str(b), "--store", store_url) == 0
    assert stored(store_url)[0] == 2


@pytest.mark.slow
def test_two_writers_of_one_run_in_other_bytes(store_url, tmp_path):
    runs = [write_synthetic_run(tmp_path / f"r{i}.json", seed=i) for i in range(4)]
    copies = [_reserialized(r, tmp_path / "copies" / r.name) for r in runs]
    procs = [_ingest_process(store_url, *runs), _ingest_process(store_url, *reversed(copies))]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert stored(store_url)[0] == 4 and complete(store_url)


# -- exports: no stray .part, no local paths (issue 28) --------------------------------------------------

def _export_paths(path: Path) -> list[str]:
    import gzip
    import json
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["run"]["source_path"] for line in fh if line.strip()]


def test_export_onto_a_folder_is_one_line_and_leaves_no_part(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert hb("ingest", str(write_synthetic_run(tmp_path / "run.json")), "--store", url) == 0
    (tmp_path / "site").mkdir()
    err = one_line_exit_2(capsys, "export", str(tmp_path / "site"), "--store", url)
    assert str(tmp_path / "site") in err and "is a folder" in err
    one_line_exit_2(capsys, "export", str(tmp_path / "nowhere" / "x.hbx.jsonl.gz"), "--store", url)
    assert not list(tmp_path.rglob("*.part"))


def test_an_export_names_run_files_inside_their_repository_or_not_at_all(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    local = write_synthetic_run(tmp_path / "local-run.json")       # a temp file: no repository
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    in_repo = write_synthetic_run(repo / "runs" / "run.json", seed=4)
    ref = ROOT / "reports" / "reference" / "h200" / "run.json"
    monkeypatch.chdir(tmp_path)                                     # ingested from elsewhere, by absolute path
    assert hb("ingest", str(local), str(in_repo), str(ref), "--store", url) == 0
    out = tmp_path / "h.hbx.jsonl.gz"
    assert hb("export", str(out), "--store", url) == 0
    assert sorted(_export_paths(out)) == ["", "reports/reference/h200/run.json", "runs/run.json"]
    import gzip
    assert str(tmp_path) not in gzip.decompress(out.read_bytes()).decode()
