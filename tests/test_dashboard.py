"""Dashboard: change points, a site rendered from synthetic runs (trust flags, host rows), the
reference runs in headless Chromium at 1400 px."""
from __future__ import annotations

import html
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure import trust
from cudnn_hostbench.bench.measure.records import Record, run_document, write_run
from cudnn_hostbench.reports import changepoints, dashboard, fmt, store
from cudnn_hostbench.scripts import cli
from tests.helpers import FINGERPRINT, synthetic_records

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reports" / "reference" / "h200"
WINDOW = 1400


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
def host_records() -> list[Record]:
    """Build-time rows in ms: a total, two parts of it (baseline: the total) and a cache hit."""
    return [Record("build", "build_total", "256", "host", role="info", unit="ms", samples=[9.0, 9.2, 8.8]),
            Record("build", "step_plan", "256", "host", role="info", unit="ms", samples=[8.0, 8.1, 7.9],
                   baseline="build_total", ratio={"n": 3, "median": 0.89}),
            Record("build", "step_check", "256", "host", role="info", unit="ms", samples=[0.05, 0.06, 0.05],
                   baseline="build_total", ratio={"n": 3, "median": 0.006}),
            Record("build", "cache_hit", "256", "host", role="fixed", unit="ms", samples=[310.0, 320.0, 300.0],
                   flags=["clock_drop"])]


def flag(recs: list[Record]) -> list[Record]:
    """Trust fields on one figure, as a merged multi-worker run fills them."""
    for r in recs:
        if (r.variant, r.size, r.mode) == ("generic", "256", "eager"):
            r.flags = ["discarded", "wide_spread"]
            r.rounds_discarded = {"slow_host": 3}
            r.spread = 0.14
            half = len(r.samples) // 2  # two workers, each with half of the rounds
            r.workers = [{"worker": k, "n": len(part), "median": statistics.median(part)}
                         for k, part in enumerate((r.samples[:half], r.samples[half:]))]
    return recs


def make_runs(folder: Path) -> list[Path]:
    """Four H200 runs (generic eager 20 % slower from the third on; the newest has a flagged figure
    and host rows) and one H100 run."""
    paths = []
    for i, v in enumerate(["1.20.0", "1.26.0", "1.28.0", "1.31.0"]):
        slow = {("generic", "eager"): 1.2} if i >= 2 else {}
        fp = {**FINGERPRINT, "cudnn_frontend": v, "datetime": f"2026-01-0{i + 1}T00:00:00+00:00"}
        recs = synthetic_records(i, rounds=8, slow=slow)
        if i == 3:
            recs = flag(recs) + host_records()
            fp.update(workers=2, host_state={"floor_us": 1.25, "unstable": False})
        paths.append(write_run(folder / "h200" / f"run-fe{v}.json", run_document(recs, fp)))
    fp = {**FINGERPRINT, "gpu_name": "NVIDIA H100 <PCIe>", "driver": "570.0"}
    paths.append(write_run(folder / "h100" / "run.json", run_document(synthetic_records(9, rounds=8), fp)))
    return paths


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dash")
    make_runs(tmp / "runs")
    (tmp / "runs" / "h200" / "broken.json").write_text('{"benchmarks": [')
    assert cli.main(["dashboard", str(tmp / "runs"), "--out", str(tmp / "site"), "--order", "version"]) == 0
    return tmp / "site"


def images(site: Path) -> list[tuple[str, int, int]]:
    """(src, width, height) of every <img> in the page."""
    page = (site / "index.html").read_text()
    tags = re.findall(r"<img [^>]*>", page)
    return [(re.search(r'src="([^"]+)"', t).group(1), int(re.search(r'width="(\d+)"', t).group(1)),
             int(re.search(r'height="(\d+)"', t).group(1))) for t in tags]


def test_site_files_and_every_image_referenced(site):
    page = (site / "index.html").read_text()
    refs = {src for src, _, _ in images(site)}
    files = {f"img/{p.name}" for p in (site / "img").glob("*.png")}
    # per GPU a heat map and bars; H200 also a history and its host-time chart
    assert refs == files and len(files) == 6
    assert all((site / r).stat().st_size > 1000 for r in refs)
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from a network
    assert "<script" not in page
    manifest = (site / dashboard.MANIFEST).read_text().split("\n")
    assert set(refs) | {"index.html"} <= set(manifest)


def test_images_fit_one_screen_and_say_their_size(site):
    for src, w, h in images(site):
        assert dashboard.png_size(site / src) == (w, h)
        assert w <= dashboard.WIDTH_PX < WINDOW


def test_site_content(site):
    page = (site / "index.html").read_text()
    assert "NVIDIA H100 &lt;PCIe&gt;" in page and "NVIDIA H200" in page      # escaped
    assert "broken.json" in page                                              # load error named
    for field in ("driver", "cudnn_frontend", "clock_source", "cpu_model"):
        assert f"<td>{field}</td>" in page
    assert page.index("fe 1.20.0") < page.index("fe 1.26.0") < page.index("fe 1.31.0")
    # the 20 % step of generic/eager at the third version is listed, in the right place
    m = re.findall(r"<td>generic · eager · (\d+)</td><td>fe 1.28.0</td>", page)
    assert sorted(m) == ["1024", "256"]
    assert "unsupported: needs frontend &gt;= 1.31" in page


def test_trust_summary_per_run_legend_once_and_badges(site, tmp_path):
    page = html.unescape((site / "index.html").read_text())
    runs, _ = store.load_runs([site.parent / "runs"], "version")
    for run in runs:
        assert trust.summary_line(run) in page
    newest = [r for r in runs if store.frontend_version(r) == "1.31.0"][0]
    assert "2 worker(s)" in trust.summary_line(newest) and "2 figure(s) flagged" in trust.summary_line(newest)
    assert page.count(trust.LEGEND) == 1
    assert re.search(r"<td>execute/generic · 256 · eager</td><td[^>]*>[\d.]+ µs/call</td><td[^>]*>⚑w</td>", page)
    assert re.search(r"<td>build/cache_hit · 256 · host</td><td[^>]*>310.0 ms</td><td[^>]*>⚑c</td>", page)
    assert re.search(r"<td[^>]*>310.0 ms⚑c</td>", page)  # the badge beside the figure in the host table


def test_no_legend_without_flags(tmp_path):
    write_run(tmp_path / "run.json", run_document(synthetic_records(1, rounds=6), dict(FINGERPRINT)))
    assert cli.main(["dashboard", str(tmp_path / "run.json"), "--out", str(tmp_path / "site")]) == 0
    page = html.unescape((tmp_path / "site" / "index.html").read_text())
    assert trust.LEGEND not in page and "no figure flagged" in page


def test_units_are_never_mixed(site):
    runs, _ = store.load_runs([site.parent / "runs" / "h200"], "version")
    labels = store.unique_labels(runs, "version")
    df = store.records_frame(runs, labels)
    blocks = dashboard.heat_blocks(df, labels)
    heat_variants = {v for rows, _ in blocks for _, _, v in rows}
    assert heat_variants and not heat_variants & {"build_total", "step_plan", "step_check", "cache_hit"}
    page = (site / "index.html").read_text()
    # host rows in their own section, in ms, parts named as parts of their total, not as a difference
    host = page[page.index("Host / build time"):page.index("Per probe")]
    assert "img/NVIDIA-H200-host-ms.png" in host and "build/step_plan · 256" in host
    assert "0.89× build_total" in host and "above" not in host


def test_cells_say_ratios(site):
    runs, _ = store.load_runs([site.parent / "runs" / "h100"])
    df = store.records_frame(runs)
    row = df[(df.variant == "generic") & (df["mode"] == "eager") & (df["size"] == "256")].iloc[0]
    rec = runs[0].find("execute", "generic", "256", "eager")
    assert row.ratio == pytest.approx(rec.ratio.median)  # the round-by-round median, not recomputed
    assert fmt.ratio(1.234) == "1.23×" and fmt.ratio(612.4) == "612×"


def test_hostbench_dispatches_dashboard(tmp_path):
    run = make_runs(tmp_path / "runs")[-1]
    assert cli.main(["dashboard", str(run), "--out", str(tmp_path / "site")]) == 0
    assert (tmp_path / "site" / "index.html").exists()


# -- the reference runs, in a browser at 1400 px -----------------------------------------------
@pytest.fixture(scope="module")
def reference_site(tmp_path_factory):
    runs, errors = store.load_runs([REFERENCE])
    assert errors == [] and len(runs) >= 2
    out = tmp_path_factory.mktemp("ref") / "site"
    dashboard.build(runs, out)
    return out


def test_reference_runs_render(reference_site):
    page = (reference_site / "index.html").read_text()
    assert "NVIDIA H200" in page and "img/NVIDIA-H200-heatmap.png" in page
    for src, w, _ in images(reference_site):
        assert (reference_site / src).exists() and w <= dashboard.WIDTH_PX


@pytest.fixture
def chromium() -> str:
    """The browser; skips without one, except under CI (.ci/run installs it), where it fails."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing under CI (.ci/run installs it)")
        pytest.skip("no chromium on PATH (apt-get install -y chromium to run this check)")
    return browser


def browse(browser: str, tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", *args, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p


def test_reference_dashboard_in_chromium_is_one_screen_wide(chromium, reference_site, tmp_path):
    import numpy as np
    from PIL import Image

    browser = chromium
    index = reference_site / "index.html"
    # the page has no script of its own: a copy with one reports the laid-out width
    probe = reference_site / "_width.html"
    probe.write_text(index.read_text().replace("</body>", (
        '<script>addEventListener("load", () => document.body.setAttribute('
        '"data-scroll-width", document.documentElement.scrollWidth))</script></body>')))
    dom = browse(browser, tmp_path, probe.as_uri(), f"--window-size={WINDOW},1000", "--dump-dom").stdout
    width = int(re.search(r'data-scroll-width="(\d+)"', dom).group(1))
    assert 0 < width <= WINDOW
    shot = tmp_path / "shot.png"
    browse(browser, tmp_path, index.as_uri(), f"--window-size={WINDOW},2400", f"--screenshot={shot}")
    im = Image.open(shot).convert("RGB")
    assert im.size == (WINDOW, 2400)
    px = np.asarray(im).reshape(-1, 3)
    inked = (px.min(axis=1) < 200).mean()
    colours = len(np.unique(px[::7], axis=0))
    assert inked > 0.03 and colours > 100, (inked, colours)  # not blank: text, tables and heat map
