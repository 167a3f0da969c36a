"""The measuring engine, in packages whose imports point one way (runfile < core < workers), and its
two faces: probe.py (what a probe file declares with) and pytest_plugin.py (the pytest front end,
`pytest probes --benchmark-only`). Knows nothing of cuDNN."""
