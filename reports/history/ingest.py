"""Put runs into a store: run files or folders (read with reports.store), or a compact export
(`*.hbx.jsonl.gz`: one line per run, its runs-table row and its figures, no raw samples). The
runs-table row carries the run's machine (start, GPU UUID, identity) and the probes it held.
The committed reference history is such an export (reports/reference/h200/history.hbx.jsonl.gz).
An A/B job folder (`hostbench ab`: ab-job.json and ab.json) among the paths, or inside a folder
named, is read whole first (reports/history/abjobs.py): its sides' runs are stored as runs and its
paired results beside them; a job that cannot be read stores nothing of anything named.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from cudnn_hostbench.bench.measure.runfile import plan_rules
from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run
from cudnn_hostbench.reports import store as runstore
from cudnn_hostbench.reports.history import abjobs, db, where

EXPORT_SUFFIX = ".hbx.jsonl.gz"


@dataclass
class Result:
    stored: list = field(default_factory=list)     # (path, run id)
    already: list = field(default_factory=list)    # (path, run id) stored before
    errors: list = field(default_factory=list)     # one line each
    jobs: list = field(default_factory=list)       # (job folder, what ingest_job stored)


def _export_lines(path: Path) -> Iterable[dict]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunFileError(f"{path}: not a readable history export ({runstore.one_line(e)})") from e


def runs_in(paths: Iterable[str | Path], errors: list) -> Iterator[tuple[str, dict, list]]:
    """(label, runs-table row, figures) of every readable run under `paths`, one at a time;
    each unreadable file adds one line to `errors`."""
    paths = [Path(p) for p in paths]
    exports = [p for p in paths if p.name.endswith(EXPORT_SUFFIX)]
    files, bad = runstore.run_files([p for p in paths if p not in exports])
    errors += [str(e) for e in bad]
    exports += [f for f in files if f.name.endswith(".gz")]
    for f in files:
        if f.name.endswith(".gz"):
            continue
        try:
            run = load_run(f, need_records=True)
            meta = db.run_meta(run, db.file_hash(f))
            meta["source_path"] = str(f.resolve())   # where the file is, whatever folder this ran from
            figs = db.figures_of(run)
        except (RunFileError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
            errors.append(runstore.one_line(str(e) if isinstance(e, RunFileError) else f"{f}: not a run file ({e})"))
            continue
        yield str(f), meta, figs
    for x in exports:
        try:   # the whole export is read before its first run is stored: a cut file stores nothing
            runs = []
            for doc in _export_lines(x):
                meta = dict(doc["run"])
                meta.pop("id", None)
                meta.pop("n_figures", None)
                figs = [db.Figure(**f) for f in doc["figures"]]
                _older_export(meta, figs)
                runs.append((f"{x}:{meta['source_path']}", meta, figs))
        except RunFileError as e:
            errors.append(str(e))
            continue
        except (KeyError, TypeError) as e:
            errors.append(runstore.one_line(f"{x}: malformed history export ({type(e).__name__}: {e})"))
            continue
        yield from runs


def ingest_paths(store: db.Store | Callable[[], db.Store], paths: Iterable[str | Path]) -> Result:
    """Ingests every run file and export under `paths`; unreadable files become one line each,
    the others are still stored (each run atomically). `store` may be a function that opens it:
    it is called at the first readable run, so nothing is made when there is none."""
    res = Result()
    st = store if isinstance(store, db.Store) else None
    job_dirs, paths = abjobs.split(paths)
    jobs = [abjobs.read(j) for j in job_dirs]   # every job whole before anything is stored (JobError)
    for named, job in zip(job_dirs, jobs):
        st = st or store()  # type: ignore[operator]  # not a Store: the opener
        got = st.ingest_job(job)
        res.jobs.append((str(named), got))
        for label, (rid, new) in got["runs"].items():
            (res.stored if new else res.already).append((str(job.sides[label].path), rid))
    if jobs and not paths:
        return res
    for label, meta, figs in runs_in(paths, res.errors):
        st = st or store()  # type: ignore[operator]  # not a Store: the opener
        rid, new = st.ingest(meta, figs)
        (res.stored if new else res.already).append((label, rid))
    return res


def _older_export(meta: dict, figs: list) -> None:
    """An export written before schema 2 has no machine fields, probes or plan rules: its runs get
    an unknown start, the probes of their own figures, and the plan rules their probes declared."""
    meta.setdefault("probes", ",".join(sorted({f.probe for f in figs})))
    version = int(meta.get("measurement_version") or 1)
    for f in figs:
        if not f.plan_rule:
            f.plan_rule = plan_rules.inferred(version, f.probe, f.variant)


DIGITS = 7   # significant digits an export keeps of a figure: 1e-7 relative, far under any row's noise


def _sig(value):
    return float(f"{value:.{DIGITS}g}") if isinstance(value, float) and math.isfinite(value) else value


def _rounded(fig: dict) -> dict:
    """A figure with its numbers cut to DIGITS significant digits (a third of an export's size)."""
    return {k: [_sig(w) for w in v] if k == "workers" else _sig(v) for k, v in fig.items()}


def export(store: db.Store, out: str | Path, gpu: str | None = None) -> int:
    """Writes every run of the store (optionally of one GPU) as a compact export, atomically.
    A run's file is named inside its repository, or not at all: an export is shared, and a path
    on the machine that wrote it means nothing elsewhere."""
    out = Path(out)
    if out.is_dir():
        raise IsADirectoryError(21, "is a folder; name the export file (*.hbx.jsonl.gz)", str(out))
    runs = store.runs(gpu=gpu)
    figs = store.figures([r["id"] for r in runs])
    tmp = out.with_name(out.name + ".part")
    try:
        # mtime 0: the same store exports to the same bytes
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            for r in runs:
                run = {k: v for k, v in r.items() if k != "id"}
                run["source_path"] = where.repo_relative(run.get("source_path") or "")
                doc = {"run": run, "figures": [_rounded(dataclasses.asdict(f)) for f in figs[r["id"]].values()]}
                gz.write((json.dumps(doc, sort_keys=True) + "\n").encode())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)   # never a stray .part beside the export
        raise
    return len(runs)
