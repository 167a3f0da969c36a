"""Issue 40: output that scans. One fitter for every table (reports/fit.py), marks in a column of
their own, a name column that widens with the terminal, a run summary of three lines at most, one
notation per interval, `history list` that fits and `history show --figures` from the store."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.records import load_run
from cudnn_hostbench.reports import fit, listing, run_summary, table
from cudnn_hostbench.reports.judge import check, compare
from cudnn_hostbench.scripts import cli
from tests.history_store import RUNS, sample_export, stored_url

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reports" / "reference" / "h200"
RUN = REF / "run.json"


def out(capsys, monkeypatch, argv, width=120) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert cli.main(argv) == 0
    return capsys.readouterr().out.splitlines()


# -- 1: one fitter ----------------------------------------------------------------------------------
def test_the_four_tables_use_the_one_fitter():
    for mod in (table, compare, check, listing):
        src = inspect.getsource(mod)
        assert "fit.grid(" in src or "_grid(" in src and "fit.grid" in src, mod.__name__
        assert ".rjust(" not in src.replace("fit.grid", ""), mod.__name__   # no grid of its own
        assert "get_terminal_size" not in src


def test_grid_puts_marks_in_a_column_of_their_own():
    lines = fit.grid(["name", "eager", "×base"], [["a", "12.43 ⚑c", "1.00"], ["b", "189.07", "0.99"],
                                                 ["c", "8.1 ⚑hw", "–"]], right=[1, 2], marked=[1])
    rows = lines[2:]
    ends = {r.index(d) + len(d) for r, d in zip(rows, ("12.43", "189.07", "8.1"))}
    assert len(ends) == 1                       # the digits end in one column
    assert len({r.index(x) for r, x in zip(rows, ("1.00", "0.99", "–"))}) <= 2   # right-aligned ratios
    assert rows[0].index("⚑") == rows[2].index("⚑")


def test_first_fit_and_cut():
    assert fit.first_fit(iter([["x" * 90], ["x" * 70], ["x"]]), 80) == (1, ["x" * 70])
    assert fit.first_fit(iter([["x" * 90]]), 80)[0] == 0
    assert fit.cut(["abcdef"], 4) == ["abc…"]
    assert "--wide shows every column" in " ".join(fit.left_out(["p"], 80))


# -- 2: digits line up; names widen -----------------------------------------------------------------
def _figure_column_ends(lines: list[str]) -> dict:
    """For each row line, where each number followed by a mark or spaces ends."""
    return [m.end(1) for x in lines for m in re.finditer(r"(\d+\.\d\d)( ⚑\w+)", x)]


def test_marked_and_unmarked_figures_line_up(capsys, monkeypatch):
    lines = out(capsys, monkeypatch, ["table", str(RUN), "--probe", "churn"], 120)
    rows = [x for x in lines if x.startswith(("reuse ", "torch_mm "))]
    assert rows
    marked = [x for x in rows if "⚑" in x]
    plain = [x for x in rows if "⚑" not in x.split()[1]]
    assert marked and plain
    # the eager figure's last digit is in one column whether or not it carries a mark
    ends = {re.search(r"^\S+\s+(\d+\.\d\d)", x).end(1) for x in rows}
    assert len(ends) == 1


def test_a_long_variant_name_stays_on_its_row_on_a_wide_terminal(capsys, monkeypatch):
    df = table.build_table(load_run(RUN))
    long = sorted({v for v in df["variant"] if len(v) > table.NAME_CAP})
    assert long
    for width in (120, 200):
        lines = out(capsys, monkeypatch, ["table", str(RUN)], width)
        alone = [x for x in lines if x in long]
        if width == 200:
            assert not alone, alone[:3]
        assert max(map(len, lines)) <= width
    # narrow: a name too long for what the figures leave goes onto its own line
    lines = out(capsys, monkeypatch, ["table", str(RUN)], 80)
    assert any(x in long for x in lines)


# -- 3: the summary is three lines at most ----------------------------------------------------------
def test_run_summary_is_three_lines_and_wide_has_it_whole(capsys, monkeypatch):
    run = load_run(RUN)
    full = run_summary.summary_line(run)
    listed = re.search(r"workers? for (.*?) \(timed fast: ([^)]*)\)", full)   # the top-ups' blocks
    assert full.count(listed.group(1)) == 1                          # the blocks once, not twice
    block = listed.group(1).split(", ")[0]
    # which were timed fast, in the fewest names (all but the blocks that were not)
    fast = listed.group(2)
    named = len(fast.split(", "))
    assert fast in ("all", "none") or fast.startswith("all but ") or named * 2 <= len(listed.group(1).split(", ")) + 1
    flagged = re.search(r"\d+ figure\(s\) flagged \([^)]*\)", full).group(0)
    discarded = re.search(r"\d+ discarded", full).group(0)
    for width in (60, 80, 100, 120, 200):
        lines = run_summary.summary_lines(run, width)
        assert 1 <= len(lines) <= 3 and all(len(x) <= width for x in lines), width
        text = " ".join(lines)
        assert flagged in text and discarded in text
    lines = out(capsys, monkeypatch, ["table", str(RUN)], 100)
    assert lines[2].startswith("3 worker(s)") and not lines[5].startswith(("3 ", "  "))
    assert not any(block in x for x in lines[:6]) and "--wide" in " ".join(lines[2:5])
    wide = out(capsys, monkeypatch, ["table", str(RUN), "--wide"], 100)
    assert full in wide


def test_run_takes_wide(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    capsys.readouterr()
    assert cli.main(["run", "--reference", "--wide"]) == 0
    text = capsys.readouterr().out
    assert run_summary.summary_line(load_run(RUN)) in text and "eager workers min–max" in text
    assert cli.main(["run", "--reference"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 100 and lines[4].startswith("3 worker(s)") and "--wide" in " ".join(lines[4:7])


def test_hostbench_run_prints_the_three_line_summary_and_hb_wide_the_whole(tmp_path, monkeypatch):
    """What `hostbench run` prints after the probes (the plugin's terminal summary)."""
    import shutil
    from types import SimpleNamespace

    from cudnn_hostbench.reports import pytest_report
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("HOSTBENCH_STORE", "off")
    run = tmp_path / "run.json"
    shutil.copy(RUN, run)
    for wide in (False, True):
        lines: list[str] = []
        term = SimpleNamespace(write_sep=lambda sep, text, out=lines: out.append(text),
                               write_line=lambda text, out=lines, **kw: out.extend(text.splitlines()))
        config = SimpleNamespace(_hostbench=SimpleNamespace(run_path=run),
                                 getoption=lambda name, default=None, w=wide: w if name == "hb_wide" else default)
        pytest_report.pytest_terminal_summary(term, 0, config)
        full = run_summary.summary_line(load_run(RUN))
        if wide:
            assert full in lines and any("eager workers min–max" in x for x in lines)
        else:
            head = lines[1:lines.index(next(x for x in lines if x.startswith("⚑")))]
            table_lines = [x for x in lines if not x.startswith(("run file:", "history store:"))]   # paths
            assert 1 <= len(head) <= 3 and full not in lines and max(map(len, table_lines)) <= 100


# -- 4: one notation per interval -------------------------------------------------------------------
def test_brackets_are_q1_q3_and_the_worker_range_has_its_own_column(capsys, monkeypatch):
    lines = out(capsys, monkeypatch, ["table", str(RUN), "--wide", "--probe", "churn"], 100)
    head = next(x for x in lines if x.startswith("probe"))
    assert head.count("×base [q1–q3]") == 3 and "eager workers min–max" in head
    run = load_run(RUN)
    rec = next(r for r in run.records if r.probe == "churn" and r.variant == "reuse" and r.size == "256"
               and r.mode == "eager")
    meds = [w["median"] for w in rec.workers]
    row = next(x for x in lines if x.split()[:3] == ["churn", "reuse", "256"])
    assert f"{min(meds):.2f}–{max(meds):.2f}" in row
    md = table.markdown_document(run, table.build_table(run))
    assert "eager workers min–max" in md and "[q1–q3]" in md


# -- 7: history list fits; show --figures from the store --------------------------------------------
def _store(tmp_path) -> str:
    return stored_url(tmp_path, REF / "history.hbx.jsonl.gz")


@pytest.mark.slow
def test_history_list_fits_and_names_each_gpu_once(tmp_path, capsys, monkeypatch):
    url = _store(tmp_path)
    for width in (80, 120):
        lines = out(capsys, monkeypatch, ["history", "list", "--store", url], width)
        assert max(map(len, lines)) <= width and not any(x.endswith("…") for x in lines)
        uuids = [u for x in lines for u in re.findall(r"GPU-[0-9a-f-]{36}", x)]
        assert uuids and len(uuids) == len(set(uuids))     # each GPU UUID once, in its start's heading
        assert sum(bool(re.match(r"\s*\d+  2026-", x)) for x in lines) == RUNS


@pytest.mark.slow
def test_history_show_figures_renders_the_table_from_the_store(tmp_path, capsys, monkeypatch):
    url = _store(tmp_path)
    lines = out(capsys, monkeypatch, ["history", "show", "63", "--figures", "--store", url], 100)
    text = "\n".join(lines)
    assert "run file       (not recorded)" in text        # no file at hand: the table comes from the store
    assert any(x.startswith("variant") and "eager" in x for x in lines) and "autotune · 256" in lines
    assert max(map(len, lines[lines.index("autotune · 256"):])) <= 100
    from cudnn_hostbench.reports.history import db
    st = db.open_store(url)
    figs = st.figures([63])[63]
    st.close()
    f = figs[("churn", "reuse", "256", "eager")]
    assert f"{f.median_us:.2f}" in text and f"{f.value:.2f}" in text   # the median and its ratio


# -- 5: the dashboard says what it judged, in version order for a matrix, names only files at hand ---
@pytest.mark.slow
def test_matrix_dashboard_judges_the_newest_version_and_says_it_judged_nothing(tmp_path):
    assert cli.main(["dashboard", str(REF / "matrix"), "--order", "version", "--out", str(tmp_path / "m")]) == 0
    html = (tmp_path / "m" / "index.html").read_text()
    judged = re.search(r"Judged run .*?</p>", html, re.S).group(0)
    assert "frontend 1.32.0" in judged and "frontend 1.26.0" not in judged   # 1.26.0 ran last, 1.32.0 is newest
    assert '<p class="neutral">Nothing judged' in html
    assert "No row moved past" not in html and "newer partial run" not in judged


@pytest.mark.slow
def test_history_dashboard_names_a_run_file_only_while_its_bytes_are_the_stored_ones(tmp_path):
    import shutil

    from cudnn_hostbench.reports.dashboard import page
    from cudnn_hostbench.reports.history import db
    from tests.history_store import committed_dashboard
    # `hostbench dashboard --store` of the committed history, rendered once per process
    html = (committed_dashboard(tmp_path) / "index.html").read_text()
    assert "<code></code>" not in html and "no all-clear" in html and "rows with a history" in html
    # a stored run file: named while unchanged, not once its bytes differ or it is gone
    f = tmp_path / "run.json"
    shutil.copy(RUN, f)
    st = db.open_store(f"sqlite:///{tmp_path / 'one.db'}", create=True)
    rid, _ = st.ingest_run(load_run(f), db.file_hash(f))
    r = st.run(rid)
    st.close()
    assert page.file_state(r) == (str(f), "")
    f.write_text(f.read_text().replace("}", " }", 1))
    assert page.file_state(r) == ("", "changed since stored")
    f.unlink()
    assert page.file_state(r) == ("", "not at hand")
    assert page.file_state({**r, "source_path": ""}) == ("", "not recorded")


# -- 6: engines carry the table's marks and a marked difference its caveat ---------------------------
def test_engines_mark_figures_and_caveat_a_marked_difference(capsys, monkeypatch, tmp_path):
    # the reference run's engine rows at 1024 marked ⚑h (no steady host state), as a slow-host run has them
    run = load_run(RUN)
    for r in run.records:
        if r.probe == "engine" and r.size == "1024" and r.mode == "eager" and r.variant.startswith("plan_"):
            r.flags = [*(r.flags or []), "host_unstable"]
    marked = records.write_run(tmp_path / "run.json", records.run_document(run.records, run.fingerprint))
    lines = out(capsys, monkeypatch, ["engines", str(marked)], 120)
    text = "\n".join(lines)
    at = text.index("### Engines at 1024³")
    part = text[at:]
    assert re.search(r"a spread of \d+\.\d\d µs \(⚑h: no steady host state", part)
    assert re.search(r"costs [+-]\d+\.\d\d µs eager \(⚑h", part)
    assert re.search(r"\| \d+\.\d\d ⚑h \|", part)
    df = table.build_table(load_run(marked))
    eng = df[(df.probe == "engine") & (df["size"] == "1024") & df.variant.str.startswith("plan_") & df["eager"].notna()]
    assert (eng["eager_badge"] != "").all()   # the table marks them too


# -- 8: host-trace says whether the host is bistable -------------------------------------------------
def test_host_trace_verdict_is_a_pure_function_of_the_trace():
    import json

    from cudnn_hostbench.scripts import host_trace
    doc = json.loads((REF / "host" / "host_trace.json").read_text())
    line = host_trace.verdict(host_trace.summarize([tuple(x) for x in doc["readings"]]))
    m = re.match(r"this host is bistable: fast (\d+\.\d\d) µs, slow (\d+\.\d\d) µs, (\d+) % of time slow", line)
    assert m and float(m.group(2)) > 1.4 * float(m.group(1)) and 20 <= int(m.group(3)) <= 80
    steady = [(i * 0.01, 0.8 + 0.01 * (i % 3)) for i in range(500)]
    assert host_trace.verdict(host_trace.summarize(steady)).startswith("not bistable")
    # slow in 46 % of the readings but 8 % of the time: each reading stands for the time to the next
    timed = [(t, 0.8) for t in range(70)] + [(70 + 0.1 * k, 2.0) for k in range(60)]
    s = host_trace.summarize(timed)
    assert 0.06 < s["slow_time_share"] < 0.1 and host_trace.verdict(s).startswith("this host is bistable")


def test_host_trace_prints_the_verdict_and_json_keeps_the_figures(capsys):
    import json
    assert cli.main(["host-trace", "--seconds", "0.3"]) == 0
    text = capsys.readouterr().out.strip()
    assert len(text.splitlines()) == 1 and ("bistable" in text) and not text.startswith("{")
    assert cli.main(["host-trace", "--seconds", "0.3", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert {"floor_us", "within_10pct", "spells", "slow_time_share"} <= set(s)


def test_host_trace_of_a_run_shows_each_workers_floor_and_levels(tmp_path, capsys):
    """A run folder's worker traces, a line each: F1's top-up worker 4 (committed) judged by the
    0.86 µs floor it was given, where its readings alone give 0.94 (the sentinel's fast level
    differs by process); a corrupt trace exits 2 naming it, and nothing is written."""
    import gzip
    import json

    with gzip.open(REF / "host" / "top_up_trace.json.gz", "rt") as fh:
        doc = json.load(fh)
    for w, d in (("w4", doc), ("w1", {**doc, "worker": "1/3", "floor_us": 0.94, "given_us": None})):
        (tmp_path / "run" / "workers" / w).mkdir(parents=True)
        (tmp_path / "run" / "workers" / w / "host_trace.json").write_text(json.dumps(d))
    assert cli.main(["host-trace", "--run", str(tmp_path / "run")]) == 0
    head, w1, w4 = capsys.readouterr().out.strip().splitlines()
    assert head.startswith("2 worker trace(s); fast level ")
    assert w1.startswith("w1: floor 0.94 µs, fast level 0.9") and "readings alone" not in w1
    assert re.match(r"w4: floor 0\.86 µs \(its readings alone: 0\.94\), fast level 0\.9\d µs; 8080 readings fast \d+ %", w4)
    assert re.search(r"1784 eager cycles fast \d+ % · mid \d+ % · slow \d+ % · switch \d+ %$", w4)
    assert cli.main(["host-trace", "--run", str(tmp_path / "run"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [s["worker"] for s in got] == ["1", "4"] and got[1]["own_floor_us"] > got[1]["floor_us"] * 1.05
    from cudnn_hostbench.scripts import host_trace
    bare = host_trace.worker_summary({"worker": "2/3", "floor_us": None, "readings": [], "cycles": []})   # read too little
    assert host_trace.worker_line(bare) == "w2: no floor; 0 readings; no eager cycles"
    (tmp_path / "run" / "workers" / "w1" / "host_trace.json").write_text("{not json")
    before = sorted(p.name for p in (tmp_path / "run").rglob("*"))
    assert cli.main(["host-trace", "--run", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "w1/host_trace.json: not a host trace" in err[0]
    assert sorted(p.name for p in (tmp_path / "run").rglob("*")) == before


# -- 9: long commands show progress on a terminal, nothing in a pipe ----------------------------------
def _tty(monkeypatch, on: bool) -> None:
    from cudnn_hostbench.bench.measure.core import progress
    monkeypatch.setattr(progress, "on_terminal", lambda: on)


# SMALL: a fifth of the committed history (tests/history_store.py sample_export), for the commands
# whose progress lines do not depend on how many runs they judge or draw
@pytest.mark.parametrize("argv,said", [
    (("history", "check", "63", "--store", "URL"), "history check: judging"),
    (("dashboard", "--store", "SMALL", "--out", "OUT"), "dashboard: NVIDIA H200: judging run"),
    (("verdict-check", "EXPORT", "--runs", "2", "--jobs", "1"), "verdict-check: judging run 2/"),
    (("history-bench", "--runs", "3"), "history-bench: one history check")],
    ids=["history-check", "dashboard", "verdict-check", "history-bench"])
@pytest.mark.slow
@pytest.mark.newest_only
def test_long_commands_show_progress_only_on_a_terminal(tmp_path, capsys, monkeypatch, argv, said):
    small = sample_export(tmp_path, every=5)
    named = {"URL": lambda: _store(tmp_path), "SMALL": lambda: stored_url(tmp_path, small),
             "EXPORT": lambda: str(small), "OUT": lambda: str(tmp_path / "d")}
    argv = tuple(named[a]() if a in named else a for a in argv)
    _tty(monkeypatch, True)
    capsys.readouterr()
    assert cli.main(list(argv)) == 0
    captured = capsys.readouterr()
    assert said in captured.err and said not in captured.out, argv
    _tty(monkeypatch, False)
    assert cli.main(list(argv)) == 0
    assert said not in capsys.readouterr().err, argv


@pytest.mark.slow
def test_committed_dashboard_charts_keep_their_size_at_800_px(tmp_path):
    """At 800 px the page scrolls no wider than the window and the trends and round-ratio panels
    wrap (two across) instead of shrinking: each is drawn at 90 % of its size or more, its text too."""
    import os
    import shutil

    from tests.test_dashboard import browse
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            raise AssertionError("chromium is missing under CI")
        import pytest
        pytest.skip("no chromium on PATH")
    page = tmp_path / "index.html"
    page.write_text((REF / "dashboard" / "index.html").read_text().replace("</body>", (
        '<script>addEventListener("load", () => { const s = [...document.querySelectorAll(".panel svg")]'
        '.map(x => x.getBoundingClientRect().width / x.width.baseVal.value);'
        'document.body.setAttribute("data-scale", Math.min(...s));'
        'document.body.setAttribute("data-panels", s.length);'
        'document.body.setAttribute("data-scroll-width", document.documentElement.scrollWidth) })</script></body>')))
    dom = browse(browser, tmp_path, page.as_uri(), "--window-size=800,1000", "--dump-dom").stdout
    assert 0 < int(re.search(r'data-scroll-width="(\d+)"', dom).group(1)) <= 800
    assert int(re.search(r'data-panels="(\d+)"', dom).group(1)) >= 20
    assert float(re.search(r'data-scale="([\d.]+)"', dom).group(1)) >= 0.9
