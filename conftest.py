"""Loads the hostbench pytest plugin in a checkout that is not installed. An installed harness
registers it through its `pytest11` entry points (pyproject.toml), which pytest loads before this
file: then the modules are already imported and are not registered twice."""
import sys

pytest_plugins = [m for m in ("cudnn_hostbench.bench.measure.pytest_plugin", "cudnn_hostbench.reports.pytest_report")
                  if m not in sys.modules]
