"""Loads the hostbench pytest plugin: probes become benchmarks (bench/measure/pytest_plugin.py),
and a finished run is tabulated (reports/pytest_report.py)."""
pytest_plugins = ["bench.measure.pytest_plugin", "reports.pytest_report"]
