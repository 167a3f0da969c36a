"""A/B jobs in the history store (issue 66.4): `hostbench history ingest JOB_DIR` stores each side's
run as an ordinary run and the job's paired results once (hb_ab_rows, schema 3), on SQLite and on a
real PostgreSQL; a store from before schema 3 migrates and keeps its runs; a job that cannot be
read is one line, exit 2, and nothing stored. Jobs are made on CPU with synthetic processes
(tests/ab_fakes.py), as tests/test_ab.py makes them."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from cudnn_hostbench.bench.measure.workers import interleave
from cudnn_hostbench.reports.history import abjobs, db, migrate
from cudnn_hostbench.scripts import ab_cmd, cli
from tests import ab_fakes

from .helpers import write_synthetic_run

pytest_plugins = ["tests.pg_server"]   # the pg_server and store_url fixtures

SLOW_KEY = ("execute", "generic", "256", "graph")


def make_job(folder: Path, pairs: int = 4, slow: float = 0.0, seed: int = 0) -> Path:
    """A finished A/B job folder of two `current` sides; side B `slow` (a share) slower on SLOW_KEY."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ab_cmd, "collect_cases", lambda a, opts: ab_fakes.cases())

        def run_process(folder, env, cases, options, worker, floor, timeout_s, ahead=None, then=None):
            index, side = (int(x) for x in folder.name[1:].split("-"))
            shift = {SLOW_KEY: math.log1p(slow)} if slow and side == 1 else None
            return ab_fakes.write_proc(folder, cases, seed=index * 7919 + 1 + seed * 104729, shift=shift)
        mp.setattr(interleave, "run_process", run_process)
        code = cli.main(["ab", "--no-gpu-check", "--out", str(folder), "--pairs", str(pairs), "--budget-min", "5"])
    assert code == 0 and (folder / "ab.json").is_file()
    return folder


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    return make_job(tmp_path_factory.mktemp("ab") / "job")


def hb(*args: str) -> int:
    return cli.main(["history", *args])


def results(url: str) -> list[tuple]:
    """(side, reference, row key, verdict, change, mdc, pairs) of every stored paired result."""
    st = db.open_store(url)
    try:
        return sorted((r["side"], r["reference"], (r["probe"], r["variant"], r["size"], r["mode"]), r["verdict"],
                       r["change"], r["mdc"], r["pairs"]) for r in st.ab_rows())
    finally:
        st.close()


def expected(job: Path) -> list[tuple]:
    doc = json.loads((job / "ab.json").read_text())
    return sorted((c["side"], c["reference"], (r["probe"], r["variant"], r["size"], r["mode"]), r["verdict"],
                   r["change"], r["mdc"], r["pairs"]) for c in doc["comparisons"] for r in c["rows"])


def counts(url: str) -> tuple[int, int, int]:
    """(runs, figures, paired results) the store holds."""
    st = db.open_store(url)
    try:
        with st.engine.connect() as c:
            n = c.execute(text("SELECT count(*) FROM hb_ab_rows")).scalar()
        return (*st.count(), n)
    finally:
        st.close()


def test_a_job_stores_both_sides_runs_and_every_judged_row_once(job, store_url, capsys):
    assert hb("ingest", str(job), "--store", store_url) == 0
    out = capsys.readouterr().out
    assert "A/B job stored" in out and "stored 2 run(s)" in out
    st = db.open_store(store_url)
    runs = st.runs()
    st.close()
    # the sides' merged runs, as ordinary runs (no process file of the job is a run of its own)
    assert sorted(Path(r["source_path"]).name for r in runs) == ["current-A.json", "current-B.json"]
    assert results(store_url) == expected(job)       # every row of every comparison, as ab.json judged it
    before = counts(store_url)
    assert hb("ingest", str(job), "--store", store_url) == 0
    assert "A/B job already stored" in capsys.readouterr().out
    assert counts(store_url) == before                # twice is once
    assert results(store_url) == expected(job)


def test_each_result_names_its_sides_runs_versions_and_gpu(job, tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert hb("ingest", str(job), "--store", url) == 0
    st = db.open_store(url)
    by_path = {Path(r["source_path"]).name: r["id"] for r in st.runs()}
    rows = st.ab_rows()
    st.close()
    doc = json.loads((job / "ab.json").read_text())
    versions = {s["label"]: s.get("frontend") or "" for s in doc["sides"]}
    assert {(r["side_run_id"], r["reference_run_id"]) for r in rows} == {(by_path["current-B.json"],
                                                                          by_path["current-A.json"])}
    assert {(r["side_frontend"], r["reference_frontend"]) for r in rows} == {(versions["current-B"],
                                                                              versions["current-A"])}
    assert len({r["job_hash"] for r in rows}) == 1 and all(r["started_at"] and r["gpu"] for r in rows)


def test_a_job_inside_a_folder_is_found_and_the_other_runs_beside_it_stored(job, tmp_path, capsys):
    top = tmp_path / "results"
    shutil.copytree(job, top / "nightly-1")
    write_synthetic_run(top / "single" / "run.json")
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert hb("ingest", str(top), "--store", url) == 0
    assert counts(url)[0] == 3 and counts(url)[2] == len(expected(job))
    assert "skipped" not in capsys.readouterr().err     # no process file was read as a run


def _schema_2(url: str) -> None:
    """Turns a store into what hostbench made at schema 2: no hb_ab_rows, revision 0002."""
    st = db.open_store(url)
    with st.engine.begin() as c:
        c.execute(text("DROP TABLE hb_ab_rows"))
        c.execute(text("UPDATE hb_meta SET value = '2' WHERE name = 'schema_version'"))
        c.execute(text("UPDATE hb_alembic_version SET version_num = '0002'"))
    st.close()


def test_a_store_from_before_the_migration_loads_migrates_and_then_takes_jobs(job, store_url, tmp_path, capsys):
    run = write_synthetic_run(tmp_path / "run.json")
    assert hb("ingest", str(run), "--store", store_url) == 0
    _schema_2(store_url)
    assert hb("ingest", str(job), "--store", store_url) == 2        # refused, untouched
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "schema version 2 is older than 3" in err and "history upgrade" in err
    assert hb("upgrade", "--store", store_url) == 0
    assert "schema revision 0003 (was 0002)" in capsys.readouterr().out
    st = db.open_store(store_url)
    with st.engine.connect() as c:
        assert migrate.revision_of(c) == "0003"
    assert st.count()[0] == 1                                        # its run kept
    st.close()
    assert hb("ingest", str(job), "--store", store_url) == 0
    assert counts(store_url)[0] == 3 and results(store_url) == expected(job)


def _corrupt(job: Path, tmp_path: Path, how: str) -> Path:
    bad = tmp_path / f"bad-{how}"
    shutil.copytree(job, bad)
    if how == "truncated":
        text_ = (bad / "ab.json").read_text()
        (bad / "ab.json").write_text(text_[: len(text_) // 2])
    elif how == "no-result":
        (bad / "ab.json").unlink()
    elif how == "not-ab":
        (bad / "ab.json").write_text(json.dumps({"kind": "something else", "comparisons": []}))
    elif how == "row-without-verdict":
        doc = json.loads((bad / "ab.json").read_text())
        del doc["comparisons"][0]["rows"][-1]["verdict"]
        (bad / "ab.json").write_text(json.dumps(doc))
    elif how == "side-run":
        # one side's run file cut in half: the other side's run must not be stored either
        f = sorted((bad / "sides").glob("*.json"))[-1]
        f.write_text(f.read_text()[:200])
    return bad


@pytest.mark.parametrize("how, says", [
    ("truncated", "corrupt A/B job"), ("no-result", "without ab.json"), ("not-ab", "corrupt ab.json"),
    ("row-without-verdict", "corrupt ab.json"), ("side-run", "does not load"),
])
def test_a_job_that_cannot_be_read_is_one_line_exit_2_and_nothing_stored(job, tmp_path, capsys, how, says):
    bad = _corrupt(job, tmp_path, how)
    fresh = tmp_path / "new" / "h.db"
    assert hb("ingest", str(bad), "--store", str(fresh)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and says in err and "Traceback" not in err
    assert not fresh.exists() and not fresh.parent.exists()          # no store made
    url = f"sqlite:///{tmp_path / 'have.db'}"
    assert hb("ingest", str(write_synthetic_run(tmp_path / "run.json")), "--store", url) == 0
    before = counts(url)
    capsys.readouterr()
    # beside a good run file, too: the bad job stops the whole ingest before anything is stored
    assert hb("ingest", str(bad), str(write_synthetic_run(tmp_path / "run2.json", seed=3)), "--store", url) == 2
    assert says in capsys.readouterr().err
    assert counts(url) == before


def test_the_job_reader_refuses_a_result_whose_comparison_names_an_unknown_side(job, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(job, bad)
    doc = json.loads((bad / "ab.json").read_text())
    doc["comparisons"][0]["side"] = "nobody"
    (bad / "ab.json").write_text(json.dumps(doc))
    with pytest.raises(abjobs.JobError, match="a side the job does not list"):
        abjobs.read(bad)
