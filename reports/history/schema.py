"""The store's tables (SQLAlchemy Core), its schema version and the history key.

runs      one per ingested run file: the history key (what must match for two runs to be
          compared), the versions it is made of, what is only information (host, date, file),
          the machine it ran on (its start = boot id/GPU UUID, the GPU's UUID, the whole identity
          as JSON; '' when unknown), the probes it held, and a hash of the source file (the same
          file ingested twice is stored once);
rows      one per (probe, variant, size, mode);
figures   one per (run, row): the judged figure (eager rows with a baseline: the median paired
          ratio; else the median µs), the median µs, the per-worker values, the between-worker
          spread, flags, kernels, host state, and the plan rule and plan the variant ran. Raw
          samples stay in the run file (the archive).
"""
from __future__ import annotations

import hashlib
import json

from sqlalchemy import Boolean, Column, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text, UniqueConstraint

from cudnn_hostbench.bench.measure.runfile import plan_rules
from cudnn_hostbench.bench.measure.runfile import records as _records
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint

SCHEMA_VERSION = 3   # 2: machine identity, start and probes per run; plan rule and plan per figure;
#                      3: the paired results of A/B jobs (hb_ab_rows)
# The harness's measurement version (bench.measure.runfile.records.MEASUREMENT_VERSION) is part of the
# history key; a run says which it measured with (measurement_version_of).
MEASUREMENT_VERSION = _records.MEASUREMENT_VERSION
# fingerprint fields that must match for two runs to share a history (conbench's "context")
KEY_FIELDS = ("gpu_name", "sm_count", "driver", "cuda", "cudnn_backend", "cudnn_frontend", "torch")

metadata = MetaData()

meta = Table("hb_meta", metadata,
             Column("name", String(64), primary_key=True),
             Column("value", String(255), nullable=False))

runs = Table("hb_runs", metadata,
             Column("id", Integer, primary_key=True, autoincrement=True),
             Column("source_hash", String(64), nullable=False, unique=True),
             Column("history_key", String(64), nullable=False),
             Column("gpu", String(128), nullable=False),
             Column("started_at", String(40), nullable=False),   # ISO 8601 UTC: sorts as text
             Column("commit_id", String(64), nullable=False, default=""),
             Column("driver", String(64), nullable=False, default=""),
             Column("cuda", String(32), nullable=False, default=""),
             Column("cudnn_backend", String(32), nullable=False, default=""),
             Column("frontend", String(32), nullable=False, default=""),
             Column("torch", String(64), nullable=False, default=""),
             Column("measurement_version", Integer, nullable=False),
             Column("host", String(255), nullable=False, default=""),
             Column("source_path", Text, nullable=False, default=""),
             Column("host_unstable", Boolean, nullable=False, default=False),
             Column("excluded", String(255), nullable=False, default=""),   # why, when a person excluded it
             Column("key_json", Text, nullable=False),       # the key's fields, readable
             Column("info_json", Text, nullable=False),      # the rest of the fingerprint, summarized
             Column("n_figures", Integer, nullable=False),
             # schema 2 (revision 0002); '' on runs stored before it: an unknown start
             Column("start", String(255), nullable=False, default="", server_default=""),
             Column("gpu_uuid", String(128), nullable=False, default="", server_default=""),
             Column("machine_json", Text, nullable=False, default="{}", server_default="{}"),
             Column("probes", Text, nullable=False, default="", server_default=""))   # comma-separated, sorted
Index("hb_runs_key_time", runs.c.history_key, runs.c.started_at)

rows = Table("hb_rows", metadata,
             Column("id", Integer, primary_key=True, autoincrement=True),
             Column("probe", String(64), nullable=False),
             Column("variant", String(128), nullable=False),
             Column("size", String(128), nullable=False),
             Column("mode", String(16), nullable=False),
             UniqueConstraint("probe", "variant", "size", "mode", name="hb_rows_ident"))

figures = Table("hb_figures", metadata,
                Column("run_id", Integer, ForeignKey("hb_runs.id", ondelete="CASCADE"), primary_key=True),
                Column("row_id", Integer, ForeignKey("hb_rows.id"), primary_key=True),
                Column("status", Text, nullable=False),
                Column("unit", String(16), nullable=False),
                Column("value", Float),          # the judged figure (ratio or µs)
                Column("on_ratio", Boolean, nullable=False),
                Column("median_us", Float),
                Column("workers_json", Text, nullable=False),   # judged figure per worker
                Column("spread", Float),
                Column("flags", String(128), nullable=False, default=""),
                Column("kernels", Text, nullable=False, default=""),
                Column("host_state", String(16), nullable=False, default=""),
                Column("baseline", String(128), nullable=False, default=""),
                Column("role", String(32), nullable=False, default=""),
                # schema 2: the variant's declared plan rule and the plan it ran ('' = unknown)
                Column("plan_rule", String(64), nullable=False, default="", server_default=""),
                Column("plan", String(255), nullable=False, default="", server_default=""))
Index("hb_figures_row", figures.c.row_id, figures.c.run_id)


def ab_rows_columns() -> list:
    """hb_ab_rows' columns: here and in revision 0003, which makes the table on an older store."""
    return [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("job_hash", String(64), nullable=False),      # sha256 of the job's ab.json
        Column("job_path", Text, nullable=False, default=""),   # the folder, as ingested
        Column("started_at", String(40), nullable=False),    # ISO 8601 UTC: its sides' first process
        Column("gpu", String(128), nullable=False),
        Column("side", String(128), nullable=False),
        Column("side_frontend", String(32), nullable=False, default=""),
        Column("side_cudnn", String(32), nullable=False, default=""),
        Column("side_run_id", Integer, ForeignKey("hb_runs.id", ondelete="SET NULL"), nullable=True),
        Column("reference", String(128), nullable=False),
        Column("reference_frontend", String(32), nullable=False, default=""),
        Column("reference_cudnn", String(32), nullable=False, default=""),
        Column("reference_run_id", Integer, ForeignKey("hb_runs.id", ondelete="SET NULL"), nullable=True),
        Column("judged_on", String(64), nullable=False, default=""),   # 'us' or the ratio to the block baseline
        Column("job_pairs", Integer, nullable=False, default=0),       # the comparison's pairs
        Column("row_id", Integer, ForeignKey("hb_rows.id"), nullable=False),
        Column("cls", String(64), nullable=False, default=""),
        Column("verdict", String(32), nullable=False),
        Column("change", Float),                 # B over A - 1 (a share)
        Column("low", Float),                    # its interval
        Column("high", Float),
        Column("mdc", Float),                    # minimum detectable change (a share)
        Column("pairs", Integer, nullable=False, default=0),
        Column("pairs_dropped", Integer, nullable=False, default=0),
        Column("more_pairs", Integer),           # UNSURE: the pairs that would decide it
        Column("q", Float),
        Column("on_ratio", Boolean, nullable=False, default=False),
        Column("level_us", Float),
        UniqueConstraint("job_hash", "side", "reference", "row_id", name="hb_ab_rows_ident"),
    ]


ab_rows = Table("hb_ab_rows", metadata, *ab_rows_columns())
Index("hb_ab_rows_time", ab_rows.c.started_at, ab_rows.c.job_hash)


def measurement_version_of(fingerprint: Fingerprint) -> int:
    """The version a run was measured with (history.plan_rules.measurement_version)."""
    return plan_rules.measurement_version(fingerprint)


def key_of(fingerprint: Fingerprint) -> dict:
    """The fields of a run's history key (missing ones are '')."""
    fe = fingerprint.cudnn_frontend
    if isinstance(fe, dict):   # an early layout: {"version": ...}
        fe = fe.get("version")
    key = {f: str(getattr(fingerprint, f) if f != "cudnn_frontend" else fe or "") for f in KEY_FIELDS}
    key["measurement_version"] = str(measurement_version_of(fingerprint))
    return {k: ("" if v == "None" else v) for k, v in key.items()}


def key_hash(key: dict) -> str:
    """Every key field hashed (unlike conbench's machine hash, which drops the CPU model: #1412)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
