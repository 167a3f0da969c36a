"""Run store: load many run files from files or folders, group them by GPU, order them.

A folder is scanned recursively for `*.json` run files (`run.json.gz` compressed) and `*.jsonl`
partial runs. A file
that cannot be read (damaged, not UTF-8, not a run, a run with no records, or one holding figures
that cannot be measurements) becomes a one-line error naming it; the other runs still load. Files
with the same bytes are one run: the first one found is loaded, its copies are skipped.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Iterable

from packaging.version import InvalidVersion, Version

from cudnn_hostbench.bench.measure.runfile import trust
from cudnn_hostbench.bench.measure.runfile.records import UNIT_SECONDS, Run, RunFileError, load_run

# JSON files that live beside runs but are not runs (matrix status, audit reports, tuned plans,
# sentinel traces: write them as host_trace.json, crossover sweeps, the history's machine starts)
NOT_RUNS = {"matrix.json", "audit.json", "autotune_winners.json", "host_trace.json", "crossover.json", "starts.json"}


def is_run_name(path: Path) -> bool:
    """Whether a file's name is a run file's: *.json, *.json.gz (compressed) or *.jsonl (partial)."""
    return (path.suffix in (".json", ".jsonl") or path.name.endswith("run.json.gz")) and path.name not in NOT_RUNS


def runs_among(files: Iterable[Path]) -> list[Path]:
    """The run files among `files`: a finished run supersedes the partial JSON-lines file it was
    written from (run.jsonl beside run.json)."""
    found = sorted(f for f in files if is_run_name(f) and f.is_file())
    done = {f.with_suffix("") for f in found if f.suffix == ".json"}
    return [f for f in found if f.suffix != ".jsonl" or f.with_suffix("") not in done]


def run_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[RunFileError]]:
    """The run files named by `paths` (files, or folders scanned recursively)."""
    files, errors = [], []
    for p in map(Path, paths):
        if p.is_dir():
            files += runs_among(p.rglob("*"))
        elif p.is_file():
            files.append(p)
        else:
            errors.append(RunFileError(f"{p}: no such file or folder"))
    return files, errors


def load_runs(paths: Iterable[str | Path], order: str = "date") -> tuple[list[Run], list[RunFileError]]:
    """Loads every run under `paths`; returns (runs ordered by `order`, errors)."""
    files, errors = run_files(paths)
    runs, seen = [], {}
    for f in files:
        digest = content_hash(f)
        if digest is not None and digest in seen:
            continue   # a byte-identical copy of a run already loaded is the same run, shown once
        try:
            run = load_run(f)
            trust.check_run(run)
        except RunFileError as e:
            errors.append(RunFileError(one_line(str(e))))
            continue
        except UnicodeDecodeError:  # load_run may not catch it itself (random or binary bytes)
            errors.append(RunFileError(f"{f}: not UTF-8 text (a binary or damaged file?)"))
            continue
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # valid JSON of the wrong shape
            text = str(e) if str(e).startswith(f"{f}: ") else f"{f}: not a run file ({type(e).__name__}: {e})"
            errors.append(RunFileError(one_line(text)))
            continue
        if not run.records:
            errors.append(RunFileError(f"no records in {f}"))
            continue
        runs.append(run)
        if digest is not None:   # only runs: every copy of an unreadable file is still named
            seen[digest] = f
    return sort_runs(runs, order), errors


def content_hash(path: Path) -> str | None:
    """sha256 of a file's bytes (None when it cannot be read: load_run then names the error)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def one_line(text: str, limit: int = 300) -> str:
    """A message squeezed onto one line (error texts may quote a file's bytes)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def gpu(run: Run) -> str:
    return str(run.fingerprint.gpu_name or "unknown GPU")


def by_gpu(runs: Iterable[Run]) -> dict[str, list[Run]]:
    """Runs grouped by GPU name, each group keeping the given order."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(gpu(r), []).append(r)
    return groups


def frontend_version(run: Run) -> str:
    """The run's nvidia-cudnn-frontend version, from its fingerprint or its file name (run-fe1.2.0)."""
    v = run.fingerprint.cudnn_frontend
    if isinstance(v, dict):   # an early layout: {"version": ...}
        v = v.get("version")
    if v:
        return str(v)
    m = re.search(r"fe-?(\d+(?:\.\d+)+)", Path(run.path).name)
    return m.group(1) if m else ""


def version_key(version: str) -> tuple:
    """Sort key that puts 1.9.0 before 1.20.0 (PEP 440), then versions PEP 440 cannot read, by
    their numbers; an empty version sorts last."""
    try:
        return (0, Version(version))
    except InvalidVersion:
        parts = re.findall(r"\d+|[A-Za-z]+", version or "")
        return (1, tuple((int(p), "") if p.isdigit() else (-1, p) for p in parts)) if parts else (2,)


def sort_runs(runs: Iterable[Run], order: str = "date") -> list[Run]:
    """Orders by run datetime ("date") or by frontend version, then date ("version")."""
    if order == "version":
        return sorted(runs, key=lambda r: (version_key(frontend_version(r)), r.datetime or "", r.path))
    if order == "date":
        return sorted(runs, key=lambda r: (r.datetime or "", r.path))
    raise ValueError(f"order must be 'date' or 'version', not {order!r}")


def label(run: Run, order: str = "date") -> str:
    """A short column name for a run: its frontend version or its date, else its file name."""
    v = frontend_version(run)
    date = (run.datetime or "")[:16].replace("T", " ")
    if order == "version" and v:
        return f"fe {v}"
    return date or Path(run.path).stem


def unique_labels(runs: list[Run], order: str = "date") -> list[str]:
    """Labels that stay distinct when two runs would get the same one."""
    labels = [label(r, order) for r in runs]
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if labels.count(lab) == 1 else f"{lab} #{seen[lab]}")
    return out


def to_us(value: float, unit: str) -> float:
    """A value in a record's unit as microseconds (all units are times per call/op/step)."""
    return value * UNIT_SECONDS.get(unit, 1e-6) / 1e-6


def records_frame(runs: list[Run], labels: list[str] | None = None):
    """One row per (run, record): medians in µs, the µs above the same run's baseline, and the
    ratio to it (the record's median of round-by-round ratios where it has one, else the ratio
    of the two medians), with the record's unit and trust badge."""
    import pandas as pd

    labels = labels or unique_labels(runs)
    rows = []
    for i, (run, lab) in enumerate(zip(runs, labels)):
        med = {}
        for r in run.records:
            if r.ok:
                med[r.key] = to_us(r.summary().median, r.unit)
        for r in run.records:
            bl = run.baseline_of(r)
            base = bl.variant if bl is not None else (r.baseline or "torch_mm")
            b = med.get((r.probe, base, r.size, r.mode))
            m = med.get(r.key)
            ratio = r.ratio.median if m is not None and r.ratio else None
            if ratio is None and m is not None and b:
                ratio = m / b
            rows.append({
                "run": lab, "run_index": i, "gpu": gpu(run), "frontend": frontend_version(run),
                "probe": r.probe, "variant": r.variant, "size": str(r.size), "mode": r.mode,
                "role": r.role, "status": r.status, "baseline": base, "is_baseline": r.variant == base,
                "median_us": m, "baseline_us": b,
                "above_us": (m - b) if m is not None and b is not None else None,
                "n": len(r.samples), "unit": r.unit, "ratio": 1.0 if r.variant == base and m is not None else ratio,
                "badge": trust.badge(r),
            })
    return pd.DataFrame(rows, columns=[
        "run", "run_index", "gpu", "frontend", "probe", "variant", "size", "mode", "role", "status",
        "baseline", "is_baseline", "median_us", "baseline_us", "above_us", "n", "unit", "ratio", "badge"])
