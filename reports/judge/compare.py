"""`hostbench compare BASE NEW`: per-benchmark verdicts between two runs, for people and CI.

It is the history check's verdict model (reports/verdict, docs/history.md "The model") with a
history of one run: the new run judged against the base. What one run cannot say of the noise
(between starts, the tails) comes from the store prior (the committed H200 history for an H200,
a wider generic one otherwise); the processes' spread comes from the two runs' own workers. Two
runs of one machine start are judged on the same-GPU scale, others on the fleet's. Rows in one
run only are ADDED / REMOVED; rows without samples on a side are UNMEASURED with their statuses in
`note`; a slower row on other kernels is KERNEL CHANGED (a regression under --fail-on-regression
unless --allow-kernel-change). A kernel, block or machine shift is a finding: between runs whose
versions differ it is a change of that version (a regression when slower), never "this GPU".

Eager rows with a baseline are judged on their paired ratio to it (`absolute`: on µs); with
`normalize` graph and device rows too, worker by worker, so a slower host or clock cancels out.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import textwrap

from cudnn_hostbench.bench.measure.runfile.records import MIN_PROCESSES, UNIT_SECONDS, Record, Run
from cudnn_hostbench.reports import fit, fmt
from cudnn_hostbench.reports.history import db, ratios
from cudnn_hostbench.reports.verdict import calibrate, decide, judge

# fingerprint fields that describe the run itself (or are measurements), not the environment
NOT_ENV = {"datetime", "commit_info", "argv", "suite_wall_s", "wall_s", "calibration_us", "build_s", "plans_s", "time_s"}
# shown first when they differ: the ones most likely to explain a change
KEY_FIELDS = ("gpu_name", "sm_count", "driver", "cuda", "cudnn_backend", "cudnn_torch",
              "cudnn_frontend", "torch", "python", "cpu_model", "clock_source", "cudnn_env", "options")
COLUMNS = ["probe", "variant", "size", "mode", "unit", "base", "new", "change", "p",
           "n_base", "n_new", "verdict", "note", "base_abs", "new_abs", "raw_change", "adjusted_by"]
# `change` is the figure the verdict judged: the new figure against the base's, net of the new run's
# structure (its machine factor, kernel, block and host terms: docs/history.md "The model") where
# `adjusted_by` names any; `raw_change` is the printed figures' own change (new / base - 1)


def normalized(run: Run, rec: Record) -> list[float] | None:
    """`rec`'s samples over its baseline's, paired by round when the rounds align."""
    b = run.baseline_of(rec)
    if b is None:
        return None
    if len(b.samples) == len(rec.samples):
        return [x / y for x, y in zip(rec.samples, b.samples) if y and y > 0]
    med = statistics.median(b.samples)
    return [x / med for x in rec.samples] if med > 0 else None


KEY_VERSIONS = ("driver", "cuda", "cudnn_backend", "frontend", "torch")   # of a run's history key
CUDNN_ONLY = {"cudnn_backend", "frontend"}    # versions that never reach torch's own kernels


def machines(base: Run, new: Run) -> dict:
    """Where the two runs ran: their starts and GPUs, and whether they share them ('' = unknown)."""
    fa, fb = base.fingerprint, new.fingerprint
    sa, sb, ga, gb = fa.start, fb.start, fa.gpu_uuid, fb.gpu_uuid
    return {"base_start": sa, "new_start": sb, "same_start": bool(sa and sa == sb),
            "same_gpu": bool(ga and ga == gb) or bool(sa and sa == sb),
            "cross_start": bool(sa and sb and sa != sb)}


def _absolute(run: Run, figs: list) -> list:
    """Eager ratio figures back in µs (each worker's median)."""
    recs = {(r.probe, r.variant, str(r.size), r.mode): r for r in run.records}
    out = []
    for f in figs:
        rec = recs.get(f.row)
        if f.on_ratio and rec is not None:
            ws = [w["median"] * UNIT_SECONDS.get(rec.unit, 1e-6) / 1e-6 for w in rec.workers if w.get("median") is not None]
            f = dataclasses.replace(f, on_ratio=False, value=f.median_us, workers=ws)
        out.append(f)
    return out


def _times(value: float | None, factor: float) -> float:
    return float("nan") if value is None else value * factor


def _judged_run(base: Run, new: Run, alpha: float, normalize: bool, absolute: bool):
    """The verdict model's judgement of `new` against `base`: (its judgement, the figures by run
    (1: base, 2: new), the key versions that differ)."""
    where = machines(base, new)
    base_figs, new_figs = db.figures_of(base), db.figures_of(new)
    if absolute:
        base_figs, new_figs = _absolute(base, base_figs), _absolute(new, new_figs)
    figs = {1: {f.row: f for f in base_figs}, 2: {f.row: f for f in new_figs}}
    if normalize:
        figs = ratios.paired(figs)
    base_meta, new_meta = dict(db.run_meta(base, ""), id=1), dict(db.run_meta(new, ""), id=2)
    if not where["same_start"]:    # one run is no start of the other's: a GPU new to it
        base_meta["start"], new_meta["start"], base_meta["gpu_uuid"], new_meta["gpu_uuid"] = "base", "new", "", ""
    judgement = judge.judge_run(new_meta, [base_meta], [], figs, prior=calibrate.load(base_meta["gpu"]), fdr=alpha,
                                 min_own=1)
    versions = [k for k in KEY_VERSIONS if base_meta.get(k) != new_meta.get(k)]
    for finding in judgement.findings:
        if finding.status and versions:
            finding.status = (f"a change of {', '.join(versions)}"
                              + (" (a regression)" if finding.change > 0 else ""))
    if versions and set(versions) <= CUDNN_ONLY:     # torch's own rows are then the GPU's control
        decide.environment(judgement, figs[2])
    return judgement, figs, versions


def _row_keys(base_recs: dict, new_recs: dict) -> list:
    """Every row key of either run, each probe/size/mode kept together (unmeasured records come
    last in a run file)."""
    keys = list(base_recs) + [k for k in new_recs if k not in base_recs]
    first: dict = {}
    for k in keys:
        first.setdefault((k[0], k[2], k[3]), len(first))
    keys.sort(key=lambda k: first[(k[0], k[2], k[3])])
    return keys


def _blank_row(key, one: Record, base_rec: Record | None, new_rec: Record | None) -> dict:
    """A row with its key and sample counts, every figure NaN."""
    row = dict(zip(("probe", "variant", "size", "mode"), key))
    row.update(unit=one.unit, base=float("nan"), new=float("nan"), change=float("nan"),
               p=float("nan"), n_base=len(base_rec.samples) if base_rec else 0,
               n_new=len(new_rec.samples) if new_rec else 0, note="", base_abs=float("nan"), new_abs=float("nan"),
               raw_change=float("nan"), adjusted_by=())
    return row


def _one_side(row: dict, rec: Record, removed: bool) -> None:
    """A row in one run only: REMOVED or ADDED, with its figure where measured."""
    row["verdict"] = "REMOVED" if removed else "ADDED"
    if rec.ok:
        row["base" if removed else "new"] = rec.summary().median
    row["note"] = "" if rec.ok else rec.status


def _unmeasured_note(base_rec: Record, new_rec: Record) -> str:
    """Why a row both runs hold has no samples on a side."""
    why = lambda r: r.status if r.status != "ok" else "no samples"  # noqa: E731
    return f"both: {why(base_rec)}" if why(base_rec) == why(new_rec) else \
        f"base: {why(base_rec)}; new: {why(new_rec)}"


def _not_judged_note(verdict) -> str:
    """Why a row was not judged (no MDC to name)."""
    return (NOT_JUDGED if verdict is not None and verdict.verdict == "NO HISTORY" else
            f"not judged: {verdict.note}" if verdict is not None and verdict.note else "not judged")


def _overridden(verdict, base_fig, base_rec: Record, new_rec: Record, normalize: bool, min_samples: int,
                threshold: float | None) -> tuple[str, str]:
    """The row's verdict and note after the command's own rules (the divisor, --min-samples,
    --threshold)."""
    label, note = verdict.verdict, verdict.note
    if normalize and base_fig.baseline == base_fig.variant:
        label, note = "SAME", "the baseline itself (the divisor)"
    elif min(len(base_rec.samples), len(new_rec.samples)) < min_samples:
        label, note = "UNSURE", f"too few samples (fewer than {min_samples} on a side)"
    elif threshold is not None and label in ("SLOWER", "FASTER") and abs(verdict.change) < threshold:
        label, note = "SAME", f"under --threshold {threshold * 100:g} %"
    elif threshold is not None and label == "UNSURE" and verdict.mdc is not None and verdict.mdc <= threshold:
        label, note = "SAME", ""
    return label, note


def _judged_row(row: dict, verdict, base_fig, new_fig, base_rec: Record, new_rec: Record, normalize: bool,
                min_samples: int, threshold: float | None) -> None:
    """Fill a row the model judged: its figures in the record's unit, verdict, change and notes."""
    # a figure is a ratio or µs; shown in the record's own unit (host rows: ms)
    scale = 1.0 if base_fig.on_ratio else 1e-6 / UNIT_SECONDS.get(base_rec.unit, 1e-6)
    if base_fig.on_ratio:
        row["unit"] = f"x {base_fig.baseline}"
    label, note = _overridden(verdict, base_fig, base_rec, new_rec, normalize, min_samples, threshold)
    processes = min(base_fig.processes, new_fig.processes)
    if 0 < processes < MIN_PROCESSES:
        note = "; ".join(x for x in (note, f"{processes} process(es) on a side") if x)
    if verdict.adjusted_by:
        note = "; ".join(x for x in (note, adjusted_note(verdict.adjusted_by)) if x)
    raw = (new_fig.value / base_fig.value - 1 if base_fig.value and new_fig.value is not None
           else float("nan"))
    row.update(base=_times(base_fig.value, scale), new=_times(new_fig.value, scale), change=verdict.change,
               p=verdict.p, verdict=label, note=note, z=verdict.z, mdc=verdict.mdc, scale=verdict.scale,
               raw_change=raw, adjusted_by=tuple(verdict.adjusted_by))


ACROSS_MODELS = ("not compared across GPU models: only ratios to each run's own baseline are "
                 "(this row's figure is µs: a baseline, or a row without one)")


def compare(base: Run, new: Run, threshold: float | None = None, alpha: float = decide.Q,
            normalize: bool = False, min_samples: int = 1, absolute: bool = False, ratios_only: bool = False):
    """A DataFrame with one row per (probe, variant, size, mode) in either run (see COLUMNS);
    the verdict model's findings in df.attrs['findings'].

    `threshold`: the least change worth a verdict for every row (default: each class's practical
    threshold, decide.PRACTICAL); `alpha`: the false discovery rate over the rows; `ratios_only`
    (runs of two GPU models): judge ratios to a baseline alone, every figure in µs UNMEASURED.
    """
    import pandas as pd

    base_recs = {r.key: r for r in base.records}
    new_recs = {r.key: r for r in new.records}
    judgement, figs, versions = _judged_run(base, new, alpha, normalize, absolute)
    by = {v.row: v for v in judgement.verdicts}
    rows = []
    for key in _row_keys(base_recs, new_recs):
        base_rec, new_rec = base_recs.get(key), new_recs.get(key)
        one = base_rec or new_rec
        assert one is not None   # every key comes from one run or the other
        row = _blank_row(key, one, base_rec, new_rec)
        rows.append(row)
        if base_rec is None or new_rec is None:
            _one_side(row, one, removed=new_rec is None)
            continue
        if not (base_rec.ok and new_rec.ok):
            row.update(verdict="UNMEASURED", note=_unmeasured_note(base_rec, new_rec))
            continue
        row.update(base_abs=base_rec.summary().median, new_abs=new_rec.summary().median)
        row_key = (key[0], key[1], str(key[2]), key[3])
        verdict, base_fig, new_fig = by.get(row_key), figs[1].get(row_key), figs[2].get(row_key)
        if list(base_rec.samples) == list(new_rec.samples) and base_rec.workers == new_rec.workers:
            row.update(verdict="SAME", change=0.0, raw_change=0.0, note="identical samples")
        elif ratios_only and not (base_fig is not None and base_fig.on_ratio and base_fig.baseline != base_fig.variant):
            row.update(verdict="UNMEASURED", note=ACROSS_MODELS)
        elif verdict is None or base_fig is None or new_fig is None or verdict.z is None:
            row.update(verdict="UNSURE", note=_not_judged_note(verdict))
        else:
            _judged_row(row, verdict, base_fig, new_fig, base_rec, new_rec, normalize, min_samples, threshold)
    df = pd.DataFrame(rows, columns=COLUMNS + ["z", "mdc", "scale"])
    df.attrs.update(machines(base, new), findings=judgement.findings, versions=versions)
    return df


def adjusted_note(names) -> str:
    """A row's note on what its judged change is net of (the change column's *)."""
    return f"change* net of {decide.adjusted_text(names)}"


ADJUSTED_LEGEND = ("* the change the verdict judged, net of the run's structure (the note names the terms); "
                   "raw: the printed figures' own change")


NOT_JUDGED = ("not judged (no MDC): the two runs' figures of this row are not alike (timed in other host states, "
              "or one a ratio and one µs)")


def machine_line(frame) -> str:
    """The header line on where the two runs ran, which scale judged them, and the findings."""
    m = frame.attrs
    if not m:
        return ""
    if m.get("same_start"):
        where = "machines: same GPU, same machine start: judged on the same-GPU scale (a twin replicates; it does not confirm)"
    elif m.get("cross_start"):
        gpu = "same GPU after a reboot" if m.get("same_gpu") else "different GPUs"
        where = (f"machines: different machine starts ({gpu}): judged on the fleet scale (between-start noise from "
                 "the store prior)")
    else:
        where = "machines: unknown start (a run from before machine identity): judged on the fleet scale"
    found = [f.line() for f in m.get("findings") or [] if f.status]
    return "\n".join([where, *found])


def _same(left, right) -> bool:
    return json.dumps(left, sort_keys=True, default=str) == json.dumps(right, sort_keys=True, default=str)


def fingerprint_diff(base: Run, new: Run) -> list[tuple[str, object, object]]:
    """(field, base value, new value) for each environment field that differs, key fields first;
    dict fields (capabilities, cudnn_env) are named down to the entry that differs. Every field
    is compared, those no reader types too, so it reads each run's fingerprint as its file has it."""
    fa, fb = base.fingerprint.to_dict(), new.fingerprint.to_dict()
    fields = [k for k in KEY_FIELDS if k in fa or k in fb]
    fields += sorted(k for k in set(fa) | set(fb) if k not in KEY_FIELDS and k not in NOT_ENV)
    out = []
    for k in fields:
        a, b = fa.get(k), fb.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [(f"{k}.{s}", _brief(a.get(s)), _brief(b.get(s))) for s in sorted(set(a) | set(b), key=str)
                    if not _same(a.get(s), b.get(s))]
        elif not _same(a, b):
            out.append((k, _brief(a), _brief(b)))
    return out


def _brief(value):
    """Per-worker host summaries carry a histogram of thousands of readings: an environment
    line names each worker's floor and fast fraction instead (the run file keeps the rest); the
    worker table, each worker's role, wall and start-up."""
    if isinstance(value, list) and value and all(isinstance(w, dict) and "wall_s" in w for w in value):
        return ", ".join(f"w{w.get('worker')} {w.get('role', '')} {rounded(w.get('wall_s'))} s (start-up "
                         f"{rounded(w.get('startup_s'))} s)" for w in value)
    if isinstance(value, list) and value and all(isinstance(w, dict) and "floor_us" in w for w in value):
        return ", ".join(f"w{i} " + (f"floor {w['floor_us']:.3f} µs" if w.get("floor_us") else "no floor")
                         + f" ({w.get('fast_fraction') or 0:.0%} fast)" for i, w in enumerate(value, 1))
    return value


def rounded(value) -> str:
    """A fingerprint value as text, every float to 3 significant digits (a measured start-up time
    or clock reads 4.13, not 4.130000000000003), dicts as k=v."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={rounded(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(rounded(v) for v in value) + "]"
    return str(value)


# fingerprint fields that name a package or toolkit version (issue 17: named first when they differ)
VERSION_FIELDS = ("torch", "cudnn_frontend", "cudnn_backend", "cudnn_torch", "cuda", "driver", "python",
                  "pytest", "pytest_benchmark", "pytest-benchmark", "numpy", "packages", "versions")


def is_version(field: str) -> bool:
    head = field.split(".", 1)[0]
    return head in VERSION_FIELDS or "version" in head


def version_diff(diff) -> list:
    """The entries of fingerprint_diff() that are package/toolkit versions."""
    return [d for d in diff if is_version(d[0])]


def env_lines(diff, width: int = 120, indent: str = "  ") -> list[str]:
    """One line per differing field, rounded, cut to `width` with '…'."""
    out = []
    for k, x, y in diff:
        line = f"{indent}{k}: {rounded(x)} -> {rounded(y)}"
        out.append(line)
    return fit.cut(out, width)


def _pct(change) -> str:
    return "-" if fmt.missing(change) else f"{change * 100:+.1f}%"


def change_cell(change, adjusted: bool) -> str:
    """The judged change, `*` when it is net of the run's structure (a space else: digits line up)."""
    return "-" if fmt.missing(change) else _pct(change) + ("*" if adjusted else " ")


def mdc_cell(mdc) -> str:
    """A row's minimum detectable change as a number ('-' where the row has none)."""
    return "-" if fmt.missing(mdc) else decide.mdc_text(mdc, "")


def table_rows(frame) -> list[list[str]]:
    out = []
    for r in frame.itertuples(index=False):
        digits = 3 if r.unit.startswith("x ") else 2
        adjusted = bool(getattr(r, "adjusted_by", ()))
        out.append([r.probe, str(r.size), r.mode, r.variant, fmt.num(r.base, digits, "-"),
                    fmt.num(r.new, digits, "-"), fmt.unit_text(r.unit), change_cell(r.change, adjusted),
                    _pct(r.raw_change) if adjusted else "", mdc_cell(getattr(r, "mdc", None)),
                    "-" if r.p != r.p else f"{r.p:.2g}", r.verdict, r.note])
    return out


# change: the judged change (* net of the run's structure), raw: the figures' own change where they
# differ, mdc: the row's minimum detectable change (an UNSURE row's reason, as a number)
HEADER = ["probe", "size", "mode", "variant", "base", "new", "unit", "change", "raw", "mdc", "p", "verdict", "note"]
NOTE = HEADER.index("note")
# what a reader acts on first; the rest after it, as compare() listed them
ROW_ORDER = ["SLOWER", "KERNEL CHANGED", "FASTER", "FINDING", "UNSURE", "PICK CHANGED", "ADDED", "REMOVED",
             "UNMEASURED", "SAME"]


def sorted_rows(frame):
    """Rows by verdict (SLOWER, KERNEL CHANGED, FASTER, UNSURE, then the rest), then by probe;
    a probe's rows keep their order."""
    rank = {v: i for i, v in enumerate(ROW_ORDER)}
    key = frame["verdict"].map(lambda v: rank.get(v, len(rank)))
    return frame.assign(_k=key.values).sort_values(["_k", "probe"], kind="stable").drop(columns="_k")


def unmeasured_in_both(frame):
    """Rows neither run measured (unsupported, failed or without samples on both sides)."""
    return (frame["verdict"] == "UNMEASURED") & (frame["note"].str.startswith("both:")
                                                 | ((frame["n_base"] == 0) & (frame["n_new"] == 0)))


def _lines(rows, left=None) -> list[str]:
    """rows[0] the header; columns not `left` right-aligned, marks in a column of their own (fit.grid)."""
    left = left or [True] * len(rows[0])
    return fit.grid(rows[0], rows[1:], right=[i for i, lf in enumerate(left) if not lf],
                    marked=[i for i, h in enumerate(rows[0]) if h in ("base", "new")])


def _unit_tag(unit: str) -> str:
    """A figure's unit once the unit column is gone: × for a ratio, nothing for µs/call."""
    return "×" if unit.startswith("x ") else "" if unit == "µs/call" else f" {unit}"


def _fitted(rows: list[list[str]], width: int) -> tuple[list[str], list[str]]:
    """(lines, dropped column names): p, then unit, then probe and size, then the raw change, then the
    variant move out of the columns (the names into heading lines), then the notes and the MDC onto a
    line under their row; figures, change and verdict always stay whole."""
    numeric = {"base", "new", "change", "raw", "mdc", "p"}
    moved = ("p", "unit", "probe", "size")
    drops = [(), ("p",), ("p", "unit"), moved, (*moved, "raw"), (*moved, "raw", "variant"),
             (*moved, "raw", "variant", "note"), (*moved, "raw", "variant", "note", "mdc")]
    unit, mdc = HEADER.index("unit"), HEADER.index("mdc")

    def layout(drop):
        cols = [i for i, h in enumerate(HEADER) if h not in drop]
        named = [i for i in (0, 1, 3) if HEADER[i] in drop]   # names said in heading lines
        below = "note" in drop                                # the note numbers (and the MDC) on a line of their own
        body = [list(r) for r in rows]
        if "unit" in drop:
            for r in body:
                tag = _unit_tag(r[unit])
                r[4], r[5] = (x if x == "-" else x + tag for x in (r[4], r[5]))
        lines = _lines([[HEADER[i] for i in cols]] + [[r[i] for i in cols] for r in body],
                       [HEADER[i] not in numeric for i in cols])
        if named:
            out, last = ["  " + x for x in lines[:2]], None
            for r, line in zip(body, lines[2:]):
                if tuple(r[i] for i in named) != last:
                    last = tuple(r[i] for i in named)
                    out += textwrap.wrap(" · ".join(last), width, subsequent_indent="    ", break_long_words=True)
                out.append("  " + line)
                under = [f"mdc {r[mdc]}" if "mdc" in drop and r[mdc] != "-" else "",
                         f"notes {r[NOTE]}" if below and r[NOTE] else ""]
                if any(under):
                    out += textwrap.wrap(", ".join(x for x in under if x), width, initial_indent="      ",
                                         subsequent_indent="      ", break_long_words=True)
            lines = out
        return lines, [d for d in drop if d not in ("probe", "size", "variant", "note", "mdc")]
    return fit.first_fit(map(layout, drops), width, key=lambda x: x[0])[1]


def text_table(frame, width: int | None = None, wide: bool = False) -> str:
    """The rows as text, sorted by verdict then probe (sorted_rows); rows neither run measured are
    a count under the table. Each note is printed once, under the table, numbered. Unless `wide`,
    every line fits `width` (default: the terminal's): see _fitted."""
    width = fit.term_width() if width is None else width
    both = unmeasured_in_both(frame)
    rows = table_rows(sorted_rows(frame[~both]))
    tail = textwrap.wrap(f"({int(both.sum())} row(s) unmeasured in both runs, not listed: --markdown FILE lists "
                         "every row)", 10**6 if wide else width) if both.any() else []
    if wide or not rows:
        legend = [ADJUSTED_LEGEND] if any(r[HEADER.index("change")].endswith("*") for r in rows) else []
        return "\n".join((_lines([HEADER] + rows) if rows else []) + legend + tail)
    notes = _numbered_notes(rows)
    lines, dropped = _fitted(rows, width)
    lines = fit.cut(lines, width)
    return "\n".join(lines + _under_table(rows, notes, dropped, width) + tail)


def _numbered_notes(rows: list) -> dict[str, int]:
    """Each row's note replaced by its number ([1], ...); the notes by number, each once."""
    notes: dict[str, int] = {}
    for row in rows:
        if row[-1]:
            row[-1] = f"[{notes.setdefault(row[-1], len(notes) + 1)}]"
    return notes


def _under_table(rows: list, notes: dict[str, int], dropped: list, width: int) -> list[str]:
    """The lines under a fitted table: the change* legend, the numbered notes, the columns left out."""
    lines: list[str] = []
    if any(r[HEADER.index("change")].endswith("*") for r in rows):
        lines += fit.wrap(ADJUSTED_LEGEND + ("" if "raw" not in dropped else " (left out to fit: --wide shows it)"),
                          width)
    for note, number in notes.items():
        lines += fit.wrap(f"[{number}] {note}", width)
    dropped = [d for d in dropped if d != "raw"]   # the legend above says the raw column is left out
    if dropped:
        lines += fit.left_out([" and ".join(dropped) + (" column" if len(dropped) == 1 else " columns")], width,
                              "× marks a ratio to the probe's baseline, other figures µs/call unless named"
                              if "unit" in dropped else "")
    return lines


def markdown(frame, base: Run, new: Run, diff, threshold: float, alpha: float, normalize: bool) -> str:
    """Everything, every row (SAME too), for a file: verdict counts, versions that differ, rows,
    then the other environment differences."""
    lines = ["# hostbench compare", "", f"- base: `{base.path}` ({base.datetime or 'no date'})",
             f"- new: `{new.path}` ({new.datetime or 'no date'})",
             "- rule: the verdict model with a history of one run (docs/history.md): SLOWER/FASTER past "
             f"Benjamini-Hochberg at a false discovery rate of {alpha:g} over the rows"
             + (f", and at least {threshold * 100:g} %" if threshold is not None else "")
             + (" on figures normalized by the run's baseline variant" if normalize else ""),
             f"- {summary(frame)}", *(f"- finding: {x}" for x in machine_line(frame).split("\n")[1:]),
             "- change: the figure each verdict judged (`*`: net of the new run's structure, the raw change "
             "beside it); mdc: the change the row would catch with 80 % probability (UNSURE: past its "
             "class's practical threshold)", ""]
    vers = version_diff(diff)
    if vers:
        lines += ["## Versions that differ", "", fmt.md_table(["package", "base", "new"],
                                                             [(k, rounded(x), rounded(y)) for k, x, y in vers]), ""]
    body = [[c.rstrip() for c in r] for r in table_rows(sorted_rows(frame))]
    lines += ["## Results", "", fmt.md_table(HEADER, body), ""]
    if any(r[HEADER.index("change")].endswith("*") for r in body):
        lines += [ADJUSTED_LEGEND.replace("* the", "`*` the", 1) + ".", ""]
    rest = [d for d in diff if d not in vers]
    if rest:
        lines += ["## Environment differences", "",
                  fmt.md_table(["field", "base", "new"], [(k, rounded(x), rounded(y)) for k, x, y in rest]), ""]
    return "\n".join(lines)


ORDER = ["SLOWER", "KERNEL CHANGED", "FASTER", "FINDING", "UNSURE", "PICK CHANGED", "SAME", "ADDED", "REMOVED",
         "UNMEASURED"]
JUDGED = ("SLOWER", "FASTER", "KERNEL CHANGED", "FINDING", "PICK CHANGED", "UNSURE", "SAME")   # rows both runs measured


def summary(frame) -> str:
    counts = frame["verdict"].value_counts()
    order = ORDER + sorted(v for v in counts.index if v not in ORDER)  # a verdict added later still counts
    both = int(unmeasured_in_both(frame).sum()) if len(frame) else 0
    return ", ".join(f"{counts[v]} {v}" + (f" ({both} in both runs)" if v == "UNMEASURED" and both else "")
                     for v in order if v in counts) or "nothing to compare"


def judged(frame) -> int:
    """How many rows both runs measured (the rows a verdict says something about)."""
    return int(frame["verdict"].isin(JUDGED).sum())


def regressions(frame, kernel_change_fails: bool = True) -> list[str]:
    """One line per row that fails a gate: SLOWER, and (unless told otherwise) KERNEL CHANGED
    with a slower median, naming the kernels; and each slower finding that is a regression (on
    the same GPU, or between versions)."""
    out = [f"finding: {f.line()}" for f in frame.attrs.get("findings") or []
           if f.change > 0 and ("regression" in f.status)]
    for r in frame.itertuples(index=False):
        name = f"{r.probe}/{r.variant}/{r.size} {r.mode}"
        if r.verdict == "SLOWER":
            out.append(f"SLOWER {name} {r.change * 100:+.1f}%")
        elif r.verdict == "KERNEL CHANGED" and kernel_change_fails and r.change == r.change and r.change > 0:
            out.append(f"SLOWER on changed kernels {name} {r.change * 100:+.1f}% ({r.note})")
    return out


def to_json(frame, kernel_change_fails: bool = True) -> str:
    """The comparison for CI, in the shape `history check --json` writes (decide.report_json): whether
    it passes the --fail-on-regression gate, the counts, the findings (only those past the FDR), and
    every row with its judged change, raw change, what adjusted it, MDC, z, p, scale and verdict;
    `machines` says where the runs ran."""
    rows = [{k: _plain(v) for k, v in r.items()} for r in frame.to_dict("records")]
    m = {k: v for k, v in frame.attrs.items() if k != "findings"}
    return decide.report_json("compare", not regressions(frame, kernel_change_fails),
                              {k: int(n) for k, n in frame["verdict"].value_counts().items()},
                              frame.attrs.get("findings") or [], rows, machines=m)


def _plain(cell):
    """A cell as JSON has it: NaN is null, a tuple a list."""
    if isinstance(cell, tuple):
        return list(cell)
    return None if fmt.missing(cell) else cell
