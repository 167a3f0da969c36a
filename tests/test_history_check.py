"""The history gate on the committed H200 history (reports/reference/h200/history.hbx.jsonl.gz:
the reference run, the A/A pairs and the frontend matrix): the newest reference run against the
runs before it is all SAME; a change injected into one row of it is caught alone."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from sqlalchemy import text

from cudnn_hostbench.reports import robust
from cudnn_hostbench.reports.history import check, db, ingest
from cudnn_hostbench.scripts import cli

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"
LIGHT_DEVICE = ("sdpa", "cudnn_sdpa", "b32h32s128d128", "device")            # ~37 µs per call
GRAPH = ("fusion", "cudnn_fused", "epilogue-b16m512k1024n512", "graph")     # ~33 µs per call
EAGER_TRAP = ("wrapper", "naive", "1024", "eager")                          # fast state, ratio to torch_mm
# 17 runs of measurement version 1 (2026-11-29/30), then version 2: the reference pair (aa/run1.json,
# run.json), a third full run on a later machine start, the 5 parts of the frontend matrix, and a
# pair of the three framework probes (aa/framework-pair.md); then version 3: five full runs on three
# machine starts (calls 1-5 of 2026-12-01 12:23-12:58, docs/measurements.md), and five more on two
# further starts (14:07-14:31: a pair on S4, three runs on S5; the last two are aa/run1.json and
# aa/run2.json); then four more on two further starts (15:50-16:12: one run on S6, three on S7; the
# last is run.json); then six more on three further starts (17:53-18:28: a pair on each of P1,
# P2 and P3; P3's are aa/run1.json and aa/run2.json); then three more on a further start (19:43-19:51,
# GPU A). GPU B's three runs (19:56-20:05) failed the nightly recipe and are tests/data's. Then five
# runs with 24 eager rounds a worker on three further starts (21:19-21:46: a pair on C, a pair on D,
# one on E)
RUNS = 55


def fresh(tmp_path) -> db.Store:
    st = db.open_store(f"sqlite:///{tmp_path / 'h.db'}", create=True)
    res = ingest.ingest_paths(st, [EXPORT])
    assert len(res.stored) == RUNS and not res.errors
    return st


def newest_reference(st: db.Store) -> dict:
    """The newest full run with a full history: the measurement-version-1 reference run (the
    matrix parts after it measure a few probes; the version-2 runs start a key of their own)."""
    return full_v1(st)[-1]


def full_v1(st: db.Store) -> list[dict]:
    """The full runs of measurement version 1, oldest first: the key with a full history."""
    return [r for r in st.runs() if r["n_figures"] >= 400 and str(r["measurement_version"]) == "1"]


def inject(st: db.Store, run_id: int, row: tuple, factor: float) -> None:
    """Multiplies one row's figure (and each worker's) in a stored run by `factor`."""
    f = st.figures([run_id])[run_id][row]
    with st.engine.begin() as c:
        rid = c.execute(text("SELECT id FROM hb_rows WHERE probe=:p AND variant=:v AND size=:s AND mode=:m"),
                        dict(zip("pvsm", row))).scalar()
        c.execute(text("UPDATE hb_figures SET value=:v, workers_json=:w WHERE run_id=:r AND row_id=:i"),
                  {"v": f.value * factor, "w": json.dumps([w * factor for w in f.workers]), "r": run_id, "i": rid})


def judged(st: db.Store, run_id: int) -> list[check.Verdict]:
    return check.check(st, run_id)[1]


def changed(vs) -> list[check.Verdict]:
    return [v for v in vs if v.verdict in ("SLOWER", "FASTER", "KERNEL CHANGED")]


def test_newest_reference_run_against_its_history_is_all_same(tmp_path):
    st = fresh(tmp_path)
    ref = newest_reference(st)
    vs = judged(st, ref["id"])
    assert changed(vs) == []
    assert len([v for v in vs if v.value is not None]) == 431
    full = [v for v in vs if v.n >= check.MIN_HISTORY]
    assert len(full) > 300 and max(v.n for v in full) == 11   # 12 distinct full runs; run2 == run.json once
    # its twin (pair 8 run 1, the same start) is one run of its GPU: too few to judge by, the fleet
    assert {v.scale for v in full} == {"fleet"}
    assert all(v.verdict != "KERNEL CHANGED" for v in vs)
    # autotune/best at 256 ran knob_41 in its twin and knob_36 here: within the MDC, a note
    picks = [v for v in vs if "autotune pick changed" in v.note]
    assert picks and all(v.row[:3] == ("autotune", "best", "256") and v.verdict == "SAME" for v in picks)
    mm = check.median_mdc(vs)
    # measured on the committed history (11 earlier runs; eager rows at check.K_EAGER scales: 9.9 %);
    # the pairwise floors are 4 % and 7 %
    assert mm["device"] < 0.04 and mm["graph"] < 0.04 and mm["eager ratio (fast state)"] < 0.10, mm
    st.close()


def test_a_run_on_a_new_start_is_judged_against_the_fleet_and_its_machine_factor_said_once(tmp_path):
    st = fresh(tmp_path)
    full = full_v1(st)
    target, vs = check.check(st, full[8]["id"])     # pair 7 run 1: the first run of its start
    assert target["same_gpu_runs"] == 0 and target["history_starts"] == 4
    assert {v.scale for v in vs if v.mdc is not None and v.n >= 2} == {"fleet"}
    # pair 7's GPU ran GPU-bound rows about 1.5 % slower than the starts before it: said once
    assert 0.01 < target["machine_factor"] < 0.025
    text = check.render(target, vs)
    assert "this GPU runs GPU-bound rows" in text and "slower than the history median" in text
    assert "no earlier run on this GPU: judged against the fleet" in text
    st.close()


def test_the_committed_reference_run_against_its_own_key_is_all_same(tmp_path):
    # every measurement-3 run (run.json the third run of S7; aa/run1.json and aa/run2.json the pair
    # of P3; A's third run, judged against its own GPU; the newest, E's) against the runs before it on
    # its key: no SLOWER, FASTER or KERNEL CHANGED (the nightly recipe of docs/history.md)
    st = fresh(tmp_path)
    v3 = sorted((r for r in st.runs() if str(r["measurement_version"]) == "3"), key=lambda r: r["started_at"])
    assert len(v3) == 28 and "reports/reference/h200/run.json" in [r["source_path"] for r in v3]
    assert "reports/reference/h200/aa/run2.json" in [r["source_path"] for r in v3]
    for r in v3:
        assert not [v for v in judged(st, r["id"]) if v.verdict in ("SLOWER", "FASTER", "KERNEL CHANGED")], r["id"]
    st.close()


# the eager trap ratio's MDC is 3.5 of its scales (check.K_EAGER): 12.5 % here
@pytest.mark.parametrize("row, factor", [(LIGHT_DEVICE, 1.03), (GRAPH, 1.05), (EAGER_TRAP, 1.15),
                                         (GRAPH, 1 / 1.05)])
def test_injected_change_is_caught_alone(tmp_path, row, factor):
    st = fresh(tmp_path)
    ref = newest_reference(st)
    inject(st, ref["id"], row, factor)
    got = changed(judged(st, ref["id"]))
    assert [(v.row, v.verdict) for v in got] == [(row, "SLOWER" if factor > 1 else "FASTER")]
    # the change is measured against the history's median, which the reference run sits up to 3 % off
    assert got[0].state == "new" and abs(got[0].change - (factor - 1)) < 0.035
    st.close()


def test_a_twin_replicates_and_only_another_start_confirms(tmp_path):
    st = fresh(tmp_path)
    full = full_v1(st)
    other, twin, ref = full[-3], full[-2], full[-1]      # pair 7 run 2; pair 8 runs 1 and 2
    assert twin["start"] == ref["start"] != other["start"]
    inject(st, twin["id"], GRAPH, 1.08)
    # judged against the fleet (its start's first run); the next run, its twin, does not show it
    assert [v.state for v in changed(judged(st, twin["id"])) if v.row == GRAPH] == ["suspect"]
    inject(st, ref["id"], GRAPH, 1.08)
    assert [(v.row, v.state) for v in changed(judged(st, twin["id"]))] == [(GRAPH, "replicated")]
    st.close()


def test_a_change_shown_by_another_start_is_confirmed(tmp_path):
    st = fresh(tmp_path)
    full = full_v1(st)
    other, ref = full[-3], full[-1]
    inject(st, ref["id"], GRAPH, 1.08)
    assert [(v.row, v.state) for v in changed(judged(st, ref["id"]))] == [(GRAPH, "new")]
    inject(st, other["id"], GRAPH, 1.08)     # the newest earlier run of another start shows it too
    assert [(v.row, v.state) for v in changed(judged(st, ref["id"]))] == [(GRAPH, "confirmed")]
    st.close()


def test_small_history_uses_every_run_not_the_newest(tmp_path):
    st = fresh(tmp_path)
    ref = newest_reference(st)
    vs = check.check(st, ref["id"], last=3)[1]
    small = [v for v in vs if v.value is not None and v.n == 3]
    assert len(small) > 300 and all("too little history (3 < 8 runs)" in v.note for v in small)
    assert all(v.scale in ("same GPU", "fleet") for v in small)
    assert changed(vs) == []
    st.close()


def test_the_v2_reference_key_is_judged_on_all_its_runs(tmp_path):
    # key of measurement 2: B, C (one start), D, a matrix part, two framework runs; a new run
    # there was judged against only the newest (a 3-probe partial run) before
    st = fresh(tmp_path)
    v2 = [r for r in st.runs() if str(r["measurement_version"]) == "2" and r["frontend"] == "1.32.0"]
    d = sorted((r for r in v2 if r["n_figures"] >= 700), key=lambda r: r["started_at"])[-1]   # run D
    target, vs = check.check(st, d["id"])
    assert target["history_runs"] == 2 and target["same_gpu_runs"] == 0
    assert all(v.scale != "pairwise" for v in vs if v.n >= 2)
    assert changed(vs) == [] or all(v.state != "confirmed" for v in changed(vs))
    st.close()


def test_excluded_run_is_left_out(tmp_path):
    st = fresh(tmp_path)
    ref = newest_reference(st)
    st.exclude([r for r in st.runs() if r["n_figures"] >= 400][0]["id"], "test")
    assert max(v.n for v in judged(st, ref["id"])) == 10
    st.close()


def test_cli_check_prints_mdc_and_fails_only_on_confirmed(tmp_path, capsys):
    st = fresh(tmp_path)
    full = full_v1(st)
    url = st.url
    inject(st, full[-1]["id"], GRAPH, 1.10)
    st.close()
    args = ["history", "check", str(full[-1]["id"]), "--store", url]
    assert cli.main(args + ["--fail-on-regression"]) == 0        # new, not confirmed
    out = capsys.readouterr().out
    assert "1 SLOWER" in out and "median minimum detectable change" in out and "graph" in out
    assert "fusion/cudnn_fused/epilogue-b16m512k1024n512/graph" in out
    assert cli.main(args + ["--fail-on-regression", "any"]) == 1
    st = db.open_store(url)
    inject(st, full[-3]["id"], GRAPH, 1.10)
    st.close()
    assert cli.main(args + ["--fail-on-regression"]) == 1        # a run of another start shows it too


def test_check_a_run_file_ingests_it_first(tmp_path, capsys):
    from tests.helpers import write_synthetic_run
    url = f"sqlite:///{tmp_path / 'h.db'}"
    run = write_synthetic_run(tmp_path / "run.json")
    # a store that is not there is not made by a check: a mistyped path would judge against nothing
    assert cli.main(["history", "check", str(run), "--store", url]) == 2
    assert "no store there" in capsys.readouterr().err and not (tmp_path / "h.db").exists()
    assert cli.main(["history", "ingest", str(write_synthetic_run(tmp_path / "other.json", seed=1)), "--store", url]) == 0
    st = db.open_store(url)
    with st.engine.begin() as c:   # another GPU's run: the run checked below has no history
        c.execute(db.S.runs.update().values(history_key="elsewhere"))
    st.close()
    assert cli.main(["history", "check", str(run), "--store", url]) == 0
    assert "NO HISTORY" in capsys.readouterr().out
    assert cli.main(["history", "check", str(tmp_path / "missing.json"), "--store", url]) == 2


def test_robust_math():
    xs = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 5.0]          # one wild run barely moves it
    assert robust.location(xs) == 1.0
    assert 0.005 < robust.relative_scale(xs) < 0.03
    assert robust.scale([1.0]) is None and robust.location([]) is None
    assert robust.run_error(0.0, 3) == 0.0 and robust.run_error(0.1, 1) == 0.0
    # the history's predictive scale about its median, or the run's own error where that is wider
    m = robust.detectable(0.01, 11, 2.0, 0.015, 0.02, 3)
    assert math.isclose(m, 2 * 0.01 * math.sqrt(1 + math.pi / 22))
    wide = robust.detectable(0.01, 11, 2.0, 0.015, 0.2, 3)
    assert math.isclose(wide, 2 * robust.run_error(0.2, 3)) and wide > m
    assert robust.detectable(0.001, 30, 2.0, 0.015) == 0.015


def test_runs_measured_with_another_harness_version_do_not_share_a_history():
    """Trap 2's rows changed meaning in harness 0.2 (one plan): a run says which version measured
    it, and older runs (no version, no package list) keep version 1."""
    from cudnn_hostbench.reports.history import schema
    base = {"gpu_name": "NVIDIA H200", "driver": "580", "torch": "2.11"}
    old, new = dict(base), {**base, "packages": {"cudnn-hostbench": "0.2.0"}}
    assert schema.measurement_version_of(old) == 1 and schema.measurement_version_of(new) == 2
    assert schema.measurement_version_of({**base, "measurement_version": 3}) == 3
    assert schema.key_hash(schema.key_of(old)) != schema.key_hash(schema.key_of(new))
