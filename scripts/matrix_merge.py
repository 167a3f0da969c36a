"""The version matrix's merge (`hostbench matrix`, scripts/version_matrix.py): matrix.md from the
parts' run files, and the matrix.json files of earlier or split matrices read back.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from cudnn_hostbench.reports import fmt, store


def pivot(frame, value: str, labels: list[str]):
    """Rows (probe, variant, mode, size), one column of `value` per version label."""
    t = frame.pivot_table(index=["probe", "variant", "mode", "size"], columns="run", values=value,
                          aggfunc="median", sort=False)
    return t[[c for c in labels if c in t.columns]]


def frame_md(frame) -> str:
    rows = [[*idx, *(fmt.num(v, 2, "-") for v in vals)] for idx, vals in zip(frame.index, frame.values)]
    return fmt.md_table(["probe", "variant", "mode", "size", *frame.columns], rows)


def merge(out: Path, entries: list[dict], dashboard: str | None = None):
    """Loads the ok runs, writes matrix.md; returns the median µs table (or None without pandas)."""
    status = fmt.md_table(["version", "status", "seconds", "imported", "detail"],
                      [[e["label"], e["status"], e.get("seconds", ""), e.get("imported", ""),
                        (e.get("detail") or "")[-300:]] for e in entries])
    text = ["# nvidia-cudnn-frontend version matrix", "", status, ""]
    path = {e["label"]: Path(e.get("path") or out / e["run_file"]) for e in entries}
    files = [path[e["label"]] for e in entries if e["status"] == "ok"]
    try:
        import pandas  # noqa: F401
        import scipy  # noqa: F401
    except ImportError as e:
        text += [f"Merge skipped ({e}); run `hostbench matrix --merge-only --out {out}` "
                 "where pandas and scipy are installed."]
        (out / "matrix.md").write_text("\n".join(text) + "\n", encoding="utf-8")
        return None
    from cudnn_hostbench.reports.judge import compare

    runs, errors = store.load_runs(files)
    by_path = {str(p): label for label, p in path.items()}
    runs = [r for r in runs if r.path in by_path]
    runs.sort(key=lambda r: store.version_key(by_path[r.path]))
    labels = [by_path[r.path] for r in runs]
    text += [f"- could not load: {e}" for e in errors]
    if not runs:
        (out / "matrix.md").write_text("\n".join(text + ["No run to merge."]) + "\n", encoding="utf-8")
        return None
    frame = store.records_frame(runs, labels)
    med = pivot(frame, "median_us", labels)
    above = pivot(frame[~frame.is_baseline], "above_us", labels)
    text += ["## Median µs per call (per op / step where the unit says so)", "", frame_md(med), "",
             "## µs above the baseline (torch_mm), same mode and size", "", frame_md(above), ""]
    from cudnn_hostbench.reports import pack_cost
    text += pack_cost.matrix_section(runs, labels)   # µs per extra pack tensor, per version
    changes = []
    for (la, a), (lb, b) in zip(zip(labels, runs), list(zip(labels, runs))[1:]):
        df = compare.compare(a, b)
        for r in df[df.verdict.isin(["SLOWER", "FASTER"])].itertuples(index=False):
            changes.append([f"{la} → {lb}", r.probe, r.variant, r.mode, r.size,
                            f"{r.base:.2f}", f"{r.new:.2f}", f"{r.change * 100:+.1f}%", r.verdict])
    gone = frame[frame.median_us.isna()]
    if not gone.empty:
        text += ["## Not measured", "", fmt.md_table(["version", "probe", "variant", "mode", "size", "status"],
                 gone[["run", "probe", "variant", "mode", "size", "status"]].values.tolist()), ""]
    text += ["## Verdicts from one version to the next (SLOWER/FASTER only; `hostbench compare` rule)", "",
             fmt.md_table(["versions", "probe", "variant", "mode", "size", "before", "after", "change", "verdict"],
                      changes) if changes else "No significant change between neighbouring versions.", ""]
    text += calls_section(labels) + paired_section(out)
    (out / "matrix.md").write_text("\n".join(text), encoding="utf-8")
    if dashboard:
        from cudnn_hostbench.reports.dashboard import site as dash
        dash.build(runs, dashboard, errors, order="version", title="nvidia-cudnn-frontend version matrix")
    return med


def calls_section(labels: list[str]) -> list[str]:
    """Which frontend calls (the probes of bench/cudnn_graphs/calls.py) each version has, by the
    first version that has it."""
    from cudnn_hostbench.bench.cudnn_graphs.calls import CALLS
    if not labels:
        return []
    rows = [[c.name, c.since, *("yes" if store.version_key(lb.split("+")[0]) >= store.version_key(c.since) else "no"
                                for lb in labels)] for c in CALLS.values()]
    return ["## Calls and the frontend versions that have them", "", fmt.md_table(["call", "since", *labels], rows), ""]


def paired_section(out: Path) -> list[str]:
    """The interleaved job's moved rows against its reference (OUT/ab/ab.json), if the matrix ran one."""
    try:
        doc = json.loads((out / "ab" / "ab.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    text = ["## Paired verdicts against the reference (one interleaved job: ab/ab.md)", ""]
    for c in doc.get("comparisons", []):
        moved = sorted((r for r in c.get("rows", []) if r.get("verdict") in ("SLOWER", "FASTER", "KERNEL CHANGED")),
                       key=lambda r: -abs(r.get("change") or 0.0))
        counts = ", ".join(f"{k} {v}" for k, v in sorted((c.get("counts") or {}).items()))
        text += [f"{c.get('side')} against {c.get('reference')}: {c.get('pairs')} pair(s); {counts}", ""]
        if moved:
            text += [fmt.md_table(["verdict", "probe", "variant", "mode", "size", "change", "MDC"],
                                  [[r["verdict"], r["probe"], r["variant"], r["mode"], r["size"],
                                    "–" if r.get("change") is None else f"{r['change'] * 100:+.1f}%",
                                    "–" if r.get("mdc") is None else f"{r['mdc'] * 100:.1f}%"] for r in moved]), ""]
    return text


def read_matrices(folders) -> dict[Path, dict | None]:
    """Each folder's matrix.json (None where it has none), read once; ValueError in one line for a
    folder that does not exist or a matrix.json that is not JSON."""
    docs = {}
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise ValueError(f"--from {folder}: no such folder")
        mj = folder / "matrix.json"
        try:
            docs[folder] = json.loads(mj.read_text(encoding="utf-8")) if mj.exists() else None
        except (OSError, ValueError) as e:
            raise ValueError(f"{mj}: not a readable matrix.json ({e})") from None
        doc = docs[folder]
        if doc is not None and not (isinstance(doc, dict) and isinstance(doc.get("versions"), list) and all(
                isinstance(e, dict) and {"label", "run_file"} <= set(e) for e in doc["versions"])):
            raise ValueError(f"{mj}: not a matrix.json (no 'versions' list of entries with a label and run_file)")
    return docs


def entries_for_merge(docs: dict[Path, dict | None]) -> list[dict]:
    """matrix.json's entries, plus run-*.json files it does not list, from each folder; a later
    folder's entry for the same label wins (a re-run of one version)."""
    found: dict[str, dict] = {}
    for folder, doc in docs.items():
        entries = list(doc["versions"]) if doc else []
        known = {e["run_file"] for e in entries}
        for f in sorted(folder.glob("run-*.json")):
            if f.name not in known:
                m = re.match(r"run-fe(.+)\.json$", f.name)
                v = m.group(1).replace("-cudnn", "+cudnn") if m else f.stem
                entries.append({"version": v, "label": v, "run_file": f.name, "status": "ok", "detail": "found"})
        for e in entries:
            found[e["label"]] = {**e, "path": str(folder / e["run_file"])} if e.get("run_file") else e
    return sorted(found.values(), key=lambda e: store.version_key(e["label"]))


def shared_settings(docs: dict[Path, dict | None]) -> dict:
    """pytest_args and python of the merged matrices, where every one of them agrees (a split
    matrix is one measurement only if its parts ran the same suite)."""
    if not all(docs.values()):
        return {}
    first, *_ = docs.values()
    return {k: first[k] for k in ("pytest_args", "python") if all(k in d and d[k] == first[k] for d in docs.values())}
