"""The installed package and the clone: one top-level package, the plugin registered the pytest
way, lower bounds that CI tests, a run-file schema that is checked, and a light reference folder."""
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from cudnn_hostbench.bench.measure import records

ROOT = Path(__file__).resolve().parent.parent
try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10
    tomllib = None


def _pyproject() -> dict:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_lower_bound_is_pinned_in_the_oldest_set_ci_runs():
    deps = _pyproject()["project"]["dependencies"]
    pins = dict(line.split("==") for line in (ROOT / "ci" / "oldest.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    for dep in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?:\[[a-z,]+\])?>=([0-9.]+)", dep)
        assert m, f"{dep}: every dependency declares a lower bound (name>=version)"
        pin = pins.get(m.group(1))
        assert pin and Version(pin) == Version(m.group(2)), f"{dep}: ci/oldest.txt must pin {m.group(1)}=={m.group(2)}"


def test_the_plugin_is_registered_through_entry_points():
    eps = _pyproject()["project"]["entry-points"]["pytest11"]
    assert set(eps.values()) == {"cudnn_hostbench.bench.measure.pytest_plugin", "cudnn_hostbench.reports.pytest_report"}


def test_the_wheel_installs_one_top_level_package(tmp_path):
    """`pip show -f` of an installed harness lists cudnn_hostbench/ and its dist-info, nothing
    generic (no top-level bench, probes, reports or scripts), and the reference runs it renders."""
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
                        str(ROOT)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "No module named" in r.stderr:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next(tmp_path.glob("cudnn_hostbench-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"cudnn_hostbench"}, tops
    for mod in ("bench/measure/pytest_plugin.py", "probes/probe_execute.py", "reports/table.py", "scripts/cli.py",
                "reports/reference/h200/run.json", "reports/history/migrations/env.py",
                "reports/history/migrations/versions/0001_schema_1.py"):   # the store's migrations ship too
        assert f"cudnn_hostbench/{mod}" in names


def test_a_run_file_from_a_newer_harness_is_refused_in_one_line(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"benchmarks": [], "hostbench": {"schema": records.SCHEMA + 1, "unmeasured": []}}))
    with pytest.raises(records.RunFileError, match=r"newer cudnn-hostbench \(run-file schema"):
        records.load_run(p)
    p.write_text(json.dumps({"benchmarks": [], "hostbench": {"schema": records.SCHEMA, "unmeasured": []}}))
    assert records.load_run(p).records == []


def test_a_newer_partial_run_is_refused_too(tmp_path):
    p = tmp_path / "records.jsonl"
    p.write_text(json.dumps({"kind": "fingerprint", "fingerprint": {"schema": records.SCHEMA + 1}}) + "\n")
    with pytest.raises(records.RunFileError, match="newer cudnn-hostbench"):
        records.load_run(p)


def test_the_reference_folder_stays_light():
    """A clone carries what the README, tests and docs read (the reference run, the newest A/A
    pair, the version matrix); older pairs live in git history."""
    size = sum(f.stat().st_size for f in (ROOT / "reports" / "reference").rglob("*") if f.is_file())
    assert size < 10 * 2**20, f"reports/reference is {size / 2**20:.1f} MiB (budget 10)"


def test_the_reference_run_is_committed_once():
    """The A/A pair's second run is the reference run itself, not a byte-identical copy."""
    seen = {}
    for f in (ROOT / "reports" / "reference").rglob("*.json"):
        seen.setdefault(f.read_bytes(), []).append(f.relative_to(ROOT))
    dups = [v for v in seen.values() if len(v) > 1]
    assert not dups, dups


def test_an_installed_harness_runs_a_probe_file_in_another_folder(tmp_path):
    """The plugin comes from the installed package's entry points, not from this repository's
    conftest.py: a probe file anywhere runs (on CPU, each case skips with the reason)."""
    from importlib import metadata
    if not any(ep.value == "cudnn_hostbench.bench.measure.pytest_plugin" for ep in metadata.entry_points(group="pytest11")):
        pytest.skip("the harness is not installed (pip install -e .): no entry points")
    (tmp_path / "test_myprobe.py").write_text((ROOT / "tests" / "external_probe_example.py").read_text())
    r = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "--benchmark-only", "-q", "-rs", "-p",
                        "no:cacheprovider", "--hb-sizes=256"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    import torch
    if torch.cuda.is_available():
        assert "passed" in r.stdout
    else:
        assert "3 skipped" in r.stdout and "no CUDA GPU visible" in r.stdout, r.stdout


def test_the_committed_constraints_are_the_reference_runs_own_versions():
    """reports/reference/h200/constraints.txt is written from the reference run's fingerprint
    (scripts/lock.py), never by hand: re-deriving it gives the same file."""
    from cudnn_hostbench.scripts import lock
    ref = ROOT / "reports" / "reference" / "h200"
    assert lock.constraints(records.load_run(ref / "run.json")) == (ref / "constraints.txt").read_text()


def test_lock_refuses_a_run_without_package_versions(tmp_path, capsys):
    from cudnn_hostbench.scripts import lock
    old = ROOT / "reports" / "reference" / "h200" / "aa" / "pair8" / "run1.json"   # measured before 0.2
    assert lock.main([str(old)]) == 2
    assert "records no package versions" in capsys.readouterr().err
