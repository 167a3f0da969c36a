"""The integration audit: counts what a user's step does per call and costs it against measured
runs. `from bench.audit import audit` is the entry point for user code."""
from bench.audit.auditor import audit, render_text

__all__ = ["audit", "render_text"]
