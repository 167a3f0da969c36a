"""Loads the hostbench pytest plugin in a checkout that is not installed, and collects this
checkout's probes/ under their one import name.

An installed harness registers the plugin through its `pytest11` entry points (pyproject.toml),
which pytest loads before this file: then the modules are already imported and are not registered
twice.

pytest would import probes/probe_x.py as `probes.probe_x` (probes/ is a package and the root is
not), and probes/__init__.py refuses that name (docs/layout.md): a second name makes a second copy
of every module. So the folder is collected as a plain directory and each file is imported as
cudnn_hostbench.probes.probe_x.
"""
import importlib
import sys
from pathlib import Path

import pytest

pytest_plugins = [m for m in ("cudnn_hostbench.bench.measure.pytest_plugin", "cudnn_hostbench.reports.pytest_report")
                  if m not in sys.modules]

PROBES = Path(__file__).resolve().parent / "probes"


class ProbeModule(pytest.Module):
    def _getobj(self):
        return importlib.import_module(f"cudnn_hostbench.probes.{self.path.stem}")


def pytest_collect_directory(path, parent):
    if path.resolve() == PROBES:
        return pytest.Dir.from_parent(parent, path=path)   # a Package would import its __init__ as `probes`
    return None


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.resolve().parent == PROBES:
        return ProbeModule.from_parent(parent, path=module_path)
    return None


# pytest-benchmark makes .benchmarks in the folder pytest runs from whether or not anything is saved
# there (nothing is, without --benchmark-save): an empty one this session made goes again at the end
_STORAGE = Path.cwd() / ".benchmarks"
_HAD_STORAGE = _STORAGE.exists()


def pytest_unconfigure(config):
    if not _HAD_STORAGE:
        try:
            _STORAGE.rmdir()   # only when empty
        except OSError:
            pass
