"""The audit's plan recommendation (engine probe rows) and each finding's share of the user's own
step, on CPU from records."""
import json
from pathlib import Path

from cudnn_hostbench.bench.audit.auditor import AuditReport, price
from cudnn_hostbench.bench.audit.plan_choice import recommend
from cudnn_hostbench.bench.measure.runfile.records import Record, Run, load_run


def _rec(variant, mode, us, note=""):
    return Record("engine", variant, "256", mode, role="info", samples=[us, us, us], calls_per_round=10, note=note)


def _run():
    recs = [_rec("plan_0", "eager", 16.6, "plan 0 'eng0' of 13 built: the plan generic execute runs; HEURISTIC'S PICK"),
            _rec("plan_0", "graph", 2.60),
            _rec("plan_3", "eager", 14.0, "plan 3 'eng7_k24=39' of 13 built: autotuned by GPU time"),
            _rec("plan_3", "graph", 2.36),
            _rec("plan_5", "eager", 13.8, "plan 5 'eng4' of 13 built"),
            _rec("plan_5", "graph", 3.10),
            Record("engine", "plan_7", "256", "eager", status="unsupported: plan 7 did not build")]
    return Run("x.json", {}, recs)


def test_recommends_the_eager_and_the_graph_winner_with_both_figures():
    text = recommend(_run(), {"execute": 2})
    assert "pin plan 5 'eng4' (13.80 µs/call eager, 3.10 µs GPU)" in text
    assert "plan 3 'eng7_k24=39' (14.00 µs/call eager, 2.36 µs GPU)" in text
    assert "heuristic's pick, plan 0 'eng0', runs 16.60 µs/call eager, 2.60 µs GPU" in text
    assert "winners differ" in text


def test_no_recommendation_without_engine_rows_or_cudnn_executes():
    assert recommend(_run(), {"execute": 0, "execute_ordered": 0}) is None
    assert recommend(Run("y.json", {}, []), {"execute": 1}) is None
    assert recommend(None, {"execute": 1}) is None


def test_price_gives_each_finding_its_share_of_the_step_and_the_plan_note():
    root = Path(__file__).resolve().parents[1]
    old = AuditReport.from_dict(json.loads((root / "reports/reference/h200/audit-naive/audit.json").read_text()))
    ref = load_run(root / "reports/reference/h200/run.json")
    ref.records += _run().records
    new = price(old, ref)
    step = (new.modes.get("loop") or {}).get("median") or new.modes["eager"]["median"]   # the step a loop pays
    priced = [f for f in new.findings if f.cost_us is not None]
    assert priced and all(abs(f.share - f.cost_us / step) < 1e-12 for f in priced)
    assert sum(1 for n in new.notes if n.startswith("plan choice (")) == 1
    assert price(new, ref) == new   # repricing replaces the note, never stacks it


def test_rows_that_share_generics_plan_are_refused_where_its_index_is_not_exposed():
    # frontends before 1.27 have no selected plan index: "the first built plan" was an assumption,
    # and on 1.20/1.26 generic execute ran another kernel than that plan
    import types

    import pytest

    from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
    from cudnn_hostbench.bench.measure.runfile.status import Unsupported
    old = types.SimpleNamespace(built=types.SimpleNamespace(index=None, plans={0: 0, 2: 0}))
    with pytest.raises(Unsupported, match="frontend >= 1.27"):
        Matmul.generic_plan(old)
    assert Matmul.heuristic_plan(old) == 0           # labels may still name the first built plan
    new = types.SimpleNamespace(built=types.SimpleNamespace(index=2, plans={0: 0, 2: 0}))
    new.heuristic_plan = lambda: Matmul.heuristic_plan(new)
    assert Matmul.generic_plan(new) == 2
