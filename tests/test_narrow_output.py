"""Issue 28 (8, 9): narrow terminals drop what matters last (figures, ratios, changes and verdicts
stay whole, names and units move first, and the output says what --wide would add); compare lists
the rows that changed, sorted by verdict, counts rows neither run measured and prints each note
once; history check fits $COLUMNS and counts the rows without history."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile.records import load_run
from cudnn_hostbench.reports import table
from cudnn_hostbench.reports.judge import compare as cmp
from cudnn_hostbench.scripts import cli

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reports" / "reference" / "h200"
PAIR = [str(REF / "aa" / "run1.json"), str(REF / "run.json")]   # the reference A/A pair
MATRIX = [str(REF / "matrix" / "run-fe1.20.0.json"), str(REF / "matrix" / "run-fe1.32.0.json"), "--normalize"]


def output(capsys, monkeypatch, argv, width) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert cli.main(argv) in (0, 1)
    return capsys.readouterr().out.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("args", [PAIR, MATRIX], ids=["pair", "matrix"])
def test_compare_keeps_change_and_verdict_whole(capsys, monkeypatch, width, args):
    lines = output(capsys, monkeypatch, ["compare", *args], width)
    assert max(map(len, lines)) <= width
    df = cmp.compare(load_run(args[0]), load_run(args[1]), normalize="--normalize" in args)
    shown = df[(df.verdict != "SAME") & ~cmp.unmeasured_in_both(df)]
    body = "\n".join(lines)
    for r in shown.itertuples():
        if r.change == r.change:
            assert f"{r.change * 100:+.1f}%" in body
    verdicts = [v for line in lines for v in cmp.ORDER if re.search(rf"  {v}(  |$)", line)]
    assert len(verdicts) == len(shown)                      # every row's verdict, whole
    assert not any(re.search(r"[A-Z]…", line) for line in lines)
    if width == 80 or "left out to fit" in body:   # at 80 a column must go, and the output says where it is
        assert "left out to fit" in body and "--wide shows every column" in body


@pytest.mark.slow
def test_compare_counts_rows_neither_run_measured_and_prints_each_note_once(capsys, monkeypatch):
    lines = output(capsys, monkeypatch, ["compare", *PAIR], 120)
    df = cmp.compare(load_run(PAIR[0]), load_run(PAIR[1]))
    both = int(cmp.unmeasured_in_both(df).sum())
    assert both == 24 and lines[0].endswith(f"{both} UNMEASURED ({both} in both runs)")
    assert f"({both} row(s) unmeasured in both runs, not listed" in "\n".join(lines)
    assert not any("plan_13" in x for x in lines)   # unsupported in both: counted only
    notes: list[str] = []      # each footnote with its wrapped continuation lines joined back
    for x in lines:
        if re.match(r"\[\d+\] ", x):
            notes.append(x)
        elif notes and x.startswith("    ") and not notes[-1].startswith("("):
            notes[-1] += " " + x.strip()
    listed = df[(df.verdict != "SAME") & ~cmp.unmeasured_in_both(df)]
    distinct = {n for n in listed.note if n}         # each distinct note printed once, as a footnote
    assert notes and len(notes) == len({x.split("] ", 1)[1] for x in notes}) == len(distinct) < len(listed)


def test_compare_sorts_by_verdict_then_probe():
    df = cmp.compare(load_run(MATRIX[0]), load_run(MATRIX[1]), normalize=True)
    rows = cmp.table_rows(cmp.sorted_rows(df))
    at = cmp.HEADER.index("verdict")
    rank = [cmp.ROW_ORDER.index(r[at]) for r in rows]
    assert rank == sorted(rank) and rows[0][at] == "SLOWER"
    assert {r[at] for r in rows[:20]} >= {"SLOWER", "KERNEL CHANGED", "FASTER"}
    for v in ("SLOWER", "KERNEL CHANGED", "FASTER"):
        probes = [r[0] for r in rows if r[at] == v]
        assert probes == sorted(probes), v
    text = cmp.text_table(df[df.verdict != "SAME"], 120)
    assert text.index("SLOWER") < text.index("KERNEL CHANGED") < text.index("FASTER")


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_table_keeps_every_ratio_and_never_cuts_a_number(capsys, monkeypatch, width):
    lines = output(capsys, monkeypatch, ["table", str(REF / "run.json")], width)
    assert max(map(len, lines)) <= width
    header = next(x for x in lines if x.startswith("variant"))
    assert header.count("×base") == (1 if width == 60 else 3)   # 60: one line per mode
    assert not any(x.endswith("…") for x in lines)
    body = "\n".join(lines)
    df = table.build_table(load_run(REF / "run.json"))
    longest = max((x for x in df["eager"].dropna() if x == x), key=lambda x: len(f"{x:.2f}"))
    assert f"{longest:.2f}" in body                                 # the widest figure (autotune's tune_sweep ms), whole
    ratios = df["eager_ratio"].dropna()
    assert sum(f"{r:.2f}" in body for r in ratios) == len(ratios)
    if width < 140:
        assert "--wide shows" in body


@pytest.mark.slow
def test_history_check_fits_columns_and_counts_rows_without_history(capsys, monkeypatch, tmp_path):
    from tests.history_store import stored_url
    url = stored_url(tmp_path, REF / "history.hbx.jsonl.gz")
    from cudnn_hostbench.reports.history import db
    from cudnn_hostbench.reports.judge import check
    st = db.open_store(url)
    rid = next(r["id"] for r in st.runs() if r["n_figures"] == 718 and r["started_at"].startswith("2026-12-01T05"))
    no_history = check.counts(check.check(st, rid)[1]).get("NO HISTORY", 0)
    st.close()
    lines = output(capsys, monkeypatch, ["history", "check", str(rid), "--store", url], 80)
    assert max(map(len, lines)) <= 80
    assert not any(x.lstrip().startswith("NO HISTORY") for x in lines)
    assert not no_history or any(f"({no_history} row(s) with no history on this key, not listed" in x for x in lines)
    assert any("--wide" in x for x in lines)
    notes = [x.strip() for x in lines if re.match(r"\s+\[\d+\] ", x)]
    assert len(notes) == len(set(notes))
    listed = output(capsys, monkeypatch, ["history", "check", str(rid), "--store", url, "--all"], 80)
    assert sum("NO HISTORY" in x for x in listed) >= no_history and any("UNSURE" in x for x in listed)
    wide = output(capsys, monkeypatch, ["history", "check", str(rid), "--store", url, "--wide"], 80)
    assert max(map(len, wide)) > 80


@pytest.mark.slow
def test_every_width_from_60_fits_and_cuts_nothing(tmp_path):
    """Every line fits and nothing is cut with '…', from the narrowest width fmt.term_width gives."""
    from cudnn_hostbench.reports.history import db
    from cudnn_hostbench.reports.judge import check
    from tests.history_store import stored_url
    a, b = load_run(PAIR[0]), load_run(PAIR[1])
    tables = [table.build_table(b)]
    diffs = [cmp.compare(a, b), cmp.compare(load_run(MATRIX[0]), load_run(MATRIX[1]), normalize=True)]
    st = db.open_store(stored_url(tmp_path))   # the committed history (tests/history_store.py)
    # each history key's first, middle and newest run: every probe set the history holds, judged on
    # no history, on half of it and on all of it (a check takes seconds; the width rule does not)
    keys: dict[str, list] = {}
    for r in st.runs():
        keys.setdefault(r["history_key"], []).append(r)
    checks = [check.check(st, rs[i]["id"]) for rs in keys.values() for i in sorted({0, len(rs) // 2, len(rs) - 1})]
    st.close()
    for w in range(60, 181, 15):
        texts = [table.render_text(d, w) for d in tables]
        texts += [cmp.text_table(d[d.verdict != "SAME"], w) for d in diffs]
        texts += [check.render(t, v, True, width=w) for t, v in checks]
        for text in texts:
            assert all(len(x) <= w and "…" not in x for x in text.splitlines()), w
