"""What a store holds, for a person: `hostbench history list` (one line per run) and
`hostbench history show RUN_ID` (one run in full).

A run's start (boot id/GPU UUID) and physical GPU come from bench/measure/runfile/machine.py's fields in
the run's fingerprint. Read from the runs table where it has them, else from the stored info,
else from the run's own file when it is still there with the bytes that were stored; else
'unknown' (runs measured before machine identity was recorded).
"""
from __future__ import annotations

import json
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import machine
from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.records import fingerprint_in
from cudnn_hostbench.reports import fit
from cudnn_hostbench.reports.history import db, where

UNKNOWN = "unknown"


def source_file(run: dict) -> Path | None:
    """The run's file on this machine, if the stored path still leads to it."""
    p = run.get("source_path") or ""
    if not p:
        return None
    path = Path(p) if Path(p).is_absolute() else (where.checkout() or Path.cwd()) / p
    return path if path.is_file() else None


def _fingerprint_of(path: Path) -> Fingerprint:
    """The fingerprint of a run file (run.json or a partial records.jsonl), empty if unreadable."""
    try:
        if path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    obj = json.loads(line)
                    if isinstance(obj, dict) and obj.get("kind") == "fingerprint":
                        return Fingerprint.of(obj.get("fingerprint") or {})
            return Fingerprint.of({})
        return Fingerprint.of(fingerprint_in(json.loads(path.read_text(encoding="utf-8"))) or {})
    except (OSError, ValueError, TypeError, AttributeError):
        return Fingerprint.of({})


def machine_of(run: dict) -> tuple[str, str]:
    """(start, GPU UUID) of a stored run; 'unknown' for what is not recorded."""
    # columns named after machine.FIELDS (with or without a machine_ prefix), when the schema has them
    cols = {k.removeprefix("machine_"): v for k, v in run.items() if v and k.removeprefix("machine_")
            in (*machine.FIELDS, "start")}
    fps = [Fingerprint.of({"machine": cols})]
    try:
        info = json.loads(run.get("info_json") or "{}")
        if isinstance(info, dict):
            fps.append(Fingerprint.of(info))
    except ValueError:
        pass
    start = gpu = ""
    for fp in fps:
        start, gpu = start or fp.start, gpu or fp.gpu_uuid
    if not (start and gpu):
        path = source_file(run)
        if path is not None and db.file_hash(path) == run.get("source_hash"):
            fp = _fingerprint_of(path)
            start, gpu = start or fp.start, gpu or fp.gpu_uuid
    return start or UNKNOWN, gpu or UNKNOWN


def _probes_text(probes: dict[str, int], width: int = 40) -> str:
    text = ",".join(sorted(probes))
    return text if len(text) <= width else f"{len(probes)} probes"


def _start_heading(start: str, uuid: str) -> str:
    """The heading of a start's runs: its boot id and physical GPU once (not on every row)."""
    if start == UNKNOWN:
        return "start unknown (measured before machine identity was recorded)" + (
            f" · GPU {uuid}" if uuid != UNKNOWN else "")
    boot, sep, gpu = start.partition("/")
    if sep and gpu == uuid:
        return f"start boot {boot} · GPU {uuid}"
    return f"start {start}" + (f" · GPU {uuid}" if uuid != UNKNOWN and uuid not in start else "")


def list_text(store: db.Store, gpu: str | None = None, width: int | None = None) -> str:
    """One line per run, oldest first, under a heading per start (boot id and GPU UUID, said once);
    fits `width` (default $COLUMNS or the terminal): the probe names give way to their count, then
    an exclusion's reason to a numbered note."""
    width = fit.term_width() if width is None else width
    runs = store.runs(gpu=gpu)
    if not runs:
        return f"{store.shown}: holds no runs" + (f" of {gpu}" if gpu else "")
    probes = store.probes()
    names = sorted({r["gpu"] for r in runs})
    machines = [machine_of(r) for r in runs]
    head = fit.wrap(f"{store.shown}: {len(runs)} run(s)" + (f" of {names[0]}" if len(names) == 1 else "")
                    + ", oldest first; `hostbench history show ID` for one in full", width)

    def layout(level: int) -> tuple[list[str], list[str]]:
        notes: list[str] = []
        rows = []
        for r in runs:
            why = r["excluded"]
            if why and level >= 2:
                notes.append(f"[{len(notes) + 1}] run {r['id']} excluded: {why}")
            rows.append([str(r["id"]), r["started_at"][:16].replace("T", " "), *([r["gpu"]] if len(names) > 1 else []),
                         r["history_key"][:8], _probes_text(probes.get(r["id"], {}), 40 if level == 0 else 0),
                         (f"yes [{len(notes)}]" if level >= 2 else f"yes: {why}") if why else "no"])
        cols = ["id", "started (UTC)", *(["GPU"] if len(names) > 1 else []), "key", "probes", "excluded"]
        grid = fit.grid(cols, rows, right=[0])
        lines, last = grid[:2], None
        for (start, uuid), line in zip(machines, grid[2:]):
            if (start, uuid) != last:
                last = (start, uuid)
                lines += fit.wrap(_start_heading(start, uuid), width)
            lines.append(line)
        return lines, [x for n in notes for x in fit.wrap(n, width)]
    _, (lines, notes) = fit.first_fit(map(layout, range(3)), width, key=lambda x: x[0])
    return "\n".join([*head, *fit.cut(lines, width), *notes])


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


def figures_frame(figs):
    """A stored run's figures (db.Figure) as the table's frame (reports/table.build_table's
    columns), so `history show ID --figures` renders the table from the store alone: medians in
    each row's unit, the eager ratio to the baseline where the figure was judged on it (the store
    keeps no round-by-round ratios of the other modes, nor kernels per call), the marks, the
    range over worker processes."""
    rows: dict[tuple, dict] = {}
    for fig in figs:
        _add_figure(rows, fig)
    return _frame_of(list(rows.values()))


def _add_figure(rows: dict, fig) -> None:
    """One stored figure into its (probe, variant, size) row: its marks, its mode's median, ratio,
    badge and worker range, the first status that is not ok."""
    from cudnn_hostbench.bench.measure.runfile import trust
    from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES, UNIT_SECONDS, Record

    key = (fig.probe, fig.variant, fig.size)
    row = rows.setdefault(key, {"probe": fig.probe, "variant": fig.variant, "size": fig.size, "role": fig.role,
                                "unit": fig.unit, "status": "ok", "label": "", "baseline": "", "flags": ""})
    flags = [x for x in (fig.flags or "").split(",") if x]
    if flags:
        row["flags"] = "; ".join(x for x in (row["flags"], f"{fig.mode}: {','.join(flags)}") if x)
    scale = 1e-6 / UNIT_SECONDS.get(fig.unit, 1e-6)   # µs back to the row's unit
    ok = fig.status == "ok" and fig.median_us is not None
    mode = fig.mode if fig.mode in (*CALL_MODES, "host") else None
    if mode is None:
        return
    row[mode] = fig.median_us * scale if ok else None
    row[f"{mode}_badge"] = trust.badge(Record(fig.probe, fig.variant, fig.size, fig.mode, flags=flags))
    if mode == "host":
        row["unit"] = fig.unit
    else:
        _add_call_mode(row, fig, mode, ok, scale)
    if not ok and row["status"] == "ok":
        row["status"] = f"{fig.mode}: {fig.status}"


def _add_call_mode(row: dict, fig, mode: str, ok: bool, scale: float) -> None:
    """A call mode's ratio, baseline and range over worker processes."""
    row[f"{mode}_ratio"] = fig.value if ok and fig.on_ratio else float("nan")
    if fig.baseline and fig.on_ratio:
        row["baseline"] = fig.baseline
    meds = [w * scale for w in fig.workers] if ok and not fig.on_ratio else []
    row[f"{mode}_wmin"], row[f"{mode}_wmax"] = (min(meds), max(meds)) if len(meds) > 1 else (None, None)


def _frame_of(rows: list[dict]):
    """The rows as the table's frame, every column it reads present."""
    import pandas as pd

    from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES
    nan = float("nan")
    df = pd.DataFrame(rows)
    for col in [*CALL_MODES, *(f"{m}_ratio" for m in CALL_MODES), "kernels_per_call", "host"]:
        if col not in df:
            df[col] = nan
    for col in [f"{m}_badge" for m in (*CALL_MODES, "host")]:
        df[col] = df[col].fillna("") if col in df else ""
    df["host_overhead"] = df["eager"] - df["device"]
    return df


def figures_text(store: db.Store, run: dict, width: int | None = None, wide: bool = False) -> str:
    """`history show ID --figures`: the run's table rendered from the store (the run's file may be
    gone): what the store keeps of it, with the table's marks."""
    from cudnn_hostbench.reports import table
    figs = list(store.figures([run["id"]]).get(run["id"], {}).values())
    if not figs:
        return f"run {run['id']}: no figures stored"
    width = fit.term_width() if width is None else width
    head = fit.wrap(f"run {run['id']} from {store.shown} ({run['started_at'][:19]}, {run['gpu']}, frontend "
                    f"{run['frontend']}): ×base only where the eager figure was judged on its ratio to the "
                    "baseline (the store keeps no ratio spread, nor kernels per call)", width)
    return "\n".join([*head, table.render_text(figures_frame(figs), width, wide=wide)])
