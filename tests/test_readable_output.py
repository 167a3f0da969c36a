"""Issue 19: marks that carry signal, output that fits a terminal, gates that never pass on
nothing, and the rest of the user's path (pytest options, OS-refused names, Ctrl-C)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.core import options
from cudnn_hostbench.bench.measure.runfile import trust
from cudnn_hostbench.bench.measure.runfile.records import Record, load_run, run_document, write_run
from cudnn_hostbench.reports import marks_text, run_summary, table
from cudnn_hostbench.reports.judge import compare as cmp
from cudnn_hostbench.scripts import cli
from tests.helpers import FINGERPRINT, synthetic_records
from tests.test_compare import make_run

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reports" / "reference" / "h200" / "run.json"
MATRIX = REFERENCE.parent / "matrix"


def lines_of(text: str) -> list[str]:
    return text.splitlines()


# -- marks ------------------------------------------------------------------------------------------
def test_marks_are_defined_once_and_only_trust_lowering_ones_mark_a_figure():
    assert set(trust.MARKS) == {"discarded", "clock_drop", "host_unstable", "slow_host", "wide_spread", "few_processes"}
    assert not trust.MARKS["discarded"].lowers_trust
    assert all(trust.MARKS[k].lowers_trust for k in ("clock_drop", "host_unstable", "slow_host", "wide_spread"))
    assert len({m.letter for m in trust.MARKS.values()}) == len(trust.MARKS)
    rec = Record("p", "v", "256", "eager", flags=["discarded"])
    assert trust.badge(rec) == ""
    rec.flags = ["discarded", "slow_host", "wide_spread"]
    assert trust.badge(rec) == "⚑sw"
    assert all(len(line) <= 100 for line in marks_text.legend())
    assert "d:" not in marks_text.LEGEND and "s: " in marks_text.LEGEND


def test_count_marks_by_kind():
    recs = [Record("p", "a", "1", "eager", flags=["discarded", "slow_host"]),
            Record("p", "b", "1", "eager", flags=["slow_host", "wide_spread"]),
            Record("p", "c", "1", "graph", flags=["discarded"])]

    class Run:
        records = recs
    assert trust.count_marks(Run) == {"slow_host": 2, "wide_spread": 1}
    assert trust.count_marks(Run, shown_only=False) == {"discarded": 2, "slow_host": 2, "wide_spread": 1}
    assert run_summary.counts_text(trust.count_marks(Run)) == "2 ⚑s, 1 ⚑w"


def test_reference_run_flags_only_less_trustworthy_figures_and_still_counts_discards():
    run = load_run(REFERENCE)
    text = table.render_text(table.build_table(run), width=120)
    assert "⚑d" not in text
    marked = sum(1 for r in run.records if trust.badge(r))
    assert marked == sum(trust.count_marks(run).values()) - sum(   # figures with two kinds count once
        len(trust.shown_flags(r)) - 1 for r in run.records if len(trust.shown_flags(r)) > 1)
    discarded = sum(sum((r.rounds_discarded or {}).values()) for r in run.records)
    summary = run_summary.summary_line(run)
    assert discarded and f"{discarded} discarded" in summary
    assert (f"{marked} figure(s) flagged" in summary) if marked else "no figure flagged" in summary
    # every figure that carries a mark carries a trust-lowering flag
    assert all(trust.shown_flags(r) for r in run.records if trust.badge(r))


# -- width ------------------------------------------------------------------------------------------
def _cli_lines(capsys, argv, env_cols="120", monkeypatch=None):
    monkeypatch.setenv("COLUMNS", env_cols)
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


@pytest.mark.slow
def test_table_and_compare_fit_120_columns(capsys, monkeypatch):
    code, lines, _ = _cli_lines(capsys, ["table", str(REFERENCE)], monkeypatch=monkeypatch)
    assert code == 0 and max(map(len, lines)) <= 120
    assert not any("us/call" in x for x in lines)
    assert not any(line.endswith("…") for line in lines)   # statuses are whole, as notes under the table
    run2 = REFERENCE.parent / "aa" / "run1.json"
    for argv in (["compare", str(run2), str(REFERENCE)], ["compare", str(run2), str(REFERENCE), "--show-same"],
                 ["compare", str(MATRIX / "run-fe1.32.0.json"), str(MATRIX / "run-fe1.20.0.json"), "--normalize"]):
        code, lines, _ = _cli_lines(capsys, argv, monkeypatch=monkeypatch)
        assert code == 0 and max(map(len, lines)) <= 120, argv
    # wide keeps the detail
    code, lines, _ = _cli_lines(capsys, ["table", str(REFERENCE), "--wide"], monkeypatch=monkeypatch)
    assert max(map(len, lines)) > 120 and any("kern/call" in x for x in lines)


def test_compare_leads_with_counts_then_changed_rows_then_rounded_environment(tmp_path, capsys, monkeypatch):
    a = make_run(tmp_path / "a.json", 1, fp={"startup_s": 4.130000000000003, "torch": "2.11.0"})
    b = make_run(tmp_path / "b.json", 2, slow={("execute", "generic"): 1.2},
                 fp={"startup_s": 5.59, "torch": "2.12.0", "cudnn_frontend": "1.20.0", "pytest": "8.3.0"})
    code, lines, _ = _cli_lines(capsys, ["compare", a.path, b.path], monkeypatch=monkeypatch)
    assert code == 0
    assert lines[0] == cmp.summary(cmp.compare(a, b)) and "SLOWER" in lines[0]
    assert lines[1].startswith("machines: ")       # where the runs ran, then the findings
    at = lines.index("versions differ:")
    vers = lines[at + 1:at + 4]
    assert "  torch: 2.11.0 -> 2.12.0" in vers and "  cudnn_frontend: 1.32.0 -> 1.20.0" in vers
    assert "  pytest: None -> 8.3.0" in vers
    assert lines[at + 4].startswith("probe")
    body = "\n".join(lines)
    assert "SAME  " not in body
    assert "SAME row(s) not shown" in body or "SAME" not in lines[0]
    env = lines[lines.index("environment differs:") + 1:]
    assert "  startup_s: 4.13 -> 5.59" in env and "4.130000000000003" not in body
    code, lines, _ = _cli_lines(capsys, ["compare", a.path, b.path, "--show-same"], monkeypatch=monkeypatch)
    assert any(" SAME" in x for x in lines) or "SAME" not in lines[0]


def test_compare_markdown_keeps_every_row_and_the_versions(tmp_path, capsys):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, fp={"torch": "2.12.0"})
    md = tmp_path / "c.md"
    assert cli.main(["compare", a.path, b.path, "--markdown", str(md)]) == 0
    text = md.read_text()
    assert "## Versions that differ" in text and "| torch | 2.13 | 2.12.0 |" in text
    assert text.count("| SAME |") == (cmp.compare(a, b).verdict == "SAME").sum()


# -- gates ------------------------------------------------------------------------------------------
def test_a_gate_that_compared_nothing_exits_2_unless_asked(tmp_path, capsys):
    a = make_run(tmp_path / "a.json", 1)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"benchmarks": [{"name": "test_foo[x]", "param": "x",
                                                 "stats": {"data": [1e-6] * 6}, "extra_info": {}}]}))
    capsys.readouterr()
    # a plain pytest-benchmark run from another project: another (unknown) GPU, and nothing in common
    assert cli.main(["compare", a.path, str(other), "--fail-on-regression"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--allow-other-gpu" in err
    assert cli.main(["compare", a.path, str(other), "--fail-on-regression", "--allow-other-gpu"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "nothing compared" in err and "--allow-disjoint" in err
    assert cli.main(["compare", a.path, str(other), "--allow-other-gpu", "--allow-disjoint"]) == 0


def test_runs_from_different_gpus_exit_2_unless_asked(tmp_path, capsys):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, fp={"gpu_name": "NVIDIA H100"})
    capsys.readouterr()
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1 and "NVIDIA H100" in out.err
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression", "--allow-other-gpu"]) == 0


def _with_kernels(path, seed, kernel, slow=1.0):
    recs = [Record("execute", v, "256", "device", samples=[us * slow ** (v == "generic") * (1 + 0.001 * i)
                                                           for i in range(6)],
                   baseline="torch_mm", kernel_names=[f"{kernel if v == 'generic' else 'nvjet'} x1"],
                   workers=[{"worker": w, "n": 2, "median": us * slow ** (v == "generic") * (1 + 0.001 * w)}
                            for w in range(3)])
            for v, us in (("torch_mm", 2.0), ("generic", 2.5))]
    return load_run(write_run(path, run_document(recs, dict(FINGERPRINT))))


def test_kernel_changed_and_slower_fails_the_gate_naming_the_kernels(tmp_path, capsys):
    a = _with_kernels(tmp_path / "a.json", 1, "cudnn_old_kernel")
    b = _with_kernels(tmp_path / "b.json", 2, "cudnn_new_kernel", slow=1.8)
    df = cmp.compare(a, b)
    assert "KERNEL CHANGED" in set(df.verdict)
    capsys.readouterr()
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    fail = [x for x in out.splitlines() if x.startswith("regression:")]
    assert fail and "cudnn_old_kernel" in out and "cudnn_new_kernel" in out
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression", "--allow-kernel-change"]) == 0
    # faster on new kernels is no regression
    assert cli.main(["compare", b.path, a.path, "--fail-on-regression"]) == 0


@pytest.mark.slow
def test_a_run_compared_with_itself_normalized_is_all_same(capsys):
    run = load_run(REFERENCE)
    df = cmp.compare(run, run, normalize=True)
    measured = df[df.verdict != "UNMEASURED"]
    assert set(measured.verdict) == {"SAME"}, measured[measured.verdict != "SAME"]
    assert cli.main(["compare", str(REFERENCE), str(REFERENCE), "--normalize", "--fail-on-regression"]) == 0


def test_impossible_figures_are_refused_at_load_by_name(tmp_path, capsys):
    recs = synthetic_records(1, rounds=6)
    rec = next(r for r in recs if (r.variant, r.size, r.mode) == ("generic", "256", "graph"))
    import dataclasses
    rec.ratio = dataclasses.replace(rec.ratio, median=rec.ratio.median * 3)   # its own medians contradict it
    bad = write_run(tmp_path / "bad.json", run_document(recs, dict(FINGERPRINT)))
    good = write_run(tmp_path / "good.json", run_document(synthetic_records(2, rounds=6), dict(FINGERPRINT)))
    capsys.readouterr()
    for argv in (["table", str(bad)], ["compare", str(good), str(bad)]):
        assert cli.main(argv) == 2
        out = capsys.readouterr()
        assert out.out == "" and len(out.err.strip().splitlines()) == 1
        assert "execute/generic/256 graph: stored ratio" in out.err and str(bad) in out.err
    recs = synthetic_records(1, rounds=6)
    next(r for r in recs if r.ok).samples[:] = [float("inf")] * 6
    inf = write_run(tmp_path / "inf.json", run_document(recs, dict(FINGERPRINT)))
    assert cli.main(["table", str(inf)]) == 2 and "median inf" in capsys.readouterr().err


# -- the rest of the path ---------------------------------------------------------------------------
@pytest.mark.parametrize("opt,value", [("--hb-modes", "eagr"), ("--hb-sizes", ""), ("--hb-sizes", "abc"),
                                       ("--hb-sizes", "-256"), ("--hb-tokens", "2x"), ("--hb-rounds", 0)])
def test_bad_suite_options_are_one_usage_line(opt, value):
    kw = {"sizes": "256", "tokens": "256", "modes": "eager", "rounds": 3}
    kw[opt.removeprefix("--hb-")] = value
    with pytest.raises(options.OptionError) as e:
        options.validate(**kw)
    text = str(e.value)
    assert text.startswith(f"{opt}: ") and "accepted:" in text and "\n" not in text
    options.validate("256,1024x512x64", "256", "eager,device", 1)   # good values pass


def test_pytest_reports_a_bad_option_in_one_line_not_a_traceback():
    res = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "probes"), "--collect-only", "-q",
                          "-p", "no:cacheprovider", "--hb-modes=eagr"], capture_output=True, text=True, cwd=ROOT)
    text = (res.stdout + res.stderr).strip()
    assert res.returncode == 4 and "INTERNALERROR" not in text and "Traceback" not in text
    assert text.splitlines() == ["ERROR: --hb-modes: 'eagr' is not valid; accepted: a comma-separated list "
                                 "of eager, graph, device"]


def test_output_names_the_os_refuses_are_one_line_exit_2(tmp_path, capsys):
    run = write_run(tmp_path / "run.json", run_document(synthetic_records(1, rounds=6), dict(FINGERPRINT)))
    long = "x" * 300
    capsys.readouterr()
    for argv, opt in ((["table", str(run), "--out", str(tmp_path / long)], "--out"),
                      (["compare", str(run), str(run), "--markdown", str(tmp_path / f"{long}.md")], "--markdown")):
        assert cli.main(argv) == 2
        out = capsys.readouterr()
        assert out.out == "" and len(out.err.strip().splitlines()) == 1 and opt in out.err and "limit" in out.err
    assert not any(p.name.startswith("x") for p in tmp_path.iterdir())


def test_ctrl_c_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(table, "build_table", interrupted)
    run = write_run(tmp_path / "run.json", run_document(synthetic_records(1, rounds=6), dict(FINGERPRINT)))
    capsys.readouterr()
    assert cli.main(["table", str(run), "--out", str(tmp_path / "o")]) == 130
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err
    assert not (tmp_path / "o" / "table.md").exists()


def test_dashboard_out_name_the_os_refuses_is_one_line(tmp_path, capsys):
    run = write_run(tmp_path / "run.json", run_document(synthetic_records(1, rounds=6), dict(FINGERPRINT)))
    capsys.readouterr()
    assert cli.main(["dashboard", str(run), "--out", str(tmp_path / ("y" * 300))]) == 2
    out = capsys.readouterr()
    assert len(out.err.strip().splitlines()) == 1 and "--out" in out.err and "limit" in out.err
