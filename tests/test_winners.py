"""Autotune winner persistence on CPU: round trip, reuse, and every way an entry is refused."""
import json
import warnings

import pytest

from cudnn_hostbench.bench.cudnn_graphs import winners
from cudnn_hostbench.bench.cudnn_graphs.winners import Env, WinnerStore, WinnerWarning

H200 = Env("NVIDIA H200", 91900, "1.32.0")
NAMES = {0: "eng0_k2=1", 1: "eng7_k3=4", 2: "eng21_k5=0"}


def name_at(i):
    return NAMES[i]


def store_with_winner(path, env=H200, problem="matmul|1x256x256:rm:bf16", index=1, name="eng7_k3=4"):
    s = WinnerStore(path)
    s.record(env, problem, index, name, 9.5, {"heuristic_index": 0, "worst_us": 30.0})
    return s


def no_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_round_trip_reuses_without_warning(tmp_path):
    p = tmp_path / "w.json"
    store_with_winner(p)
    again = no_warnings(lambda: WinnerStore(p))
    w = no_warnings(lambda: again.lookup(H200, "matmul|1x256x256:rm:bf16", 3, name_at))
    assert (w.plan_index, w.plan_name, w.us) == (1, "eng7_k3=4", 9.5)
    assert w.extra == {"heuristic_index": 0, "worst_us": 30.0}
    assert w.tuned_at


def test_missing_file_is_empty_and_silent(tmp_path):
    s = no_warnings(lambda: WinnerStore(tmp_path / "none.json"))
    assert s.entries == []
    assert no_warnings(lambda: s.lookup(H200, "p", 3, name_at)) is None


@pytest.mark.parametrize("other", [
    Env("NVIDIA B200", 91900, "1.32.0"),
    Env("NVIDIA H200", 92000, "1.32.0"),
    Env("NVIDIA H200", 91900, "1.31.0"),
])
def test_foreign_entry_is_ignored_with_warning(tmp_path, other):
    p = tmp_path / "w.json"
    store_with_winner(p, env=other)
    s = WinnerStore(p)
    with pytest.warns(WinnerWarning, match="tuned elsewhere"):
        assert s.lookup(H200, "matmul|1x256x256:rm:bf16", 3, name_at) is None


def test_other_problem_is_not_foreign(tmp_path):
    p = tmp_path / "w.json"
    store_with_winner(p, problem="matmul|other")
    assert no_warnings(lambda: WinnerStore(p).lookup(H200, "matmul|1x256x256:rm:bf16", 3, name_at)) is None


@pytest.mark.parametrize("count", [0, 1])
def test_index_out_of_range_is_stale(tmp_path, count):
    p = tmp_path / "w.json"
    store_with_winner(p)
    with pytest.warns(WinnerWarning, match="out of range"):
        assert WinnerStore(p).lookup(H200, "matmul|1x256x256:rm:bf16", count, name_at) is None


def test_plan_name_mismatch_is_stale(tmp_path):
    p = tmp_path / "w.json"
    store_with_winner(p, name="eng7_k3=2")
    with pytest.warns(WinnerWarning, match="is now"):
        assert WinnerStore(p).lookup(H200, "matmul|1x256x256:rm:bf16", 3, name_at) is None


def test_name_lookup_failure_is_stale(tmp_path):
    p = tmp_path / "w.json"
    store_with_winner(p)

    def broken(i):
        raise RuntimeError("plan not built")
    with pytest.warns(WinnerWarning, match="cannot be named"):
        assert WinnerStore(p).lookup(H200, "matmul|1x256x256:rm:bf16", 3, broken) is None


def test_record_replaces_same_key_and_keeps_others(tmp_path):
    p = tmp_path / "w.json"
    s = store_with_winner(p)
    s.record(Env("NVIDIA B200", 91900, "1.32.0"), "matmul|1x256x256:rm:bf16", 2, "eng21_k5=0", 4.0)
    s.record(H200, "matmul|1x256x256:rm:bf16", 2, "eng21_k5=0", 8.0)
    doc = json.loads(p.read_text())
    assert doc["schema"] == winners.SCHEMA
    assert len(doc["entries"]) == 2
    w = WinnerStore(p).lookup(H200, "matmul|1x256x256:rm:bf16", 3, name_at)
    assert (w.plan_index, w.us) == (2, 8.0)
    assert not list(tmp_path.glob("*.tmp*"))  # atomic write leaves no temp file


@pytest.mark.parametrize("text,match", [
    ("{not json", "not valid JSON"),
    ('{"schema": 1, "entries": [', "not valid JSON"),          # truncated
    ('{"schema": 99, "entries": []}', "schema"),
    ('{"schema": 1}', "no 'entries'"),
    ("[]", "no 'entries'"),
])
def test_corrupt_file_warns_and_starts_empty(tmp_path, text, match):
    p = tmp_path / "w.json"
    p.write_text(text)
    with pytest.warns(WinnerWarning, match=match):
        s = WinnerStore(p)
    assert s.entries == []
    s.record(H200, "p", 0, "eng0_k2=1", 1.0)  # and it can be rewritten
    assert no_warnings(lambda: WinnerStore(p)).find(H200, "p") is not None


@pytest.mark.parametrize("bad", [
    {"gpu": "x"},                                                            # missing fields
    {"gpu": "x", "cudnn_backend": "91900", "cudnn_frontend": "1", "problem": "p",
     "plan_index": 0, "plan_name": "n", "us": 1.0},                           # wrong type
    {"gpu": "x", "cudnn_backend": 91900, "cudnn_frontend": "1", "problem": "p",
     "plan_index": -1, "plan_name": "n", "us": 1.0},                          # negative index
    {"gpu": "x", "cudnn_backend": 91900, "cudnn_frontend": "1", "problem": "p",
     "plan_index": True, "plan_name": "n", "us": 1.0},                        # bool is not an index
    "not an object",
])
def test_malformed_entry_is_dropped_others_kept(tmp_path, bad):
    p = tmp_path / "w.json"
    store_with_winner(p)
    doc = json.loads(p.read_text())
    doc["entries"].append(bad)
    p.write_text(json.dumps(doc))
    with pytest.warns(WinnerWarning, match="malformed"):
        s = WinnerStore(p)
    assert len(s.entries) == 1


def test_path_from_environment(tmp_path, monkeypatch):
    p = tmp_path / "sub" / "mine.json"
    monkeypatch.setenv(winners.ENV_VAR, str(p))
    assert winners.default_path(tmp_path / "proj") == p
    WinnerStore(winners.default_path()).record(H200, "p", 0, "n", 1.0)
    assert p.exists()
    monkeypatch.delenv(winners.ENV_VAR)
    # under the project folder it is given, never inside the installed package
    assert winners.default_path(tmp_path / "proj") == tmp_path / "proj" / "results" / "autotune_winners.json"


class FakeGraph:
    def __init__(self, count=3):
        self.count = count

    def get_execution_plan_count(self):
        return self.count

    def get_plan_name_at_index(self, i):
        return NAMES[i]


class FakeCtx:
    class torch:  # noqa: N801 - stands in for the module
        class cuda:  # noqa: N801
            @staticmethod
            def get_device_name(dev):
                return "NVIDIA H200"
    device = 0

    class cudnn:  # noqa: N801
        __version__ = "1.32.0"

        @staticmethod
        def backend_version():
            return 91900


def test_tuned_index_tunes_once_then_reuses(tmp_path):
    store = WinnerStore(tmp_path / "w.json")
    calls = []

    def tune():
        calls.append(1)
        return 2, NAMES[2], 7.5, {"plans_timed": 3}
    assert winners.tuned_index(FakeCtx(), FakeGraph(), "p", tune, store) == (2, "tuned")
    fresh = WinnerStore(tmp_path / "w.json")  # the next run: a new process reads the file
    assert no_warnings(lambda: winners.tuned_index(FakeCtx(), FakeGraph(), "p", tune, fresh)) == (2, "stored")
    assert len(calls) == 1
    # the graph changed under the stored entry: warned, re-tuned
    with pytest.warns(WinnerWarning):
        assert winners.tuned_index(FakeCtx(), FakeGraph(count=2), "p", tune, fresh) == (2, "tuned")
    assert len(calls) == 2


def test_env_differs_names_fields():
    d = H200.differs(Env("NVIDIA B200", 91900, "1.31.0"))
    assert len(d) == 2 and "gpu" in d[0] and "cudnn_frontend" in d[1]
    assert H200.differs(H200) == []
