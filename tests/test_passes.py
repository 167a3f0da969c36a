"""Eager passes (`hostbench ab --hb-eager-passes K`, bench/measure/core/passes.py) and where a job's
eager noise lives (reports/judge/noise.py), on CPU with a stand-in GPU context."""
import json
import math
import random
from types import SimpleNamespace as NS

import pytest

from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.core.runner import Session
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant
from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.reports.judge import noise
from cudnn_hostbench.scripts import ab_cmd
from tests.test_runner import FakeCtx


def _probe(builds: list, fail_after: int | None = None):
    """A probe whose every build is numbered (builds[i] = the cases of build i); `fail_after`
    builds succeed, the next raise."""
    def build(ctx, size):
        if fail_after is not None and len(builds) >= fail_after:
            raise RuntimeError("a custom op is registered once per process")
        made = {"base": Case(fn=lambda: 1.0, check=lambda out: 0.0), "trap": Case(fn=lambda: 1.0, check=lambda out: 0.0),
                "wrong": Case(fn=lambda: 2.0, check=lambda out: 0.5)}
        builds.append(made)
        return made
    return Probe("toy", "doc", [Variant("base", "baseline", "b"), Variant("trap", "trap", "t"),
                                Variant("wrong", "trap", "w")], build=build, sizes=lambda options: ["8"], baseline="base")


def _session(tmp_path, monkeypatch, passes: int) -> Session:
    s = Session(tmp_path, timing.Options(rounds=4, warmup_rounds=1, target_round_s=1e-5, min_calls=2, max_calls=4,
                                         device_rounds=1, device_calls=2), eager_passes=passes)
    s._ctx = FakeCtx()
    s.fingerprint = Fingerprint.of({"gpu_name": "fake"})
    monkeypatch.setattr(timing, "measure_device", lambda fns, sync, opt, ranges=None, watch=None: {
        n: [timing.DeviceSample(1.5, 1.0, __import__("collections").Counter({"k": 2}))] for n in fns})
    return s


def _lines(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]


def test_each_pass_is_written_before_the_profiler_and_the_record_pools_them(tmp_path, monkeypatch):
    builds: list = []
    s = _session(tmp_path, monkeypatch, passes=3)
    p = _probe(builds)
    for mode in ("eager", "device"):
        for v in ("base", "trap", "wrong"):
            s.record(p, "8", v, mode)
    lines = _lines(tmp_path)
    passes = [x for x in lines if x["kind"] == "pass"]
    # every checked eager variant gets one line per pass; the one that failed its numerics none
    assert sorted((x["key"][1], x["pass"], x["rebuilt"]) for x in passes) == [
        (v, n, n == 3) for v in ("base", "trap") for n in (1, 2, 3)]
    first_device = next(i for i, x in enumerate(lines) if x["kind"] == "record" and x["record"]["mode"] == "device"
                        and x["record"]["status"] == "ok")
    assert all(i < first_device for i, x in enumerate(lines) if x["kind"] == "pass")
    # the last pass timed cases built again, while the first build's were still alive
    assert len(builds) == 2 and builds[1]["trap"] is not builds[0]["trap"]
    run = records.load_run(tmp_path / "records.jsonl")   # readers of records skip the pass lines
    trap = run.find("toy", "trap", "8", "eager")
    assert len(trap.samples) == sum(x["n"] for x in passes if x["key"][1] == "trap")
    assert trap.ratio is not None and trap.ratio.n == len(trap.samples)
    assert run.find("toy", "trap", "8", "device").ok


def test_a_probe_that_cannot_build_twice_keeps_its_earlier_passes(tmp_path, monkeypatch):
    s = _session(tmp_path, monkeypatch, passes=3)
    p = _probe([], fail_after=1)
    for mode in ("eager", "device"):
        s.record(p, "8", "trap", mode)
    got = sorted(x["pass"] for x in _lines(tmp_path) if x["kind"] == "pass" and x["key"][1] == "trap")
    assert got == [1, 2]
    assert s.records[("toy", "trap", "8", "device")].ok and len(s.records[("toy", "trap", "8", "eager")].samples) > 0


def test_one_pass_writes_no_pass_line_and_times_as_before(tmp_path, monkeypatch):
    builds: list = []
    s = _session(tmp_path, monkeypatch, passes=1)
    for mode in ("eager", "device"):
        s.record(_probe(builds), "8", "trap", mode)
    s.finish()
    assert len(builds) == 1 and not [x for x in _lines(tmp_path) if x["kind"] == "pass"]


def test_the_job_splits_its_eager_rounds_over_the_passes_and_refuses_passes_too_short(tmp_path):
    from cudnn_hostbench.bench.measure.workers.worker import Job, job_for, session_for
    args = NS(modes="eager", sizes="8", tokens=None, root=".", rounds=None, heavy=False, eager_passes=3, keyword="x")
    opts = ab_cmd.options_of(args)
    assert opts["--hb-eager-passes"] == "3" and json.loads(ab_cmd.selection_text(args))["eager_passes"] == 3
    job = job_for([f"{k}={v}" for k, v in opts.items()], [["/p/probe_b.py", "b", "8", "v", "eager"]], "1/1", tmp_path)
    (tmp_path / "job.json").write_text(job.to_json())
    s = session_for(Job.load(tmp_path / "job.json"))
    assert s.eager_passes == 3 and s.opt.rounds == int(ab_cmd.AB_ROUNDS["--hb-rounds"]) // 3
    one = NS(**{**vars(args), "eager_passes": 1})   # a job from before passes keeps its selection text
    assert "--hb-eager-passes" not in ab_cmd.options_of(one) and "eager_passes" not in ab_cmd.selection_text(one)
    for passes, rounds in ((5, None), (0, None), (-1, None), (3, 6)):
        with pytest.raises(ValueError, match="--hb-eager-passes"):
            ab_cmd.options_of(NS(**{**vars(args), "eager_passes": passes, "rounds": rounds}))


def _jobs(component: str, spread: float, procs: int = 24, rows: int = 12, seed: int = 5) -> dict:
    """Pass lines of `procs` processes whose noise lives in one component, drawn per row: per
    process ('process'), per build ('rebuilt': passes 1 and 2 share the first build's), or per
    pass ('moment'); a little round noise on every pass."""
    rng = random.Random(seed)
    out = {}
    for i in range(procs):
        lines: dict = {}
        for r in range(rows):
            proc = rng.gauss(0, spread) if component == "process" else 0.0
            builds = [rng.gauss(0, spread) if component == "rebuilt" else 0.0 for _ in range(2)]
            key = ("toy", f"v{r}", "8", "eager")
            lines[key] = {}
            for n in (1, 2, 3):
                x = proc + builds[n == 3] + (rng.gauss(0, spread) if component == "moment" else 0.0) + rng.gauss(0, 0.001)
                lines[key][n] = {"pass": n, "rebuilt": n == 3, "ratio": math.exp(x), "host_state": "fast"}
        out[i] = lines
    return out


@pytest.mark.parametrize("component", ["moment", "rebuilt", "process"])
def test_the_noise_is_found_in_the_component_that_draws_it(component):
    by_proc = _jobs(component, spread=0.03)
    classes = {("toy", f"v{r}", "8", "eager"): "eager light ratio" for r in range(12)}
    pairs = [(i, i + 1) for i in range(0, 24, 2)]
    got = {name: v for name, (v, _) in noise.spreads(classes, by_proc, pairs)["eager light ratio"].items()}
    assert got[component] == pytest.approx(0.03, rel=0.4)
    # a per-process draw moves neither later pass; a per-build draw not the same build's second pass
    quiet = {"moment": [], "rebuilt": ["moment"], "process": ["moment", "rebuilt"]}[component]
    assert all(got[name] < 0.005 for name in quiet)
    # wherever it lives, two processes differ by it: each process draws its moments and builds anew
    assert got["process"] == pytest.approx(0.03, rel=0.4)


def test_figures_in_other_host_states_are_not_compared_and_old_jobs_have_no_components(tmp_path):
    by_proc = _jobs("moment", spread=0.03)
    for lines in by_proc.values():
        for passes in lines.values():
            passes[2]["host_state"] = "slow"
    classes = {("toy", f"v{r}", "8", "eager"): "eager light ratio" for r in range(12)}
    got = noise.spreads(classes, by_proc, [(i, i + 1) for i in range(0, 24, 2)])["eager light ratio"]
    assert "moment" not in got and "process" in got
    old = NS(index=0, records=tmp_path / "records.jsonl")
    (tmp_path / "records.jsonl").write_text('{"kind": "record", "record": {}}\n{"kind": "pass", "key"')  # cut off
    assert noise.of_job([], {1: [(old, old)]}) == {}
    text = noise.markdown({"eager light ratio": {"moment": (0.004, 12), "process": (0.021, 12)}})
    assert "| eager light ratio | 0.40 % (12) | – | 2.10 % (12) |" in text


def test_a_job_run_with_passes_reports_where_its_eager_noise_lives(tmp_path, monkeypatch):
    """End to end on synthetic processes (tests/ab_fakes.py) whose records carry pass lines:
    passes.md in the job folder and the spreads in ab.json; a job without them writes neither."""
    from cudnn_hostbench.bench.measure.workers import interleave
    from cudnn_hostbench.scripts.cli import main
    from tests import ab_fakes
    monkeypatch.setattr(ab_cmd, "collect_cases", lambda a, opts: ab_fakes.cases())

    def run_process(folder, env, cases, options, worker, floor, timeout_s, ahead=None, then=None):
        index = int(folder.name[1:].split("-")[0])
        done = ab_fakes.write_proc(folder, cases, seed=index * 7919 + 1)
        if "--hb-eager-passes" in options:
            rng = random.Random(index)
            lines = [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]
            extra = [{"kind": "pass", "key": [r["probe"], r["variant"], r["size"], "eager"], "pass": n, "rebuilt": n == 3,
                      "n": 4, "median": 10.0 * math.exp(rng.gauss(0, 0.02)), "ratio": None, "host_state": "fast"}
                     for r in (x["record"] for x in lines if x["kind"] == "record") if r["mode"] == "eager"
                     for n in (1, 2, 3)]
            with (folder / "records.jsonl").open("a") as fh:
                fh.writelines(json.dumps(x) + "\n" for x in extra)
        return done
    monkeypatch.setattr(interleave, "run_process", run_process)
    for passes in ("1", "3"):
        job = tmp_path / f"job{passes}"
        assert main(["ab", "--no-gpu-check", "--out", str(job), "--budget-min", "5", "--pairs", "8",
                     "--hb-eager-passes", passes]) == 0
        doc = json.loads((job / "ab.json").read_text())
        assert (job / "passes.md").exists() == ("eager_noise" in doc) == (passes == "3")
    spreads = doc["eager_noise"]
    assert spreads and all(set(c) == set(noise.COMPONENTS) for c in spreads.values())
    assert all(0.005 < c["moment"]["spread"] < 0.05 for c in spreads.values())


def test_a_pass_that_fails_keeps_the_first_pass_and_the_device_figures(tmp_path, monkeypatch):
    s = _session(tmp_path, monkeypatch, passes=3)
    p = _probe([])
    s.record(p, "8", "trap", "eager")
    first = list(s.records[("toy", "trap", "8", "eager")].samples)

    def boom(*args, **kwargs):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    monkeypatch.setattr(s, "_measure_eager", boom)
    assert s.record(p, "8", "trap", "device").ok
    got = [(x["key"][1], x["pass"]) for x in _lines(tmp_path) if x["kind"] == "pass"]
    assert sorted(got) == [("base", 1), ("trap", 1)]
    assert s.records[("toy", "trap", "8", "eager")].samples == first
