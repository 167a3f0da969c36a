"""What `compare` and `history check` print is true (issue 66, part 5): an UNSURE row names its MDC
as a number; the change printed is the one the verdict judged and says when the run's structure
adjusted it (the raw change beside it); `compare --help` describes today's model; both commands
write one JSON shape with a pass/fail field and findings that were found; `--markdown -` is
stdout; the dashboard gives no all-clear over rows it could not judge and its bands stay above
zero; an interrupted ingest leaves no empty store."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile.records import load_run
from cudnn_hostbench.reports.dashboard import charts
from cudnn_hostbench.reports.history import db, ingest
from cudnn_hostbench.reports.judge import check
from cudnn_hostbench.reports.judge import compare as cmp
from cudnn_hostbench.reports.verdict import decide
from cudnn_hostbench.scripts import cli

from .test_compare import make_run

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reports" / "reference" / "h200"
PAIR = [str(REF / "aa" / "run1.json"), str(REF / "run.json")]   # the reference A/A pair: most rows UNSURE
SHAPE = {"command", "pass", "counts", "decided", "rows_total", "findings", "rows"}
ROW = {"probe", "variant", "size", "mode", "unit", "verdict", "change", "raw_change", "adjusted_by", "mdc", "z",
       "p", "scale", "note"}


@pytest.fixture(scope="module")
def pair_df():
    return cmp.compare(load_run(PAIR[0]), load_run(PAIR[1]))


@pytest.fixture(scope="module")
def pair_store(tmp_path_factory):
    """The committed pair in a store: the second run judged against the first."""
    url = f"sqlite:///{tmp_path_factory.mktemp('pair') / 'h.db'}"
    st = db.open_store(url, create=True)
    ingest.ingest_paths(st, PAIR)
    rid = max(r["id"] for r in st.runs())
    target, verdicts = check.check(st, rid)
    st.close()
    return url, target, verdicts


def _run(capsys, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(argv)
    got = capsys.readouterr()
    return rc, got.out, got.err


# --- 1. an UNSURE row names its MDC as a number ------------------------------------------------

@pytest.mark.parametrize("width", [60, 120, None])
def test_an_unsure_row_line_holds_its_mdc_as_a_number_in_compare(pair_df, width):
    unsure = cmp.sorted_rows(pair_df[(pair_df.verdict == "UNSURE") & pair_df.mdc.notna()]).head(40)
    assert len(unsure) == 40
    text = cmp.text_table(unsure, width or 200, wide=width is None).splitlines()
    # each UNSURE row's line (at the narrowest width: the line under it) holds its MDC
    rows = [i for i, x in enumerate(text) if "UNSURE" in x]
    assert len(rows) == len(unsure)
    for i, mdc in zip(rows, unsure.mdc):
        shown = decide.mdc_text(mdc, "")
        assert shown in text[i] or (width == 60 and f"mdc {shown}" in text[i + 1]), (text[i], shown)


def test_an_unsure_row_holds_its_mdc_in_compare_markdown_and_json(pair_df):
    base, new = load_run(PAIR[0]), load_run(PAIR[1])
    md = cmp.markdown(pair_df, base, new, [], None, 0.01, False).splitlines()
    head = next(x for x in md if x.startswith("| probe"))
    col = [c.strip() for c in head.split("|")].index("mdc")
    lines = [x for x in md if "| UNSURE |" in x]
    # an MDC as a number, or a row that was not judged at all, saying so
    assert lines and all(x.split("|")[col].strip().rstrip("%").replace("> ", "").replace(".", "").isdigit()
                         or "| not judged" in x for x in lines)
    assert sum("| not judged" in x for x in lines) < len(lines) / 4
    doc = json.loads(cmp.to_json(pair_df))
    judged = [r for r in doc["rows"] if r["verdict"] == "UNSURE" and r["z"] is not None]
    assert judged and all(isinstance(r["mdc"], float) and r["mdc"] > 0 for r in judged)


def test_an_unsure_row_holds_its_mdc_in_history_check(pair_store):
    _, target, verdicts = pair_store
    unsure = [v for v in verdicts if v.verdict == "UNSURE" and v.mdc is not None]
    assert unsure
    # the default output lists no UNSURE row: its summary line gives their MDCs as numbers
    summary = next(x for x in check.render(target, verdicts, width=200).splitlines() if "rows UNSURE" in x)
    assert f"their MDC {decide.mdc_text(sorted(v.mdc for v in unsure)[len(unsure) // 2])}" in summary \
        or "their MDC " in summary and any(ch.isdigit() for ch in summary.split("their MDC ")[1][:6])
    every = check.render(target, verdicts, show_all=True, wide=True).splitlines()
    for v in unsure[:50]:
        line = next(x for x in every if "/".join(v.row) in x.split() and "UNSURE" in x)
        assert decide.mdc_text(v.mdc, "") in line
    md = check.markdown(target, verdicts).splitlines()
    assert all(decide.mdc_text(v.mdc) in next(x for x in md if f"| {'/'.join(v.row)} |" in x) for v in unsure[:50])
    rows = json.loads(check.to_json(target, verdicts))["rows"]
    assert all(isinstance(r["mdc"], float) for r in rows if r["verdict"] == "UNSURE" and r["z"] is not None)


# --- 2. the change printed is the one judged, marked when adjusted ----------------------------

def test_compare_change_is_the_judged_one_and_marked_when_the_structure_adjusted_it(pair_df):
    rows = json.loads(cmp.to_json(pair_df))["rows"]
    judged = [r for r in rows if r["z"] is not None]
    adjusted = [r for r in judged if r["adjusted_by"]]
    assert adjusted and len(adjusted) < len(judged)
    for r in judged:
        # raw: the printed figures' own change; change: what the verdict judged (its z, its p)
        assert math.isclose(r["raw_change"], r["new"] / r["base"] - 1, rel_tol=1e-9, abs_tol=1e-12)
        if not r["adjusted_by"]:
            assert abs(r["change"] - r["raw_change"]) < 1e-9
    text = cmp.text_table(pair_df[pair_df.z.notna()], wide=True).splitlines()
    head = text[0]
    at = head.index("change")
    for r in cmp.table_rows(cmp.sorted_rows(pair_df[pair_df.z.notna()])):
        change, raw, note = r[cmp.HEADER.index("change")], r[cmp.HEADER.index("raw")], r[cmp.NOTE]
        if change.endswith("*"):
            assert raw and "net of" in note and any(decide.ADJUSTED_BY[k] in note for k in decide.ADJUSTED_BY)
        else:
            assert not raw and "net of" not in note
    assert any(cmp.ADJUSTED_LEGEND in x for x in text) and at > 0


def test_a_row_whose_printed_change_differs_from_its_figures_says_it_is_adjusted(pair_df):
    """No row prints a change its own figures do not give without saying why."""
    for r in pair_df[pair_df.z.notna()].itertuples(index=False):
        if f"{r.change * 100:+.1f}" != f"{r.raw_change * 100:+.1f}":
            assert r.adjusted_by, (r.probe, r.variant, r.size, r.mode)
            assert cmp.change_cell(r.change, bool(r.adjusted_by)).endswith("*")


def test_history_check_change_marked_adjusted_with_the_raw_change_in_json(pair_store):
    _, target, verdicts = pair_store
    rows = json.loads(check.to_json(target, verdicts))["rows"]
    judged = [r for r in rows if r["z"] is not None]
    assert any(r["adjusted_by"] for r in judged)
    for r in judged:
        assert math.isclose(r["value"] / r["location"] - 1, r["change"], rel_tol=1e-6, abs_tol=1e-9)
        if not r["adjusted_by"]:
            assert abs(r["change"] - r["raw_change"]) < 1e-9
    every = check.render(target, verdicts, show_all=True, wide=True).splitlines()
    for v in [v for v in verdicts if v.z is not None][:60]:
        line = next(x for x in every if "/".join(v.row) in x.split())
        assert (check.change_text(v) in line) and (("*" in check.change_text(v)) == bool(v.adjusted_by))
        if v.adjusted_by:
            assert "net of " + decide.adjusted_text(v.adjusted_by) in line


# --- 3. compare --help describes today's model --------------------------------------------------

def test_compare_help_describes_the_verdict_model_not_the_rank_test(capsys):
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for old in ("Mann-Whitney", "complete separation", "between-worker spread", "noise floor"):
        assert old not in text
    for now in ("Benjamini-Hochberg", "MDC", "history.md#the-model", "practical threshold", "store prior"):
        assert now in text
    from cudnn_hostbench.scripts import compare_cmd
    assert "Mann-Whitney" not in (cmp.__doc__ or "") + (compare_cmd.__doc__ or "")


# --- 4. one JSON shape with pass/fail, findings that were found ------------------------------

def test_compare_and_history_check_write_one_json_shape(capsys, pair_store, tmp_path):
    url, *_ = pair_store
    rc, out, _ = _run(capsys, ["compare", *PAIR, "--json", "-"])
    a = json.loads(out)
    rc2, out2, _ = _run(capsys, ["history", "check", "latest", "--store", url, "--json", "-"])
    b = json.loads(out2)
    assert rc == rc2 == 0
    for doc, cmd in ((a, "compare"), (b, "history check")):
        assert SHAPE <= set(doc) and doc["command"] == cmd and isinstance(doc["pass"], bool)
        assert ROW <= set(doc["rows"][0]) and doc["rows_total"] == len(doc["rows"])
        assert doc["decided"] == sum(n for k, n in doc["counts"].items() if k in decide.DECIDED)
        assert all(f["status"] for f in doc["findings"])     # found, or not listed
    assert b["verdicts"] == b["rows"]   # the key older readers know, kept


def test_json_pass_is_false_exactly_when_the_gate_fails(capsys, tmp_path):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, slow={("set_stream", "set_stream"): 1.3})
    for x, y in ((a, b), (a, a)):
        rc, out, _ = _run(capsys, ["compare", x.path, y.path, "--json", "-", "--fail-on-regression"])
        doc = json.loads(out)
        assert doc["pass"] == (rc == 0) and doc["pass"] == (x is y)


def test_json_findings_hold_only_what_was_found(pair_df):
    every = pair_df.attrs["findings"]
    assert any(not f.status for f in every)    # the model tests terms that are no finding
    doc = json.loads(cmp.to_json(pair_df))
    assert len(doc["findings"]) == sum(1 for f in every if f.status)


# --- 5. --markdown - is stdout ------------------------------------------------------------------

def test_compare_markdown_dash_writes_to_stdout_and_no_file_named_dash(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(capsys, ["compare", *PAIR, "--markdown", "-"])
    assert rc == 0 and out.startswith("# hostbench compare") and "| UNSURE |" in out
    assert not (tmp_path / "-").exists()
    rc, out, err = _run(capsys, ["compare", *PAIR, "--markdown", "-", "--json", "-"])
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1


def test_history_check_markdown_dash_writes_to_stdout_and_no_file_named_dash(capsys, tmp_path, monkeypatch,
                                                                             pair_store):
    url, *_ = pair_store
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(capsys, ["history", "check", "latest", "--store", url, "--markdown", "-"])
    assert rc == 0 and out.startswith("# hostbench history check") and "| UNSURE |" in out
    assert not (tmp_path / "-").exists()
    rc, out, err = _run(capsys, ["history", "check", "latest", "--store", url, "--markdown", "-", "--json", "-"])
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1
    rc, out, err = _run(capsys, ["history", "check", "latest", "--store", url, "--markdown",
                                 str(tmp_path / "no" / "c.md")])
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1
    rc, out, err = _run(capsys, ["history", "check", "latest", "--store", url, "--markdown", str(tmp_path / "c.md")])
    assert rc == 0 and (tmp_path / "c.md").read_text().startswith("# hostbench history check")


# --- 6. the dashboard: no all-clear over rows it could not judge, bands above zero --------------

def test_the_dashboard_gives_no_all_clear_over_unsure_rows(tmp_path, capsys):
    rc, _, _ = _run(capsys, ["dashboard", *PAIR, "--out", str(tmp_path / "d")])
    assert rc == 0
    page = (tmp_path / "d" / "index.html").read_text()
    assert "UNSURE" in page and 'class="ok"' not in page
    assert "no all-clear" in page and "were judged SAME" in page


@pytest.mark.parametrize("mdc", [0.04, 0.9, 1.0, 2.5, 20.0])
def test_an_mdc_band_never_goes_below_zero(mdc):
    lo, hi = charts.band_limits(10.0, mdc)
    assert 0 < lo < 10.0 < hi
    assert math.isclose(math.log(10.0 / lo), math.log(hi / 10.0))   # the verdict's log scale: symmetric


def test_the_trend_chart_draws_its_band_from_band_limits(monkeypatch):
    seen = []

    def limits(loc, rel):
        seen.append(charts.band_limits.__wrapped__(loc, rel) if hasattr(charts.band_limits, "__wrapped__")
                    else (loc / (1 + rel), loc * (1 + rel)))
        return seen[-1]
    monkeypatch.setattr(charts, "band_limits", limits)
    facet = {"title": "p/v/256 · graph", "mode": "graph", "unit": "µs", "verdict": "UNSURE", "history_n": 3,
             "points": [(0, 10.0, 9.0, 11.0, False), (1, 10.5, 10.0, 11.0, True)], "band": (10.0, 3.0)}
    assert charts.trends([facet], ["a", "b"], [])
    assert seen and all(lo > 0 for lo, _ in seen)


# --- 7. an interrupted ingest leaves no empty store ----------------------------------------------

def _interrupt(monkeypatch, after: int = 0):
    calls = []
    real = db.Store.ingest

    def ingest_(self, meta, figs):
        calls.append(1)
        if len(calls) > after:
            raise KeyboardInterrupt
        return real(self, meta, figs)
    monkeypatch.setattr(db.Store, "ingest", ingest_)


def test_an_interrupted_ingest_into_a_new_store_leaves_no_store_file(tmp_path, monkeypatch, capsys):
    _interrupt(monkeypatch)
    store = tmp_path / "new" / "deeper" / "h.db"
    rc, _, err = _run(capsys, ["history", "ingest", PAIR[0], "--store", f"sqlite:///{store}"])
    assert rc == 130 and "interrupted" in err
    assert not store.exists() and not (tmp_path / "new").exists()
    assert not list(tmp_path.rglob("h.db*"))


def test_an_interrupted_ingest_into_an_existing_store_keeps_what_it_had(tmp_path, monkeypatch, capsys):
    store = tmp_path / "h.db"
    url = f"sqlite:///{store}"
    assert _run(capsys, ["history", "ingest", PAIR[0], "--store", url])[0] == 0
    _interrupt(monkeypatch)
    assert _run(capsys, ["history", "ingest", PAIR[1], "--store", url])[0] == 130
    st = db.open_store(url)
    assert st.count()[0] == 1
    st.close()


def test_an_ingest_interrupted_after_a_stored_run_keeps_it(tmp_path, monkeypatch, capsys):
    _interrupt(monkeypatch, after=1)
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert _run(capsys, ["history", "ingest", *PAIR, "--store", url])[0] == 130
    st = db.open_store(url)
    assert st.count()[0] == 1
    st.close()
