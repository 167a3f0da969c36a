"""The dashboard over A/B jobs (issue 66.3-4): over a store holding nightly jobs, each row that moved
in any job is trended with a point per job that judged it; each job's rows are counted by verdict,
UNSURE as UNSURE, and no all-clear is said over rows that were not judged; `hostbench dashboard
JOB_DIR` shows the job's chart and its table led by the rows that moved."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from cudnn_hostbench.reports.dashboard import abpage
from cudnn_hostbench.reports.history import db
from cudnn_hostbench.scripts import cli

from .test_ab_store import SLOW_KEY, make_job


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> list[Path]:
    """Two nightly jobs: side B 6 % slower on SLOW_KEY both nights; enough pairs the first night to
    call it, few the second (many rows UNSURE there)."""
    root = tmp_path_factory.mktemp("nights")
    return [make_job(root / "night-1", pairs=8, slow=0.06, seed=1), make_job(root / "night-2", pairs=4, slow=0.06, seed=2)]


def rows_of(job: Path) -> list[dict]:
    return json.loads((job / "ab.json").read_text())["comparisons"][0]["rows"]


def key(r: dict) -> tuple:
    return (r["probe"], r["variant"], r["size"], r["mode"])


@pytest.fixture(scope="module")
def store(nights, tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('st') / 'h.db'}"
    assert cli.main(["history", "ingest", *map(str, nights), "--store", url]) == 0
    st = db.open_store(url)
    yield st
    st.close()


def test_a_row_that_moved_gets_one_point_per_job_and_only_moved_rows_are_trended(nights, store):
    assert [r["verdict"] for r in rows_of(nights[0]) if key(r) == SLOW_KEY] == ["SLOWER"]
    (series,) = abpage.view(store)
    assert [j["hash"] for j in series["jobs"]] and len(series["jobs"]) == 2
    facets = {f["key"]: f for f in series["facets"]}
    assert [x for x, *_ in facets[SLOW_KEY]["points"]] == [0, 1]          # one point per job, in job order
    moved = {key(r) for n in nights for r in rows_of(n) if r["verdict"] in ("SLOWER", "FASTER", "KERNEL CHANGED")}
    assert set(facets) == moved
    for f in facets.values():   # a point is a job's change inside its own interval
        assert all(lo is None or lo <= c <= hi for _, c, lo, hi, _ in f["points"])
    assert series["trend_svg"].count('aria-label="paired change per job of') == len(facets)


def test_each_job_counts_its_unsure_rows_as_unsure(nights, store):
    (series,) = abpage.view(store)
    want = [Counter(r["verdict"] for r in rows_of(n)) for n in nights]
    assert want[1]["UNSURE"] > 0
    assert [j["counts"] for j in series["jobs"]] == [dict(w) for w in want]
    assert [j["unsure"] for j in series["jobs"]] == [w["UNSURE"] for w in want]


def page(out: Path) -> str:
    return (out / "index.html").read_text(encoding="utf-8")


def test_the_page_over_a_store_never_says_all_clear_over_unsure_rows(nights, store, tmp_path):
    out = tmp_path / "site"
    assert cli.main(["dashboard", "--store", store.url, "--out", str(out)]) == 0
    html = page(out)
    n2 = Counter(r["verdict"] for r in rows_of(nights[1]))
    assert "A/B: current-B against current-A" in html
    assert f'<span class="UNSURE">{n2["UNSURE"]} UNSURE</span>' in html
    assert "all %d rows judged SAME" % sum(n2.values()) not in html
    table = re.search(r"by verdict</summary>(.*?)</table>", html, re.S).group(1)
    assert table.count("<tr>") == 3                                   # a header and one line per job
    assert 'aria-label="rows per job by verdict"' in html


def test_an_aa_job_all_same_is_the_only_all_clear(tmp_path):
    job = make_job(tmp_path / "aa", pairs=8)
    doc = json.loads((job / "ab.json").read_text())
    for r in doc["comparisons"][0]["rows"]:          # every row decided SAME, as a long A/A job ends
        r["verdict"], r["more_pairs"] = "SAME", None
    (job / "ab.json").write_text(json.dumps(doc))
    out = tmp_path / "site"
    assert cli.main(["dashboard", str(job), "--out", str(out)]) == 0
    assert f"all {len(doc['comparisons'][0]['rows'])} rows judged SAME" in page(out)


def test_dashboard_of_a_job_folder_shows_its_chart_and_its_table_led_by_the_moved_rows(nights, tmp_path, capsys):
    out = tmp_path / "site"
    assert cli.main(["dashboard", str(nights[0]), "--out", str(out)]) == 0
    assert "1 A/B job" in capsys.readouterr().out
    html = page(out)
    assert "aria-label=\"every row's paired change:" in html               # the job's chart, ab.png's
    first = re.search(r"<th>verdict</th><th>row</th><th>class</th>.*?</tr>\s*<tr><td[^>]*>([A-Z ]+)</td><td>([^<]+)",
                      html, re.S)
    assert first.group(1) == "SLOWER" and first.group(2) == "/".join(SLOW_KEY)


def test_dashboard_of_a_corrupt_job_is_one_line_and_writes_nothing(nights, tmp_path, capsys):
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(nights[0], bad)
    (bad / "ab.json").write_text("{")
    out = tmp_path / "site"
    assert cli.main(["dashboard", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "corrupt A/B job" in err and "nothing written" in err
    assert not out.exists()
