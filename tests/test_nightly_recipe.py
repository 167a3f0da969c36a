"""The nightly recipe on the committed history: every no-change run measured since the recipe was
set, each judged against the runs before it as `history check` judges the latest run, gets no
verdict (each was judged so before it joined the export; log 2026-12-03-1219 and after). A run
added to the export joins the test by its date alone: no test names runs, starts or counts."""
from __future__ import annotations

import statistics

import pytest

from cudnn_hostbench.reports.history import check
from cudnn_hostbench.reports.verdict import decide

from .history_store import fresh

# The nightly recipe (history check of each new run against the runs before it) was first run on
# the H200 on 2026-12-03 (log 2026-12-03-1219); every run measured since joined the export only
# after it gave no verdict. Older runs were judged by older models and are not held to this one.
RECIPE_SINCE = "2026-12-03"
PARTS = 2   # the runs split between this many tests, so that pytest-xdist's workers share them


@pytest.mark.slow
@pytest.mark.parametrize("part", range(PARTS))
def test_runs_since_the_nightly_recipe_get_no_verdict_from_it(tmp_path, part):
    st = fresh(tmp_path)
    since = sorted((r for r in st.runs() if str(r["started_at"]) >= RECIPE_SINCE), key=lambda r: r["started_at"])
    assert since, "no committed run since the nightly recipe was set"
    same = []
    for r in since[part::PARTS]:
        target, verdicts = check.check(st, r["id"])
        called = [(v.row, v.verdict) for v in verdicts if v.verdict in decide.CHANGED]
        assert not called, (r["started_at"], called)
        assert not check.regressions(target, verdicts), r["started_at"]
        same.append(sum(v.verdict == "SAME" for v in verdicts))
    # judged, not merely unsure: every run has SAME rows, and the typical run at least 20 (a
    # slow-host same-start run can read few: log 2026-12-04-1814)
    assert min(same) >= 1 and statistics.median(same) >= 20, same
    st.close()
