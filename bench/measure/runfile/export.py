"""pytest-benchmark's JSON, an export of a run: one `benchmarks[]` entry per measured record (its
samples as stats, in seconds; our fields in `extra_info`), the fingerprint in
`machine_info["hostbench"]`, the records with no samples in `hostbench["unmeasured"]`.

Run files up to format 2 were this layout, and records.load_run still reads it (a user's
`--benchmark-json`, which pytest-benchmark itself writes from the engine's samples, is one). Nothing
is timed or clocked here: the stats are the engine's samples.
"""
from __future__ import annotations

import datetime as _dt
from typing import Iterable

from cudnn_hostbench.bench.measure.runfile import stats
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.fields import plain
from cudnn_hostbench.bench.measure.runfile.records import SCHEMA, UNIT_SECONDS, Record, Run


def benchmark_name(rec: Record) -> str:
    """pytest id of a record; free of versions so runs compare across versions."""
    return f"test_{rec.probe}[{rec.size}-{rec.variant}-{rec.mode}]"


def benchmark_entry(rec: Record) -> dict:
    """The pytest-benchmark `benchmarks[]` entry for a measured record (stats in seconds)."""
    scale = UNIT_SECONDS.get(rec.unit, 1e-6)
    data = [x * scale for x in rec.samples]
    s = stats.summarize(data)
    extra = {k: v for k, v in rec.to_dict().items() if k != "samples"}
    return {
        "group": f"{rec.probe}[{rec.size}]",
        "name": benchmark_name(rec),
        "fullname": f"probes/probe_{rec.probe}.py::{benchmark_name(rec)}",
        "params": {"size": rec.size, "variant": rec.variant, "mode": rec.mode},
        "param": f"{rec.size}-{rec.variant}-{rec.mode}",
        "extra_info": extra,
        "options": {"timer": "hostbench", "min_rounds": len(data), "warmup": False},
        "stats": {
            "min": s.min, "max": s.max, "mean": s.mean, "stddev": s.stddev,
            "rounds": s.n, "median": s.median, "iqr": s.iqr, "q1": s.q1, "q3": s.q3,
            "iqr_outliers": 0, "stddev_outliers": 0, "outliers": "0;0",
            "ld15iqr": s.min, "hd15iqr": s.max,
            "ops": 1.0 / s.mean if s.mean else 0.0, "total": sum(data),
            "data": data, "iterations": 1,
        },
    }


def pytest_benchmark_document(records: Iterable[Record], fingerprint: Fingerprint | dict,
                              machine_info: dict | None = None) -> dict:
    """Records and their fingerprint in pytest-benchmark's layout."""
    records = list(records)
    fingerprint = plain(fingerprint)
    info = dict(machine_info or {})
    info["hostbench"] = fingerprint
    return {
        "machine_info": info,
        "commit_info": fingerprint.get("commit_info", {}),
        "benchmarks": [benchmark_entry(r) for r in records if r.ok],
        "datetime": fingerprint.get("datetime") or _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "version": "hostbench",
        "hostbench": {"schema": SCHEMA, "unmeasured": [r.to_dict() for r in records if not r.ok]},
    }


def export_run(run: Run) -> dict:
    """A loaded run in pytest-benchmark's layout."""
    return pytest_benchmark_document(run.records, run.fingerprint)
