"""Two walks a newcomer takes through the code, each entering every file at most once: a run file's
figures to the table, and a store's runs through `hostbench history check` to its verdicts.

Each walk follows the values with tests/walk_trace.py over the committed reference data, in the
order the commands call (the engine's last step, then `hostbench table`; `hostbench history
check`), and lists the files entered. A return to a file already left is a place where a reader
has to go back: the code along the walk is laid out so there is none (docs/architecture.md).
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile import records, trust
from cudnn_hostbench.reports import run_summary, table
from cudnn_hostbench.reports.history import db
from cudnn_hostbench.reports.judge import check
from tests.history_store import stored_url
from tests.walk_trace import Follow

REFERENCE = Path(__file__).resolve().parents[1] / "reports" / "reference"


def marked_reference_run() -> records.Run:
    """A committed reference run whose figures carry trust marks, so the walk passes the marks too."""
    for path in sorted(REFERENCE.glob("*/run.json*")):
        run = records.load_run(path, need_records=True)
        if any(r.badge for r in run.records):
            return run
    raise AssertionError(f"no committed run under {REFERENCE} has a marked figure")


def history_export() -> Path:
    """A committed history export with runs in it."""
    for path in sorted(REFERENCE.glob("*/history.hbx.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            if any(line.strip() for line in f):
                return path
    raise AssertionError(f"no committed history export under {REFERENCE}")


def table_walk(tmp_path) -> Follow:
    """The engine's last step (runner.finish: the document, written) and `hostbench table` over the
    file it wrote: loaded, checked, the table built and rendered as text and as Markdown, then the
    run's lines above it."""
    source = marked_reference_run()
    recs, fingerprint = list(source.records), source.fingerprint
    with Follow([recs, fingerprint, *recs]) as walk:
        doc = records.run_document(recs, fingerprint)
        walk.add(doc)
        path = records.write_run(tmp_path / "run.json", doc)
        walk.add(path)
        run = records.load_run(path, need_records=True)
        walk.add(run, *run.records, run.fingerprint)
        trust.check_run(run)
        frame = table.build_table(run)
        walk.add(frame)
        table.render_text(frame, 100)
        table.markdown_document(run, frame)
        run_summary.caption(run)
        run_summary.summary_lines(run, 100)
    return walk


def test_a_run_file_to_its_table_enters_each_file_once(tmp_path):
    walk = table_walk(tmp_path)
    assert walk.returns == 0, walk.report("run file -> table")
    # the walk passes the writer, the reader, the trust check, the table and the run's lines, in that order
    files = walk.files
    order = ["bench/measure/runfile/document.py", "bench/measure/runfile/records.py",
             "bench/measure/runfile/trust.py", "reports/table.py", "reports/run_summary.py"]
    assert [f for f in files if f in order] == order, walk.report("run file -> table")


def check_walk(tmp_path) -> Follow:
    """`hostbench history check` over the committed history: the newest run judged against the
    runs before it. The store's methods are followed (what they return: the runs, the figures);
    their parts two levels down (a run's row, a run's figures)."""
    store = db.open_store(stored_url(tmp_path, history_export()))
    try:
        run_id = store.runs()[-1]["id"]
        with Follow(owners=[store], deep=2) as walk:
            check.check(store, run_id)
    finally:
        store.close()
    return walk


@pytest.mark.slow
@pytest.mark.newest_only
def test_a_store_through_the_check_to_its_verdicts_enters_each_file_once(tmp_path):
    walk = check_walk(tmp_path)
    shown = walk.report("store -> history check -> verdict")
    assert walk.returns == 0, shown
    # the check reads the store once and hands the runs on: the prior's rows for the run, the history's
    # structure, the model's fit (its predictions read the class pools last), then the decisions on
    # that fit, which never call it back
    assert walk.files == ["reports/judge/check.py", "reports/history/db.py", "reports/verdict/judge.py",
                          "reports/verdict/calibrate.py", "reports/verdict/structure.py", "reports/verdict/model.py",
                          "reports/verdict/pool.py", "reports/verdict/decide.py"], shown
