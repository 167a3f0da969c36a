"""The leave-one-start-out check of the history gate on the committed H200 history
(scripts/loso_check.py), as CI runs it: each machine start's runs judged against the other starts.

Issue 26's targets, per measurement version: no false SLOWER/FASTER/KERNEL CHANGED on any start; median MDC against the fleet
<= 3 % on graph/device rows and <= 6 % on eager trap ratios; against the same GPU <= 1.5 % on
graph/device rows. Measured on the committed history (docs/measurements.md has the table) they are
not all met; test_targets says which are missing and fails loudly (strict xfail) once they are
met, so the bounds below are raised with them. The bounds hold what was measured, so the gate
cannot quietly get worse.
"""
from __future__ import annotations

import re

import pytest

from cudnn_hostbench.reports.history import noise
from cudnn_hostbench.scripts import loso_check


@pytest.fixture(scope="module")
def loso():
    return loso_check.run()


@pytest.fixture(scope="module")
def loso3():
    return loso_check.run(version=3)


ROUNDS = "24 rounds a worker"


def _false(res, setting: int) -> int:
    return sum(s[setting] for s in res.starts)


def test_every_start_is_judged_and_none_says_kernel_changed(loso):
    assert len(loso.starts) == 6 and all(n == 2 for _, n, *_ in loso.starts)
    # the timing races (autotune picks) are information now, never KERNEL CHANGED
    assert not any("KERNEL CHANGED" in text for *_, text in loso.false_rows)


def test_false_verdicts_and_mdcs_stay_within_what_was_measured(loso):
    # measured: 2 false verdicts against the fleet over 12 runs, both on graph rows (the check
    # before issue 26: 180 in the same setting); a start's second run, its first in the history, is
    # judged on the fleet too (one run of its own GPU is too few: noise.MIN_OWN), with no false verdict
    assert _false(loso, 2) <= 2 and _false(loso, 3) == 0
    assert max(s[2] for s in loso.starts) <= 1
    fleet, same = loso_check.medians(loso)
    assert fleet["graph"] <= 0.031 and fleet["device"] <= 0.0251 and fleet["eager ratio (fast state)"] <= 0.095
    assert same == {}        # no start has the two earlier runs a same-GPU judgment needs
    # device 9 of 12 since heavy rows' kernel factors are per mode (noise.kernel_key): the injected
    # sdpa row's kernel factor stands on its 6 lighter rows, no longer on 12, and moves more with it
    assert loso.caught["graph +4 %"][0] >= 10 and loso.caught["device +4 %"][0] >= 9


def test_measurement_3_history_has_no_false_verdict_on_any_start(loso3):
    """The history users have now (measurement 3, 28 full runs on 14 starts of 2026-12-01, each on its
    own GPU UUID; the last 5, on 3 starts, with 24 eager rounds a worker): no false verdict against
    the fleet or the same GPU, and every injected graph and device change caught alone (measured: 28
    and 28 of 28). An 8 % eager change is under most 6-round rows' MDC (8.8 %): caught where the row
    is quiet; on 24-round runs (MDC 6.0 %) on 4 of 5. GPU B, which failed the nightly recipe, is not
    in it (tests/test_history_machine.py holds what it raises)."""
    assert loso_check.versions() == [1, 3]
    assert len(loso3.starts) == 14 and sum(n for _, n, *_ in loso3.starts) == 28
    assert _false(loso3, 2) == 0 and _false(loso3, 3) == 0 and not loso3.false_rows
    fleet, same = loso_check.medians(loso3)
    assert fleet["graph"] <= 0.028 and fleet["device"] <= 0.0251 and fleet["eager ratio (fast state)"] <= 0.0825
    # against its own GPU a graph or device row is judged as a paired ratio to its baseline
    # (reports/history/paired.py; in µs the same-GPU graph median was 2.09 %)
    assert same["device"] <= 0.0151 and same["graph"] <= 0.0151      # three starts with three runs
    assert loso3.caught["graph +4 %"][0] >= 27 and loso3.caught["device +4 %"] == [28, 28]
    assert loso3.caught["eager trap ratio +8 %"][0] >= 10
    assert loso3.caught[f"eager trap ratio +8 %, {ROUNDS}"][0] >= 4
    # the table gives each class's MDC distribution: median (p10-p90) and the rows behind it
    text = loso_check.table(loso3)
    assert re.search(r"\| graph \| \d+\.\d\d % \(\d+\.\d\d-\d+\.\d\d\) \(\d+ rows\) \|", text), text


def test_runs_of_24_eager_rounds_meet_the_targets(loso3):
    """Measured with 24 eager rounds a worker (the default since 2026-12-01 21:19), judged against
    the fleet of 13 other starts: eager trap ratios' median MDC at most 6 %, with graph and device
    rows at most 3 % and the same GPU's at most 1.5 %, and no false verdict."""
    fleet, same = loso_check.medians(loso3)
    assert _false(loso3, 2) == 0 and _false(loso3, 3) == 0
    assert fleet[f"eager ratio (fast state), {ROUNDS}"] <= 0.06
    assert len(loso3.mdc_fleet[f"eager ratio (fast state), {ROUNDS}"]) >= 700     # 5 runs' rows
    assert fleet["graph"] <= 0.03 and fleet["device"] <= 0.03
    assert same["graph"] <= 0.015 and same["device"] <= 0.015


@pytest.mark.xfail(strict=True, reason="issue 26's targets, not met on the older runs of the committed history: "
                                       "measurement 1 2 false verdicts on 2 of 6 starts, eager 9.4 % (10 rounds a "
                                       "worker); measurement 3 eager 8.2 % over all its runs (6 rounds a worker: "
                                       "8.8 %; 24 rounds: 6.0 %, met)")
def test_targets(loso, loso3):
    for res in (loso, loso3):
        fleet, same = loso_check.medians(res)
        assert _false(res, 2) == 0 and _false(res, 3) == 0
        assert fleet["graph"] <= 0.03 and fleet["device"] <= 0.03 and fleet["eager ratio (fast state)"] <= 0.06
        assert same and same["graph"] <= 0.015 and same["device"] <= 0.015


def test_the_fleet_noise_table_is_the_committed_history_s():
    measured = loso_check.fleet_noise()
    assert measured == noise.FLEET


def test_the_script_prints_the_table_and_refuses_a_missing_export(tmp_path, capsys):
    assert loso_check.main([str(tmp_path / "missing.hbx.jsonl.gz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing.hbx.jsonl.gz" in err and "\n" not in err


def test_a_corrupt_or_empty_export_is_one_line_and_exit_2(tmp_path, capsys):
    from cudnn_hostbench.scripts import cli
    for name, data in (("corrupt.hbx.jsonl.gz", b"{bad"), ("empty.hbx.jsonl.gz", b"")):
        p = tmp_path / name
        p.write_bytes(data)
        assert cli.main(["loso-check", str(p)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"hostbench loso-check: {p}"), err
