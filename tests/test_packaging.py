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

from cudnn_hostbench.bench.measure.runfile import records
from tests import checkout

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
    project = _pyproject()["project"]
    deps = project["dependencies"] + [d for d in project["optional-dependencies"]["test"] if ">=" in d]
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
    r = checkout.build_wheel(tmp_path, "-v")   # in a copy: the checkout gets no build/
    if r.returncode != 0 and "No module named" in r.stderr:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next(tmp_path.glob("cudnn_hostbench-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"cudnn_hostbench"}, tops
    assert "absent from the `packages` configuration" not in r.stdout + r.stderr   # every folder it ships is declared
    for mod in ("py.typed", "bench/measure/pytest_plugin.py", "probes/probe_execute.py", "reports/table.py", "scripts/cli.py",
                "reports/reference/h200/run.json", "reports/history/migrations/env.py",
                "reports/history/migrations/versions/0001_schema_1.py"):   # the store's migrations ship too
        assert f"cudnn_hostbench/{mod}" in names


FOLDERS = ("bench", "probes", "reports", "scripts")


def test_the_package_links_to_the_top_level_folders():
    """cudnn_hostbench/<folder> is a relative link to ../<folder>: it stays inside any copy of the
    checkout (the device machine gets links as links), and the package's only path is its folder."""
    import os

    import cudnn_hostbench
    for name in FOLDERS:
        link = ROOT / "cudnn_hostbench" / name
        assert link.is_symlink() and os.readlink(link) == f"../{name}", link
    assert [Path(p).resolve() for p in cudnn_hostbench.__path__] == [ROOT / "cudnn_hostbench"]


def _python(code: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", FOLDERS)
def test_a_folder_imports_under_one_name_only(name):
    """From the root, `import bench` would load every module a second time (a class failing
    isinstance against itself): it is refused in one line that names the right import."""
    r = _python(f"import {name}")
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == (
        f"ImportError: {name}: import this folder as cudnn_hostbench.{name} (under a second name its modules would "
        "load twice)")
    r = _python(f"import cudnn_hostbench.{name}, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
                f"{FOLDERS!r}))")
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_only_the_four_folders_are_part_of_the_package():
    r = _python("import importlib.util as u; print([u.find_spec(m) is None for m in "
                "('cudnn_hostbench.tests', 'cudnn_hostbench.conftest', 'cudnn_hostbench.examples')])")
    assert r.stdout.strip() == "[True, True, True]", r.stdout + r.stderr


@pytest.mark.slow
def test_a_checkout_collects_probes_under_the_package_name_and_says_why_nothing_ran(tmp_path):
    """`pytest probes` from the root imports probes/probe_x.py as cudnn_hostbench.probes.probe_x
    (never as probes.probe_x); on a machine without a GPU its summary says nothing was measured."""
    (tmp_path / "names_plugin.py").write_text(
        "import sys\n"
        "def pytest_collection_finish(session):\n"
        "    print('MODULES', sorted({it.module.__name__ for it in session.items}))\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "pytest", "probes/probe_noop.py", "probes/probe_execute.py", "--benchmark-only",
                        "-q", "-p", "no:cacheprovider", "-p", "names_plugin", "--hb-sizes=256", "--hb-workers=1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    line = next(x for x in r.stdout.splitlines() if x.startswith("MODULES"))
    assert line == "MODULES ['cudnn_hostbench.probes.probe_execute', 'cudnn_hostbench.probes.probe_noop']", line
    import torch
    if not torch.cuda.is_available():
        summary = r.stdout.strip().splitlines()
        assert summary[-1].endswith("s") and "skipped" in summary[-1] and "passed" not in summary[-1]
        assert summary[-2].startswith("hostbench: nothing measured") and "no CUDA GPU" in summary[-2] \
            and "`hostbench run`" in summary[-2], summary[-2:]


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
    """A clone carries what the README, tests and docs read for every reference GPU (each GPU's run,
    audits and A/B jobs; the H200's A/A pair, version matrix and history export); older runs live in
    git history and a big run file is stored compressed (run.json.gz). Budget: 16 MiB with two GPUs."""
    size = sum(f.stat().st_size for f in (ROOT / "reports" / "reference").rglob("*") if f.is_file())
    assert size < 16 * 2**20, f"reports/reference is {size / 2**20:.2f} MiB (budget 16)"


def test_the_reference_run_is_committed_once():
    """The A/A pair's second run is the reference run itself, not a byte-identical copy."""
    seen = {}
    for f in (ROOT / "reports" / "reference").rglob("*.json"):
        seen.setdefault(f.read_bytes(), []).append(f.relative_to(ROOT))
    dups = [v for v in seen.values() if len(v) > 1]
    assert not dups, dups


@pytest.mark.slow
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
    import json

    from cudnn_hostbench.scripts import lock
    doc = json.loads((ROOT / "reports" / "reference" / "h200" / "run.json").read_text())
    del doc["machine_info"]["hostbench"]["packages"]   # as runs measured before 0.2 were
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert lock.main([str(old)]) == 2
    assert "records no package versions" in capsys.readouterr().err
