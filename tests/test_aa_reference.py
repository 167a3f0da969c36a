"""The gate on the committed A/A pair (two full default runs on the H200, the first cold):
no false alarm, and a small injected slowdown is caught alone."""
import copy
from pathlib import Path

import pytest

from bench.measure.records import load_run
from reports import compare as cmp

AA = Path(__file__).resolve().parent.parent / "reports" / "reference" / "h200" / "aa"


@pytest.fixture(scope="module")
def runs():
    return load_run(AA / "run1.json"), load_run(AA / "run2.json")


def _inject(run, key, factor):
    run = copy.deepcopy(run)
    r = run.find(*key)
    assert r is not None and r.ok, key
    r.samples = [x * factor for x in r.samples]
    for w in r.workers:
        w["median"] *= factor
        if w.get("ratio") is not None:
            w["ratio"] *= factor
    return run


def test_a_a_pair_has_no_slower_or_faster_row(runs):
    df = cmp.compare(*runs)
    assert not set(df.verdict) & {"SLOWER", "FASTER", "KERNEL CHANGED"}, df[df.verdict != "SAME"].to_string()
    assert (df.verdict == "SAME").sum() > 400


@pytest.mark.parametrize("key,factor", [
    (("transpose", "strided_view", "t256", "graph"), 1.05),
    (("execute", "generic", "256", "device"), 1.05),
    (("transpose", "strided_view", "t256", "eager"), 1.10),
])
def test_an_injected_slowdown_is_caught_alone(runs, key, factor):
    a, b = runs
    df = cmp.compare(a, _inject(b, key, factor))
    hit = df[df.verdict.isin(["SLOWER", "FASTER", "KERNEL CHANGED"])]
    assert list(zip(hit.probe, hit.variant, hit["size"], hit["mode"], hit.verdict)) == [(*key, "SLOWER")]
