"""Status: kind + reason, serialised as the text run files hold; the committed runs read back unchanged."""
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.status import Status, Unsupported

ROOT = Path(__file__).resolve().parent.parent


def test_kinds_serialise_as_before():
    assert str(Status("ok")) == "ok"
    assert str(Status("capture_failed", "boom")) == "capture failed: boom"
    assert Status.parse("failed: numerics rel_err=0.5") == Status("failed", "numerics rel_err=0.5")
    assert Status.parse("something odd").kind == "error"
    assert Status.of(Unsupported("old")) == Status("unsupported", "old")
    assert str(Status.of(ValueError("x"))) == "error: ValueError: x"


def test_reference_statuses_round_trip():
    n = 0
    for p in (ROOT / "reports" / "reference").rglob("*.json"):
        try:
            run = records.load_run(p)
        except records.RunFileError:
            continue
        for r in run.records:
            assert str(Status.parse(r.status)) == r.status
            n += 1
    assert n
