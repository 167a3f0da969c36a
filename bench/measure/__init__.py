"""The measuring engine, in four packages whose imports point one way (node < runfile < core <
workers), and its two faces: probe.py (what a probe file declares with) and pytest_plugin.py (the
pytest front end, `pytest probes --benchmark-only`). Knows nothing of cuDNN."""
