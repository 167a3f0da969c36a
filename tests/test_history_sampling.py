"""An eager ratio's run-to-run noise is mostly its rounds' sampling error (reports/history/sampling.py):
a run measured with more rounds than its history is judged on a narrower scale, and only then."""
from __future__ import annotations

import json
import random

from cudnn_hostbench.reports.history import check, db, noise, sampling

ROUND_SD = 0.04      # one round's paired ratio (H200: 3-5 %)
ROWS = {"naive": 2.4, "cached": 1.3, "pinned": 1.1, "generic": 1.6}


def _run(i: int, start: str, rounds: int | None) -> dict:
    info = {"options": {"rounds": rounds}} if rounds else {}
    return {"id": i, "start": start, "gpu_uuid": start.split("/")[1], "probes": "wrapper", "host_unstable": False,
            "info_json": json.dumps(info)}


def _figs(rng: random.Random, rounds: int, change: float = 1.0) -> dict:
    """Eager ratios of three workers, each the median of `rounds` rounds: only sampling noise."""
    out = {}
    for v, ratio in ROWS.items():
        ws = [ratio * change * rng.lognormvariate(0.0, ROUND_SD * 1.25 / rounds ** 0.5) for _ in range(3)]
        w = sorted(ws)
        out[("wrapper", v, "1024", "eager")] = db.Figure(
            "wrapper", v, "1024", "eager", "ok", "us/call", w[1], True, 20.0 * w[1], ws, (w[2] - w[0]) / w[1],
            host_state="fast", baseline="torch_mm", role="trap")
    return out


def _judge(seed: int, target_rounds: int | None, change: float = 1.0, hist_rounds: int = 6) -> dict:
    """10 earlier runs on 5 starts, then the judged run on a new start."""
    rng = random.Random(seed)
    runs = [_run(i + 1, f"s{i // 2}/GPU-{i // 2}", hist_rounds) for i in range(10)]
    figs = {r["id"]: _figs(rng, hist_rounds) for r in runs}
    target = _run(11, "new/GPU-new", target_rounds)
    figs[11] = _figs(rng, target_rounds or hist_rounds, change)
    _, vs = check.judge_run(dict(target), runs, [], figs)
    return {v.variant: v for v in vs}


def _parts(target: dict, f, hist: list) -> tuple[float, float] | None:
    """sampling.parts on run dicts, their rounds read as check.History reads them."""
    return sampling.parts(sampling.rounds_of(target), f, [(sampling.rounds_of(r), g) for r, g in hist])


def test_rounds_are_read_from_the_runs_options_and_unknown_otherwise():
    assert sampling.rounds_of(_run(1, "a/GPU-a", 24)) == 24
    assert sampling.rounds_of(_run(1, "a/GPU-a", None)) is None
    for info in ("{not json", json.dumps({"options": {"rounds": True}}), json.dumps({"options": {"rounds": 0}}),
                 json.dumps(["options"]), None):
        assert sampling.rounds_of({"info_json": info}) is None


def test_a_run_with_four_times_the_rounds_carries_a_quarter_of_the_sampling_variance():
    rng = random.Random(3)
    hist = [(_run(i, f"s{i}/GPU-{i}", 6), _figs(rng, 6)[("wrapper", "naive", "1024", "eager")]) for i in range(6)]
    f = _figs(rng, 24)[("wrapper", "naive", "1024", "eager")]
    got = _parts(_run(9, "n/GPU-n", 24), f, hist)
    assert got is not None and abs(got[1] / got[0] - 0.25) < 1e-9
    # the history's workers say what one round's sampling error is (within the noise of 18 workers)
    assert 0.5 < got[0] / (ROUND_SD ** 2 * 1.25 ** 2 / 6 * noise.median_var(3)) < 2.0


def test_no_adjustment_where_the_rounds_agree_are_unknown_or_the_row_is_not_an_eager_ratio():
    rng = random.Random(4)
    hist = [(_run(i, f"s{i}/GPU-{i}", 6), _figs(rng, 6)[("wrapper", "naive", "1024", "eager")]) for i in range(6)]
    f = _figs(rng, 6)[("wrapper", "naive", "1024", "eager")]
    assert _parts(_run(9, "n/GPU-n", 6), f, hist) is None
    assert _parts(_run(9, "n/GPU-n", None), f, hist) is None
    assert _parts(_run(9, "n/GPU-n", 24), f, [(_run(1, "a/GPU-a", None), hist[0][1]), *hist[1:]]) is None
    us = db.Figure("wrapper", "naive", "1024", "eager", "ok", "us/call", 40.0, False, 40.0, [39.0, 40.0, 41.0])
    assert _parts(_run(9, "n/GPU-n", 24), us, hist) is None


def test_more_rounds_narrow_the_scale_and_a_change_the_old_rounds_miss_is_called():
    old = [_judge(s, 6) for s in range(6)]
    new = [_judge(s, 24) for s in range(6)]
    mdc_old = sorted(v.mdc for vs in old for v in vs.values())
    mdc_new = sorted(v.mdc for vs in new for v in vs.values())
    # the fleet's between-start prior (noise.FLEET) stays in both: the median narrows by a fifth, not a half
    assert mdc_new[len(mdc_new) // 2] < 0.85 * mdc_old[len(mdc_old) // 2]
    assert all(v.verdict == "SAME" for vs in old + new for v in vs.values())   # no change, no verdict
    # +6 % on every row: the 24-round runs call most rows, the 6-round runs a third of them
    called_new = sum(v.verdict == "SLOWER" for s in range(6) for v in _judge(s, 24, 1.06).values())
    called_old = sum(v.verdict == "SLOWER" for s in range(6) for v in _judge(s, 6, 1.06).values())
    assert called_new >= 0.75 * 6 * len(ROWS) and called_old <= 0.5 * 6 * len(ROWS)


def test_a_run_of_unknown_rounds_is_judged_as_before():
    a = _judge(7, None)
    b = _judge(7, 6)
    assert [round(v.mdc, 12) for v in a.values()] == [round(v.mdc, 12) for v in b.values()]


def test_the_sampling_part_of_a_within_start_variance_is_swapped_at_most_whole():
    assert noise.resampled(4e-4, 1e-4, 1e-4) == 4e-4                     # the same rounds: unchanged
    assert abs(noise.resampled(4e-4, 2e-4, 0.5e-4) - 2.5e-4) < 1e-15     # a quarter of the sampling part
    # a sampling estimate above the whole variance (2 degrees of freedom a figure) swaps the whole of it
    assert abs(noise.resampled(4e-4, 8e-4, 2e-4) - 1e-4) < 1e-15
    assert noise.resampled(4e-4, 0.0, 1e-4) == 4e-4
