"""bench.audit.launches: each sync's segment's kernel launches from profiler events, replayed on one
stream for a faster host (issue 39: the timeline holds host segments, kernel launches and syncs).
CPU only: the events are written here the way torch.profiler's CUDA activity gives them."""
import random

import pytest

from cudnn_hostbench.bench.audit import launches, timeline

LAT = 4.0


def _steps(n=5, copy=True, t=1000.0, ids=True):
    """`n` steps of a sync-check-like step: a transposing copy launched first (60 µs on the device),
    a matmul at 20 µs (100), an elementwise kernel at 70 (10), then `.item()`: a device-to-host
    copy and cudaStreamSynchronize. Device work runs in launch order, LAT after its launch or when
    the one before it ends."""
    ev, corr = [], 0
    for _ in range(n):
        busy = t
        for off, name, dur, kernel in ([(0.0, "cudaLaunchKernel", 60.0, "transpose_copy_kernel")] if copy else []) + [
                (20.0, "cuLaunchKernelEx", 100.0, "nvjet_gemm"), (70.0, "cudaLaunchKernel", 10.0, "elementwise_kernel"),
                (90.0, "cudaMemcpyAsync", 1.5, "Memcpy DtoH (Device -> Pinned)")]:
            corr += 1
            ev.append((name, False, t + off, t + off + 3, corr if ids else None))
            start = max(t + off + LAT, busy)
            busy = start + dur
            ev.append((kernel, True, start, busy, corr if ids else None))
        ev.append(("cudaStreamSynchronize", False, t + 93, busy + 2, None))
        t = busy + 2
    return ev


def test_launches_are_placed_in_their_segment_and_the_syncs_own_copy_is_marked():
    got = launches.from_events(_steps(), 1)
    assert got["steps"] == 5 and got["lat_us"] == pytest.approx(LAT)
    (seg,) = got["segments"]
    assert [round(x[0], 6) for x in seg["launches"]] == [0.0, 20.0, 70.0, 90.0]
    assert [x[2] for x in seg["launches"]] == ["transpose_copy_kernel", "nvjet_gemm", "elementwise_kernel",
                                               "Memcpy DtoH (Device -> Pinned)"]
    assert [x[3] for x in seg["launches"]] == [False, False, False, True] and seg["host_us"] == pytest.approx(93.0)
    # without correlation ids the work is paired in launch order: the same placement
    assert launches.from_events(_steps(ids=False), 1)["segments"] == got["segments"]


def test_too_few_syncs_or_no_launches_is_an_error_not_a_guess():
    assert "too few" in launches.from_events(_steps(n=1)[:-1], 1)["error"]
    assert "error" in launches.from_events([("cudaStreamSynchronize", False, t, t + 1, None) for t in (0, 10, 20)], 1)


def test_the_replay_finishes_where_the_device_did():
    seg = launches.from_events(_steps(), 1)["segments"][0]
    # now: copy 4-64, gemm 64-164, elementwise 164-174; the host reaches the sync at 93
    assert launches.simulate(seg["launches"], seg["host_us"], LAT) == pytest.approx(174 - 93)
    # the copy dropped: the gemm starts at its own launch, 24-124, then 124-134
    assert launches.simulate(seg["launches"], seg["host_us"], LAT, drop=lambda n: "copy" in n) == pytest.approx(134 - 93)


def test_a_dropped_first_copy_starts_the_device_later_than_one_busy_tail_says():
    """Sync-check on the H200: with the copy the device started 21 µs into the segment, without it
    41; the busy-tail model keeps the start and so under-projects the wait."""
    seg = launches.from_events(_steps(), 1)["segments"][0]
    base = {"line": "x.py:30", "sync": ".item()", "host_us": 93.0, "sync_us": 81.0 + 10.0, "fixed_us": 10.0}
    tail = timeline.project_syncs([base], 170.0, 93.0, 93.0, device_cut_us=60.0)[0]
    placed = timeline.project_syncs([dict(base, launch=dict(seg, lat_us=LAT))], 170.0, 93.0, 93.0, device_cut_us=60.0)[0]
    assert placed["from_launches"] and "from_launches" not in tail
    assert tail["wait_proj_us"] == pytest.approx(81.0 - 60.0)           # the start kept at 4 µs
    assert placed["wait_proj_us"] == pytest.approx(81.0 - 40.0)         # the gemm's own launch, 20 µs later
    # the host 40 % faster, nothing dropped: the device, busy from the first launch on, finishes as before
    fast = timeline.project_syncs([dict(base, launch=dict(seg, lat_us=LAT))], 170.0, 93.0, 55.8)[0]
    assert fast["wait_proj_us"] == pytest.approx(81.0 + 0.4 * 93.0)   # the copy, launched at 0, runs from 4 still


def test_a_projected_wait_from_launches_never_shrinks_as_the_host_gets_faster():
    rnd = random.Random(39)
    for _ in range(300):
        n = rnd.randint(1, 6)
        offs = sorted(rnd.uniform(0, 200) for _ in range(n))
        ls = [[o, rnd.uniform(1, 80), rnd.choice(["gemm", "copy_kernel", "reduce_kernel"]), False] for o in offs]
        h = offs[-1] + rnd.uniform(0, 50)
        seg = {"line": "x.py:30", "sync": ".item()", "host_us": h, "sync_us": rnd.uniform(5, 150), "fixed_us": 5.0,
               "launch": {"host_us": h * rnd.uniform(1.0, 1.5), "launches": ls, "lat_us": rnd.uniform(0, 8)}}
        dev, cut = sum(x[1] for x in ls), rnd.choice([0.0, 10.0])
        tails = [rnd.choice([None, (h * 0.3, h * 0.3 * rnd.uniform(0.3, 1.0))])]
        waits = [timeline.project_syncs([seg], dev, h, h * f, cut, tails)[0]["wait_proj_us"] for f in (1.0, 0.7, 0.3, 0.0)]
        assert all(b >= a - 1e-9 for a, b in zip(waits, waits[1:])) and min(waits) >= 0


def test_a_failed_launch_pass_keeps_the_timeline_and_says_why(monkeypatch):
    from cudnn_hostbench.bench.audit import auditor
    tl = {"segments": [{"line": "x.py:30", "sync": ".item()", "host_us": 93.0, "sync_us": 91.0, "fixed_us": 10.0}],
          "syncs_per_step": 1, "steps": 20}
    monkeypatch.setattr(launches, "measure", lambda step, k: (_ for _ in ()).throw(RuntimeError("no CUPTI")))
    out = auditor._with_launches(lambda: None, tl)
    assert out["segments"] == tl["segments"] and out["launches_error"] == "launch pass failed: no CUPTI"
    monkeypatch.setattr(launches, "measure", lambda step, k: launches.from_events(_steps(), k))
    out = auditor._with_launches(lambda: None, tl)
    assert out["segments"][0]["launch"]["lat_us"] == pytest.approx(LAT) and out["launch_steps"] == 5
    assert auditor._with_launches(lambda: None, {}) == {}
