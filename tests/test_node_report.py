"""Which GPU of a node is slow (scripts/node/slow_gpu.py, hostbench run --all-gpus), alone against alongside
and the matrix wall time (scripts/node/safety.py), and `hostbench node`: on CPU, from synthetic runs
and a stand-in for each GPU's `hostbench run`."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.node import topology as node_topo
from cudnn_hostbench.bench.measure.runfile.records import Record, Run, load_run, run_document, write_run
from cudnn_hostbench.scripts import cli
from cudnn_hostbench.scripts.node import all_gpus as node_run
from cudnn_hostbench.scripts.node import safety as node_safety
from cudnn_hostbench.scripts.node import slow_gpu as rep
from tests.helpers import FINGERPRINT

ROWS = {("execute", "torch_mm"): 2.6, ("execute", "generic"): 2.62, ("wrapper", "naive"): 2.65,
        ("conv", "cudnn_fused"): 84.0}


def tight_records(slow: float = 1.0, spread: float = 0.004, eager: float = 1.0, seed: int = 0) -> list[Record]:
    """Graph/device rows (and eager ones with ratios) measured by three workers that agree to `spread`."""
    recs = []
    for (probe, variant), us in ROWS.items():
        for mode in ("eager", "graph", "device"):
            f = (eager if mode == "eager" else slow) * (5.0 if mode == "eager" else 1.0)
            meds = [us * f * (1 + spread * d) for d in (-0.5, 0.0, 0.5)]
            samples = [m * (1 + 0.001 * ((i + seed) % 5 - 2)) for m in meds for i in range(8)]
            workers = [{"worker": i + 1, "n": 8, "median": m, "ratio": None} for i, m in enumerate(meds)]
            recs.append(Record(probe, variant, "256", mode, role="baseline" if variant == "torch_mm" else "trap",
                               samples=samples, workers=workers, spread=spread, baseline="torch_mm"
                               if probe == "execute" else "", kernel_names=["k x1"] if mode == "device" else []))
    return recs


def run_of(uuid: str, slow: float = 1.0, spread: float = 0.004, path: str = "", **kw) -> Run:
    fp = {**FINGERPRINT, "machine": {"gpu_uuid": uuid, "boot_id": "boot-1"}}
    return Run(path or f"{uuid}.json", fp, tight_records(slow, spread, **kw))


def test_a_gpu_slower_than_the_nodes_median_beyond_the_between_start_scale_is_flagged():
    runs = {f"GPU {i}": run_of(f"GPU-{i}", 1.06 if i == 5 else 1.0 + 0.002 * (i % 3)) for i in range(8)}
    fs = rep.factors(runs)
    assert [f.slow for f in fs] == [i == 5 for i in range(8)]
    slow = fs[5]
    assert slow.uuid == "GPU-5" and slow.rows == 8 and 1.05 < slow.factor < 1.07 and slow.slower_rows == 8
    assert slow.basis == rep.BASIS_START and slow.threshold == rep.BETWEEN_START
    text = rep.render_text(fs)
    assert text.startswith("1 slow GPU(s) of 8: GPU 5 (GPU-5) 1.058×") and "| GPU 5 | GPU-5 |" in text
    assert "1.5 % (between-start scale)" in text and "SLOW" in text
    doc = json.loads(rep.to_json(fs))
    assert doc["gpus"][5]["slow"] and doc["between_start"] == 0.015


def test_a_gpu_whose_own_workers_disagree_is_judged_on_its_own_spread():
    # 6 % slower, but its workers spread 8 %: 1.5 x 8 % = 12 % sets its floor, and it is not flagged
    runs = {f"GPU {i}": run_of(f"GPU-{i}", 1.06 if i == 2 else 1.0, 0.08 if i == 2 else 0.004) for i in range(4)}
    fs = rep.factors(runs)
    assert not any(f.slow for f in fs)
    assert fs[2].basis == rep.BASIS_OWN and abs(fs[2].threshold - 0.12) < 1e-9
    assert "12.0 % (own spread)" in rep.render_text(fs)
    # eager rows do not count: a slow host shows in eager rows, not in the GPU's factor
    runs = {f"GPU {i}": run_of(f"GPU-{i}", eager=1.5 if i == 1 else 1.0) for i in range(3)}
    assert all(abs(f.factor - 1) < 1e-9 and not f.slow for f in rep.factors(runs))


def test_one_gpu_and_rows_missing_on_a_gpu():
    (f,) = rep.factors({"GPU 0": run_of("GPU-0", 1.3)})
    assert f.factor == 1.0 and not f.slow
    assert rep.summary_line([f]).startswith("1 GPU measured: no node median")
    a, b = run_of("GPU-a"), run_of("GPU-b", 1.1)
    b.records = [r for r in b.records if r.probe != "conv"]   # only rows every GPU measured are compared
    fa, fb = rep.factors({"GPU 0": a, "GPU 1": b})
    assert fa.rows == fb.rows == 6 and fb.slow and not fa.slow
    assert rep.summary_line([fa, fb], ["GPU 2: frontend 1.32.0: failed"]).endswith("; 1 job(s) failed")


def test_alone_and_alongside_agree_within_the_same_start_floors():
    alone, along = run_of("GPU-0", seed=0), run_of("GPU-0", 1.01, seed=2)
    c = node_safety.check(alone, along)
    assert c.safe and [m.mode for m in c.modes] == ["eager", "graph", "device"]
    assert all(m.rows == 4 and m.same == 4 for m in c.modes) and c.modes[1].max_change < 0.02
    assert node_safety.verdict_line(c).startswith("alongside vs alone: SAFE")
    # the neighbours slowed every GPU row (one kernel) by 8 %: one kernel finding, a regression on one start
    bad = node_safety.check(alone, run_of("GPU-0", 1.08, seed=2))
    assert not bad.safe and bad.modes[0].bad == [] and bad.modes[1].bad == ["kernel k: +8.0 %"]
    assert "NOT SHOWN SAFE: 1 graph row(s) or finding(s) moved" in node_safety.verdict_line(bad)
    assert "kernel k: +8.0 %" in node_safety.render([bad])
    # another GPU, or another start: the floors do not apply, whatever the rows say
    other = node_safety.check(alone, run_of("GPU-1", seed=2))
    assert not other.safe and "not the same GPU" in other.problems[0]


def matrix_doc(wall, seconds: dict, gpus: int = 0, args=("-k", "execute")) -> dict:
    doc = {"pytest_args": list(args), "versions": [
        {"label": v, "status": "ok", "seconds": s, **({"gpu": {"index": i, "cpus": f"{i * 8}-{i * 8 + 7}"}} if gpus else {})}
        for i, (v, s) in enumerate(seconds.items())]}
    if wall is not None:
        doc["wall_s"] = wall
    if gpus:
        doc["node"] = {"gpus": [{"index": i} for i in range(gpus)]}
    return doc


def test_walltime_report_serial_against_parallel():
    vers = ["1.20.0", "1.26.0", "1.28.0", "1.31.0", "1.32.0"]
    serial = matrix_doc(450.0, dict(zip(vers, [80, 82, 85, 88, 89])))
    parallel = matrix_doc(110.0, dict(zip(vers, [83, 84, 86, 90, 92])), gpus=8)
    text, problems = node_safety.walltime(serial, parallel)
    assert not problems
    assert "| serial | 1 | 5 | 450 | matrix wall time |" in text and "| parallel | 8 | 5 | 110 | matrix wall time |" in text
    assert "Speed-up 4.09× on 8 GPU(s) (ideal 5×: 5 version(s) in 1 wave(s)" in text
    assert "| 1.32.0 | 89.0 | 92.0 | 4 | 32-39 |" in text
    four = matrix_doc(230.0, dict(zip(vers, [83, 84, 86, 90, 92])), gpus=4)
    assert "Speed-up 1.96× on 4 GPU(s) (ideal 2.5×: 5 version(s) in 2 wave(s)" in node_safety.walltime(serial, four)[0]
    # an older serial matrix without its wall time: the versions' seconds, said so; other suites: said so
    text, problems = node_safety.walltime(matrix_doc(None, {"1.20.0": 80, "1.26.0": 82}),
                                          matrix_doc(85.0, {"1.20.0": 81, "1.26.0": 84}, gpus=2, args=("-k", "x")))
    assert "| serial | 1 | 2 | 162 | sum of the versions' suite seconds" in text and "different suites" in problems[0]


# -- the command line ---------------------------------------------------------------------------------

def write(path: Path, run: Run) -> str:
    return str(write_run(path, run_document(run.records, run.fingerprint)))


def test_node_report_check_and_walltime_from_files(tmp_path, capsys):
    files = [write(tmp_path / f"gpu{i}" / "run.json", run_of(f"GPU-{i}", 1.07 if i == 1 else 1.0)) for i in range(3)]
    assert cli.main(["node", "report", *files, "--markdown", str(tmp_path / "node.md")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 slow GPU(s) of 3: GPU 1 (GPU-1)") and "# Which GPU" in (tmp_path / "node.md").read_text()
    alone = write(tmp_path / "alone.json", run_of("GPU-0", seed=0))
    along = write(tmp_path / "along.json", run_of("GPU-0", 1.01, seed=2))
    alone2 = write(tmp_path / "alone2.json", run_of("GPU-0", 1.005, seed=3))
    assert cli.main(["node", "check", alone, along, alone2]) == 0
    out = capsys.readouterr().out
    assert "alongside vs alone: SAFE" in out and "alone2 vs alone (control): SAFE" in out
    slow = write(tmp_path / "slow.json", run_of("GPU-0", 1.08, seed=2))
    assert cli.main(["node", "check", alone, slow]) == 1
    # bad input: one line naming the file, exit 2
    (tmp_path / "junk.json").write_text("{")
    for argv in (["node", "check", alone, str(tmp_path / "junk.json")], ["node", "report", str(tmp_path / "nope.json")],
                 ["node", "walltime", str(tmp_path), str(tmp_path / "junk.json")]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("hostbench node ") and ("junk" in err or "nope" in err
                                                                                     or str(tmp_path) in err)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "matrix.json").write_text(json.dumps(matrix_doc(300.0, {"1.20.0": 100, "1.32.0": 100})))
    (tmp_path / "p.json").write_text(json.dumps(matrix_doc(120.0, {"1.20.0": 110, "1.32.0": 105}, gpus=2)))
    assert cli.main(["node", "walltime", str(tmp_path / "s"), str(tmp_path / "p.json")]) == 0
    assert "Speed-up 2.50× on 2 GPU(s)" in capsys.readouterr().out


def test_node_plan_and_run_all_gpus_without_a_gpu_are_one_line(monkeypatch, capsys):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(placement, "discover", lambda *a, **k: ([], placement.EVEN))
    assert cli.main(["node", "plan"]) == 2
    assert capsys.readouterr().err.strip() == "hostbench node plan: no GPU found (nvidia-smi and NVML see none)"
    assert cli.main(["run", "--all-gpus"]) == 2
    assert capsys.readouterr().err.strip() == "hostbench run: --all-gpus: no GPU found (nvidia-smi and NVML see none)"
    assert cli.main(["run", "--gpus", "0"]) == 2
    assert capsys.readouterr().err.strip() == "hostbench run: --gpus 0: only with --all-gpus"
    assert cli.main(["run", "--all-gpus", "--reference"]) == 2
    assert capsys.readouterr().err.strip().startswith("hostbench run: --reference: not with --all-gpus")
    # two GPUs of one NUMA placement, which holds every core this process may use: they split it
    allowed = frozenset(os.sched_getaffinity(0))
    gpus = [placement.Gpu(0, "GPU-a", "Fake", cpus=allowed, numa=0), placement.Gpu(1, "GPU-b", "Fake", cpus=allowed, numa=0)]
    monkeypatch.setattr(placement, "discover", lambda *a, **k: (gpus, node_topo.TOPO_BASIS))
    if len(allowed) < 2:   # one core for two GPUs: said in one line
        assert cli.main(["node", "plan"]) == 2 and "GPU 0 (GPU-a): no CPU core of its own" in capsys.readouterr().err
        return
    assert cli.main(["node", "plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2 GPU(s); cores from nvidia-smi topo -m"
    assert lines[1].startswith("  GPU 0 (GPU-a) Fake, NUMA node 0: cores ") and len(lines) == 3


# A stand-in for one GPU's `hostbench run`: writes a run with the GPU's identity and its place, as
# the real run's fingerprint does (machine.identity reads NVML by the visible GPU's UUID).
CHILD = '''
import os, sys
from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.runfile import records
from tests.helpers import FINGERPRINT
from tests.test_node_report import tight_records
out, gpu = sys.argv[sys.argv.index("--out") + 1], os.environ["CUDA_VISIBLE_DEVICES"]
assert "--hb-modes=graph,device" in sys.argv and "-k" in sys.argv and os.environ["HOSTBENCH_STORE"] == "off"
if gpu == "GPU-c":
    print("RuntimeError: CUDA error: uncorrectable ECC error encountered")
    sys.exit(3)
if gpu == "GPU-d":   # hangs after its first worker wrote what it measured
    os.makedirs(os.path.join(out, "workers", "w1"))
    open(os.path.join(out, "workers", "w1", "records.jsonl"), "w").write("{}")
    import time
    time.sleep(120)
fp = {**FINGERPRINT, "machine": {"gpu_uuid": gpu, "boot_id": "b"}, "node_job": placement.job_fields(),
      "cpu_affinity": sorted(os.sched_getaffinity(0))}
records.write_run(os.path.join(out, "run.json"), records.run_document(tight_records(1.08 if gpu == "GPU-b" else 1.0), fp))
'''


@pytest.mark.slow
@pytest.mark.newest_only
def test_run_all_gpus_reports_each_gpu_keeps_the_others_when_one_fails(tmp_path, monkeypatch, capsys):
    from cudnn_hostbench.reports.history import db
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    cpus = sorted(os.sched_getaffinity(0))
    slots = [placement.Slot(placement.Gpu(i, f"GPU-{u}", "Fake"), (cpus[i % len(cpus)],), node_topo.TOPO_BASIS, 4, i)
             for i, u in enumerate("abcd")]
    monkeypatch.setattr(placement, "node_plan", lambda spec=None, **k: placement.Plan(slots, node_topo.TOPO_BASIS))
    monkeypatch.setattr(node_run, "job_command", lambda out, args: [sys.executable, str(child), "--out", str(out),
                                                                      "--hb-modes=graph,device", *args])
    monkeypatch.setattr(node_run, "frontend_version", lambda: "frontend 1.32.0")
    store = tmp_path / "h.db"
    monkeypatch.setenv("HOSTBENCH_STORE", f"sqlite:///{store}")
    out = tmp_path / "node"
    assert cli.main(["run", "--all-gpus", "--out", str(out), "--job-timeout", "4", "-k", "execute"]) == 2
    cap = capsys.readouterr()
    assert cap.err.strip().splitlines() == [
        "hostbench run: GPU 2 (GPU-c): frontend 1.32.0: failed: exit 3, no run file: "
        f"RuntimeError: CUDA error: uncorrectable ECC error encountered (log {out}/gpu2/hostbench.log)",
        f"hostbench run: GPU 3 (GPU-d): frontend 1.32.0: timed out: after 4 s; measured so far: "
        f"{out}/gpu3/workers/w1/records.jsonl (log {out}/gpu3/hostbench.log)"]
    assert "1 slow GPU(s) of 2: GPU 1 (GPU-b)" in cap.out and "; 2 job(s) failed" in cap.out
    for i, u in enumerate("ab"):
        run = load_run(out / f"gpu{i}" / "run.json")
        assert run.fingerprint["machine"]["gpu_uuid"] == f"GPU-{u}"
        assert run.fingerprint["node_job"]["gpu"] == f"GPU-{u}" and run.fingerprint["node_job"]["jobs"] == 4
        assert run.fingerprint["cpu_affinity"] == [cpus[i % len(cpus)]]
    doc = json.loads((out / "node.json").read_text())
    assert [g["uuid"] for g in doc["gpus"]] == ["GPU-a", "GPU-b"] and doc["gpus"][1]["slow"]
    assert doc["failed"][0].startswith("GPU 2 (GPU-c): frontend 1.32.0")
    st = db.open_store(f"sqlite:///{store}")
    stored = {Path(r["source_path"]).parent.name: json.loads(r["info_json"]) for r in st.runs()}
    assert sorted(stored) == ["gpu0", "gpu1"]   # each with its GPU's identity and its place
    assert stored["gpu1"]["machine"]["gpu_uuid"] == "GPU-b" and stored["gpu1"]["node_job"]["gpu"] == "GPU-b"
    st.close()
    # and --fail-on-slow says so when every job ran
    del slots[2:]
    assert cli.main(["run", "--all-gpus", "--out", str(tmp_path / "n2"), "--fail-on-slow", "-k", "execute"]) == 1


def test_docs_node_names_every_option_and_the_codes_constants():
    import argparse

    from cudnn_hostbench.scripts.node import parallel_matrix as node_matrix
    doc = (Path(__file__).resolve().parent.parent / "docs" / "node.md").read_text(encoding="utf-8")
    p = cli.parser()
    sub = next(a for a in p._actions if a.dest == "command").choices
    run_opts = {o for a in sub["run"]._actions for o in a.option_strings} - {"-h", "--help", "--out", "--reference"}
    ap = argparse.ArgumentParser()
    node_matrix.add_arguments(ap)
    actions = next(a for a in sub["node"]._actions if a.dest == "node_action").choices
    matrix_opts = {o for a in ap._actions for o in a.option_strings} - {"-h", "--help"}
    named = run_opts | matrix_opts | {f"hostbench node {a}" for a in actions}
    assert not sorted(o for o in named if o not in doc)
    for k, v in placement.MULTICAST_OFF.items():
        assert f"{k}={v}" in doc
    assert f"{rep.BETWEEN_START * 100:g} %" in doc and f"{rep.SPREAD_MULT:g} ×" in doc
    assert "docs/node.md" in (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_a_jobs_failure_reason_is_the_line_that_says_why():
    log = ("hostbench run: torch sees no CUDA GPU; probes need a CUDA GPU. Showing the committed reference run(s)\n\n"
           "reference run reports/reference/h200/run.json\n| probe | size |\n| execute | 256 |\n")
    assert node_run.reason(log).startswith("hostbench run: torch sees no CUDA GPU")
    log = "collected 40 items\nTraceback (most recent call last):\n  ...\nRuntimeError: CUDA error: out of memory\nexit\n"
    assert node_run.reason(log) == "RuntimeError: CUDA error: out of memory"
    assert node_run.reason("just\nthe end\n") == "the end" and node_run.reason("") == ""


def test_load_coverage_says_how_long_the_neighbours_ran_beside_the_checked_run():
    me = {"job": "fe 1.32.0 (alongside)", "started_s": 0.0, "ended_s": 100.0, "gpu": {"index": 0}}
    load = [{"job": "fe 1.31.0 (load)", "started_s": 0.5, "ended_s": 120.0, "gpu": {"index": 1}},
            {"job": "fe 1.20.0 (load)", "started_s": 0.2, "ended_s": 60.2, "gpu": {"index": 2}}]
    assert node_safety.load_coverage([me, *load], me["job"]) == \
        "Load: 2 job(s) ran beside the checked run for 60%-100% of its 100 s; under 90 %: GPU 2 60%."
    assert node_safety.load_coverage([me], me["job"]) == "Load: no load job ran beside the checked one."
