"""The engine without pytest (issue 38): the scheduler's pure functions, the worker job (the worker
protocol) and a worker process running one on CPU."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.workers import schedule
from cudnn_hostbench.bench.measure.workers.parent import Parent
from cudnn_hostbench.bench.measure.workers.worker import COMMAND, Job, JobError, job_for

ROOT = Path(__file__).resolve().parent.parent
TOY = '''"""A toy probe for the worker tests: plain Python, no GPU."""
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant


def build(ctx, size):
    return {n: Case(fn=lambda: 1.0, check=lambda out: 0.0) for n in ("base", "trap")}


PROBE = Probe("{name}", "doc", [Variant("base", "baseline", "b"), Variant("trap", "trap", "t")], build=build,
              sizes=lambda options: ["8"], baseline="base")
'''


def _cases():
    out = []
    for mod in ("a", "b", "c"):
        for mode in ("eager", "graph", "device", "host"):
            out.append([f"/p/probe_{mod}.py", mod, "8", "v", mode])
    return out


def test_each_worker_takes_the_probes_in_its_own_order_with_the_profiler_last():
    cases = _cases()
    for w, first in (("1/3", "a"), ("2/3", "b"), ("3/3", "c"), ("4/4", "a"), (None, "a")):
        got = schedule.order(cases, lambda c: c[0], lambda c: c[4], w)
        assert got[0][1] == first and [c[4] for c in got].index("device") == 9       # 9 host-timed, then 3 device
        assert all(c[4] == "device" for c in got[9:]) and sorted(map(tuple, got)) == sorted(map(tuple, cases))


def test_a_worker_selects_its_modes_or_a_top_ups_eager_blocks():
    cases = _cases()
    mode, block = (lambda c: c[4]), (lambda c: f"{c[1]}/{c[2]}")
    assert {c[4] for c in schedule.select(cases, block, mode, ("eager",))} == {"eager", "host"}   # host rows always
    assert schedule.select(cases, block, mode, ("eager", "graph", "device"), only="b/8,c/9") == [cases[4]]


@pytest.mark.parametrize("left, want", [(None, (3, 2.0)), (5.0, (0, 0.0)), (30.0, (2, 0.125)), (100.0, (3, 2.0))])
def test_the_budget_fits_workers_and_their_waits(left, want):
    assert schedule.fit(3, 2, 2.0, left, 14.0, 4.0) == pytest.approx(want)


def test_a_job_is_what_the_pytest_worker_would_have_run(tmp_path):
    cases = _cases()
    args = ["probes", "--benchmark-only", "--hb-sizes=8", "--hb-rounds=5", "--hb-modes=eager,graph,device",
            "--hb-focus-wait-s=3", f"--rootdir={tmp_path}", "--hb-modes=eager"]       # the later --hb-modes wins
    job = job_for(args, cases, "2/3", tmp_path / "w2")
    assert job.modes == ("eager",) and job.rounds == 5 and job.graph_rounds == 4 and job.focus_wait_s == 3.0
    assert [c[3] for c in job.cases] == ["eager", "host"] * 3 and job.cases[0] == ["/p/probe_b.py", "8", "v", "eager"]
    assert job.target_se == 0.0 and job_for([*args, "--hb-target-se=1.0"], cases, "2/3", tmp_path).target_se == 0.01
    top = job_for([*args, "--hb-only=c/8", "--hb-deadline=123.5"], cases, "4/4", tmp_path / "w4")
    assert top.cases == [["/p/probe_c.py", "8", "v", "eager"]] and top.deadline == 123.5
    path = tmp_path / "job.json"
    path.write_text(top.to_json())
    assert Job.load(path) == top


@pytest.mark.parametrize("text, why", [("{not json", "cannot read the worker job"), ("[]", "not a worker job"),
                                       ('{"cases": [], "version": 99}', "newer than this worker reads"),
                                       ('{"cases": [], "version": "2"}', "newer than this worker reads"),
                                       ('{"cases": [["x"]], "worker": "1/1", "out": "o"}', "malformed case"),
                                       ('{"cases": [], "bogus_only": 1}', "malformed worker job")])
def test_a_bad_job_is_one_line_and_exit_2(tmp_path, text, why):
    path = tmp_path / "job.json"
    path.write_text(text)
    with pytest.raises(JobError, match=why):
        Job.load(path)
    p = subprocess.run([*COMMAND, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and str(path) in p.stderr


@pytest.mark.slow
@pytest.mark.newest_only
def test_a_worker_process_runs_its_job_without_pytest_and_writes_its_records(tmp_path):
    """On CPU there is no GPU context, so every case's record says why it was not measured; the
    process imports no pytest, writes records.jsonl line by line and ends with exit 0."""
    probe = tmp_path / "probe_toy.py"
    probe.write_text(TOY.replace("{name}", "toy"))
    cases = [[str(probe), "toy", "8", v, m] for m in ("eager", "graph", "device") for v in ("base", "trap")]
    job = job_for(["--hb-rounds=3", f"--rootdir={tmp_path}"], cases, "1/1", tmp_path / "w1")
    (tmp_path / "job.json").write_text(job.to_json())
    check = (f"import runpy, sys; sys.argv = ['worker', {str(tmp_path / 'job.json')!r}]; "
             "code = __import__('cudnn_hostbench.bench.measure.workers.worker', fromlist=['main']).main(); "
             "assert 'pytest' not in sys.modules, 'the worker imported pytest'; sys.exit(code)")
    p = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    run = records.load_run(tmp_path / "w1" / "records.jsonl")
    assert sorted((r.variant, r.mode) for r in run.records) == sorted((c[3], c[4]) for c in cases)
    assert all(r.status.startswith("error: cannot measure: NoGpuError") for r in run.records)


def test_the_parent_hands_the_collected_cases_to_the_own_engine(tmp_path, monkeypatch):
    from cudnn_hostbench.bench.measure.workers import replicas
    seen = []

    def fake(k, args, out, say=print, env=None, start=1, floor=None, cases=None, ahead=None, lookahead=False):
        seen.append((k, start, cases))
        assert (ahead is not None, lookahead) == ((True, True) if cases is not None else (False, False))
        return []

    monkeypatch.setattr(replicas, "run_workers", fake)
    p = Parent(tmp_path, 3, ["probes"], focus_workers=0, budget_s=0.0, engine="own", full_workers=1)
    p.cases = _cases()
    p._run()
    assert seen == [(1, 1, p.cases), (2, 2, p.cases)]    # one full worker, then two eager-only ones
    q = Parent(tmp_path, 3, ["probes"], focus_workers=0, budget_s=0.0)
    q._run()
    assert seen[-1] == (3, 1, None)             # the pytest engine, every worker full: child pytest sessions
    assert json.loads(Job(worker="1/1", out="o", cases=[]).to_json())["version"] == 1


@pytest.mark.slow
@pytest.mark.newest_only
def test_the_own_engine_starts_the_next_worker_during_the_one_before(tmp_path, monkeypatch):
    """Worker start-up (imports: 4.5-6.5 s each on the H200) overlaps the worker before: the next
    process starts while that one measures, imports, and waits for its job, which the parent
    writes whole (with the floor learned so far) once the worker before has ended."""
    import time

    from cudnn_hostbench.bench.measure.workers import replicas
    probe = tmp_path / "probe_toy.py"
    probe.write_text(TOY.replace("{name}", "toy"))
    cases = [[str(probe), "toy", "8", v, m] for m in ("eager", "device") for v in ("base", "trap")]
    monkeypatch.setattr(replicas, "OVERLAP_AFTER_S", 0.0)
    started, says = {}, []
    real = replicas._start_own
    monkeypatch.setattr(replicas, "_start_own", lambda w, env: started.setdefault(w.name, time.monotonic())
                        and real(w, env))
    paths = replicas.run_workers(2, ["--hb-rounds=3", f"--rootdir={tmp_path}"], tmp_path / "out", cases=cases,
                                say=lambda m: says.append((m, time.monotonic())), relay=lambda m: None, floor=0.8)
    assert [p.parent.name for p in paths] == ["w1", "w2"]
    first_done = next(t for m, t in says if m.startswith("worker 1/2: done"))
    assert started["w2"] < first_done                       # started during worker 1
    job = Job.load(tmp_path / "out" / "workers" / "w2" / "job.json")
    assert job.worker == "2/2" and job.floor_us == 0.8 and len(job.cases) == 4
    assert "4 case(s) in 1 block(s)" in (tmp_path / "out" / "workers" / "w2" / "worker.log").read_text()
    for p in paths:
        assert len(records.load_run(p).records) == 4


@pytest.mark.slow
@pytest.mark.newest_only
def test_the_own_engine_starts_the_next_call_s_first_worker_during_this_call_s_last(tmp_path, monkeypatch):
    """Issue 38: the eager-only workers and each top-up are calls of their own; the last worker of
    one starts the process of the next one's first (its imports, torch._dynamo's 2-3 s included, off
    the run's path: H200, K1 and K2, the registration block built in 0.02 s in the worker started
    ahead against 2.7-3.6 s in the others). A process no call came for is ended, its folder gone."""
    import time

    from cudnn_hostbench.bench.measure.workers import replicas
    probe = tmp_path / "probe_toy.py"
    probe.write_text(TOY.replace("{name}", "toy"))
    cases = [[str(probe), "toy", "8", "base", "eager"], [str(probe), "toy", "8", "trap", "eager"]]
    monkeypatch.setattr(replicas, "OVERLAP_AFTER_S", 0.0)
    started = {}
    real = replicas._start_own
    monkeypatch.setattr(replicas, "_start_own", lambda w, env: started.setdefault(w.name, time.monotonic())
                        and real(w, env))
    ahead: dict = {}
    out = tmp_path / "out"
    kw = dict(cases=cases, say=lambda m: None, relay=lambda m: None, ahead=ahead, lookahead=True)
    first = replicas.run_workers(1, ["--hb-rounds=3", f"--rootdir={tmp_path}"], out, **kw)
    assert [p.parent.name for p in first] == ["w1"] and list(ahead) == [2]   # w2 waits for the next call
    t_done = time.monotonic()
    assert started["w2"] < t_done
    second = replicas.run_workers(1, ["--hb-rounds=3", f"--rootdir={tmp_path}"], out, start=2, **kw)
    assert [p.parent.name for p in second] == ["w2"] and len(records.load_run(second[0]).records) == 2
    assert list(ahead) == [3] and (out / "workers" / "w3").is_dir()          # started for a call that never comes
    replicas.end_ahead(ahead)
    assert ahead == {} and not (out / "workers" / "w3").exists()


RUN_FILES = [p for p in sorted((ROOT / "reports" / "reference").rglob("run*.json"))]


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_run_file_reads_typed_and_round_trips_through_the_one_writer(path, tmp_path):
    """Issue 38: the merged figures' workers are typed (WorkerFigure); every committed run file
    (from before the change) reads into them, and the one writer (records.run_document,
    write_run) gives back the same records and fingerprint."""
    run = records.load_run(path)
    merged = [r for r in run.records if r.workers]
    assert merged and all(isinstance(w, records.WorkerFigure) for r in merged for w in r.workers)
    w = merged[0].workers[0]
    assert w["median"] == w.median and w.get("ratio") == w.ratio and set(w) >= {"worker", "n", "median"}
    again = records.load_run(records.write_run(tmp_path / "run.json", records.run_document(run.records, run.fingerprint)))
    assert again.fingerprint.to_dict() == run.fingerprint.to_dict()
    before = {r.key: r.to_dict() for r in run.records}
    after = {r.key: r.to_dict() for r in again.records}
    assert before.keys() == after.keys()
    for k, d in before.items():
        a = after[k]
        assert a["samples"] == pytest.approx(d["samples"], rel=1e-9) and a["workers"] == d["workers"], k
        assert {x: v for x, v in a.items() if x != "samples"} == {x: v for x, v in d.items() if x != "samples"}, k


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_run_file_migrates_to_the_current_format(path):
    """Format 1 → 2 (bench/measure/runfile/run_format.py): the per-worker lists become one table, a row per
    worker process with its role, wall, start-up and host floor; the file itself is untouched."""
    from cudnn_hostbench.bench.measure.runfile import run_format
    raw = json.loads(path.read_text())
    fp = records.load_run(path).fingerprint
    assert fp.schema == run_format.VERSION == records.SCHEMA
    table = fp.workers_table()
    old = raw["machine_info"]["hostbench"]
    if raw["hostbench"].get("schema", 1) == 2:   # written at format 2 (aa/, 2026-12-02): read as written
        assert table == [run_format.WorkerInfo.from_dict(d) for d in old["worker_table"]]
        assert table[0].role == "full" and {w.role for w in table[1:]} <= {"eager", "top-up"}
        assert len(table) == len(old["worker_table"]) and [w.worker for w in table] == list(range(1, len(table) + 1))
        return
    assert "worker_table" not in old
    assert len(table) == old.get("workers", 1) and [w.worker for w in table] == list(range(1, len(table) + 1))
    assert [w.wall_s for w in table] == (old.get("worker_wall_s") or [old.get("suite_wall_s")])
    per = (old.get("host_state") or {}).get("per_worker") or []
    assert [w.floor_us for w in table][:len(per)] == [h.get("floor_us") for h in per]
    tops = len([t for t in old.get("top_ups") or ([old["catch_up"]] if old.get("catch_up") else []) if t])
    assert [w.role for w in table].count("top-up") == tops and table[0].role == "full"


@pytest.mark.parametrize("field, value, said", [("workers", "abc", "field workers is not an integer"),
                                                ("host_state", [1], "field host_state is not an object"),
                                                ("worker_wall_s", "x", "field worker_wall_s is not a list"),
                                                ("focus_workers", {"workers": "two"},
                                                 "field focus_workers.workers is not an integer")])
def test_a_fingerprint_field_of_the_wrong_type_is_one_line_and_exit_2(tmp_path, capsys, field, value, said):
    """Before the worker table these reached the run summary as a TypeError or AttributeError."""
    from cudnn_hostbench.scripts import cli
    doc = json.loads((ROOT / "reports" / "reference" / "h200" / "aa" / "run1.json").read_text())
    doc["machine_info"]["hostbench"][field] = value
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(records.RunFileError, match=f"malformed fingerprint \\({said.replace('.', '[.]')}\\)"):
        records.load_run(path)
    assert cli.main(["table", str(path), "--wide"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and str(path) in err
