"""What a store holds, for a person: `hostbench history list` (one line per run) and
`hostbench history show RUN_ID` (one run in full).

A run's start (boot id/GPU UUID) and physical GPU come from bench/measure/machine.py's fields in
the run's fingerprint. Read from the runs table where it has them, else from the stored info,
else from the run's own file when it is still there with the bytes that were stored; else
'unknown' (runs measured before machine identity was recorded).
"""
from __future__ import annotations

import json
from pathlib import Path

from cudnn_hostbench.bench.measure import machine

from . import db, where

UNKNOWN = "unknown"


def source_file(run: dict) -> Path | None:
    """The run's file on this machine, if the stored path still leads to it."""
    p = run.get("source_path") or ""
    if not p:
        return None
    path = Path(p) if Path(p).is_absolute() else (where.checkout() or Path.cwd()) / p
    return path if path.is_file() else None


def _fingerprint_of(path: Path) -> dict:
    """The fingerprint of a run file (run.json or a partial records.jsonl), {} if unreadable."""
    try:
        if path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    obj = json.loads(line)
                    if isinstance(obj, dict) and obj.get("kind") == "fingerprint":
                        return obj.get("fingerprint") or {}
            return {}
        doc = json.loads(path.read_text(encoding="utf-8"))
        return (doc.get("machine_info") or {}).get("hostbench") or {}
    except (OSError, ValueError, AttributeError):
        return {}


def machine_of(run: dict) -> tuple[str, str]:
    """(start, GPU UUID) of a stored run; 'unknown' for what is not recorded."""
    # columns named after machine.FIELDS (with or without a machine_ prefix), when the schema has them
    cols = {k.removeprefix("machine_"): v for k, v in run.items() if v and k.removeprefix("machine_")
            in (*machine.FIELDS, "start")}
    fps = [{"machine": cols}]
    try:
        fps.append(json.loads(run.get("info_json") or "{}"))
    except ValueError:
        pass
    start = gpu = ""
    for fp in fps:
        if isinstance(fp, dict):
            start, gpu = start or machine.start_of(fp), gpu or machine.gpu_of(fp)
    if not (start and gpu):
        path = source_file(run)
        if path is not None and db.file_hash(path) == run.get("source_hash"):
            fp = _fingerprint_of(path)
            start, gpu = start or machine.start_of(fp), gpu or machine.gpu_of(fp)
    return start or UNKNOWN, gpu or UNKNOWN


def _probes_text(probes: dict[str, int], width: int = 40) -> str:
    text = ",".join(sorted(probes))
    return text if len(text) <= width else f"{len(probes)} probes"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip() for r in [headers, *rows])


def list_text(store: db.Store, gpu: str | None = None) -> str:
    runs = store.runs(gpu=gpu)
    if not runs:
        return f"{store.shown}: holds no runs" + (f" of {gpu}" if gpu else "")
    probes = store.probes()
    rows = []
    for r in runs:
        start, uuid = machine_of(r)
        rows.append([str(r["id"]), r["started_at"][:16].replace("T", " "), r["gpu"], r["history_key"][:8],
                     start, uuid, _probes_text(probes.get(r["id"], {})),
                     f"yes: {r['excluded']}" if r["excluded"] else "no"])
    head = f"{store.shown}: {len(runs)} run(s), oldest first; `hostbench history show ID` for one in full"
    return head + "\n" + _table(["id", "started (UTC)", "GPU", "key", "start (boot/GPU)", "GPU UUID", "probes", "excluded"],
                                rows)


def show_text(store: db.Store, run: dict) -> str:
    start, uuid = machine_of(run)
    try:
        key = json.loads(run.get("key_json") or "{}")
        info = json.loads(run.get("info_json") or "{}")
    except ValueError:
        key, info = {}, {}
    probes = store.probes([run["id"]]).get(run["id"], {})
    path = source_file(run)
    src = run.get("source_path") or ""
    file_line = (where.shown(path) if path else (f"{src} (not on this machine)" if src else "(not recorded)"))
    lines = [
        ("started (UTC)", run["started_at"]),
        ("GPU", f"{run['gpu']}" + (f", {key['sm_count']} SMs" if key.get("sm_count") else "")),
        ("history key", f"{run['history_key']} (runs with this key are one history)"),
        ("versions", f"driver {run['driver']}, CUDA {run['cuda']}, cuDNN {run['cudnn_backend']}, "
                     f"frontend {run['frontend']}, torch {run['torch']}, measurement {run['measurement_version']}"),
        ("start", start),
        ("GPU UUID", uuid),
        ("host", run.get("host") or "(not recorded)"),
        ("commit", run.get("commit_id") or "(not recorded)"),
        ("run file", file_line),
        ("file sha256", run.get("source_hash", "")),
        ("host state", "unstable" if run.get("host_unstable") else "steady"),
        ("figures", f"{run['n_figures']} in {len(probes)} probe(s): "
                    + ", ".join(f"{p} {n}" for p, n in sorted(probes.items()))),
        ("excluded", f"yes: {run['excluded']} (`hostbench history include {run['id']}` takes it back)"
                     if run["excluded"] else "no"),
    ]
    lines += [(k, str(v)) for k, v in sorted(info.items()) if k in ("python", "cpu_model", "workers", "suite_wall_s")]
    w = max(len(k) for k, _ in lines)
    return "\n".join([f"run {run['id']} in {store.shown}", *(f"  {k.ljust(w)}  {v}" for k, v in lines)])
