"""The engine's run file (records.run_document, format 3): every committed run, written again in it,
renders the same table; pytest-benchmark's JSON is an export of it that loads the same; the plugin
writes it in the order pytest reported the figures."""
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudnn_hostbench.bench.measure import pytest_plugin
from cudnn_hostbench.bench.measure.runfile import export, records
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.reports import run_summary, table
from tests.helpers import FINGERPRINT, synthetic_records
from tests.test_catch_up import _session_of
from tests.test_typed_fingerprint import REFERENCE, committed_runs


def rendered(run: records.Run) -> tuple:
    frame = table.build_table(run)
    return (run_summary.caption(run), run_summary.summary_line(run), run_summary.time_text(run),
            table.render_text(frame, wide=True), table.markdown_document(run, frame))


@pytest.mark.parametrize("path", committed_runs(), ids=lambda p: str(p.relative_to(REFERENCE)))
def test_a_committed_run_renders_the_same_from_the_engines_file_and_its_export(path, tmp_path):
    run = records.load_run(path)
    own = records.load_run(records.write_run(tmp_path / "run.json", records.run_document(run.records, run.fingerprint)))
    assert json.loads((tmp_path / "run.json").read_text())["format"] == records.FORMAT
    assert own.fingerprint == run.fingerprint and own.datetime == run.fingerprint.datetime
    assert [r.to_dict() for r in own.records] == [r.to_dict() for r in run.records]
    # the caption's date (the engine's file: the fingerprint's start, not pytest-benchmark's end) and name
    own.datetime, own.path = run.datetime, run.path
    assert rendered(own) == rendered(run)
    again = records.load_run(records.write_run(tmp_path / "export.json", export.export_run(own)))
    again.datetime, again.path = run.datetime, run.path
    assert [r.key for r in again.records] == [r.key for r in run.records] and rendered(again) == rendered(run)


def _session(tmp_path, monkeypatch, recs, **opts):
    monkeypatch.setattr(pytest_plugin, "_cuda_ok", lambda: (True, ""))   # as on a GPU box: this process owns the run file
    hb = _session_of(tmp_path, opts)
    hb.measure = SimpleNamespace(fingerprint=Fingerprint.of(dict(FINGERPRINT)),
                                 unmeasured=lambda: [r for r in recs if not r.ok])
    return hb


def test_the_engine_writes_the_run_file_in_the_order_pytest_reported(tmp_path, monkeypatch):
    recs = synthetic_records(3, rounds=4)
    hb = _session(tmp_path, monkeypatch, recs)
    hb.reported = [r for r in recs if r.ok][::-1]        # pytest's order, which the table keeps
    hb.place_run_file()
    assert hb.run_path == tmp_path / "run.json" and not (tmp_path / "run.json.tmp").exists()
    run = records.load_run(hb.run_path)
    assert [r.key for r in run.records] == [r.key for r in hb.reported] + [r.key for r in recs if not r.ok]
    assert run.fingerprint.gpu_name == FINGERPRINT["gpu_name"]


def test_with_a_users_benchmark_json_the_export_is_the_run_tabulated(tmp_path, monkeypatch):
    """pytest-benchmark writes the user's --benchmark-json (its stats are the engine's samples):
    the report reads it, as before; the engine's own run file is written beside the outputs."""
    recs = synthetic_records(4, rounds=4)
    mine = tmp_path / "mine.json"
    hb = _session(tmp_path / "out", monkeypatch, recs, benchmark_json=mine)
    hb.reported = [r for r in recs if r.ok]
    records.write_run(mine, export.pytest_benchmark_document(recs, FINGERPRINT))
    hb.place_run_file()
    assert hb.run_path == mine.resolve()
    own, user = records.load_run(Path(tmp_path / "out" / "run.json")), records.load_run(mine)
    assert [r.key for r in own.records] == [r.key for r in user.records]
    for a, b in zip(own.records, user.records):
        assert a.samples == pytest.approx(b.samples, rel=1e-12)
