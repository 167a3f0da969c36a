"""A/B job folders (`hostbench ab`) as the store reads them: a folder holding ab-job.json and
ab.json is a job; its sides' merged runs (sides/LABEL.json) go into the store as ordinary runs, and
its paired results (ab.json: per comparison, per row) into hb_ab_rows (schema.py).

A job is read and checked whole before anything is stored: a corrupt ab.json, a folder without
one, a side's run file that does not load is a JobError (one line), and nothing of it is stored.
Its identity is the sha256 of its ab.json: the same job ingested twice is stored once (a job
resumed with more pairs and judged again is another job).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from cudnn_hostbench.bench.measure.runfile.records import Run, RunFileError, load_run
from cudnn_hostbench.bench.measure.workers.interleave import side_file

JOB_FILE, RESULT_FILE = "ab-job.json", "ab.json"
VERDICTS = ("SLOWER", "FASTER", "KERNEL CHANGED", "SAME", "UNSURE")
MOVED = ("SLOWER", "FASTER", "KERNEL CHANGED")


class JobError(Exception):
    """One line: which job folder, what is wrong with it."""


@dataclass
class Side:
    label: str
    frontend: str = ""
    cudnn: str = ""
    run: Run | None = None      # its sides/LABEL.json, loaded (None: no process of it finished)
    path: Path | None = None
    source_hash: str = ""


@dataclass
class Job:
    path: Path
    job_hash: str               # sha256 of ab.json
    started_at: str
    gpu: str
    sides: dict = field(default_factory=dict)        # label -> Side
    comparisons: list = field(default_factory=list)  # ab.json's comparisons

    def rows(self) -> list[dict]:
        """hb_ab_rows' rows of the job (without row ids and run ids): one per comparison and row."""
        out = []
        for c in self.comparisons:
            side, ref = self.sides.get(c["side"]) or Side(c["side"]), self.sides.get(c["reference"]) or Side(c["reference"])
            for r in c["rows"]:
                low, high = (list(r.get("interval") or []) + [None, None])[:2]
                out.append(dict(
                    key=(str(r["probe"]), str(r["variant"]), str(r["size"]), str(r["mode"])),
                    job_hash=self.job_hash, job_path=str(self.path), started_at=self.started_at, gpu=self.gpu,
                    side=side.label, side_frontend=side.frontend, side_cudnn=side.cudnn,
                    reference=ref.label, reference_frontend=ref.frontend, reference_cudnn=ref.cudnn,
                    judged_on=str(c.get("judged_on") or ""), job_pairs=int(c.get("pairs") or 0),
                    cls=str(r.get("class") or ""), verdict=str(r["verdict"]), change=_num(r.get("change")),
                    low=_num(low), high=_num(high), mdc=_num(r.get("mdc")), pairs=int(r.get("pairs") or 0),
                    pairs_dropped=int(r.get("pairs_dropped") or 0),
                    more_pairs=None if r.get("more_pairs") is None else int(r["more_pairs"]),
                    q=_num(r.get("q")), on_ratio=bool(r.get("on_ratio")), level_us=_num(r.get("level_us"))))
        return out


def _num(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def is_job(path: Path) -> bool:
    """A folder that holds ab-job.json or ab.json: an A/B job (whole or not)."""
    return path.is_dir() and ((path / JOB_FILE).is_file() or (path / RESULT_FILE).is_file())


def split(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path]]:
    """(the job folders among `paths` and inside the folders named, the other paths to scan for
    runs). A folder holding a job lower down is opened up: its job folders go to the first list,
    everything else in it to the second, so no process file of a job is read as a run."""
    from cudnn_hostbench.reports import store as runstore
    jobs: list[Path] = []
    rest: list[Path] = []

    def walk(path: Path) -> None:
        if is_job(path):
            jobs.append(path)
            return
        if not path.is_dir() or not any(is_job(f.parent) for f in path.rglob("ab*.json")):
            rest.append(path)
            return
        rest.extend(runstore.runs_among(path.iterdir()))
        for d in sorted(x for x in path.iterdir() if x.is_dir()):
            walk(d)
    for p in map(Path, paths):
        walk(p)
    return jobs, rest


def _read_files(path: Path, shown: str) -> tuple[bytes, object]:
    """The result file's bytes and document, the job file read as JSON too; JobError when either
    is missing or corrupt."""
    if not (path / RESULT_FILE).is_file():
        raise JobError(f"{shown}: an A/B job folder without {RESULT_FILE} (not judged yet: `hostbench ab "
                       f"--resume {shown}` finishes it); nothing stored")
    if not (path / JOB_FILE).is_file():
        raise JobError(f"{shown}: {RESULT_FILE} without {JOB_FILE}: not an A/B job folder; nothing stored")
    try:
        raw = (path / RESULT_FILE).read_bytes()
        doc = json.loads(raw.decode("utf-8"))
        json.loads((path / JOB_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise JobError(f"{shown}: a corrupt A/B job ({type(e).__name__}: {e}); nothing stored") from e
    return raw, doc


def _check_rows(comparison: dict) -> None:
    """Every row of a comparison names its row and a known verdict, its figures numbers or none."""
    for row in comparison["rows"]:
        for k in ("probe", "variant", "size", "mode", "verdict"):
            if k not in row:
                raise KeyError(k)
        if row["verdict"] not in VERDICTS:
            raise ValueError(f"verdict {row['verdict']!r}")
        for k in ("change", "mdc", "q", "level_us"):
            _num(row.get(k))


def _parse(doc) -> tuple[dict, list]:
    """(sides by label, comparisons) of a result document; KeyError, TypeError, ValueError or
    AttributeError where it is not one."""
    if not isinstance(doc, dict) or doc.get("kind") != "hostbench ab":
        raise ValueError(f"{RESULT_FILE} is not a `hostbench ab` result")
    sides = {}
    for side in doc["sides"]:
        sides[str(side["label"])] = Side(str(side["label"]), str(side.get("frontend") or ""),
                                         str(side.get("cudnn") or ""))
    comparisons = list(doc["comparisons"])
    for comparison in comparisons:
        if comparison["side"] not in sides or comparison["reference"] not in sides:
            raise ValueError(f"comparison {comparison['side']} against {comparison['reference']}: "
                             "a side the job does not list")
        _check_rows(comparison)
    return sides, comparisons


def _load_sides(path: Path, sides: dict) -> None:
    """Each side's run, from its file where one finished; JobError when one does not load."""
    for side in sides.values():
        file = side_file(path, side.label)
        if not file.is_file():
            continue     # no process of this side finished: its results name no run
        try:
            side.run = load_run(file, need_records=True)
            side.path, side.source_hash = file, hashlib.sha256(file.read_bytes()).hexdigest()
        except (RunFileError, OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise JobError(f"{file}: side {side.label}'s run does not load ({type(e).__name__}: {e}); "
                           "nothing of the job stored") from e


def read(path: str | Path) -> Job:
    """The job in folder `path`, read and checked whole; JobError (one line) when it cannot be used."""
    path = Path(path)
    shown = str(path)
    raw, doc = _read_files(path, shown)
    try:
        sides, comparisons = _parse(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        what = f"missing {e}" if isinstance(e, KeyError) else str(e)
        raise JobError(f"{shown}: a corrupt {RESULT_FILE} ({what}); nothing stored") from e
    _load_sides(path, sides)
    runs = [s.run for s in sides.values() if s.run is not None]
    gpu = next((str(r.fingerprint.gpu_name) for r in runs if r.fingerprint.gpu_name), "unknown GPU")
    when = sorted(str(r.datetime or r.fingerprint.datetime or "") for r in runs)
    started = next((w for w in when if w), "") or _dt.datetime.fromtimestamp(
        (path / RESULT_FILE).stat().st_mtime, _dt.timezone.utc).isoformat(timespec="seconds")
    return Job(path.resolve(), hashlib.sha256(raw).hexdigest(), started, gpu, sides, comparisons)
