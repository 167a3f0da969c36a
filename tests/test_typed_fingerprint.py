"""The typed fingerprint (bench/measure/runfile/environment.py): every committed run's fingerprint
reads into it and writes back byte for byte; an older or unknown layout loses nothing."""
import gzip
import json
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile import records, run_format
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint, HostState, Machine
from cudnn_hostbench.bench.measure.runfile.fields import plain

REFERENCE = Path(__file__).resolve().parent.parent / "reports" / "reference"


def committed_runs() -> list[Path]:
    """Every committed run file (pytest-benchmark JSON, plain or compressed)."""
    return sorted(p for p in REFERENCE.rglob("run*.json*") if p.name.endswith((".json", ".json.gz")))


def raw_fingerprint(path: Path) -> dict:
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)
    return doc["machine_info"]["hostbench"]


@pytest.mark.parametrize("path", committed_runs(), ids=lambda p: str(p.relative_to(REFERENCE)))
def test_a_committed_fingerprint_round_trips_byte_for_byte(path):
    raw = raw_fingerprint(path)
    typed = Fingerprint.from_dict(raw)
    assert json.dumps(typed.to_dict()) == json.dumps(raw)
    assert Fingerprint.from_dict(typed.to_dict()) == typed
    for name in Fingerprint.names():   # each field holds the file's value, typed
        if name in raw:
            assert plain(getattr(typed, name)) == raw[name], name


@pytest.mark.parametrize("path", committed_runs(), ids=lambda p: str(p.relative_to(REFERENCE)))
def test_a_committed_run_loads_typed(path):
    fp = records.load_run(path).fingerprint
    assert isinstance(fp, Fingerprint) and isinstance(fp.machine, Machine) and isinstance(fp.host_state, HostState)
    assert fp.gpu_name and fp.start == f"{fp.machine.boot_id}/{fp.machine.gpu_uuid}"
    assert [w.worker for w in fp.workers_table()] == list(range(1, len(fp.workers_table()) + 1))


def test_missing_keys_take_defaults_and_unknown_ones_are_kept():
    old = {"gpu_name": "NVIDIA H200", "from_the_future": {"x": 1}, "machine": "not an object",
           "host_state": {"floor_us": 0.8, "histogram": {"0.80": 3}, "per_worker": [{"floor_us": 0.8}, 7]}}
    fp = Fingerprint.from_dict(old)
    assert fp.workers == 1 and fp.suite_wall_s is None and fp.cudnn_frontend is None and fp.start == ""
    assert fp.extra == {"from_the_future": {"x": 1}, "machine": "not an object"}
    assert fp.host_state.extra == {"histogram": {"0.80": 3}} and fp.host_state.per_worker[1] == 7
    assert fp.to_dict() == old and list(fp.to_dict()) == list(old)


def test_a_field_set_is_written_after_those_read():
    fp = Fingerprint.from_dict({"gpu_name": "g"})
    fp.workers = 1                    # even a default, once set, is a key of the file
    fp["ab_job"] = {"side": "A"}      # the mapping view sets the same field
    assert fp.to_dict() == {"gpu_name": "g", "workers": 1, "ab_job": {"side": "A"}}
    assert fp.ab_job == {"side": "A"} and "ab_job" in fp and "suite_wall_s" not in fp
    assert Fingerprint.of({}) == {} and not Fingerprint.of(None)


def test_a_format_1_fingerprint_made_in_memory_has_its_worker_rows():
    fp = Fingerprint.of({"workers": 2, "worker_wall_s": [10.0, 12.0], "worker_startup_s": [1.0, 2.0]})
    rows = fp.workers_table()
    assert [(w.worker, w.role, w.wall_s) for w in rows] == [(1, "full", 10.0), (2, "full", 12.0)]
    assert rows[0].to_dict() == run_format.worker_table(fp.to_dict())[0]


def test_a_run_file_written_from_a_typed_fingerprint_reads_back_equal(tmp_path):
    path = committed_runs()[0]
    run = records.load_run(path)
    again = records.load_run(records.write_run(tmp_path / "run.json", records.run_document(run.records, run.fingerprint)))
    assert again.fingerprint == run.fingerprint
    assert json.dumps(again.fingerprint.to_dict()) == json.dumps(run.fingerprint.to_dict())
