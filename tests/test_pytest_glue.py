"""The pytest glue on CPU: measured samples reach pytest-benchmark's stats; probes skip with a reason."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure import pytest_plugin as plugin
from cudnn_hostbench.bench.measure.runfile.records import Record

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_engines_samples_become_the_benchmark_stats_with_no_clock(benchmark, request, tmp_path):
    if benchmark.disabled and not os.environ.get("HB_GLUE_CHILD"):
        # an xdist worker, where pytest-benchmark turns itself off: this test alone, in a plain pytest
        # run (tests/conftest.py keeps the worker's variables out of it)
        r = subprocess.run([sys.executable, "-m", "pytest", request.node.nodeid, "-q", "-p", "no:cacheprovider",
                            "-p", "no:xdist", f"--basetemp={tmp_path / 'child'}"], cwd=request.config.rootpath,
                           env={**os.environ, "HB_GLUE_CHILD": "1"},
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
        return
    rec = Record("execute", "pinned", "256", "eager", samples=[9.0, 11.0, 10.0, 12.0], calls_per_round=100)
    plugin.report_record(benchmark, rec, "t")
    data = benchmark.stats.stats.data
    assert data == pytest.approx([9e-6, 11e-6, 10e-6, 12e-6])
    assert benchmark.stats.stats.median == pytest.approx(10.5e-6)
    assert benchmark.extra_info["mode"] == "eager" and "samples" not in benchmark.extra_info
    assert not hasattr(plugin, "CLOCK")   # nothing timed: the stats are handed over, not replayed


def test_unsupported_record_skips_with_its_reason(benchmark):
    rec = Record("execute", "ordered", "256", "eager", status="unsupported: needs frontend >= 1.31")
    with pytest.raises(pytest.skip.Exception, match="needs frontend"):
        plugin.report_record(benchmark, rec, "t")


def test_failed_numerics_fail_the_probe(benchmark):
    rec = Record("execute", "generic", "256", "eager", status="failed: numerics rel_err=0.5")
    with pytest.raises(pytest.fail.Exception, match="rel_err"):
        plugin.report_record(benchmark, rec, "t")


@pytest.mark.slow
def test_probes_skip_with_a_reason_without_gpu(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the probes would run")
    out = subprocess.run([sys.executable, "-m", "pytest", "probes", "--benchmark-only", "-q", "-rs",
                          "-p", "no:cacheprovider", f"--hb-out={tmp_path}", "-o", "testpaths=probes",
                          "--hb-sizes=256", "--hb-tokens=256"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "no CUDA GPU visible" in out.stdout
    assert " passed" not in out.stdout and " skipped" in out.stdout


def test_cli_run_without_gpu_renders_reference_or_says_why(capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    from cudnn_hostbench.scripts import run
    code = run.main()
    out = capsys.readouterr()
    if run.reference_runs():
        assert code == 0 and "reference run" in out.out and "torch_mm" in out.out
    else:
        assert code == 2 and "no committed reference run" in out.err


def test_cli_dispatch_usage(capsys):
    from cudnn_hostbench.scripts import cli
    assert cli.main([]) == 2
    assert "table" in capsys.readouterr().out


def test_a_finished_run_is_tabulated_beside_its_run_file(tmp_path):
    import shutil
    from pathlib import Path
    from types import SimpleNamespace

    from cudnn_hostbench.reports import pytest_report
    run = tmp_path / "run.json"
    shutil.copy(Path(__file__).resolve().parent.parent / "reports/reference/h200/run.json", run)
    lines = []
    term = SimpleNamespace(write_sep=lambda sep, text: lines.append(text),
                           write_line=lambda text, **kw: lines.append(text))
    pytest_report.pytest_terminal_summary(term, 0, SimpleNamespace(_hostbench=SimpleNamespace(run_path=run)))
    assert (tmp_path / "table.md").exists() and (tmp_path / "table.csv").exists()
    assert any("torch_mm" in line for line in lines) and any(str(run) in line for line in lines)


def test_workers_run_the_probes_of_the_project_folder(tmp_path):
    """The worker command names the project's probes/ and rootdir (pytest's rootpath), not a
    folder found relative to the installed plugin module."""
    from pathlib import Path

    from tests.test_catch_up import _session_of
    root = Path(__file__).resolve().parent.parent
    args = _session_of(tmp_path, {}).worker_args()
    assert str(root / "probes") in args and f"--rootdir={root}" in args
    assert (root / "probes").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("user_json", [False, True])
def test_the_run_file_is_in_place_when_the_terminal_summary_reads_it(tmp_path, user_json):
    """pytest-benchmark writes the run file inside sessionfinish and the terminal reporter calls
    the summary hooks inside it too: the file must be renamed into place before the report reads
    it (it once was only after, so the table and summary never appeared)."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "conftest.py").write_text(
        "import sys\n"
        "installed = 'cudnn_hostbench.bench.measure.pytest_plugin' in sys.modules   # by its entry point\n"
        "import cudnn_hostbench.bench.measure.pytest_plugin as p\n"
        "p._cuda_ok = lambda: (True, '')   # as on a GPU box: the plugin opens the run file\n"
        "pytest_plugins = [] if installed else ['cudnn_hostbench.bench.measure.pytest_plugin',\n"
        "                                       'cudnn_hostbench.reports.pytest_report']\n")
    (tmp_path / "test_x.py").write_text("def test_x(benchmark):\n    benchmark(lambda: None)\n")
    out = tmp_path / "out"
    # a user's own --benchmark-json, relative to the working folder: pytest-benchmark 5.3+ parses
    # it to a Path (whose .name is the base name alone), older ones open it
    extra = ["--benchmark-json", "sub/mine.json"] if user_json else []
    (tmp_path / "sub").mkdir()
    res = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "--benchmark-only", "-q", "-p",
                          "no:cacheprovider", "--hb-workers=1", f"--hb-out={out}", f"--rootdir={tmp_path}", *extra],
                         capture_output=True, text=True, cwd=tmp_path, env={**__import__("os").environ,
                                                                             "PYTHONPATH": str(root)})
    assert res.returncode == 0, res.stdout + res.stderr
    if user_json:
        run = tmp_path / "sub" / "mine.json"
        assert run.exists() and str(run) in res.stdout and (run.parent / "table.md").exists(), res.stdout
        return
    assert (out / "run.json").exists() and not (out / "run.json.tmp").exists()
    # the report read the placed file and wrote the table beside it
    assert "cudnn-hostbench: µs per call" in res.stdout and str(out / "run.json") in res.stdout, res.stdout
    assert (out / "table.md").exists()


@pytest.mark.slow
def test_a_negative_budget_is_a_usage_error(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-m", "pytest", str(root / "probes"), "--benchmark-only", "-q", "-p",
                        "no:cacheprovider", "--hb-budget-s=-5", f"--hb-out={tmp_path / 'out'}", f"--rootdir={root}"],
                       capture_output=True, text=True, cwd=root)
    assert r.returncode == 4 and "--hb-budget-s: must be 0 (no limit) or more, got -5" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()
    for bad, said in (("--hb-full-workers=0", "--hb-full-workers: must be at least 1, got 0"),
                      ("--hb-target-se=-1", "--hb-target-se: must be 0 (every round) or more, got -1"),
                      ("--hb-engine=fast", "invalid choice: 'fast'")):
        r = subprocess.run([sys.executable, "-m", "pytest", str(root / "probes"), "--benchmark-only", "-q", "-p",
                            "no:cacheprovider", bad, f"--hb-out={tmp_path / 'out'}", f"--rootdir={root}"],
                           capture_output=True, text=True, cwd=root)
        assert r.returncode == 4 and said in r.stderr and "Traceback" not in r.stderr, (bad, r.stderr[-500:])
        assert not (tmp_path / "out").exists()


def test_hostbench_run_with_a_bad_option_exits_2_and_leaves_no_folder(tmp_path, monkeypatch):
    """On a GPU box `hostbench run --hb-budget-s -5`: pytest names the option in one line; the
    command exits 2, and the results folder it made for the run is gone again."""
    import pytest as _pytest

    from cudnn_hostbench.scripts import run
    monkeypatch.setattr(run, "cuda_available", lambda: (True, ""))
    seen = []
    monkeypatch.setattr(_pytest, "main", lambda args: seen.append(args) or _pytest.ExitCode.USAGE_ERROR)
    out = tmp_path / "r1"
    assert run.main(str(out), False, ["--hb-budget-s", "-5"]) == 2
    assert seen and "--hb-budget-s" in seen[0] and not out.exists()


@pytest.mark.slow
def test_the_engine_measures_only_what_k_and_m_select(tmp_path):
    """The engine's case list is made after -k / -m deselection: a `-k execute` matrix part or a
    user's selection measures those tests' blocks, not the whole suite (2026-12-03: each matrix
    part built and timed 32 blocks to report 4). The markers are there for -m to select on."""
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "peek.py").write_text(
        "def pytest_collection_finish(session):\n"
        "    hb = session.config._hostbench\n"
        "    print('PEEK', len(session.items), len(hb.cases), sorted({c[1] for c in hb.cases}))\n")

    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

    def peek(*sel):
        out = subprocess.run([sys.executable, "-m", "pytest", str(root / "probes"), "--collect-only", "-q", "-p", "peek",
                              "-p", "no:cacheprovider", "--hb-sizes", "256", *sel], capture_output=True, text=True,
                             cwd=root, env=env, timeout=300)
        line = next(x for x in out.stdout.splitlines() if x.startswith("PEEK"))
        _, items, cases, probes = line.split(" ", 3)
        return int(items), int(cases), probes
    items, cases, probes = peek("-k", "probe_execute or probe_set_stream")
    assert items == cases and probes == "['execute', 'set_stream']"
    all_items, all_cases, _ = peek("-m", "hostbench")
    assert all_items == all_cases > items
