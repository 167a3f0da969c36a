"""The nightly recipe on the committed history: no-change runs measured since the recipe was set,
each judged against the runs before it as `history check` judges the latest run, get no verdict
(each was judged so before it joined the export; log 2026-12-03-1219 and after). Judging one run
takes seconds, so the test judges a slice chosen by date alone (SAMPLE): evenly spaced over the runs
since the recipe, the oldest and the newest (the one the nightly job judges) always in it. A run
added to the export joins the slice by its date: no test names runs, starts or counts."""
from __future__ import annotations

import math
import statistics

import pytest

from cudnn_hostbench.reports.judge import check
from cudnn_hostbench.reports.verdict import decide

from .history_store import fresh

# The nightly recipe (history check of each new run against the runs before it) was first run on
# the H200 on 2026-12-03 (log 2026-12-03-1219); every run measured since joined the export only
# after it gave no verdict. Older runs were judged by older models and are not held to this one.
RECIPE_SINCE = "2026-12-03"
SAMPLE = 6   # about one run in SAMPLE, evenly spaced by date


def sampled(runs: list) -> list:
    """ceil(n / SAMPLE) of the n runs (oldest first), evenly spaced, the first and the last included."""
    k = max(2, math.ceil(len(runs) / SAMPLE))
    return [runs[i] for i in sorted({round(j * (len(runs) - 1) / (k - 1)) for j in range(k)})]


def test_the_sample_spreads_over_the_runs_and_keeps_the_newest():
    runs = list(range(46))
    assert sampled(runs)[0] == 0 and sampled(runs)[-1] == 45 and len(sampled(runs)) == 8
    gaps = {b - a for a, b in zip(sampled(runs), sampled(runs)[1:])}
    assert max(gaps) - min(gaps) <= 1
    assert sampled([7]) == [7] and sampled([7, 8]) == [7, 8]


@pytest.mark.slow
@pytest.mark.newest_only
def test_runs_since_the_nightly_recipe_get_no_verdict_from_it(tmp_path):
    st = fresh(tmp_path)
    since = sorted((r for r in st.runs() if str(r["started_at"]) >= RECIPE_SINCE), key=lambda r: r["started_at"])
    assert since, "no committed run since the nightly recipe was set"
    same = []
    for r in sampled(since):
        target, verdicts = check.check(st, r["id"])
        called = [(v.row, v.verdict) for v in verdicts if v.verdict in decide.CHANGED]
        assert not called, (r["started_at"], called)
        assert not check.regressions(target, verdicts), r["started_at"]
        same.append(sum(v.verdict == "SAME" for v in verdicts))
    # judged, not merely unsure: every run has SAME rows, and the typical run at least 20 (a
    # slow-host same-start run can read few: log 2026-12-04-1814)
    assert min(same) >= 1 and statistics.median(same) >= 20, same
    st.close()
