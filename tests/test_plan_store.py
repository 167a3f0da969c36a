"""Serialized-plan fallback decisions on CPU: a saved plan is used only when it is this run's."""
import json
import random
import warnings

import pytest

from cudnn_hostbench.bench.cudnn_graphs import plan_store
from cudnn_hostbench.bench.cudnn_graphs.plan_store import DESERIALIZE, REBUILD, PlanFallbackWarning
from cudnn_hostbench.bench.cudnn_graphs.winners import Env

H200 = Env("NVIDIA H200", 91900, "1.32.0")
PROBLEM = "bmm|8x256x512:rm:bf16,8x512x256:rm:bf16"
BLOB = bytes(random.Random(3).randrange(256) for _ in range(700))  # includes b"\n" bytes


def saved(env=H200, problem=PROBLEM, blob=BLOB):
    return plan_store.dumps(blob, env, problem, {"uids": [101, 102, 103]})


def test_matching_file_deserializes():
    d = plan_store.decide(saved(), H200, PROBLEM)
    assert d.action == DESERIALIZE and d.blob == BLOB
    assert d.header["meta"] == {"uids": [101, 102, 103]}


def test_list_of_ints_blob_is_accepted():
    d = plan_store.decide(plan_store.dumps(list(BLOB), H200, PROBLEM), H200, PROBLEM)
    assert d.action == DESERIALIZE and d.blob == BLOB
    with pytest.raises(TypeError):
        plan_store.to_bytes("text")


@pytest.mark.parametrize("other,field", [
    (Env("NVIDIA B200", 91900, "1.32.0"), "gpu"),
    (Env("NVIDIA H200", 91800, "1.32.0"), "cudnn_backend"),
    (Env("NVIDIA H200", 91900, "1.31.0"), "cudnn_frontend"),
])
def test_foreign_plan_rebuilds(other, field):
    d = plan_store.decide(saved(env=other), H200, PROBLEM)
    assert d.action == REBUILD and "foreign" in d.reason and field in d.reason and d.warn


def test_other_problem_rebuilds():
    d = plan_store.decide(saved(problem="bmm|other"), H200, PROBLEM)
    assert d.action == REBUILD and "bmm|other" in d.reason


def test_every_truncation_rebuilds_and_never_raises():
    data = saved()
    for cut in range(len(data)):
        d = plan_store.decide(data[:cut], H200, PROBLEM)
        assert d.action == REBUILD, cut
        assert d.warn


def test_flipped_bytes_rebuild_or_are_harmless():
    data = bytearray(saved())
    rng = random.Random(7)
    for _ in range(300):
        bad = bytearray(data)
        i = rng.randrange(len(bad))
        bad[i] ^= 1 << rng.randrange(8)
        d = plan_store.decide(bytes(bad), H200, PROBLEM)
        if d.action == DESERIALIZE:   # only possible if the flip hit a header byte that does not matter
            assert d.blob == BLOB
        else:
            assert d.warn


@pytest.mark.parametrize("data,match", [
    (None, "no saved plan"),
    (b"", "truncated"),
    (b"PK\x03\x04 a zip file", "bad magic"),
    (plan_store.MAGIC + b"{not json}\n" + BLOB, "header corrupt"),
    (plan_store.MAGIC + b"[1, 2]\n" + BLOB, "not an object"),
    (plan_store.MAGIC + json.dumps({"format": 2}).encode() + b"\n" + BLOB, "format"),
    (plan_store.MAGIC + json.dumps({"format": 1, "gpu": "x"}).encode() + b"\n" + BLOB, "incomplete"),
    (saved() + b"extra", "padded"),
    ("a string", "not bytes"),
])
def test_bad_files_rebuild_with_reason(data, match):
    d = plan_store.decide(data, H200, PROBLEM)
    assert d.action == REBUILD and match in d.reason
    assert d.warn == (data is not None)


def test_corrupt_blob_with_intact_header_rebuilds():
    data = bytearray(saved())
    data[-1] ^= 0xFF
    d = plan_store.decide(bytes(data), H200, PROBLEM)
    assert d.action == REBUILD and "SHA-256" in d.reason


class Backend:
    """Fake deserialize/build pair that records calls."""

    def __init__(self, refuse=False):
        self.refuse = refuse
        self.calls = []

    def deserialize(self, blob):
        self.calls.append("deserialize")
        if self.refuse:
            raise RuntimeError("CUDNN_STATUS_BAD_PARAM: plan JSON from another version")
        assert blob == BLOB
        return "graph-from-blob"

    def build(self):
        self.calls.append("build")
        return "graph-rebuilt"


def test_load_or_build_uses_saved_plan(tmp_path):
    p = plan_store.save(tmp_path / "mm.hbplan", BLOB, H200, PROBLEM)
    b = Backend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = plan_store.load_or_build(p, H200, PROBLEM, b.deserialize, b.build)
    assert (out.action, out.value, b.calls) == ("deserialized", "graph-from-blob", ["deserialize"])
    assert not list(tmp_path.glob("*.tmp*"))


def test_missing_file_rebuilds_silently(tmp_path):
    b = Backend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = plan_store.load_or_build(tmp_path / "none.hbplan", H200, PROBLEM, b.deserialize, b.build)
    assert (out.action, b.calls) == ("rebuilt", ["build"])


def test_foreign_file_rebuilds_with_warning(tmp_path):
    p = plan_store.save(tmp_path / "mm.hbplan", BLOB, Env("NVIDIA B200", 91900, "1.32.0"), PROBLEM)
    b = Backend()
    with pytest.warns(PlanFallbackWarning, match="foreign"):
        out = plan_store.load_or_build(p, H200, PROBLEM, b.deserialize, b.build)
    assert (out.action, out.value, b.calls) == ("rebuilt", "graph-rebuilt", ["build"])


def test_truncated_file_rebuilds_with_warning(tmp_path):
    p = plan_store.save(tmp_path / "mm.hbplan", BLOB, H200, PROBLEM)
    p.write_bytes(p.read_bytes()[:-100])
    b = Backend()
    with pytest.warns(PlanFallbackWarning, match="truncated"):
        out = plan_store.load_or_build(p, H200, PROBLEM, b.deserialize, b.build)
    assert (out.action, b.calls) == ("rebuilt", ["build"])


def test_backend_refusal_rebuilds_with_warning(tmp_path):
    p = plan_store.save(tmp_path / "mm.hbplan", BLOB, H200, PROBLEM)
    b = Backend(refuse=True)
    with pytest.warns(PlanFallbackWarning, match="deserialize failed"):
        out = plan_store.load_or_build(p, H200, PROBLEM, b.deserialize, b.build)
    assert (out.action, out.value, b.calls) == ("rebuilt", "graph-rebuilt", ["deserialize", "build"])


def test_rebuild_failure_propagates(tmp_path):
    def build():
        raise ValueError("graph rejected")
    with pytest.raises(ValueError, match="graph rejected"):
        plan_store.load_or_build(tmp_path / "none.hbplan", H200, PROBLEM, lambda b: None, build)
