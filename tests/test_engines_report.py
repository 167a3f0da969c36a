"""The engine table from records: marks, spread sentence, and one line + exit 2 on bad input."""
from cudnn_hostbench.bench.measure.runfile.records import Record, run_document, write_run
from cudnn_hostbench.scripts import cli


def _recs():
    out = []
    for i, name, e, g, note in ((0, "eng0", 16.6, 2.60, "HEURISTIC'S PICK"),
                                (3, "eng7_k24=39", 14.0, 2.36, "autotuned (GPU time)"), (5, "eng4", 13.8, 3.10, "")):
        n = f"plan {i} '{name}' of 13 built; execute_plan_at_index(tuple, tensor_uids=...); {note}"
        out += [Record("engine", f"plan_{i}", "256", m, samples=[v] * 3, calls_per_round=10, note=n)
                for m, v in (("eager", e), ("graph", g), ("device", g))]
    out.append(Record("engine", "plan_9", "256", "eager", status="unsupported: plan 9 did not build"))
    return out


def test_table_marks_plans_and_states_the_spread(tmp_path, capsys):
    f = write_run(tmp_path / "run.json", run_document(_recs(), {"gpu_name": "H200"}))
    assert cli.main(["engines", str(f), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "engines.md").read_text()
    assert "13.80 (plan 5 'eng4') to 16.60 (plan 0 'eng0'), a spread of 2.80 µs" in md
    assert "the heuristic's pick (plan 0) costs +2.80 µs eager and +0.24 µs GPU" in md
    assert "heuristic's pick" in md and "autotuned" in md and "plan 9" not in md


def test_bad_input_is_one_line(tmp_path, capsys):
    f = write_run(tmp_path / "run.json", run_document([Record("x", "y", "1", "eager", samples=[1.0])], {}))
    assert cli.main(["engines", str(f)]) == 2
    assert cli.main(["engines", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("hostbench engines: ") for e in err)
