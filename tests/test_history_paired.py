"""Against its own GPU's history a graph or device row is judged as a paired ratio to its block's
baseline (reports/history/paired.py): a GPU speed that one worker process had for all its rows
cancels; the fleet keeps µs and the machine factors."""
from __future__ import annotations

import random

from cudnn_hostbench.bench.measure import records
from cudnn_hostbench.reports.history import check, db, ingest, paired
from tests.helpers import FINGERPRINT, synthetic_records

VARIANTS = {"torch_mm": 5.0, "cudnn_a": 6.0, "cudnn_b": 6.5, "cudnn_c": 7.0, "cudnn_d": 7.5}


def _fig(variant: str, mode: str, workers: list[float], flags: str = "") -> db.Figure:
    w = sorted(workers)
    return db.Figure("fusion", variant, "x", mode, "ok", "us/call", w[len(w) // 2], False, w[len(w) // 2],
                     list(workers), (max(w) - min(w)) / w[len(w) // 2], flags, "cudnn_k" if variant != "torch_mm"
                     else "nvjet_k", "", "torch_mm", "baseline" if variant == "torch_mm" else "fixed")


def _run_figs(rng: random.Random, process: list[float], change: dict | None = None) -> dict:
    """One run's rows: every worker process puts its own speed on all its rows, each row its own noise."""
    change = change or {}
    out = {}
    for mode in ("graph", "device"):
        for v, us in VARIANTS.items():
            ws = [us * p * change.get(v, 1.0) * rng.gauss(1.0, 0.0007) for p in process]
            out[("fusion", v, "x", mode)] = _fig(v, mode, ws)
    return out


def _history(seed: int = 1, target_process=None, change=None):
    """8 earlier runs (3 other starts with 2 runs, 2 of the judged run's own start), then the judged run."""
    rng = random.Random(seed)
    runs, figs = [], {}
    starts = ["s1/GPU-1", "s1/GPU-1", "s2/GPU-2", "s2/GPU-2", "s3/GPU-3", "s3/GPU-3", "me/GPU-9", "me/GPU-9", "me/GPU-9"]
    for i, s in enumerate(starts):
        last = i == len(starts) - 1
        process = target_process if last and target_process else [rng.gauss(1.0, 0.008) for _ in range(3)]
        gpu = {"s1": 1.02, "s2": 0.98, "s3": 1.0, "me": 1.01}[s[:2]]
        runs.append({"id": i + 1, "start": s, "gpu_uuid": s.split("/")[1], "probes": "fusion", "host_unstable": False})
        figs[i + 1] = _run_figs(rng, [p * gpu for p in process], change if last else None)
    return runs[-1], runs[:-1], figs


def _verdicts(**kw) -> dict:
    target, before, figs = _history(**kw)
    _, vs = check.judge_run(dict(target), before, [], figs)
    return {v.row: v for v in vs}


def test_rows_pair_worker_by_worker_and_refuse_what_does_not_pair():
    base = _fig("torch_mm", "graph", [5.0, 5.1, 4.9])
    f = paired.ratio_of(_fig("cudnn_a", "graph", [6.0, 6.12, 5.88]), base)
    assert f is not None and f.on_ratio and all(abs(w - 1.2) < 1e-9 for w in f.workers) and abs(f.value - 1.2) < 1e-9
    assert f.spread is not None and f.spread < 1e-9
    assert paired.ratio_of(_fig("cudnn_a", "graph", [6.0, 6.1]), base) is None                     # 2 workers vs 3
    assert paired.ratio_of(_fig("cudnn_a", "graph", [6.0, 6.1, 6.2], flags="discarded,unpaired"), base) is None
    assert paired.ratio_of(_fig("cudnn_a", "graph", [6.0, 6.1, 6.2]), None) is None
    assert not paired.pairable(base) and not paired.pairable(_fig("cudnn_a", "eager", [1.0]))
    figs = paired.paired({1: {("fusion", "torch_mm", "x", "graph"): base,
                              ("fusion", "cudnn_a", "x", "graph"): _fig("cudnn_a", "graph", [6.0, 6.12, 5.88])}})
    assert figs[1][("fusion", "cudnn_a", "x", "graph")].on_ratio
    assert not figs[1][("fusion", "torch_mm", "x", "graph")].on_ratio


def test_a_worker_s_gpu_speed_cancels_against_its_own_gpu():
    """The judged run's three processes ran 0-3 % slower than usual, each for all its rows (in µs the
    light rows' median moved 2 %, past the same-GPU floor): no verdict, its rows judged as ratios on
    the same GPU's scale."""
    vs = _verdicts(target_process=[1.0, 1.02, 1.03])
    ratio_rows = [v for v in vs.values() if v.variant != "torch_mm"]
    assert all(v.verdict == "SAME" for v in vs.values()), [(v.row, v.verdict, v.change) for v in vs.values()]
    assert all(v.on_ratio and v.unit == "x torch_mm" and v.scale == "same GPU" for v in ratio_rows)
    assert all(v.mdc is not None and v.mdc <= 0.015 + 1e-12 for v in ratio_rows)
    base = vs[("fusion", "torch_mm", "x", "graph")]
    assert not base.on_ratio and base.unit == "us"


def test_a_changed_row_is_called_on_its_ratio():
    vs = _verdicts(change={"cudnn_a": 1.03})
    called = {v.row: v.verdict for v in vs.values() if v.verdict != "SAME"}
    assert called == {("fusion", "cudnn_a", "x", "graph"): "SLOWER", ("fusion", "cudnn_a", "x", "device"): "SLOWER"}
    assert abs(vs[("fusion", "cudnn_a", "x", "graph")].change - 0.03) < 0.006


def test_a_ratio_whose_baseline_changed_follows_it_and_is_unsure():
    """torch.mm 4 % slower, the cuDNN rows unchanged: the baseline is SLOWER, every ratio of its
    block moves -4 % with it and is UNSURE, never FASTER."""
    vs = _verdicts(change={"torch_mm": 1.04})
    assert vs[("fusion", "torch_mm", "x", "graph")].verdict == "SLOWER"
    for v in vs.values():
        if v.variant != "torch_mm":
            assert v.verdict == "UNSURE" and "its baseline torch_mm changed (SLOWER)" in v.note, (v.row, v.verdict)


def test_without_history_of_its_own_gpu_the_rows_stay_in_us():
    target, before, figs = _history()
    fleet_only = [r for r in before if r["start"] != target["start"]]
    _, vs = check.judge_run(dict(target), fleet_only, [], figs)
    assert all(not v.on_ratio and v.scale == "fleet" for v in vs if v.mode in ("graph", "device"))


def test_a_row_whose_workers_are_not_its_baseline_s_is_stored_unpaired(tmp_path):
    recs = synthetic_records(0)
    for r in recs:
        if r.mode == "graph":
            ids = [1, 2, 3] if r.variant == "torch_mm" else [1, 2, 4] if r.variant == "generic" else [1, 2, 3]
            r.workers = [{"worker": i, "n": 5, "median": 4.0 + i * 0.01, "ratio": None} for i in ids]
    path = records.write_run(tmp_path / "r.json", records.run_document(recs, dict(FINGERPRINT)))
    st = db.open_store(f"sqlite:///{tmp_path / 'a.db'}", create=True)
    ingest.ingest_paths(st, [path])
    rid = st.runs()[0]["id"]
    figs = st.figures([rid])[rid]
    assert "unpaired" in figs[("execute", "generic", "256", "graph")].flags.split(",")
    assert "unpaired" not in figs[("execute", "pinned", "256", "graph")].flags.split(",")
    assert paired.paired({rid: figs})[rid][("execute", "pinned", "256", "graph")].on_ratio
    assert not paired.paired({rid: figs})[rid][("execute", "generic", "256", "graph")].on_ratio
    st.close()


def _fleet_judged(change: dict) -> dict:
    """8 earlier runs on 4 starts, then a run on a new start (judged against the fleet) with `change`."""
    rng = random.Random(5)
    runs, figs = [], {}
    starts = ["s1/GPU-1", "s1/GPU-1", "s2/GPU-2", "s2/GPU-2", "s3/GPU-3", "s3/GPU-3", "s4/GPU-4", "s4/GPU-4",
              "new/GPU-new"]
    for i, s in enumerate(starts):
        runs.append({"id": i + 1, "start": s, "gpu_uuid": s.split("/")[1], "probes": "fusion", "host_unstable": False})
        figs[i + 1] = _run_figs(rng, [rng.gauss(1.0, 0.002) for _ in range(3)], change if s.startswith("new") else None)
    _, vs = check.judge_run(dict(runs[-1]), runs[:-1], [], figs)
    return {v.row: v for v in vs}


def test_a_row_that_moved_with_its_baseline_on_a_new_gpu_is_unsure_and_one_that_moved_alone_is_called():
    # the GPU runs the kernel both share 6 % slow: the baseline's own row says so, the cuDNN row's
    # paired ratio did not move, so it is the GPU's, not a change
    vs = _fleet_judged({"cudnn_a": 1.06, "torch_mm": 1.06})
    row = ("fusion", "cudnn_a", "x", "device")
    assert vs[("fusion", "torch_mm", "x", "device")].verdict == "SLOWER"
    assert vs[row].verdict == "UNSURE" and vs[row].scale == "fleet" and "moved with its baseline torch_mm" in vs[row].note
    # moved alone, or beyond its baseline by more than the ratio's MDC: called
    assert _fleet_judged({"cudnn_a": 1.06})[row].verdict == "SLOWER"
    assert _fleet_judged({"cudnn_a": 1.12, "torch_mm": 1.06})[row].verdict == "SLOWER"
