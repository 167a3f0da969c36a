"""Run store: folders of runs, per-GPU groups, ordering, damaged files, the tidy frame."""
from __future__ import annotations

import json

import pytest

from cudnn_hostbench.bench.measure.runfile.export import pytest_benchmark_document
from cudnn_hostbench.bench.measure.runfile.records import JsonlWriter, Record, run_document, write_run
from cudnn_hostbench.reports import store
from tests.helpers import FINGERPRINT, synthetic_records


def write(path, fp=None, recs=None, exported=False):
    """A run file of synthetic records (`exported`: in pytest-benchmark's layout)."""
    layout = pytest_benchmark_document if exported else run_document
    return write_run(path, layout(recs or synthetic_records(1, rounds=6), {**FINGERPRINT, **(fp or {})}))


def test_folder_of_runs_loads_by_gpu_and_names_damaged_files(tmp_path):
    ref = tmp_path / "reference"
    write(ref / "h200" / "run.json")
    write(ref / "h200" / "2025" / "older.json", {"datetime": "2025-01-01T00:00:00+00:00"})
    write(ref / "h100" / "run.json", {"gpu_name": "NVIDIA H100"})
    cut = ref / "h200" / "cut.json"
    cut.write_text((ref / "h200" / "run.json").read_text()[:2000])        # truncated mid-file
    (ref / "h200" / "notes.json").write_text(json.dumps({"note": "not a run"}))
    (ref / "h200" / "matrix.json").write_text(json.dumps({"versions": []}))  # version-matrix status
    runs, errors = store.load_runs([ref])
    assert len(runs) == 3
    assert sorted(str(e).split(":")[0] for e in errors) == sorted([str(cut), str(ref / "h200" / "notes.json")])
    assert "truncated" in str([e for e in errors if str(cut) in str(e)][0])
    groups = store.by_gpu(runs)
    assert {k: len(v) for k, v in groups.items()} == {"NVIDIA H200": 2, "NVIDIA H100": 1}
    assert groups["NVIDIA H200"][0].path.endswith("older.json")  # ordered by date
    runs, errors = store.load_runs([tmp_path / "nowhere.json", ref / "h100" / "run.json"])
    assert len(runs) == 1 and "nowhere.json: no such file" in str(errors[0])


def test_partial_jsonl_loads_unless_its_finished_run_is_there(tmp_path):
    w = JsonlWriter(tmp_path / "crashed.jsonl")
    w.write({"kind": "fingerprint", "fingerprint": {**FINGERPRINT, "gpu_name": "NVIDIA H100"}})
    for r in synthetic_records(2, rounds=6)[:3]:
        w.write({"kind": "record", "record": r.to_dict()})
    w.close()
    with open(tmp_path / "crashed.jsonl", "a") as fh:
        fh.write('{"kind": "record", "rec')                                # cut off by the crash
    write(tmp_path / "done.json")
    (tmp_path / "done.jsonl").write_text("superseded by done.json\n")
    runs, errors = store.load_runs([tmp_path])
    assert errors == []
    assert sorted(len(r.records) for r in runs) == [3, len(synthetic_records(1, rounds=6))]
    assert [r.path for r in runs if r.path.endswith(".jsonl")] == [str(tmp_path / "crashed.jsonl")]


def test_order_by_version_and_labels(tmp_path):
    for v, day in [("1.20.0", 3), ("1.9.0", 2), ("1.31.0", 1)]:
        write(tmp_path / f"run-{v}.json", {"cudnn_frontend": v, "datetime": f"2025-01-0{day}T10:00:00"})
    runs, _ = store.load_runs([tmp_path], order="version")
    assert [store.frontend_version(r) for r in runs] == ["1.9.0", "1.20.0", "1.31.0"]
    assert store.unique_labels(runs, "version") == ["fe 1.9.0", "fe 1.20.0", "fe 1.31.0"]
    runs, _ = store.load_runs([tmp_path], order="date")
    assert [store.frontend_version(r) for r in runs] == ["1.31.0", "1.9.0", "1.20.0"]
    assert store.unique_labels(runs) == ["2025-01-01 10:00", "2025-01-02 10:00", "2025-01-03 10:00"]
    with pytest.raises(ValueError):
        store.sort_runs(runs, "size")


def test_frontend_version_from_file_name_and_duplicate_labels(tmp_path):
    write(tmp_path / "run-fe1.28.0.json", {"cudnn_frontend": None, "datetime": "2025-01-01T00:00:00"})
    write(tmp_path / "b.json", {"cudnn_frontend": None, "datetime": "2025-01-01T00:00:00", "sm_count": 1})
    runs, _ = store.load_runs([tmp_path])
    assert sorted(store.frontend_version(r) for r in runs) == ["", "1.28.0"]
    assert store.unique_labels(runs) == ["2025-01-01 00:00 #1", "2025-01-01 00:00 #2"]


def test_byte_identical_run_files_are_one_run(tmp_path):
    """reports/reference/h200/aa/run2.json was a copy of run.json: one run, shown once."""
    a = write(tmp_path / "run.json")
    (tmp_path / "aa").mkdir()
    (tmp_path / "aa" / "run2.json").write_bytes(a.read_bytes())
    write(tmp_path / "aa" / "run1.json", {"sm_count": 1})
    runs, errors = store.load_runs([tmp_path])
    assert not errors and len(runs) == 2
    assert sorted(r.path for r in runs) == sorted([str(tmp_path / "aa" / "run1.json"), str(tmp_path / "aa" / "run2.json")])
    runs, _ = store.load_runs([a, a])   # one file named twice is one run too
    assert len(runs) == 1


def test_figures_that_cannot_be_measurements_are_refused_by_name(tmp_path):
    import math
    for bad, why in ((float("nan"), "median nan"), (0.0, "median 0"), (-3.0, "median -3"), (math.inf, "median inf")):
        recs = synthetic_records(1, rounds=6)
        rec = next(r for r in recs if (r.variant, r.mode) == ("generic", "eager"))
        rec.samples = [bad] * len(rec.samples)
        write(tmp_path / "bad.json", recs=recs)
        write(tmp_path / "good.json")
        runs, errors = store.load_runs([tmp_path])
        assert len(runs) == 1 and len(errors) == 1, why
        line = str(errors[0])
        assert line.startswith(str(tmp_path / "bad.json")) and "execute/generic/256 eager" in line and why in line
        assert "\n" not in line


def test_records_frame_in_us_with_baseline_difference(tmp_path):
    recs = [Record("p", "torch_mm", "256", "eager", samples=[10.0, 10.0, 12.0], baseline="torch_mm"),
            Record("p", "slow", "256", "eager", samples=[0.015, 0.016, 0.014], unit="ms", baseline="torch_mm"),
            Record("p", "gone", "256", "eager", status="failed: boom", baseline="torch_mm")]
    runs, _ = store.load_runs([write(tmp_path / "r.json", recs=recs)])
    df = store.records_frame(runs).set_index("variant")
    assert df.loc["slow", "median_us"] == pytest.approx(15.0)
    assert df.loc["slow", "above_us"] == pytest.approx(5.0)
    assert df.loc["torch_mm", "is_baseline"] and df.loc["torch_mm", "above_us"] == 0
    assert df.loc["gone", "status"] == "failed: boom" and df["median_us"].isna()["gone"]


@pytest.mark.parametrize("field, bad", [("stats.data", [1e-6, "x"]), ("ratio", "fast"), ("workers", [5]),
                                        ("spread", "wide"), ("kernels_per_call", "one")])
def test_a_malformed_figure_names_its_benchmark_and_field(tmp_path, field, bad):
    from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run
    path = write(tmp_path / "run.json", exported=True)
    doc = json.loads(path.read_text())
    entry = next(b for b in doc["benchmarks"] if (b["extra_info"]["variant"], b["extra_info"]["mode"]) == ("generic", "eager")
                 and b["extra_info"]["size"] == "256")
    if field == "stats.data":
        entry["stats"]["data"] = bad
    else:
        entry["extra_info"][field] = bad
    path.write_text(json.dumps(doc))
    with pytest.raises(RunFileError) as e:
        load_run(path)
    msg = str(e.value)
    assert msg.startswith(str(path)) and "execute/generic/256 eager" in msg and field in msg and "\n" not in msg
    # the same figure in a partial records.jsonl
    rec = {k: v for k, v in entry["extra_info"].items()}
    rec["samples"] = [1.0, "x"] if field == "stats.data" else [1.0, 2.0]
    (tmp_path / "records.jsonl").write_text(json.dumps({"kind": "record", "record": rec}) + "\n")
    with pytest.raises(RunFileError) as e:
        load_run(tmp_path / "records.jsonl")
    assert "execute/generic/256 eager" in str(e.value) and (field if field != "stats.data" else "samples") in str(e.value)
    # and in the engine's run file
    own = tmp_path / "own.json"
    own.write_text(json.dumps({**run_document([], FINGERPRINT), "records": [rec]}))
    with pytest.raises(RunFileError) as e:
        load_run(own)
    msg = str(e.value)
    assert msg.startswith(str(own)) and "execute/generic/256 eager" in msg and "\n" not in msg
    assert (field if field != "stats.data" else "samples") in msg
