"""Loads the hostbench pytest plugin (bench/measure/pytest_plugin.py): probes become benchmarks."""
pytest_plugins = ["bench.measure.pytest_plugin"]
