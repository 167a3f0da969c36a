"""The leave-one-start-out check of the history gate on the committed H200 history
(scripts/loso_check.py), as CI runs it: each machine start's runs judged against the other starts.

Issue 26's targets: no false SLOWER/FASTER/KERNEL CHANGED on any start; median MDC against the fleet
<= 3 % on graph/device rows and <= 6 % on eager trap ratios; against the same GPU <= 1.5 % on
graph/device rows. Measured on the committed history (docs/measurements.md has the table) they are
not all met; test_targets says which are missing and fails loudly (strict xfail) once they are
met, so the bounds below are raised with them. The bounds hold what was measured, so the gate
cannot quietly get worse.
"""
from __future__ import annotations

import pytest

from cudnn_hostbench.reports.history import noise
from cudnn_hostbench.scripts import loso_check


@pytest.fixture(scope="module")
def loso():
    return loso_check.run()


def _false(res, setting: int) -> int:
    return sum(s[setting] for s in res.starts)


def test_every_start_is_judged_and_none_says_kernel_changed(loso):
    assert len(loso.starts) == 6 and all(n == 2 for _, n, *_ in loso.starts)
    # the timing races (autotune picks) are information now, never KERNEL CHANGED
    assert not any("KERNEL CHANGED" in text for *_, text in loso.false_rows)
    assert sum(s[4] for s in loso.starts) > 0


def test_false_verdicts_and_mdcs_stay_within_what_was_measured(loso):
    # measured: 4 false verdicts against the fleet over 12 runs (the check before this change:
    # 180 in the same leave-one-start-out setting), 7 against the same GPU
    assert _false(loso, 2) <= 4 and _false(loso, 3) <= 7
    assert max(s[2] for s in loso.starts) <= 2
    fleet, same = loso_check.medians(loso)
    assert fleet["graph"] <= 0.032 and fleet["device"] <= 0.0251 and fleet["eager ratio (fast state)"] <= 0.082
    assert same["device"] <= 0.0152 and same["graph"] <= 0.027
    assert loso.caught["graph +4 %"][0] >= 8 and loso.caught["device +4 %"][0] >= 8


@pytest.mark.xfail(strict=True, reason="issue 26's targets, not met on the committed history: false verdicts "
                                       "on 4 of 6 starts, fleet graph MDC 3.2 %, eager MDC 8.1 %, "
                                       "same-GPU graph MDC 2.6 %")
def test_targets(loso):
    fleet, same = loso_check.medians(loso)
    assert _false(loso, 2) == 0 and _false(loso, 3) == 0
    assert fleet["graph"] <= 0.03 and fleet["device"] <= 0.03 and fleet["eager ratio (fast state)"] <= 0.06
    assert same["graph"] <= 0.015 and same["device"] <= 0.015


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
