"""The host's fast-state floor is the fast cluster's lower quartile, not its lowest reading: one
lucky low reading must not move what counts as fast."""
import collections
import json
import random
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.core.hoststate import FLOOR_ENV, HostState, process_floor, robust_floor

TRACE = Path(__file__).resolve().parent.parent / "reports" / "reference" / "h200" / "host" / "host_trace.json"


def _within(xs, floor, tol=0.10):
    return sum(x <= floor * (1 + tol) for x in xs) / len(xs)


def test_on_the_committed_h200_trace_the_floor_marks_the_fast_cluster():
    xs = [x for _, x in json.loads(TRACE.read_text())["readings"]]
    floor = robust_floor(sorted(xs))
    mode = collections.Counter(round(x, 2) for x in xs).most_common(1)[0][0]   # the fast state's peak
    assert abs(floor - mode) <= 0.1 * mode
    assert min(xs) < 0.9 * floor          # the lowest reading sits far under the state...
    assert _within(xs, floor) > 10 * _within(xs, min(xs))   # ...and would have marked almost nothing fast


def _host(fast_share, seed=1, strays=0.0):
    """Fast state about 1.0 µs, slow 2.0 µs; `strays` of the fast readings land far under it (as
    in the H200 trace: 0.56-0.70 µs under a 0.77 µs peak, about 3 % of the fast readings)."""
    rng = random.Random(seed)

    def read():
        if rng.random() >= fast_share:
            return 2.0 * rng.gauss(1.0, 0.03)
        return rng.uniform(0.73, 0.9) if rng.random() < strays else rng.gauss(1.0, 0.03)
    return read


@pytest.mark.parametrize("fast_share", [0.5, 0.05, 0.01])
def test_the_floor_ignores_rare_low_readings_whatever_the_share_of_the_fast_state(fast_share):
    hs = HostState(read=_host(fast_share, strays=0.03), floor=None)
    for _ in range(5000):
        hs.read()
    assert hs.floor == pytest.approx(0.98, abs=0.03)        # the fast cluster's lower quartile
    assert hs.fast(1.03) and not hs.fast(2.0)               # a typical fast reading counts as fast


def _learned(monkeypatch, prior, read, n=500):
    monkeypatch.setenv(FLOOR_ENV, str(prior))   # how a worker gets the earlier workers' floor
    hs = HostState(read=read)
    assert hs.floor == prior                    # judged by it until it has readings of its own
    for _ in range(n):
        hs.read()
    return hs


@pytest.mark.parametrize("prior", [0.88, 0.9, 1.12, 1.2])
def test_a_worker_judges_by_its_own_floor_whether_the_earlier_ones_was_lower_or_higher(monkeypatch, prior):
    """The sentinel's fast level differs by process (H200: 7 % either side of the run's median,
    while the rows did not follow it): a process whose fast state sits 11 % over an earlier
    worker's floor is fast by its own floor, not a switch by the earlier one's."""
    hs = _learned(monkeypatch, prior, _host(0.5))
    assert hs.floor == pytest.approx(0.98, abs=0.03)
    assert hs.fast(1.03) and not hs.fast(2.0)


def test_a_floor_learned_in_the_slow_state_gives_way_to_the_earlier_workers(monkeypatch):
    # its host slow the whole time: its own floor (2.0 µs) sits over SLOW_AT x the earlier floor
    hs = _learned(monkeypatch, 0.9, _host(0.0))
    assert hs.floor == 0.9 and not hs.fast(2.0)
    assert process_floor(2.0, 0.9) == 0.9 and process_floor(1.25, 0.9) == 1.25
    assert process_floor(None, 0.9) == 0.9 and process_floor(1.0, None) == 1.0


def test_a_floor_the_caller_gives_is_never_relearned():
    hs = HostState(read=_host(0.5), floor=1.2)
    for _ in range(200):
        hs.read()
    assert hs.floor == 1.2


def test_edge_cases():
    assert robust_floor([]) is None
    assert robust_floor([1.0]) == 1.0
    xs = sorted([1.0] * 3 + [2.0] * 100)   # the slow state about twice the fast one, as on the H200
    assert robust_floor(xs) == 1.0   # three fast readings in 103: still the fast state's floor
    assert robust_floor(sorted([0.65, 1.0, 1.0, 1.01, 1.02, 1.02, 1.03])) == 1.0   # a stray under it


def test_a_workers_host_summary_keeps_a_histogram_of_its_readings():
    hs = HostState(read=_host(0.5, strays=0.03), floor=None)
    for _ in range(2000):
        hs.read()
    s = hs.summary()
    assert sum(s["histogram"].values()) == s["readings"] == 2000
    assert s["lowest_us"] == min(hs.readings) and s["floor_us"] > s["lowest_us"]
    lo = min(s["histogram"], key=float)
    assert float(lo) <= s["lowest_us"] < float(lo) + 0.02 + 1e-9


@pytest.mark.parametrize("argv,says", [
    (["--seconds", "0"], "--seconds must be more than 0"),
    (["--seconds", "1", "--every", "-1"], "--every 0 or more"),
    (["--seconds", "1", "--out", "/nonexistent-folder/t.json"], "not a file in an existing folder"),
])
def test_host_trace_refuses_bad_input_before_tracing(argv, says, capsys, tmp_path):
    from cudnn_hostbench.scripts import host_trace
    assert host_trace.main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert host_trace.main(["--seconds", "1", "--out", str(tmp_path)]) == 2   # a folder, not a file


def test_the_run_summary_gives_the_workers_floors_as_a_range_where_they_differ():
    from cudnn_hostbench.bench.measure.runfile.records import Run
    from cudnn_hostbench.reports import run_summary

    def parts(floors):
        hs = {"floor_us": min(floors), "per_worker": [{"floor_us": f} for f in floors]}
        return run_summary.summary_parts(Run("r", {"workers": len(floors), "host_state": hs}, []))
    assert "host floor 0.79-0.91 µs (per worker)" in parts([0.806, 0.79, 0.913])
    assert "host floor 0.80 µs" in parts([0.80, 0.805])
    assert "host floor 0.80 µs" in run_summary.summary_line(Run("r", {"host_state": {"floor_us": 0.8}}, []))
