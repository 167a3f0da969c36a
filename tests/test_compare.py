"""hostbench compare: verdicts, normalization, fingerprint diff, CLI exit codes; version matrix."""
from __future__ import annotations

import json
import random
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile.records import Record, load_run, run_document, write_run
from cudnn_hostbench.reports.judge import compare as cmp
from cudnn_hostbench.scripts import cli
from cudnn_hostbench.scripts import version_matrix as vm

ROOT = Path(__file__).resolve().parents[1]

VARIANTS = {"execute": {"torch_mm": 10.0, "generic": 14.0, "pinned": 12.0},
            "set_stream": {"torch_mm": 10.0, "set_stream": 15.0}}


def make_run(path, seed, n=30, host=1.0, slow=None, fp=None, drop=(), extra=(), workers=3):
    """A run of interleaved rounds: a per-round host factor shared by all variants, plus
    right-skewed per-sample noise and rare outliers. `slow` scales (probe, variant) medians.
    The rounds are split among `workers` processes (each with its median and paired ratio)."""
    import statistics
    rng = random.Random(seed)
    slow = slow or {}
    recs = []
    for probe, variants in VARIANTS.items():
        for mode in ("eager", "graph"):
            rounds = [host * (1 + rng.gauss(0, 0.01)) for _ in range(n)]
            got = {}
            for v, mu in variants.items():
                if (probe, v) in drop:
                    continue
                k = slow.get((probe, v), 1.0)
                got[v] = [mu * k * f * (1 + abs(rng.gauss(0, 0.04))) * (1.3 if rng.random() < 0.03 else 1)
                          for f in rounds]
            for v, xs in got.items():
                ws = []
                if workers > 1:
                    for i in range(workers):
                        part, base = xs[i::workers], got.get("torch_mm", [])[i::workers]
                        ws.append({"worker": i + 1, "n": len(part), "median": statistics.median(part),
                                   "ratio": statistics.median(x / y for x, y in zip(part, base)) if base else None})
                recs.append(Record(probe, v, "256", mode, samples=xs, baseline="torch_mm", workers=ws,
                                   role="baseline" if v == "torch_mm" else "trap"))
    recs += list(extra)
    fingerprint = {"gpu_name": "NVIDIA H200", "driver": "570.1", "cudnn_frontend": "1.32.0",
                   "torch": "2.13", "datetime": f"2025-01-01T00:00:{seed % 60:02d}", **(fp or {})}
    return load_run(write_run(path, run_document(recs, fingerprint)))


def verdicts(df, **where):
    for k, v in where.items():
        df = df[df[k] == v]
    return list(df.verdict)


def test_aa_gives_no_verdict(tmp_path):
    for seed in range(8):
        a = make_run(tmp_path / "a.json", 2 * seed)
        b = make_run(tmp_path / "b.json", 2 * seed + 1)
        df = cmp.compare(a, b)
        assert len(df) == 10
        assert set(df.verdict) <= {"SAME", "UNSURE"}, df[df.verdict != "SAME"]
        assert (df.change.abs() < 0.05).all()


@pytest.mark.parametrize("factor,word", [(1.3, "SLOWER"), (0.7, "FASTER")])
def test_injected_change_is_found(tmp_path, factor, word):
    for seed in range(3):
        a = make_run(tmp_path / "a.json", seed)
        b = make_run(tmp_path / "b.json", seed + 100, slow={("execute", "generic"): factor})
        df = cmp.compare(a, b)
        graph = df[(df.variant == "generic") & (df["mode"] == "graph")].iloc[0]
        assert graph.verdict == word and graph.p < 0.01 and abs(graph.change - (factor - 1)) < 0.06
        # the eager ratio: caught, or UNSURE with an MDC past the change (the H200 prior of 77 runs
        # holds an eager ratio's start-to-start spread at twice the 74 runs': MDC 61-71 % here)
        eager = df[(df.variant == "generic") & (df["mode"] == "eager")].iloc[0]
        assert eager.verdict == word or (eager.verdict == "UNSURE" and eager.mdc > abs(factor - 1))
        assert abs(eager.change - (factor - 1)) < 0.06
        assert not set(verdicts(df[df.variant != "generic"])) & {"SLOWER", "FASTER"}


def test_a_side_of_one_process_is_judged_with_its_process_component(tmp_path):
    # an old single-process run still renders and compares: its variance holds one process, not a ban
    # (a GPU the store prior does not know: these synthetic rows are noisier than any H200's)
    gpu = {"gpu_name": "Test GPU"}
    a = make_run(tmp_path / "a.json", 1, workers=1, fp=gpu)
    b = make_run(tmp_path / "b.json", 2, slow={("execute", "generic"): 1.3}, fp=gpu)
    df = cmp.compare(a, b)
    row = df[(df.variant == "generic") & (df["mode"] == "graph")].iloc[0]
    assert "1 process(es) on a side" in row.note and row.mdc > 0
    assert not set(df[df.variant != "generic"].verdict) & {"SLOWER", "FASTER"}


def _with_machine(path, seed, start, gpu, **kw):
    boot, uuid = start.split("/")
    fp = {"machine": {"boot_id": boot, "gpu_uuid": uuid}, **kw.pop("fp", {})}
    return make_run(path, seed, fp=fp, **kw)


def test_two_starts_are_judged_on_the_fleet_scale_and_say_so(tmp_path):
    a = _with_machine(tmp_path / "a.json", 1, "boot1/GPU-a", "GPU-a")
    twin = _with_machine(tmp_path / "b.json", 2, "boot1/GPU-a", "GPU-a", slow={("execute", "generic"): 1.16})
    other = _with_machine(tmp_path / "c.json", 2, "boot2/GPU-b", "GPU-b", slow={("execute", "generic"): 1.16})
    same = cmp.compare(a, twin)
    assert same.attrs["same_start"] and "same machine start" in cmp.machine_line(same)
    assert set(same[same.mdc.notna()].scale) <= {"same GPU", "fleet"}
    assert verdicts(same, variant="generic", mode="graph") == ["SLOWER"]
    cross = cmp.compare(a, other)
    assert cross.attrs["cross_start"] and not cross.attrs["same_gpu"]
    assert "different machine starts (different GPUs): judged on the fleet scale" in cmp.machine_line(cross)
    # the fleet adds the between-start noise: every row detects less than on one start
    both = same.merge(cross, on=["probe", "variant", "size", "mode"])
    assert (both.mdc_y >= both.mdc_x * 0.999).all()
    reboot = _with_machine(tmp_path / "d.json", 3, "boot9/GPU-a", "GPU-a")
    assert "same GPU after a reboot" in cmp.machine_line(cmp.compare(a, reboot))
    old = make_run(tmp_path / "e.json", 4)       # no machine identity: an unknown start
    assert "unknown start" in cmp.machine_line(cmp.compare(a, old)) and not cmp.compare(a, old).attrs["cross_start"]


def test_threshold_is_configurable(tmp_path):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, slow={("execute", "generic"): 1.10})
    assert not set(verdicts(cmp.compare(a, b, threshold=0.20), variant="generic")) & {"SLOWER", "FASTER"}


def test_too_few_samples_is_unsure(tmp_path):
    a = make_run(tmp_path / "a.json", 1, n=4, workers=1)
    b = make_run(tmp_path / "b.json", 2, n=4, slow={("execute", "generic"): 1.5}, workers=1)
    df = cmp.compare(a, b, min_samples=5)   # a floor the user asks for (--min-samples); the default is 1
    assert set(df.verdict) == {"UNSURE"}
    assert all("too few" in n for n in df.note)


def test_normalize_cancels_a_slower_host(tmp_path):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, host=1.2)
    df = cmp.compare(a, b)
    # graph rows on absolute µs see the slower host (as one machine factor); eager rows are judged
    # on ratios by default
    assert "SLOWER" not in set(df[(df["mode"] == "eager") & (df.variant != "torch_mm")].verdict)
    df = cmp.compare(a, b, normalize=True)
    assert not set(df.verdict) & {"SLOWER", "FASTER"}
    assert (df[df.variant != "torch_mm"].unit == "x torch_mm").all()
    # a real regression still shows through the slower host
    c = make_run(tmp_path / "c.json", 3, host=1.2, slow={("set_stream", "set_stream"): 1.15})
    df = cmp.compare(a, c, normalize=True)
    graph = df[(df.variant == "set_stream") & (df["mode"] == "graph")].iloc[0]
    # caught, or UNSURE with an MDC past the change it saw (honest: the prior of 77 runs)
    assert graph.verdict == "SLOWER" or (graph.verdict == "UNSURE" and graph.mdc > graph.change > 0.1)
    assert verdicts(df, variant="set_stream", mode="eager")[0] in ("SLOWER", "UNSURE")
    assert not set(verdicts(df[df.variant != "set_stream"])) & {"SLOWER", "FASTER"}


def test_normalize_by_median_when_rounds_do_not_pair(tmp_path):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, host=1.2)
    for r in b.records:
        if r.variant == "torch_mm":
            r.samples = r.samples[:-3]
    assert not set(cmp.compare(a, b, normalize=True).verdict) & {"SLOWER", "FASTER"}


def test_added_removed_and_unmeasured_rows(tmp_path):
    extra = [Record("execute", "graph_replay", "256", "device", status="unsupported: no graphs")]
    a = make_run(tmp_path / "a.json", 1, extra=extra)
    new_probe = Record("wrapper", "torch_mm", "256", "eager", samples=[5.0] * 10)
    b = make_run(tmp_path / "b.json", 2, drop=[("execute", "pinned")],
                 extra=extra + [new_probe])
    df = cmp.compare(a, b)
    assert verdicts(df, variant="pinned") == ["REMOVED", "REMOVED"]
    assert verdicts(df, probe="wrapper") == ["ADDED"]
    assert verdicts(df, variant="graph_replay") == ["UNMEASURED"]
    assert "unsupported" in df[df.variant == "graph_replay"].note.iloc[0]
    assert df[df.probe == "wrapper"].new.iloc[0] == 5.0
    # normalizing a run that lost its baseline is UNSURE, not a crash
    c = make_run(tmp_path / "c.json", 3, drop=[("set_stream", "torch_mm")])
    df = cmp.compare(a, c, normalize=True)
    assert verdicts(df, variant="set_stream") == ["UNSURE", "UNSURE"]


def test_fingerprint_diff_names_changed_fields(tmp_path):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, fp={"driver": "580.2", "cudnn_backend": "9.10",
                                            "capabilities": {"ir": True, "ordered": False}})
    a.fingerprint["capabilities"] = {"ir": False, "ordered": False}
    diff = cmp.fingerprint_diff(a, b)
    # datetime is not the environment; a dict is named down to the entry that changed
    assert [d[0] for d in diff] == ["driver", "cudnn_backend", "capabilities.ir"]
    assert diff[0][1:] == ("570.1", "580.2") and diff[2][1:] == (False, True)


def test_fingerprint_diff_names_worker_floors_not_histograms(tmp_path):
    a, b = make_run(tmp_path / "a.json", 1), make_run(tmp_path / "b.json", 2)
    worker = {"floor_us": 0.865, "fast_fraction": 0.23, "histogram": {f"{0.8 + i / 50:.2f}": i for i in range(200)}}
    a.fingerprint["host_state"] = {"per_worker": [worker]}
    b.fingerprint["host_state"] = {"per_worker": [worker, dict(worker, floor_us=0.843, fast_fraction=0.62),
                                                  dict(worker, floor_us=None, fast_fraction=0.0)]}
    (row,) = cmp.fingerprint_diff(a, b)
    assert row == ("host_state.per_worker", "w1 floor 0.865 µs (23% fast)",
                   "w1 floor 0.865 µs (23% fast), w2 floor 0.843 µs (62% fast), w3 no floor (0% fast)")


def test_cli_exit_codes_and_markdown(tmp_path, capsys):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, slow={("execute", "generic"): 1.2}, fp={"driver": "580"})
    same = make_run(tmp_path / "same.json", 3)
    assert cli.main(["compare", a.path, same.path, "--fail-on-regression"]) == 0
    assert cli.main(["compare", a.path, b.path]) == 0
    md = tmp_path / "out.md"
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression", "--markdown", str(md)]) == 1
    out = capsys.readouterr().out
    assert "SLOWER" in out and "driver: 570.1 -> 580" in out
    text = md.read_text()
    assert "| driver | 570.1 | 580 |" in text and "SLOWER" in text
    # a large threshold (in percent) turns the regression into SAME
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression", "--threshold", "30"]) == 0
    # a truncated file: exit 2 and its name in the message
    bad = tmp_path / "cut.json"
    bad.write_text(Path(b.path).read_text()[:500])
    capsys.readouterr()
    assert cli.main(["compare", a.path, str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_hostbench_dispatches_compare(tmp_path, capsys):
    a = make_run(tmp_path / "a.json", 1)
    b = make_run(tmp_path / "b.json", 2, slow={("set_stream", "set_stream"): 1.3})
    assert cli.main(["compare", a.path, b.path, "--fail-on-regression"]) == 1
    assert cli.main(["compare", a.path, a.path, "--fail-on-regression"]) == 0
    out = tmp_path / "c.json"
    capsys.readouterr()
    assert cli.main(["compare", a.path, b.path, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    slower = doc["counts"]["SLOWER"]
    assert slower >= 1 and {"z", "mdc", "verdict"} <= set(doc["rows"][0])
    capsys.readouterr()
    assert cli.main(["compare", a.path, b.path, "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["SLOWER"] == slower
    assert cli.main(["compare", a.path, b.path, "--json", str(tmp_path / "no" / "c.json")]) == 2


# --- version matrix -------------------------------------------------------------------------

def fake_wheel(folder: Path, version: str, init: str) -> Path:
    """A pure-Python stand-in for nvidia-cudnn-frontend: `cudnn/__init__.py` is `init`."""
    name = f"nvidia_cudnn_frontend-{version}"
    path = folder / f"{name}-py3-none-any.whl"
    info = f"{name}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("cudnn/__init__.py", init)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: nvidia-cudnn-frontend\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", f"cudnn/__init__.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    return path


PROBE = '''
import time, cudnn

def test_quick(benchmark):
    benchmark.extra_info.update(probe="fake", variant="torch_mm", size="256", mode="eager",
                                note=cudnn.__version__)
    benchmark.pedantic(lambda: None, rounds=6, iterations=1)

def test_slow(benchmark):
    time.sleep(60)
'''


def stored_files(url: str) -> list[str]:
    from cudnn_hostbench.reports.history import db
    st = db.open_store(url)
    try:
        return sorted(Path(r["source_path"]).name for r in st.runs())
    finally:
        st.close()


@pytest.mark.slow
@pytest.mark.newest_only
def test_version_matrix_runs_each_wheel_in_its_own_process(tmp_path):
    wheels, root, out = tmp_path / "wheels", tmp_path / "repo", tmp_path / "out"
    wheels.mkdir()
    (root / "probes").mkdir(parents=True)
    (root / "probes" / "test_probe.py").write_text(PROBE)
    good = fake_wheel(wheels, "1.10.0", '__version__ = "1.10.0"\ndef backend_version(): return 91000\n')
    fake_wheel(wheels, "1.11.0", 'raise ImportError("libcudnn.so.9: cannot open shared object file")')
    (wheels / "nvidia_cudnn_frontend-1.0.0-py3-none-any.whl").write_text("not a zip")
    (wheels / "nvtx-0.2-py3-none-any.whl").write_text("ignored: not the frontend")
    url = f"sqlite:///{tmp_path / 'h.db'}"   # never the default store: a test's run is no one's history
    common = ["--serial", "--out", str(out), "--root", str(root), "--target-root", str(tmp_path / "t"), "--store", url]
    assert vm.main(["--wheels", str(wheels), *common, "--", "-k", "quick"]) == 0
    assert stored_files(url) == ["run-fe1.10.0.json"]
    status = {e["version"]: e for e in json.loads((out / "matrix.json").read_text())["versions"]}
    assert [status[v]["status"] for v in ("1.0.0", "1.10.0", "1.11.0")] == ["install failed", "ok", "import failed"]
    assert "libcudnn.so.9" in status["1.11.0"]["detail"]
    assert status["1.10.0"]["imported"] == "1.10.0" and status["1.10.0"]["backend"] == "91000"
    rec = load_run(out / "run-fe1.10.0.json").records[0]
    assert (rec.probe, rec.note, len(rec.samples)) == ("fake", "1.10.0", 6)  # ran under that wheel
    md = (out / "matrix.md").read_text()
    assert "| fake | torch_mm | eager | 256 |" in md and "install failed" in md
    assert len(list(out.iterdir())) <= 8

    # a suite that hangs is killed and recorded as timed out
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(good, one)
    assert vm.main(["--wheels", str(one), *common, "--timeout", "2", "--", "-k", "slow"]) == 1
    (entry,) = json.loads((out / "matrix.json").read_text())["versions"]
    assert entry["status"] == "timed out"


def test_version_matrix_merge_only(tmp_path):
    # two matrix calls (split with --only), merged afterwards in version order
    for i, v in enumerate(["1.20.0", "1.9.0", "1.31.0"]):
        folder = tmp_path / ("a" if v != "1.31.0" else "b")
        make_run(folder / f"run-fe{v}.json", i, slow={("execute", "generic"): 1.2 if v == "1.31.0" else 1},
                 fp={"cudnn_frontend": v})
    (tmp_path / "b" / "matrix.json").write_text(json.dumps({"pytest_args": ["--hb-sizes", "256"], "versions": [
        {"version": "1.31.0", "label": "1.31.0", "run_file": "run-fe1.31.0.json", "status": "ok", "detail": ""},
        {"version": "1.32.0", "label": "1.32.0", "run_file": "", "status": "import failed", "detail": "boom"}]}))
    out = tmp_path / "merged"
    url = f"sqlite:///{tmp_path / 'h.db'}"
    merge = ["--merge-only", "--store", url, "--out"]
    assert vm.main([*merge, str(out), "--from", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert stored_files(url) == ["run-fe1.20.0.json", "run-fe1.31.0.json", "run-fe1.9.0.json"]
    md = (out / "matrix.md").read_text()
    assert "| probe | variant | mode | size | 1.9.0 | 1.20.0 | 1.31.0 |" in md
    assert "| 1.32.0 | import failed |" in md
    assert "1.20.0 → 1.31.0 | execute | generic" in md and "1.9.0 → 1.20.0" not in md
    merged = json.loads((out / "matrix.json").read_text())
    assert [e["label"] for e in merged["versions"]] == ["1.9.0", "1.20.0", "1.31.0", "1.32.0"]
    assert "pytest_args" not in merged  # folder a has no matrix.json: the two parts' suites can't be shown equal
    (tmp_path / "a" / "matrix.json").write_text(json.dumps({"pytest_args": ["--hb-sizes", "256"], "versions": []}))
    assert vm.main([*merge, str(out), "--from", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert json.loads((out / "matrix.json").read_text())["pytest_args"] == ["--hb-sizes", "256"]
    # a missing source folder or a corrupt matrix.json: one line, exit 2, nothing written
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "matrix.json").write_text("{truncated")
    for source in ("nope", "bad"):
        fresh = tmp_path / f"out-{source}"
        assert vm.main([*merge, str(fresh), "--from", str(tmp_path / "a"), str(tmp_path / source)]) == 2
        assert not fresh.exists()
    # and in place, from the run files alone
    assert vm.main([*merge, str(tmp_path / "a")]) == 0
    assert len(stored_files(url)) == 3   # each run stored once
    assert "| 1.9.0 | 1.20.0 |" in (tmp_path / "a" / "matrix.md").read_text()


def _scaled(run, factor: float, machine: dict):
    """The run on another machine whose GPU runs every GPU-bound row (graph/device, >= 20 µs) by `factor`."""
    import copy
    run = copy.deepcopy(run)
    run.fingerprint["machine"] = machine
    for r in run.records:
        if r.mode in ("graph", "device") and r.ok and r.summary().median >= 20:
            r.samples = [x * factor for x in r.samples]
            for w in r.workers:
                w["median"] = w["median"] * factor if w.get("median") is not None else None
    return run


def test_a_machine_wide_shift_between_starts_is_said_once_not_as_many_regressions():
    ref = ROOT / "reports" / "reference" / "h200"
    a = load_run(ref / "aa" / "run1.json")
    a.fingerprint["machine"] = {"boot_id": "b1", "gpu_uuid": "GPU-a"}
    b = _scaled(load_run(ref / "run.json"), 1.06, {"boot_id": "b2", "gpu_uuid": "GPU-b"})
    df = cmp.compare(a, b)
    line = cmp.machine_line(df)
    assert re.search(r"this GPU runs (graph|device) [\w-]+ rows \+[56]\.\d %", line), line
    assert not set(df.verdict) & {"SLOWER", "KERNEL CHANGED"}
    # with the same versions on another GPU a machine shift is information; between versions a change
    assert not cmp.regressions(df)
    b.fingerprint["cudnn_frontend"] = "9.99.0"
    df = cmp.compare(a, b)
    assert any("a change of frontend (a regression)" in x for x in cmp.regressions(df))


def test_a_host_row_is_shown_in_its_own_unit_not_in_us():
    # host build rows are stored in ms; the model judges µs: the table shows ms, as the run's table does
    ref = ROOT / "reports" / "reference" / "h200"
    a, b = load_run(ref / "aa" / "run1.json"), load_run(ref / "run.json")
    df = cmp.compare(a, b)
    host = df[(df["mode"] == "host") & (df["unit"] == "ms") & df["base"].notna()]
    assert len(host) >= 5
    for r in host.itertuples():
        assert r.base == pytest.approx(a.find(r.probe, r.variant, r.size, "host").summary().median, rel=1e-9)
        assert r.new == pytest.approx(b.find(r.probe, r.variant, r.size, "host").summary().median, rel=1e-9)


def test_a_block_whose_torch_baseline_moved_with_it_is_the_gpu_not_the_frontend():
    # the committed matrix, 1.31 -> 1.32 on one start: set_stream's whole 256 graph block +9 %, torch.mm with it
    m = ROOT / "reports" / "reference" / "h200" / "matrix"
    a, b = load_run(m / "run-fe1.31.0.json"), load_run(m / "run-fe1.32.0.json")
    df = cmp.compare(a, b)
    row = df[(df.probe == "set_stream") & (df.variant == "torch_mm") & (df["mode"] == "graph")].iloc[0]
    assert row.change > 0.05 and row.verdict == "FINDING", row.note
    found = [f for f in df.attrs["findings"] if f.kind == "gpu block" and f.name == "set_stream 256 graph"]
    assert found and "the GPU during this block" in found[0].status
    assert not any("set_stream 256 graph" in x for x in cmp.regressions(df))
    # the same cuDNN rows moving while torch.mm stays is the frontend's, as before
    base = a.find("set_stream", "torch_mm", "256", "graph")
    new = b.find("set_stream", "torch_mm", "256", "graph")
    new.samples, new.workers = list(base.samples), [dict(w) for w in base.workers]
    df = cmp.compare(a, b)
    assert df[(df.probe == "set_stream") & (df.variant == "torch_mm") & (df["mode"] == "graph")].iloc[0].verdict != "FINDING"
    found = [f for f in df.attrs["findings"] if f.kind == "gpu block" and f.name == "set_stream 256 graph"]
    assert found and "a change of frontend" in found[0].status
