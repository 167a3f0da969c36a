"""A no-change run held out of the committed history (docs/measurements.md, 2026-12-03: start F, a
slow-host start on a GPU new to the history): the nightly recipe judges it with no verdict. It is held
because `verdict-check` with it in the history raised false verdicts on 4 of 63 runs; it joins the
export once the model judges those folds right."""
from __future__ import annotations

import gzip

from cudnn_hostbench.reports.history import check, ingest
from cudnn_hostbench.reports.verdict import decide

from .history_store import ROOT, fresh

HELD = ROOT / "tests" / "data" / "held" / "2026-12-03-startF-run.json.gz"


def test_the_held_slow_host_run_gets_no_verdict_from_the_nightly_recipe(tmp_path):
    st = fresh(tmp_path)
    run = tmp_path / "run.json"
    run.write_bytes(gzip.decompress(HELD.read_bytes()))
    res = ingest.ingest_paths(st, [run])
    assert len(res.stored) == 1 and not res.errors, res.errors
    (_, rid), = res.stored
    target, verdicts = check.check(st, rid)
    called = [(v.row, v.verdict) for v in verdicts if v.verdict in decide.CHANGED]
    assert not called, called
    assert not check.regressions(target, verdicts), check.regressions(target, verdicts)
    assert sum(v.verdict == "SAME" for v in verdicts) >= 20      # judged, not merely unsure
