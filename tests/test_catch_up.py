"""The catch-up worker on CPU: a trap probe's headline block that no worker timed in the host's
fast state gets one more worker (eager rows of that block only), whose records join the merge."""
import random
from types import SimpleNamespace

import pytest

from cudnn_hostbench.bench.measure.core.options import SuiteOptions
from cudnn_hostbench.bench.measure.pytest_plugin import HostbenchSession, pytest_collection_modifyitems
from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.records import Record
from cudnn_hostbench.bench.measure.workers import parent, replicas
from cudnn_hostbench.bench.measure.workers.parent import Parent

FLOOR = 0.76


def _eager(worker: int, sentinel: float, ratio: float) -> list[Record]:
    rng = random.Random(worker)
    base = [10.0 * rng.uniform(0.99, 1.01) for _ in range(10)]
    out = []
    for probe in ("churn", "wrapper"):
        trap = [b * ratio * rng.uniform(0.995, 1.005) for b in base]
        for name, role, s in (("torch_mm", "baseline", base), ("trap", "trap", trap)):
            out.append(Record(probe, name, "256", "eager", role=role, samples=s, baseline="torch_mm",
                              host_state="fast" if sentinel < 1.5 else "slow", sentinel_us=sentinel))
    return out


def _write(path, recs, floor, fast_fraction=None):
    """A worker's records.jsonl; with `fast_fraction`, the share of its host readings in the fast state."""
    host = {"floor_us": floor, "unstable": False}
    if fast_fraction is not None:
        host["fast_fraction"] = fast_fraction
    w = records.JsonlWriter(path)
    for r in recs:
        w.write({"kind": "record", "record": r.to_dict()})
    w.write({"kind": "fingerprint", "fingerprint": {"host_state": host}})
    w.close()
    return path


def _parent(tmp_path, modes=("eager", "graph", "device"), focus_workers=0, budget_s=0.0):
    args = [str(tmp_path / "probes"), "--benchmark-only", f"--hb-focus-workers={focus_workers}"]
    return Parent(tmp_path, 3, args, focus_workers=focus_workers, budget_s=budget_s, modes=modes,
                  focus={("churn", "256"), ("wrapper", "256")})


def test_a_block_no_worker_timed_fast_gets_a_catch_up_worker(tmp_path, monkeypatch):
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append({"k": k, "args": args, "start": start, "floor": floor})
        if start == 1:   # churn: worker 1 "fast" by a floor it learned in the slow state (1.2 µs, over
            #              SLOW_AT x the run's), worker 2 slow, worker 3 over its own floor; wrapper fast
            recs = [[r for r in _eager(i, s, 1.2) if r.probe == "churn"] + [r for r in _eager(i, 0.80, 2.3)
                    if r.probe == "wrapper"] for i, s in ((1, 1.25), (2, 1.9), (3, 0.94))]
            return [_write(tmp_path / f"w{i}.jsonl", rs, f) for i, (rs, f) in
                    enumerate(zip(recs, (1.2, FLOOR, FLOOR)), 1)]
        return [_write(tmp_path / "w4.jsonl", [r for r in _eager(4, 0.79, 1.1) if r.probe == "churn"], FLOOR)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path)
    p._run()
    assert [c["start"] for c in calls] == [1, 4, 5, 6] and {c["floor"] for c in calls[1:]} == {FLOOR}
    for extra in (c["args"] for c in calls[1:]):
        assert "--hb-only=churn/256" in extra and "--hb-modes=eager" in extra
    churn = p.records[("churn", "trap", "256", "eager")]
    # worker 1 was fast only by a floor learned in the slow state, worker 3 not by its own, worker 2 slow: top-ups
    # follow until three processes timed churn truly fast; once they are the majority, the
    # unsteady ones are left out
    assert [w["worker"] for w in churn.workers] == [4, 5, 6] and churn.host_state == "fast"
    assert "few_processes" not in churn.flags
    assert [w["worker"] for w in p.records[("wrapper", "trap", "256", "eager")].workers] == [1, 2, 3]
    assert p.fingerprint["catch_up"] == {"worker": 4, "blocks": ["churn/256"], "timed_fast": ["churn/256"]}
    assert [t["worker"] for t in p.fingerprint["top_ups"]] == [4, 5, 6]
    assert p.fingerprint["workers"] == 6 and "few_processes" not in p.fingerprint


def test_a_worker_whose_fast_state_sits_over_the_runs_floor_is_judged_by_its_own(tmp_path, monkeypatch):
    """The sentinel's fast level differs by process (H200: 7 % either side of the run's median):
    a worker that learned 0.87 µs against the run's 0.76 and timed churn at 0.94 timed it fast,
    so no top-up is sent for it; one whose own floor is the run's did not."""
    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        recs = [_eager(i, s, 1.2) for i, s in ((1, 0.94), (2, 0.80), (3, 0.80))]
        return [_write(tmp_path / f"w{i}.jsonl", rs, f) for i, (rs, f) in enumerate(zip(recs, (0.87, FLOOR, FLOOR)), 1)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path)
    p._run()
    churn = p.records[("churn", "trap", "256", "eager")]
    assert [w["worker"] for w in churn.workers] == [1, 2, 3] and churn.host_state == "fast"
    assert "top_ups" not in p.fingerprint and p.fingerprint["workers"] == 3
    runs = [records.Run("w", {"host_state": {"floor_us": f}}, []) for f in (0.87, FLOOR)]
    stale = replicas.stale_host([_eager(1, 0.94, 1.2), _eager(2, 0.94, 1.2)], FLOOR,
                               floors=[replicas.judging_floor(r, FLOOR) for r in runs])
    assert ["host_unstable" in r.flags for r in stale[0]] == [False] * 4
    assert ["host_unstable" in r.flags for r in stale[1]] == [True] * 4


def test_a_block_slow_in_every_worker_becomes_fast_through_the_catch_up(tmp_path, monkeypatch):
    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        if start == 1:
            return [_write(tmp_path / f"w{i}.jsonl", _eager(i, 1.9, 1.3), FLOOR) for i in (1, 2, 3)]
        return [_write(tmp_path / f"w{start}.jsonl", _eager(start, 0.79, 1.1), FLOOR)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path)
    p._run()
    for probe in ("churn", "wrapper"):
        r = p.records[(probe, "trap", "256", "eager")]
        assert r.host_state == "fast" and [w["worker"] for w in r.workers] == [4, 5, 6]
        assert r.ratio.median == pytest.approx(1.1, rel=0.02)
    assert p.fingerprint["catch_up"]["timed_fast"] == ["churn/256", "wrapper/256"]
    from cudnn_hostbench.bench.measure.runfile.records import Run
    from cudnn_hostbench.reports import run_summary
    line = run_summary.summary_line(Run("r", p.fingerprint, list(p.records.values())))
    assert line.startswith("3 worker(s) + 3 top-up workers for churn/256, wrapper/256 (timed fast: all)")


def test_a_block_only_two_workers_timed_fast_gets_a_catch_up_worker(tmp_path, monkeypatch):
    """Two fast workers make the headline ratio a mean of two processes (H200: wrapper 2.38 and
    2.65 in one run, 2.33 in the next), so a third is sought."""
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append(start)
        if start == 1:
            return [_write(tmp_path / f"w{i}.jsonl", _eager(i, s, 1.2), FLOOR) for i, s in ((1, 0.8), (2, 1.9), (3, 0.8))]
        return [_write(tmp_path / "w4.jsonl", _eager(4, 0.79, 1.2), FLOOR)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path)
    p._run()
    assert calls == [1, 4] and p.fingerprint["catch_up"]["blocks"] == ["churn/256", "wrapper/256"]
    assert [w["worker"] for w in p.records[("churn", "trap", "256", "eager")].workers] == [1, 3, 4]


def test_no_catch_up_when_every_block_was_timed_fast_or_eager_is_not_run(tmp_path, monkeypatch):
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append(start)
        return [_write(tmp_path / f"w{i}.jsonl", _eager(i, s, 1.2), FLOOR)
                for i, s in ((1, 0.8), (2, 1.9), (3, 0.8), (4, 0.81))]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path)
    p._run()
    assert calls == [1] and "catch_up" not in p.fingerprint
    calls.clear()
    monkeypatch.setattr(replicas, "run_workers", lambda *a, **k: calls.append(k.get("start", 1)) or
                        [_write(tmp_path / "w1.jsonl", _eager(1, 1.9, 1.2), FLOOR)])
    p = _parent(tmp_path, modes=("graph", "device"))
    p._run()
    assert calls == [1]


class _Item:
    def __init__(self, probe, size, mode):
        self.fixturenames = ("hb_case",)
        self.callspec = SimpleNamespace(params={"hb_case": (size, "v", mode)})
        self.module = SimpleNamespace(PROBE=probe, __name__=f"probes.probe_{probe.name}",
                                      __file__=f"/x/probes/probe_{probe.name}.py")
        self.marks = []

    def add_marker(self, m):
        self.marks.append(m)


def test_a_catch_up_worker_collects_only_the_eager_rows_of_its_blocks():
    from cudnn_hostbench.bench.measure.probe import Probe
    churn = Probe("churn", "", [], build=None, sizes=lambda o: ["256", "1024"], focus=True)
    other = Probe("conv", "", [], build=None, sizes=lambda o: ["n1"])
    items = [_Item(churn, s, m) for s in ("256", "1024") for m in ("eager", "graph", "device")] + [_Item(other, "n1", "eager")]
    dropped = []
    opts = {"--hb-only": "churn/256", "--hb-worker": "4/4"}
    hb = SimpleNamespace(suite=SuiteOptions(), gpu_ok=True, why="", focus=set(), measure=None)
    cfg = SimpleNamespace(getoption=opts.get, _hostbench=hb,
                          hook=SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items)))
    pytest_collection_modifyitems(cfg, items)
    assert [(i.module.PROBE.name, *i.callspec.params["hb_case"][::2]) for i in items] == [("churn", "256", "eager")]
    assert len(dropped) == 6 and hb.focus == {("churn", "256")}
    assert hb.cases == [["/x/probes/probe_churn.py", "churn", "256", "v", "eager"]]   # what the own engine's jobs hold


def test_workers_get_their_number_floor_and_a_hash_seed_per_worker(tmp_path, monkeypatch):
    seen = []

    def fake_run(cmd, env, log, relay):
        seen.append((next(a for a in cmd if a.startswith("--hb-worker=")), env.get("PYTHONHASHSEED"),
                     env.get(replicas.FLOOR_ENV)))
        return 0

    monkeypatch.setattr(replicas, "_run_relaying", fake_run)
    replicas.run_workers(2, ["probes"], tmp_path, say=lambda m: None, env={})
    replicas.run_workers(1, ["probes"], tmp_path, say=lambda m: None, env={}, start=4, floor=0.76)
    replicas.run_workers(1, ["probes"], tmp_path, say=lambda m: None, env={"PYTHONHASHSEED": "7"})
    assert seen == [("--hb-worker=1/2", "1", None), ("--hb-worker=2/2", "2", None),
                    ("--hb-worker=4/4", "4", "0.760000"), ("--hb-worker=1/1", "7", None)]


def test_focus_only_workers_add_replicates_to_the_headline_rows_only(tmp_path, monkeypatch):
    from cudnn_hostbench.bench.measure.runfile.records import Run
    from cudnn_hostbench.reports import run_summary
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append({"k": k, "args": args, "start": start, "floor": floor})
        if start == 1:   # full workers: the headline rows and one other row
            out_ = []
            for i in (1, 2, 3):
                recs = _eager(i, 0.80, 1.2) + [Record("conv", "x", "n1", "graph", samples=[5.0] * 10)]
                out_.append(_write(tmp_path / f"w{i}.jsonl", recs, FLOOR))
            return out_
        return [_write(tmp_path / f"w{start + j}.jsonl", _eager(start + j, 0.79, 1.2), FLOOR) for j in range(k)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path, focus_workers=2)
    p._run()
    assert [(c["k"], c["start"], c["floor"]) for c in calls] == [(3, 1, None), (2, 4, FLOOR)]
    assert "--hb-only=churn/256,wrapper/256" in calls[1]["args"] and "--hb-modes=eager" in calls[1]["args"]
    assert [w["worker"] for w in p.records[("churn", "trap", "256", "eager")].workers] == [1, 2, 3, 4, 5]
    assert len(p.records[("conv", "x", "n1", "graph")].workers) == 3
    assert p.fingerprint["focus_workers"] == {"workers": 2, "blocks": ["churn/256", "wrapper/256"]}
    line = run_summary.summary_line(Run("r", p.fingerprint, list(p.records.values())))
    assert line.startswith("3 worker(s) + 2 focus-only worker(s);")


def test_workers_retry_no_block_top_up_workers_replicate_instead(tmp_path):
    """A worker never times a slow headline block again: a retry spends its worker's time before
    replication does, and the parent's top-up workers bring every thin eager row to three
    processes (H200: retries caught 4 of 14, extra workers 12 of 12)."""
    for n in (2, 0):
        args = _session_of(tmp_path, {"--hb-focus-workers": n}).worker_args()
        assert f"--hb-focus-workers={n}" in args
        hb = _session_of(tmp_path / f"w{n}", {"--hb-worker": "2/3", "--hb-focus-workers": n})
        assert hb.runner().retry_focus is False


def test_a_workers_progress_reaches_the_terminal_and_its_exit_noise_only_the_log(tmp_path):
    """Progress lines of a worker are relayed; the rest of its stderr (the frontend's nanobind
    'leaked objects' report at exit) goes to the worker's log only."""
    import sys
    code = ("import sys; print('a test dot'); print('hostbench worker 1/1: churn/256 eager', file=sys.stderr); "
            "print('host: waiting for the fast state', file=sys.stderr); "
            "print('nanobind: leaked 3 instances!', file=sys.stderr); sys.exit(3)")
    relayed = []
    with open(tmp_path / "pytest.log", "w", encoding="utf-8") as log:
        rc = replicas._run_relaying([sys.executable, "-c", code], {}, log, relayed.append)
    assert rc == 3
    assert relayed == ["hostbench worker 1/1: churn/256 eager", "host: waiting for the fast state"]
    text = (tmp_path / "pytest.log").read_text()
    assert "nanobind: leaked" in text and "a test dot" in text


F = 14.0   # EXTRA_FIXED_S: an extra worker's cost besides waiting


@pytest.mark.parametrize("left_s,top_ups", [
    (1000.0, 3),             # room for all: top-ups until MAX_TOP_UPS
    (2.5 * F, 2),            # two fit; the third would end past the budget
    (1.5 * F, 1),
    (5.0, 0),                # none fits: said, and in the summary line
])
def test_top_up_workers_fit_the_budget_and_come_before_focus_workers(tmp_path, monkeypatch, left_s, top_ups):
    """The budget is the whole run's wall time (the first worker's wait included) less the
    parent's own end work; replication (top-ups) is served before focus-only workers."""
    from cudnn_hostbench.bench.measure.workers.parent import END_RESERVE_S, EXTRA_FIXED_S, MAX_TOP_UPS
    assert EXTRA_FIXED_S == F and MAX_TOP_UPS == 3
    from cudnn_hostbench.bench.measure.runfile.records import Run
    from cudnn_hostbench.reports import run_summary
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append({"k": k, "args": args, "start": start})
        if start > 1:
            clock["t"] += F * k   # each extra worker costs its fixed part
            return [_write(tmp_path / f"w{start + j}.jsonl", _eager(start + j, 1.9, 1.2), FLOOR) for j in range(k)]
        # full workers: churn slow everywhere, and the top-ups never catch the fast state
        return [_write(tmp_path / f"w{i}.jsonl", _eager(i, 1.9, 1.2), FLOOR) for i in (1, 2, 3)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path, focus_workers=2, budget_s=300.0)
    p.t0 = 1000.0   # a round start: sums of whole seconds stay exact in floating point
    clock = {"t": p.t0 + 300.0 - END_RESERVE_S - left_s}
    monkeypatch.setattr("cudnn_hostbench.bench.measure.workers.parent.time.perf_counter", lambda: clock["t"])
    p._run()
    tops = [c for c in calls[1:] if c["k"] == 1]
    assert [c["start"] for c in tops] == list(range(4, 4 + top_ups))
    assert all("--hb-modes=eager" in c["args"] for c in tops)
    assert len(p.fingerprint.get("top_ups", [])) == top_ups
    line = run_summary.summary_line(Run("r", p.fingerprint, list(p.records.values())))
    if top_ups < MAX_TOP_UPS:
        assert p.fingerprint["budget_cut"]["catch_up_skipped"] == ["churn/256", "wrapper/256"]
        assert "cut to fit --hb-budget-s 300: " in line and "no top-up worker for churn/256, wrapper/256" in line
        assert p.fingerprint["budget_cut"]["focus_workers_dropped"] == 2   # nothing left for them


def _session_of(tmp_path, opts: dict, args=(), cwd=None) -> HostbenchSession:
    """A HostbenchSession over a stand-in config: the options as pytest would have parsed them."""
    from pathlib import Path
    base = {"hb_sizes": "256", "hb_tokens": "256", "hb_modes": "eager,graph,device", "hb_rounds": 5,
            "hb_warm_s": 1.0, "hb_fast_wait_s": 1.0, "hb_focus_wait_s": 1.0, "hb_focus_workers": 2, "hb_target_se": 0.0,
            "hb_heavy": False, "hb_workers": 1, "hb_full_workers": 1, "hb_worker": None, "hb_only": None,
            "hb_deadline": None, "hb_budget_s": 0.0,
            "hb_out": str(tmp_path), "benchmark_only": True, "benchmark_json": None, "keyword": "",
            "markexpr": "", "plugins": [], "override_ini": []}
    for k, v in opts.items():
        base[k.lstrip("-").replace("-", "_")] = v
    option = SimpleNamespace(**base)
    root = Path(__file__).resolve().parent.parent
    cfg = SimpleNamespace(option=option, args=list(args), rootpath=root, inipath=root / "pyproject.toml",
                          getini=lambda name: ["test_*.py", "probe_*.py"],
                          invocation_params=SimpleNamespace(dir=cwd or root),
                          getoption=lambda name, default=None: getattr(option, name.lstrip("-").replace("-", "_"), default))
    return HostbenchSession(cfg)


def test_worker_command_lines_come_from_the_parsed_options(tmp_path):
    """A worker gets the user's selection (-k, -m, paths made absolute) and the measuring options
    as parsed, never the parent's outputs (run file, folder, worker count, budget)."""
    hb = _session_of(tmp_path, {"--hb-sizes": "256,1024", "keyword": "execute", "--hb-budget-s": 100.0,
                                "benchmark_json": tmp_path / "mine.json", "--hb-workers": 3},
                     args=["probes/probe_execute.py::test_execute"], cwd=tmp_path)
    args = hb.worker_args()
    assert args[0] == f"{tmp_path}/probes/probe_execute.py::test_execute"
    assert args[args.index("-k") + 1] == "execute" and "--hb-sizes=256,1024" in args
    assert not any(a.startswith(("--hb-budget-s", "--benchmark-json", "--hb-out", "--hb-workers=3")) for a in args)
    assert "--hb-workers=1" in args


@pytest.mark.parametrize("given", ["path", "file"])
def test_a_user_benchmark_json_is_found_under_either_pytest_benchmark(tmp_path, given):
    """pytest-benchmark 5.3+ parses --benchmark-json to a Path, 4.x-5.2 to an open file: either
    way the harness finds the full path (a Path's .name is only its base name)."""
    from cudnn_hostbench.bench.measure.pytest_plugin import user_json_path
    target = tmp_path / "sub" / "out.json"
    target.parent.mkdir()
    if given == "path":
        assert user_json_path(target) == target
    else:
        with open(target, "wb") as fh:
            assert user_json_path(fh) == target


@pytest.mark.parametrize("style", ["file", "path"])
def test_the_harness_run_file_target_is_a_file_and_a_path(tmp_path, style):
    """The target the harness sets when the user gives none: 4.x-5.2 write through `with x as fh`,
    5.3+ through `open(x, 'wb')`; both land the bytes at the same path."""
    from cudnn_hostbench.bench.measure.pytest_plugin import RunFileTarget
    t = RunFileTarget(tmp_path / "run.json.tmp")
    if style == "file":
        with t as fh:
            fh.write(b"{}")
    else:
        with open(t, mode="wb") as fh:
            fh.write(b"{}")
    assert (tmp_path / "run.json.tmp").read_bytes() == b"{}" and t.closed


def test_a_top_up_worker_gets_a_deadline_and_measures_nothing_past_it(tmp_path):
    """Within a budget a top-up worker is told when the run's time is up; past it, a row is
    recorded as not measured without building anything, and the merge keeps the other workers'."""
    import time

    from cudnn_hostbench.bench.measure.core.runner import Session
    p = _parent(tmp_path, budget_s=300.0)
    p.t0 = time.perf_counter()   # the budget counts from the parent process's start: here, now
    args = p._eager_args([("churn", "256")], 1.0)
    end = float(next(a for a in args if a.startswith("--hb-deadline=")).split("=")[1])
    assert time.time() + 300.0 - 30.0 < end < time.time() + 300.0
    assert not any(a.startswith("--hb-deadline") for a in _parent(tmp_path)._eager_args([("churn", "256")], 1.0))

    s = Session(tmp_path / "w", deadline=time.time() - 1.0)
    probe = SimpleNamespace(name="churn")
    rec = s.record(probe, "256", "trap", "eager")
    assert not rec.ok and "deadline" in rec.status and s._ctx is None and not s._cases
    late = [rec, *[r for r in _eager(1, 0.8, 1.2) if r.probe == "wrapper"]]
    merged = replicas.merge_records([_eager(1, 0.8, 1.2), _eager(2, 0.8, 1.2), late])
    churn = next(r for r in merged if r.key == ("churn", "trap", "256", "eager"))
    assert churn.ok and [w["worker"] for w in churn.workers] == [1, 2]


def test_a_top_up_worker_that_learns_a_lower_floor_does_not_thin_other_blocks(tmp_path, monkeypatch):
    """The run's floor is the full workers': a top-up that learned a lower one would otherwise
    make their fast figures stale and send the next top-up after blocks it never ran."""
    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        if start == 1:   # churn fast in two workers only, wrapper fast in all three (floor 0.80)
            recs = [[r for r in _eager(i, s, 1.2) if r.probe == "churn"] + [r for r in _eager(i, 0.85, 2.3)
                    if r.probe == "wrapper"] for i, s in ((1, 0.85), (2, 1.9), (3, 0.85))]
            return [_write(tmp_path / f"w{i}.jsonl", rs, 0.80) for i, rs in enumerate(recs, 1)]
        return [_write(tmp_path / f"w{start}.jsonl", [r for r in _eager(start, 0.70, 1.2) if r.probe == "churn"], 0.70)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path)
    p._run()
    assert [t["worker"] for t in p.fingerprint["top_ups"]] == [4]
    assert [w["worker"] for w in p.records[("wrapper", "trap", "256", "eager")].workers] == [1, 2, 3]
    assert [w["worker"] for w in p.records[("churn", "trap", "256", "eager")].workers] == [1, 3, 4]
    assert p.fingerprint["host_state"]["floor_us"] == 0.80


def test_a_figure_takes_the_host_state_three_processes_share():
    """Fast when three workers timed it fast; else the state three workers share (three slow
    processes make a figure, marked slow; one fast process does not); else fast, for a top-up to add to."""
    assert replicas.figure_state(["fast", "slow", "slow", "slow"]) == "slow"
    assert replicas.figure_state(["fast", "fast", "fast", "slow", "slow", "slow", "slow"]) == "fast"
    assert replicas.figure_state(["fast", "slow", "slow"]) == "fast"
    assert replicas.figure_state(["slow", "slow"]) == "slow"
    assert replicas.figure_state([]) == ""
    per = [_eager(1, 0.85, 1.2), _eager(2, 1.9, 1.2), _eager(3, 1.9, 1.2), _eager(4, 1.9, 1.2)]
    churn = {r.key: r for r in replicas.merge_records(per)}[("churn", "trap", "256", "eager")]
    assert churn.host_state == "slow" and [w["worker"] for w in churn.workers] == [2, 3, 4]
    assert churn.processes == 3 and ("churn", "256") not in parent.thin_blocks([churn])


def test_a_top_up_waits_within_half_of_what_is_left(tmp_path):
    """H200, a cold start: one top-up waited through 37 of the last 45 s and 10 blocks stayed on 2
    processes; each top-up now waits within half of what is left, so the next one has time."""
    import time

    from cudnn_hostbench.bench.measure.core.hoststate import FOCUS_BLOCK_S
    from cudnn_hostbench.bench.measure.workers.parent import END_RESERVE_S, TOP_UP_MIN_S, TOP_UP_SHARE
    p = _parent(tmp_path, budget_s=300.0)
    p.t0 = time.perf_counter() - (300.0 - END_RESERVE_S - 45.0)     # 45 s left
    k, per_block = p._fit(1, 30, 2.0, TOP_UP_MIN_S, share=TOP_UP_SHARE)
    assert k == 1 and 0 < per_block * FOCUS_BLOCK_S * 30 + TOP_UP_MIN_S <= 45.0 * TOP_UP_SHARE + 0.1
    assert p._fit(1, 30, 2.0, TOP_UP_MIN_S)[1] > per_block     # the whole of it, without the share


@pytest.mark.parametrize("fast_fraction, waits", [(0.02, False), (0.3, True)])
def test_a_host_stuck_slow_gets_top_ups_that_do_not_wait(tmp_path, monkeypatch, fast_fraction, waits):
    """Two fast workers and one slow leave each block on 2 processes of one state. With the host in
    its slow state nearly all the time, the top-ups do not wait for the fast state: any state serves
    once a block is split 2 + 2, and the second top-up leaves every block on 3 of one state."""
    import time as _time
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append({"k": k, "args": args, "start": start})
        if start > 1:
            return [_write(tmp_path / f"w{start}.jsonl", _eager(start, 1.9, 1.2), FLOOR, fast_fraction)]
        return [_write(tmp_path / f"w{i}.jsonl", _eager(i, 0.8 if i < 3 else 1.9, 1.2), FLOOR, fast_fraction)
                for i in (1, 2, 3)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path, budget_s=300.0)
    p.t0 = _time.perf_counter() - 200.0          # 92 s left before the parent's own end work
    p._run()
    tops = [c for c in calls if c["start"] > 1]
    wait = [float(a.split("=", 1)[1]) for c in tops for a in c["args"] if a.startswith("--hb-focus-wait-s=")]
    # a host that reaches its fast state at times: a third top-up still seeks a fast headline figure
    assert len(tops) == (3 if waits else 2) and all((w > 0) == waits for w in wait), wait
    assert not parent.thin_blocks(list(p.records.values()))


@pytest.mark.parametrize("fractions, waits", [((0.30, 0.34, 0.001), False), ((0.001, 0.02, 0.30), True)])
def test_the_host_as_the_last_worker_found_it_decides_whether_a_top_up_waits(tmp_path, monkeypatch, fractions, waits):
    """Judged on the workers before the last, a host that had just turned slow looked fine, so the
    top-up waited for a fast state that did not come and left rows on 2 processes (log
    2026-12-04-1647). The last worker's share is the host as it is now."""
    import time as _time
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append({"k": k, "args": args, "start": start})
        if start > 1:   # a top-up finds the host as the last worker left it
            return [_write(tmp_path / f"w{start}.jsonl", _eager(start, 1.9, 1.2), FLOOR, fractions[-1])]
        return [_write(tmp_path / f"w{i}.jsonl", _eager(i, 0.8 if i < 3 else 1.9, 1.2), FLOOR, fractions[i - 1])
                for i in (1, 2, 3)]

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = _parent(tmp_path, budget_s=300.0)
    p.t0 = _time.perf_counter() - 200.0
    p._run()
    first = next(c for c in calls if c["start"] > 1)
    wait = [float(a.split("=", 1)[1]) for a in first["args"] if a.startswith("--hb-focus-wait-s=")]
    assert wait and (wait[0] > 0) == waits, wait


def test_one_full_worker_then_eager_only_workers(tmp_path, monkeypatch):
    """--hb-full-workers 1 (the default): graph and device rows are measured once, by the first
    worker; the other workers time eager rows only, from the floor it learned. Every eager row
    still stands on three processes, and a graph row of one process is not marked ⚑p."""
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append({"k": k, "eager_only": "--hb-modes=eager" in args, "start": start, "floor": floor})
        paths = []
        for i in range(start, start + k):
            recs = _eager(i, 0.80, 2.0)
            if start == 1:
                recs.append(Record("conv", "x", "n1", "graph", samples=[5.0, 5.1, 5.0]))
            paths.append(_write(tmp_path / f"w{i}.jsonl", recs, FLOOR))
        return paths

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    p = Parent(tmp_path, 3, [str(tmp_path / "probes"), "--benchmark-only"], focus_workers=0, budget_s=0.0,
               focus={("churn", "256")}, full_workers=1)
    p._run()
    assert calls[:2] == [{"k": 1, "eager_only": False, "start": 1, "floor": None},
                         {"k": 2, "eager_only": True, "start": 2, "floor": FLOOR}]
    graph = p.records[("conv", "x", "n1", "graph")]
    assert graph.processes <= 1 and "few_processes" not in graph.flags
    eager = p.records[("churn", "trap", "256", "eager")]
    assert [w["worker"] for w in eager.workers] == [1, 2, 3] and "few_processes" not in eager.flags
    assert [w["role"] for w in p.fingerprint["worker_table"]] == ["full", "eager", "eager"]
    assert Parent(tmp_path, 3, [], full_workers=5).full == 3 and Parent(tmp_path, 3, []).full == 3
    p_eager = Parent(tmp_path, 3, [], modes=("eager",), full_workers=1)   # eager alone: every worker is full
    calls.clear()
    p_eager._full_then_eager(lambda m: None)
    assert calls == [{"k": 3, "eager_only": False, "start": 1, "floor": None}]


def test_a_failing_merge_is_reported_once_and_never_runs_the_suite_again(tmp_path, monkeypatch):
    """Issue 38: a merge that failed after the workers ran made every later test start the whole
    multi-worker suite again (four times on the H200). It is said once, and every row carries it."""
    calls = []

    def fake_run_workers(k, args, out, say=print, env=None, start=1, floor=None):
        calls.append(start)
        return [_write(tmp_path / f"w{start}.jsonl", _eager(start, 0.80, 1.2), FLOOR)]

    def broken(*a, **k):
        raise ValueError("merge broke")

    monkeypatch.setattr(replicas, "run_workers", fake_run_workers)
    monkeypatch.setattr(replicas, "merge_runs", broken)
    p = _parent(tmp_path)
    from cudnn_hostbench.bench.measure.probe import Probe
    probe = Probe("churn", "", [], build=None, sizes=lambda o: ["256"])
    got = [p.record(probe, "256", v, "eager") for v in ("torch_mm", "trap", "torch_mm")]
    assert calls == [1] and all(r.status == "error: the run failed in its parent (workers or merge): ValueError: merge broke"
                                   for r in got)
