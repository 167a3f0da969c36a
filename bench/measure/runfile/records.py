"""Result records and run files.

A *record* is one (probe, variant, size, mode) measurement: its per-round samples in `unit`,
status, kernels per call and the round-by-round ratio to the probe's baseline.

A *run file* is the engine's own JSON document (`run_document`, format 3 on; document.py writes it,
this module reads it): its format and version, the environment fingerprint (environment.Fingerprint,
typed when read) and every record with its samples in its unit, measured or not (unsupported,
failed, errored). pytest-benchmark's
JSON (`--benchmark-json`) is an export of it (export.py); run files up to format 2 were that
layout, and load_run reads them as before (run_format.py: what each version changed). While a
run is in progress each record is also appended to a JSON-lines file, so a crash or Ctrl-C keeps
what was measured.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import run_format, stats

# the writing side (document.py), imported from here as it always was
from cudnn_hostbench.bench.measure.runfile.document import FORMAT, JsonlWriter, json_default, run_document, write_run  # noqa: F401
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.marks import MARKS, SHOWN, badge_of

SCHEMA = run_format.VERSION   # the run file's format version (run_format.py: what changed, the migrations)
# What a figure means: bump it when a change makes new runs' figures incomparable with older ones
# (2: trap 2's rows run one plan, issue 20; 3: every call-path probe runs the heuristic's plan, not
# a timing race's, and every eager row stands on at least 3 processes). Every run's fingerprint
# records it; the history store keys on it, so a run is compared only with runs that measured the
# same thing.
MEASUREMENT_VERSION = 3
# An eager figure stands on its worker processes: fewer than MIN_PROCESSES is marked, and the
# verdict widens it by the process component.
MIN_PROCESSES = 3
# Plan rules (a variant's declared way of choosing its plan) that are timing races: their pick may
# differ between GPUs of one model, so a kernel change there is "autotune pick changed"
# (information), never KERNEL CHANGED. Every other rule (the heuristic's index, a named engine)
# gives one plan per GPU model and software stack.
RACE_RULES = ("autotuned", "autotuned by eager", "slowest")
CALL_MODES = ("eager", "graph", "device")   # the per-call timing modes
MODES = (*CALL_MODES, "host")               # plus build-time rows
# seconds per unit: pytest-benchmark stores seconds, records keep the unit they were measured in
UNIT_SECONDS = {"us/call": 1e-6, "us/op": 1e-6, "us/step": 1e-6, "ms": 1e-3, "us": 1e-6}


class RunFileError(ValueError):
    """A run file that cannot be read; the message names the file and what is wrong."""


class NoRecordsError(RunFileError):
    """A readable run file that holds no record (a run that stopped before its first figure)."""


@dataclass
class WorkerFigure(Mapping):
    """One worker process's part of a merged figure. Typed; read as a mapping too (w["median"],
    w.get("ratio")), as records from before it and the reports do."""
    worker: int
    n: int = 0
    median: float | None = None        # the worker's median (µs)
    ratio: float | None = None         # its median paired ratio to the baseline (eager rows with one)
    sentinel_us: float | None = None   # its host-state sentinel over the kept cycles

    def __getitem__(self, key: str):
        if key not in _WORKER_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        if key not in _WORKER_KEYS:
            raise KeyError(key)
        setattr(self, key, value)

    def __iter__(self):
        return iter(_WORKER_KEYS)

    def __len__(self) -> int:
        return len(_WORKER_KEYS)

    @classmethod
    def of(cls, value) -> "WorkerFigure":
        """From its serialized form (a dict; unknown keys ignored), or itself."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise TypeError(f"a worker's figure is not an object: {value!r}"[:120])
        return cls(**{k: value[k] for k in _WORKER_KEYS if k in value})


_WORKER_KEYS = ("worker", "n", "median", "ratio", "sentinel_us")


@dataclass
class Record:
    probe: str
    variant: str
    size: str
    mode: str
    status: str = "ok"
    role: str = ""
    unit: str = "us/call"
    samples: list = field(default_factory=list)
    calls_per_round: int = 0
    kernels_per_call: float | None = None
    kernel_names: list = field(default_factory=list)
    ratio: stats.Summary | None = None   # of the round-by-round ratios to `baseline`
    baseline: str = ""
    label: str = ""
    note: str = ""
    # trust signals (see bench/measure/runfile/trust.py): what was thrown away and how reproducible the figure is
    sentinel_us: float | None = None   # median host-state sentinel over the kept round cycles
    host_state: str = ""               # eager: host state of the kept cycles, 'fast' or 'slow'
    rounds_discarded: dict = field(default_factory=dict)   # reason -> rounds thrown away
    clock_mhz: dict = field(default_factory=dict)          # {"sm_min", "sm_max", "top"} over kept rounds
    workers: list = field(default_factory=list)            # WorkerFigure per worker process (merged records)
    spread: float | None = None        # between-worker spread (max-min)/median of the judged figure
    flags: list = field(default_factory=list)              # trust.FLAGS that apply to this figure
    plan_rule: str = ""                # how the variant's plan is chosen (its declaration); '' = not a cuDNN plan
    plan: str = ""                     # the plan it ran: index and engine/knob name

    def __post_init__(self):
        if isinstance(self.workers, list) and not all(isinstance(w, WorkerFigure) for w in self.workers):
            try:
                self.workers = [WorkerFigure.of(w) for w in self.workers]
            except TypeError:
                pass          # left as read: _bad_field names the malformed field when loading

    @property
    def processes(self) -> int:
        """Worker processes behind the figure (a record of one process lists none)."""
        return len(self.workers) or 1

    @property
    def race(self) -> bool:
        """Its plan is picked by a timing race (autotune), so its kernels may differ per GPU."""
        return self.plan_rule in RACE_RULES

    @property
    def key(self) -> tuple:
        return (self.probe, self.variant, self.size, self.mode)

    @property
    def badge(self) -> str:
        """The figure's trust mark: '' or e.g. '⚑cw' for its trust-lowering flags (marks.py)."""
        return badge_of(self.flags)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.samples)

    def summary(self) -> stats.Summary:
        """Summary of the pooled samples; the median is the median over worker processes when
        the record merges several (the reported figure), else the samples' own median."""
        s = stats.summarize(self.samples)
        meds = [w["median"] for w in self.workers if w.get("median") is not None]
        if s and len(meds) > 1:
            s = s.with_median(statistics.median(meds))
        return s

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Record":
        names = {f.name for f in dataclasses.fields(cls)}
        missing = {k for k in ("probe", "variant", "size", "mode") if data.get(k) is None}
        if missing:
            raise KeyError(f"record lacks {sorted(missing)}")
        # unknown (newer) fields are ignored, absent (older) ones take defaults
        rec = cls(**{k: v for k, v in data.items() if k in names})
        rec.ratio = stats.Summary.from_dict(rec.ratio)
        return rec


@dataclass
class Run:
    path: str
    fingerprint: Fingerprint   # a dict given is typed (Fingerprint.of)
    records: list
    datetime: str = ""
    warnings: list = field(default_factory=list)   # what loading had to skip, for commands to print
    _index: tuple | None = field(default=None, init=False, repr=False, compare=False)   # _indexed()

    def __post_init__(self):
        self.fingerprint = Fingerprint.of(self.fingerprint)

    def mark_counts(self, shown_only: bool = True) -> dict[str, int]:
        """kind -> how many of the run's figures carry it (only the trust-lowering kinds unless
        `shown_only` is False), in MARKS order; kinds no figure carries are left out (marks.py).
        Counted here, on the run, so a renderer reads the count without a second module."""
        kinds = SHOWN if shown_only else tuple(MARKS)
        counts = {k: 0 for k in kinds}
        for r in self.records:
            for k in set(getattr(r, "flags", None) or ()) & set(kinds):
                counts[k] += 1
        return {k: n for k, n in counts.items() if n}

    def find(self, probe, variant, size, mode) -> Record | None:
        """The first record of the row, or None."""
        return self._indexed()[0].get((probe, variant, size, mode))

    def _indexed(self) -> tuple[dict, dict]:
        """({row: its first record}, {(probe, size, mode): its baseline-role variants, in order}):
        made once per list of records (again when the list or its length changes), so a lookup per
        record (the store's figures, compare) is not a scan of every record per record."""
        recs = self.records
        got = self._index
        if got is None or got[0] is not recs or got[1] != len(recs):
            by_key: dict = {}
            baselines: dict = {}
            for r in recs:
                by_key.setdefault(r.key, r)
                if r.role == "baseline":
                    baselines.setdefault((r.probe, r.size, r.mode), []).append(r.variant)
            got = self._index = (recs, len(recs), by_key, baselines)
        return got[2], got[3]

    def baseline_of(self, rec: Record) -> Record | None:
        """The measured record `rec` is judged against: its `baseline` variant, else the variant
        with role 'baseline', else torch_mm, in the same probe/size/mode of this run."""
        names = [rec.baseline] if rec.baseline else []
        names += self._indexed()[1].get((rec.probe, rec.size, rec.mode), [])
        for name in [*names, "torch_mm"]:
            b = self.find(rec.probe, name, rec.size, rec.mode)
            if b is not None and b.ok:
                return b
        return None


_NUMBER_FIELDS = ("spread", "kernels_per_call", "sentinel_us")   # a number or null
_LIST_FIELDS = ("kernel_names", "flags", "workers")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bad_field(rec: Record) -> str | None:
    """'FIELD (value)' of the first field a record cannot hold as it is, or None."""
    def shown(value) -> str:
        return repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
    if not isinstance(rec.samples, list) or not all(map(_is_number, rec.samples)):
        return f"samples ({shown(rec.samples)})"
    for k in _NUMBER_FIELDS:
        if getattr(rec, k) is not None and not _is_number(getattr(rec, k)):
            return f"{k} ({shown(getattr(rec, k))})"
    for k in _LIST_FIELDS:
        if not isinstance(getattr(rec, k), list):
            return f"{k} ({shown(getattr(rec, k))})"
    if rec.ratio is not None and any(v is not None and not _is_number(v) for v in dataclasses.astuple(rec.ratio)):
        return f"ratio ({shown(rec.ratio.to_dict())})"
    for w in rec.workers:
        if not isinstance(w, Mapping) or any(w.get(k) is not None and not _is_number(w[k]) for k in ("median", "ratio")):
            return f"workers ({shown(w)})"
    return None


def _named(rec_or_entry, index: int) -> str:
    """A benchmark as a person finds it: probe/variant/size mode, else its pytest name, else its place."""
    d: dict = rec_or_entry if isinstance(rec_or_entry, dict) else {}
    x: dict = d["extra_info"] if isinstance(d.get("extra_info"), dict) else d
    if all(x.get(k) is not None for k in ("probe", "variant", "size", "mode")):
        return f"{x['probe']}/{x['variant']}/{x['size']} {x['mode']}"
    return str(d.get("name") or f"#{index + 1}")


def _record_from_entry(bench: dict) -> Record:
    if not isinstance(bench.get("extra_info") or {}, dict):
        raise TypeError("field extra_info is not an object")
    extra = dict(bench.get("extra_info") or {})
    params = bench.get("params") or {}
    for k in ("size", "variant", "mode"):
        extra.setdefault(k, params.get(k))
    if not extra.get("probe"):
        # a plain pytest-benchmark entry (not ours): probe from the test name, its param as the
        # variant, and pytest-benchmark's own wall time as an eager figure
        name = bench.get("name", "?")
        extra["probe"] = name.split("[")[0].removeprefix("test_")
        extra["variant"] = extra.get("variant") or bench.get("param") or "-"
        extra["size"] = extra.get("size") or "-"
        extra["mode"] = extra.get("mode") or "eager"
    try:
        rec = Record.from_dict(extra)
    except (TypeError, AttributeError) as e:
        raise TypeError(f"field ratio is not a summary ({e})") from e
    data = (bench.get("stats") or {}).get("data")
    if data:
        if not isinstance(data, list) or not all(map(_is_number, data)):
            raise TypeError("field stats.data holds something that is not a number")
        scale = UNIT_SECONDS.get(rec.unit, 1e-6)
        rec.samples = [x / scale for x in data]
    bad = _bad_field(rec)
    if bad:
        raise TypeError(f"field {bad} is malformed")
    return rec


def load_run(path: str | os.PathLike, need_records: bool = False) -> Run:
    """Loads a run file (pytest-benchmark JSON) or a partial JSON-lines file.

    Raises RunFileError naming the file for anything unreadable; tolerates unknown fields.
    An empty run is valid (a run in progress); `need_records` makes it a NoRecordsError.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RunFileError(f"{path}: cannot read run file ({e.strerror or e})") from e
    if raw[:2] == b"\x1f\x8b" and path.name.endswith(".json.gz"):   # a run file stored compressed
        raw = _gunzip(path, raw)
    elif raw[:2] == b"\x1f\x8b" or path.name.endswith((".hbx.jsonl", ".hbx.jsonl.gz")):   # gzip: an export's
        raise RunFileError(f"{path}: this is a history export, not a run file; use `hostbench history ingest "
                           f"{path}`, then `hostbench history list|check` or `hostbench dashboard --store URL`")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RunFileError(f"{path}: not a run file (not UTF-8 text)") from e
    run = _load_jsonl(path, text) if path.suffix == ".jsonl" else _load_json(path, text)
    if need_records and not run.records:
        raise NoRecordsError(f"no records in {path} (a run that stops before its first figure leaves none)")
    return run


def _gunzip(path: Path, raw: bytes) -> bytes:
    """A compressed run file's bytes (a committed reference run is stored as run.json.gz)."""
    import gzip
    import zlib
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise RunFileError(f"{path}: not a readable gzip file (truncated or corrupt?): {e}") from e


RUN_FILE_NAMES = ("run.json", "run.json.gz")   # a run folder's run file, plain or compressed


def run_file_in(folder: str | os.PathLike) -> Path | None:
    """The run file of a run folder (run.json, else run.json.gz), or None."""
    for name in RUN_FILE_NAMES:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def _load_json(path: Path, text: str) -> Run:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise RunFileError(f"{path}: not valid JSON (truncated or corrupt?) at line {e.lineno}: {e.msg}") from e
    if isinstance(doc, dict) and doc.get("format") == FORMAT:
        return _load_document(path, doc)
    if not isinstance(doc, dict) or "benchmarks" not in doc:
        raise RunFileError(f"{path}: not a pytest-benchmark/hostbench run file (no 'benchmarks' list)")
    _check_schema(path, (doc.get("hostbench") or {}).get("schema") if isinstance(doc.get("hostbench"), dict) else None)
    recs = []
    try:
        fp = (doc.get("machine_info") or {}).get("hostbench") or {}
        for i, b in enumerate(doc["benchmarks"]):
            try:
                recs.append(_record_from_entry(b))
            except (KeyError, TypeError, AttributeError) as e:   # which benchmark, which field
                raise RunFileError(f"{path}: malformed benchmark {_named(b, i)}: {e}") from e
        for u in (doc.get("hostbench") or {}).get("unmeasured", []):
            recs.append(Record.from_dict(u))
    except (KeyError, TypeError, AttributeError) as e:
        raise RunFileError(f"{path}: malformed benchmark entry ({e})") from e
    if not isinstance(fp, dict):
        raise RunFileError(f"{path}: malformed fingerprint (machine_info.hostbench is not an object)")
    return _typed_run(path, fp, (doc.get("hostbench") or {}).get("schema"), recs, doc.get("datetime"))


def _load_document(path: Path, doc: dict) -> Run:
    """The engine's run file (run_document): its fingerprint and records, checked as the older
    layouts are."""
    _check_schema(path, doc.get("schema"))
    fp = doc.get("fingerprint") or {}
    if not isinstance(fp, dict):
        raise RunFileError(f"{path}: malformed fingerprint (field fingerprint is not an object)")
    entries = doc.get("records")
    if not isinstance(entries, list):
        raise RunFileError(f"{path}: malformed run file (field records is not a list)")
    recs = [_document_record(path, d, i) for i, d in enumerate(entries)]
    return _typed_run(path, fp, doc.get("schema"), recs, doc.get("datetime"))


def _typed_run(path: Path, fingerprint: dict, schema, recs: list, datetime, warnings: list | None = None) -> Run:
    """The Run of a file's raw fingerprint and records, in every layout: the fingerprint checked,
    migrated from its schema and typed; the run's time the file's own, else the fingerprint's."""
    _check_fingerprint(path, fingerprint)
    fingerprint = run_format.migrate(fingerprint, schema)
    return Run(str(path), Fingerprint.from_dict(fingerprint), recs, str(datetime or fingerprint.get("datetime", "")),
               warnings or [])


def _document_record(where: str | Path, data, index: int) -> Record:
    """One record of a run file (`where`: the file, or its line); a malformed one is one line naming
    it and its field."""
    try:
        rec = Record.from_dict(data)
        bad = _bad_field(rec)
    except (KeyError, TypeError, AttributeError) as e:
        if not isinstance(data, dict) or isinstance(e, KeyError):
            raise RunFileError(f"{where}: malformed record {_named(data, index)} ({e})") from e
        bad = f"ratio ({e})"    # an object that from_dict cannot type: its ratio summary
    if bad:
        raise RunFileError(f"{where}: malformed record {_named(data, index)}: field {bad} is malformed")
    return rec


def fingerprint_in(doc) -> object:
    """The fingerprint object of a run file's parsed JSON, in either layout (None if it has none)."""
    if not isinstance(doc, dict):
        return None
    if doc.get("format") == FORMAT:
        return doc.get("fingerprint")
    info = doc.get("machine_info")
    return info.get("hostbench") if isinstance(info, dict) else None


# fingerprint fields the reports compute with (a dotted name: inside an object), and each one's type
_FP_TYPES = {"workers": int, "host_state": dict, "focus_workers": dict, "focus_workers.workers": int, "top_ups": list,
             "worker_wall_s": list, "worker_startup_s": list, "worker_table": list, "build_s": dict,
             "plans_s": dict}
_TYPE_NAMES = {int: "an integer", dict: "an object", list: "a list"}


def _check_fingerprint(path: Path, fingerprint: dict) -> None:
    """A fingerprint field the reports compute with, of the wrong type, is a malformed file: one
    line naming it, not a traceback in whatever report reads it first."""
    for k, t in _FP_TYPES.items():
        head, _, tail = k.partition(".")
        v = fingerprint.get(head)
        if tail:
            v = v.get(tail) if isinstance(v, dict) else None
        if v is not None and (not isinstance(v, t) or isinstance(v, bool)):
            raise RunFileError(f"{path}: malformed fingerprint (field {k} is not {_TYPE_NAMES[t]})")


def _check_schema(path: Path, schema) -> None:
    """A run file written by a newer harness may mean its fields differ: refuse it in one line
    rather than misread it. No schema (a plain pytest-benchmark file, an older run) loads."""
    if schema is None:
        return
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise RunFileError(f"{path}: malformed schema version {schema!r}")
    if schema > SCHEMA:
        raise RunFileError(f"{path}: written by a newer cudnn-hostbench (run-file schema {schema}; this one reads "
                           f"up to {SCHEMA}): upgrade cudnn-hostbench to read it")


def _load_jsonl(path: Path, text: str) -> Run:
    fp: dict
    recs: list
    fp, recs, warnings = {}, [], []
    lines = text.splitlines()
    last = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if i == last:  # a last line cut off by a crash: keep everything before it, and say so
                warnings.append(f"{path}:{i}: last line is cut off (a crash mid-write?); "
                                f"kept the {len(recs)} record(s) before it")
                break
            raise RunFileError(f"{path}:{i}: corrupt line ({e.msg})") from e
        if not isinstance(obj, dict):
            raise RunFileError(f"{path}:{i}: not a run-file line (expected a JSON object)")
        try:
            if obj.get("kind") == "fingerprint":
                fp = obj.get("fingerprint") or {}
                if not isinstance(fp, dict):
                    raise TypeError("fingerprint is not an object")
                _check_schema(path, fp.get("schema"))
            elif obj.get("kind") == "record":
                recs.append(_document_record(f"{path}:{i}", obj["record"], i))
        except (KeyError, TypeError, AttributeError) as e:
            raise RunFileError(f"{path}:{i}: malformed {obj.get('kind')} line ({e})") from e
    by_key = {}
    for r in recs:   # a row written again (a retried measurement) replaces its earlier line
        by_key[r.key] = r
    return _typed_run(path, fp, fp.get("schema"), list(by_key.values()), None, warnings)
