"""Dashboard: change points, a site rendered from synthetic runs, headless Chromium, the reference run."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.records import run_document, write_run
from reports import changepoints, dashboard, store
from tests.helpers import FINGERPRINT, synthetic_records

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reports" / "reference" / "h200" / "run.json"


# -- change points ----------------------------------------------------------------------------
def test_step_found_where_it_happens():
    (s,) = changepoints.detect([10, 10.1, 9.9, 10, 12, 12.1, 11.9, 12])
    assert (s.index, s.before, s.after) == (4, 10.0, 12.0) and s.change == pytest.approx(0.2)


def test_no_step_in_noise_or_below_min_step():
    assert changepoints.detect([10, 10.1, 9.9, 10, 10.2, 10, 9.8, 10.1]) == []
    assert changepoints.detect([10, 10, 10, 10.3, 10.3, 10.3]) == []          # 3 % < 5 %
    assert changepoints.detect([10, 10, 10, 10.3, 10.3, 10.3], min_step=0.02) != []


def test_single_outlier_and_short_series_are_not_steps():
    assert changepoints.detect([10, 10, 10, 15, 10, 10, 10]) == []
    assert changepoints.detect([10, 10, 10, 10, 13]) == []                    # needs a second run
    assert changepoints.detect([10, 13, 13]) == []


def test_bump_and_gaps():
    steps = changepoints.detect([10, 10, 12, 12, 10, 10])
    assert [(s.index, round(s.change, 2)) for s in steps] == [(2, 0.2), (4, -0.17)]
    (s,) = changepoints.detect([10, float("nan"), 10, None, 10, 12, 12])
    assert s.index == 5


# -- the site ---------------------------------------------------------------------------------
def make_runs(folder: Path) -> list[Path]:
    """Four H200 runs (generic eager 20 % slower from the third on) and one H100 run."""
    paths = []
    for i, v in enumerate(["1.20.0", "1.26.0", "1.28.0", "1.31.0"]):
        slow = {("generic", "eager"): 1.2} if i >= 2 else {}
        fp = {**FINGERPRINT, "cudnn_frontend": v, "datetime": f"2026-01-0{i + 1}T00:00:00+00:00"}
        paths.append(write_run(folder / "h200" / f"run-fe{v}.json",
                               run_document(synthetic_records(i, rounds=8, slow=slow), fp)))
    fp = {**FINGERPRINT, "gpu_name": "NVIDIA H100 <PCIe>", "driver": "570.0"}
    paths.append(write_run(folder / "h100" / "run.json", run_document(synthetic_records(9, rounds=8), fp)))
    return paths


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dash")
    make_runs(tmp / "runs")
    (tmp / "runs" / "h200" / "broken.json").write_text('{"benchmarks": [')
    assert dashboard.main([str(tmp / "runs"), "--out", str(tmp / "site"), "--order", "version"]) == 0
    return tmp / "site"


def test_site_files_and_every_image_referenced(site):
    html = (site / "index.html").read_text()
    refs = set(re.findall(r'<img src="([^"]+)"', html))
    files = {f"img/{p.name}" for p in (site / "img").glob("*.png")}
    assert refs == files and len(files) == 5  # per GPU: heat map, bars; H200 also a history
    assert all((site / r).stat().st_size > 1000 for r in refs)
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing fetched from a network


def test_site_content(site):
    html = (site / "index.html").read_text()
    assert "NVIDIA H100 &lt;PCIe&gt;" in html and "NVIDIA H200" in html      # escaped
    assert "broken.json" in html                                              # load error named
    for field in ("driver", "cudnn_frontend", "clock_source", "cpu_model"):
        assert f"<td>{field}</td>" in html
    assert html.index("fe 1.20.0") < html.index("fe 1.26.0") < html.index("fe 1.31.0")
    # the 20 % step of generic/eager at the third version is listed, in the right place
    m = re.findall(r"<td>generic · eager · (\d+)</td><td>fe 1.28.0</td>", html)
    assert sorted(m) == ["1024", "256"]
    assert "unsupported: needs frontend &gt;= 1.31" in html


def test_cli_without_runs_exits_2(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{")
    assert dashboard.main([str(tmp_path), "--out", str(tmp_path / "site")]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_hostbench_dispatches_dashboard(tmp_path):
    from scripts import cli
    run = make_runs(tmp_path / "runs")[-1]
    assert cli.main(["dashboard", str(run), "--out", str(tmp_path / "site")]) == 0
    assert (tmp_path / "site" / "index.html").exists()


def test_page_loads_in_headless_chromium(site, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on PATH (apt-get install chromium to run this check)")
    shot = tmp_path / "shot.png"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--window-size=1280,1600", f"--screenshot={shot}",
           (site / "index.html").resolve().as_uri()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    console = [line for line in p.stderr.splitlines() if "CONSOLE" in line]
    assert not [c for c in console if "Uncaught" in c or ":ERROR:CONSOLE" in c], console


def test_reference_run_renders(tmp_path):
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE.relative_to(ROOT)} is not committed yet")
    runs, errors = store.load_runs([REFERENCE.parent])
    assert errors == [] and runs
    index = dashboard.build(runs, tmp_path / "site")
    html = index.read_text()
    assert "img/" in html and runs[0].fingerprint.get("gpu_name", "unknown GPU") in html
    assert all((tmp_path / "site" / r).exists() for r in re.findall(r'<img src="([^"]+)"', html))
