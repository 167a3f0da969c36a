"""`hostbench dashboard` on bad input and bad --out: exit 2, one line on stderr naming the file, no
traceback, nothing written or removed. Run in this process as `python -m` runs it (tests/helpers.py
hostbench_here); a refusal, --help and the closed pipes run the real command in a subprocess, as a
user's shell does."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile.records import JsonlWriter, run_document, write_run
from cudnn_hostbench.reports.dashboard import site as dashboard
from tests.helpers import FINGERPRINT, hostbench_here, synthetic_records

ROOT = Path(__file__).resolve().parents[1]


def hostbench(*args) -> subprocess.CompletedProcess:
    """`hostbench dashboard ARGS` in this process (tests/helpers.py hostbench_here)."""
    return hostbench_here("dashboard", *args)


def hostbench_process(*args) -> subprocess.CompletedProcess:
    """`hostbench dashboard ARGS` in its own process, as a user's shell runs it."""
    return subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "dashboard", *map(str, args)], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def tree(folder: Path) -> dict:
    """Every path under `folder` with its size and mtime: a snapshot to compare."""
    return {str(p.relative_to(folder)): (p.is_dir(), p.stat().st_size if p.is_file() else 0, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def good_run(path: Path, **fp) -> Path:
    return write_run(path, run_document(synthetic_records(1, rounds=6), {**FINGERPRINT, **fp}))


def junk(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = bytes(random.Random(7).randrange(256) for _ in range(4000))
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    path.write_bytes(data)
    return path


def assert_refused(tmp_path: Path, args: list, names: Path, run=hostbench) -> str:
    """Runs the command; asserts exit 2, one stderr line naming `names`, no traceback, tree unchanged."""
    before = tree(tmp_path)
    p = run(*args)
    lines = p.stderr.splitlines()
    assert p.returncode == 2, p.stderr
    assert len(lines) == 1, p.stderr
    assert str(names) in lines[0] and "Traceback" not in p.stderr
    assert p.stdout == ""
    assert tree(tmp_path) == before
    return lines[0]


# -- unreadable inputs ------------------------------------------------------------------------
def test_non_utf8_file_alone_exits_2(tmp_path):
    bad = junk(tmp_path / "runs" / "junk.json")
    line = assert_refused(tmp_path, [bad, "--out", tmp_path / "site"], bad, run=hostbench_process)
    assert "UTF-8" in line


@pytest.mark.slow
def test_non_utf8_file_among_runs_is_skipped_with_one_line(tmp_path):
    good_run(tmp_path / "runs" / "run.json")
    bad = junk(tmp_path / "runs" / "junk.json")
    junk(tmp_path / "runs" / "more.jsonl")
    p = hostbench(tmp_path / "runs", "--out", tmp_path / "site")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    named = [line for line in p.stderr.splitlines() if str(bad) in line]
    assert len(named) == 1 and "skipped" in named[0]
    page = (tmp_path / "site" / "index.html").read_text()
    assert "junk.json" in page and "more.jsonl" in page and "execute" in page


@pytest.mark.parametrize("name, text", [
    ("empty.json", json.dumps({"benchmarks": [], "machine_info": {"hostbench": FINGERPRINT}})),
    ("empty.jsonl", ""),
    ("fingerprint_only.jsonl", json.dumps({"kind": "fingerprint", "fingerprint": FINGERPRINT}) + "\n"),
])
@pytest.mark.slow
def test_run_without_records(tmp_path, name, text):
    run = tmp_path / "runs" / name
    run.parent.mkdir()
    run.write_text(text)
    line = assert_refused(tmp_path, [run, "--out", tmp_path / "site"], run)
    assert f"no records in {run}" in line
    good_run(tmp_path / "runs" / "good.json")  # beside a readable run it is only skipped
    p = hostbench(tmp_path / "runs", "--out", tmp_path / "site")
    assert p.returncode == 0 and f"skipped no records in {run}" in p.stderr, p.stderr


@pytest.mark.slow
def test_partial_jsonl_with_records_still_loads(tmp_path):
    w = JsonlWriter(tmp_path / "records.jsonl")
    w.write({"kind": "fingerprint", "fingerprint": FINGERPRINT})
    for r in synthetic_records(3, rounds=6)[:6]:
        w.write({"kind": "record", "record": r.to_dict()})
    w.close()
    p = hostbench(tmp_path / "records.jsonl", "--out", tmp_path / "site")
    assert p.returncode == 0 and (tmp_path / "site" / "index.html").exists(), p.stderr


def test_missing_input_exits_2(tmp_path):
    assert_refused(tmp_path, [tmp_path / "nowhere.json", "--out", tmp_path / "site"], tmp_path / "nowhere.json")


# -- the output folder ------------------------------------------------------------------------
def test_out_is_a_file(tmp_path):
    run = good_run(tmp_path / "run.json")
    (tmp_path / "site.html").write_text("mine")
    line = assert_refused(tmp_path, [run, "--out", tmp_path / "site.html"], tmp_path / "site.html")
    assert "not a folder" in line
    assert_refused(tmp_path, [run, "--out", tmp_path / "site.html" / "sub"], tmp_path / "site.html")


def test_non_empty_folder_that_is_not_a_dashboard_is_refused(tmp_path):
    run = good_run(tmp_path / "run.json")
    (tmp_path / "photos" / "img").mkdir(parents=True)
    (tmp_path / "photos" / "img" / "holiday.png").write_bytes(b"\x89PNG mine")
    line = assert_refused(tmp_path, [run, "--out", tmp_path / "photos"], tmp_path / "photos")
    assert dashboard.MANIFEST in line


@pytest.mark.slow
def test_rebuild_removes_only_what_it_wrote(tmp_path):
    good_run(tmp_path / "runs" / "h200.json")
    site = tmp_path / "site"
    assert hostbench(tmp_path / "runs", "--out", site).returncode == 0
    manifest = site / dashboard.MANIFEST
    assert "index.html" in manifest.read_text().split()
    # an older dashboard wrote images: listed in its manifest, they go stale on a rebuild
    (site / "img").mkdir()
    (site / "img" / "NVIDIA-H100-heatmap.png").write_bytes(b"\x89PNG old")
    manifest.write_text(manifest.read_text() + "img/NVIDIA-H100-heatmap.png\n")
    (site / "img" / "mine.png").write_bytes(b"\x89PNG a user's own image")
    (site / "notes.txt").write_text("mine too")
    p = hostbench(tmp_path / "runs" / "h200.json", "--out", site)
    assert p.returncode == 0, p.stderr
    assert not (site / "img" / "NVIDIA-H100-heatmap.png").exists()
    assert (site / "img" / "mine.png").read_bytes() == b"\x89PNG a user's own image"
    assert (site / "notes.txt").read_text() == "mine too"
    second = set(manifest.read_text().split())
    assert "img/mine.png" not in second and "index.html" in second
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")]  # no staging folder left


@pytest.mark.slow
def test_a_users_file_where_the_dashboard_writes_is_refused(tmp_path):
    run = good_run(tmp_path / "runs" / "h200.json")
    site = tmp_path / "site"
    assert hostbench(run, "--out", site).returncode == 0
    manifest = site / dashboard.MANIFEST
    manifest.write_text("\n".join(n for n in manifest.read_text().splitlines() if n != "index.html") + "\n")
    target = site / "index.html"
    target.write_bytes(b"a user's file under a name the dashboard would write")
    line = assert_refused(tmp_path, [run, "--out", site], target)
    assert "not written by hostbench" in line


@pytest.mark.slow
def test_a_damaged_manifest_never_reaches_outside(tmp_path):
    run = good_run(tmp_path / "runs" / "h200.json")
    site = tmp_path / "site"
    outside = tmp_path / "keep.txt"
    outside.write_text("keep")
    assert hostbench(run, "--out", site).returncode == 0
    with open(site / dashboard.MANIFEST, "a") as fh:
        fh.write(f"../keep.txt\n{outside}\n")
    assert hostbench(run, "--out", site).returncode == 0
    assert outside.read_text() == "keep"


# -- the terminal -----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("args", [["--help"], ["RUNS", "--out", "SITE"]])
def test_closed_pipe_is_quiet(tmp_path, args):
    run = good_run(tmp_path / "run.json")
    args = [str(run) if a == "RUNS" else str(tmp_path / "site") if a == "SITE" else a for a in args]
    p = subprocess.Popen([sys.executable, "-m", "cudnn_hostbench.scripts.cli", "dashboard", *args], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before anything is printed, as with `| head -0`
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_help_lists_defaults_and_what_out_overwrites():
    p = hostbench_process("--help")
    text = " ".join(p.stdout.split())
    assert p.returncode == 0 and p.stderr == ""
    assert "(default: date)" in text and "(default: hostbench dashboard)" in text
    for name in ("index.html", "overwrites", "refused"):
        assert name in text
    assert "img/" not in text   # it writes one page, charts inline
    assert dashboard.MANIFEST.lstrip(".") in text.replace("- ", "-")


def test_a_bad_option_is_one_line(tmp_path):
    p = hostbench("--order", "size", tmp_path, "--out", tmp_path / "site")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "size" in p.stderr
    assert not (tmp_path / "site").exists()


def test_library_build_refuses_a_foreign_folder(tmp_path):
    from cudnn_hostbench.reports import store
    runs, _ = store.load_runs([good_run(tmp_path / "run.json")])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    with pytest.raises(dashboard.OutError):
        dashboard.build(runs, tmp_path / "other")
    assert os.listdir(tmp_path / "other") == ["x"]
