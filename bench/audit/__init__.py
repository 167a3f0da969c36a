"""The integration audit: counts what a user's step does per call and costs it against measured
runs. `from cudnn_hostbench.bench.audit import audit` is the entry point for user code; reports.audit_report
renders its AuditReport."""
from cudnn_hostbench.bench.audit.auditor import AuditReport, audit

__all__ = ["audit", "AuditReport"]
