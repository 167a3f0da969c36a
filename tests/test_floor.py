"""The host's fast-state floor is the fast cluster's lower quartile, not its lowest reading: one
lucky low reading must not move what counts as fast."""
import collections
import json
import random
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.hoststate import HostState, robust_floor

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


def test_a_floor_from_an_earlier_worker_is_kept_unless_this_one_learns_a_lower():
    hs = HostState(read=_host(0.5), floor=0.9)
    for _ in range(500):
        hs.read()
    assert hs.floor == 0.9
    hs = HostState(read=_host(0.5), floor=1.2)
    for _ in range(500):
        hs.read()
    assert hs.floor < 1.0


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
