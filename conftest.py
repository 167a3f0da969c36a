"""Loads the hostbench pytest plugin (bench/pytest_plugin.py): probes become benchmarks."""
pytest_plugins = ["bench.pytest_plugin"]
