"""The committed A/B jobs (reports/reference/<gpu>/ab/): each judges again to what it says, the
A/A jobs find nothing, and the paired verdict holds its targets on them (`hostbench ab-check`)."""
import json
from pathlib import Path

import pytest

from cudnn_hostbench.reports.judge import validate_ab
from cudnn_hostbench.reports.verdict import paired
from cudnn_hostbench.scripts.cli import main

ROOT = Path(__file__).resolve().parents[1]
JOBS = sorted(p.parent for p in (ROOT / "reports" / "reference").glob("*/ab/*/ab.json"))
AA = [j for j in JOBS if j.name.startswith("aa")]


def test_there_are_committed_jobs_and_aa_jobs_among_them():
    assert JOBS and AA


@pytest.mark.parametrize("job", JOBS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_committed_job_judges_again_to_the_verdicts_it_records(job):
    doc = json.loads((job / "ab.json").read_text())
    for rows, comp in zip(validate_ab.load_pairs(job), doc["comparisons"]):
        again = paired.judge(rows)
        assert again.counts() == comp["counts"]
        assert [v.verdict for v in again.rows] == [r["verdict"] for r in comp["rows"]]


@pytest.mark.parametrize("job", AA, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_an_aa_job_finds_no_change(job):
    doc = json.loads((job / "ab.json").read_text())
    assert doc["pass"]
    assert not any(r["verdict"] in ("SLOWER", "FASTER", "KERNEL CHANGED") for c in doc["comparisons"] for r in c["rows"])


@pytest.mark.parametrize("job", [j for j in JOBS if j not in AA], ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_version_job_leaves_at_most_a_tenth_of_its_rows_unsure(job):
    for c in json.loads((job / "ab.json").read_text())["comparisons"]:
        assert c["counts"].get("UNSURE", 0) <= 0.1 * len(c["rows"])


# the target's false-job bound is over 60 or more resampled jobs in all: ab-check pools the jobs'
# null jobs, so each job gives its share (at least 10), and a new job adds no time to the others
RESAMPLES = max(10, -(-60 // max(1, len(AA))))


@pytest.mark.slow
@pytest.mark.newest_only
def test_the_paired_verdict_holds_its_targets_on_the_committed_aa_jobs(capsys):
    assert main(["ab-check", *map(str, AA), "--resamples", str(RESAMPLES), "--check"]) == 0
    out = capsys.readouterr().out
    assert "false jobs: " in out and "missed" not in out
