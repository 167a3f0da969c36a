"""The table: µs per call by mode, kernels per call, ratio to the probe's baseline with its spread,
host overhead.

Rows are probe / variant / size; built from a run's records only. A figure's trust mark is the
record's own (`rec.badge`), so building the table reads the run once and never goes back to
trust.py. The lines about the run (its caption, summary and time) are reports/run_summary.py's: a
document renders its table first, then asks for them (markdown_document), so a run's walk from its
file to the table enters each module once (tests/test_walks.py).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from cudnn_hostbench.bench.measure.runfile import records as rec_mod
from cudnn_hostbench.bench.measure.runfile import stats
from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
from cudnn_hostbench.bench.measure.runfile.marks import LEGEND_LINES, SHOWN
from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES as MODES
from cudnn_hostbench.reports import fit, fmt, run_summary

# what the brackets after a table ratio hold (the README figures say theirs: scripts/maint/readme_figures.py);
# a bracket is always [q1–q3] over rounds; the range over worker processes has a column of its own
RATIO_BRACKET = "[q1–q3]: the interquartile range of those ratios over the kept rounds"
SPREAD = "[q1–q3]"
WORKERS = "workers min–max"   # the eager figure's lowest and highest per-worker median
ROW_FIELDS = ("probe", "variant", "size", "role", "unit", "status", "label", "baseline", "flags")


def build_table(run: rec_mod.Run) -> pd.DataFrame:
    """One row per (probe, variant, size); numeric medians plus display strings.

    `{mode}_badge` holds each figure's trust mark, `flags` the flags by mode (for the CSV).
    """
    rows: dict = {}                 # (probe, variant, size) -> its row, in the run's order
    for rec in run.records:
        key = (rec.probe, rec.variant, rec.size)
        if key not in rows:
            rows[key] = {"probe": rec.probe, "variant": rec.variant, "size": rec.size, "role": rec.role,
                         "unit": rec.unit, "status": "ok", "label": rec.label, "baseline": "", "flags": ""}
        _add_record(rows[key], rec)
    return _with_columns(pd.DataFrame(list(rows.values())))


def _add_record(row: dict, rec) -> None:
    """One record's figure, badge, ratio and status into its row."""
    # a record that says ok but lost its samples has no figure, so no ratio either
    status = "no samples" if rec.status == "ok" and not rec.samples else rec.status
    measured = status == "ok"
    if rec.flags:
        row["flags"] = "; ".join(x for x in (row["flags"], f"{rec.mode}: {','.join(rec.flags)}") if x)
    if rec.mode == "host":  # build-time probes: host milliseconds
        row["host"] = rec.summary().median if measured else None
        row["host_badge"] = rec.badge
        row["unit"] = rec.unit
    elif rec.mode in MODES:
        _add_mode(row, rec, measured)
    if not measured and row["status"] == "ok":
        row["status"] = f"{rec.mode}: {status}"


def _add_mode(row: dict, rec, measured: bool) -> None:
    """A timed mode's median, badge, spread, ratio and worker range into its row."""
    mode = rec.mode
    ratio = rec.ratio if measured and rec.ratio else stats.Summary()
    summary = rec.summary() if measured else stats.Summary()
    row[mode] = summary.median
    row[f"{mode}_badge"] = rec.badge
    row[f"{mode}_iqr"] = summary.iqr
    if ratio and rec.baseline:  # the baseline of a shown ratio
        row["baseline"] = rec.baseline
    for k in ("median", "q1", "q3", "min", "max"):
        row[f"{mode}_ratio" + ("" if k == "median" else f"_{k}")] = getattr(ratio, k)
    meds = [w["median"] for w in rec.workers if w.get("median") is not None] if measured else []
    row[f"{mode}_wmin"], row[f"{mode}_wmax"] = (min(meds), max(meds)) if len(meds) > 1 else (None, None)
    if mode == "device":
        row["kernels_per_call"] = rec.kernels_per_call
        row["kernels"] = "; ".join(rec.kernel_names[:4])


def _with_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column the renderers read, empty where no record filled it; host overhead = eager − device."""
    for col in ROW_FIELDS:
        if col not in frame:
            frame[col] = pd.Series(dtype=object)
    for col in [*MODES, *(f"{m}_ratio" for m in MODES), "kernels_per_call", "host"]:
        if col not in frame:
            frame[col] = float("nan")
    for col in [f"{m}_badge" for m in (*MODES, "host")]:
        frame[col] = frame[col].fillna("") if col in frame else ""
    frame["host_overhead"] = frame["eager"] - frame["device"]
    return frame

def baselines(frame: pd.DataFrame) -> dict[str, str]:
    """probe -> the baseline variant(s) its ratios are taken against, in table order."""
    out: dict[str, list] = {}
    for probe, b in zip(frame["probe"], frame["baseline"]):
        if b and b not in out.setdefault(probe, []):
            out[probe].append(b)
    return {p: ", ".join(bs) for p, bs in out.items() if bs}


def key_text(frame: pd.DataFrame) -> str:
    """What the columns mean, naming each probe's baseline."""
    names = "; ".join(f"{p}: {b}" for p, b in baselines(frame).items())
    return ("Medians of per-round µs/call (µs/op where the unit says so; build-time rows: host ms in "
            f"`host`); `×base` is the median of round-by-round ratios to the probe's baseline of the "
            f"same size and mode, {RATIO_BRACKET}" + (f" (baselines: {names})" if names else "")
            + f". `eager {WORKERS}`: the lowest and highest eager median of the worker processes "
            "(--wide and table.md). host ovh = eager − device.")


def _shown_kinds(frame: pd.DataFrame) -> set:
    """The trust-lowering flag kinds some figure of `frame` carries."""
    kinds = set()
    for text in frame["flags"].fillna(""):
        for part in str(text).split("; "):
            kinds |= set(part.partition(": ")[2].split(","))
    return kinds & set(SHOWN)


def _legend(frame: pd.DataFrame) -> list[str]:
    """The legend of the trust marks some figure carries, one mark a line (marks.py's lines, as
    reports/marks_text.legend gives them)."""
    kinds = _shown_kinds(frame)
    return [LEGEND_LINES[k] for k in SHOWN if k in kinds]


def _figure(median, badge: str) -> str:
    text = fmt.num(median)
    return f"{text} {badge}" if badge and text != "–" else text


def _workers_cell(lowest, highest) -> str:
    return fmt.DASH if fmt.missing(lowest) or fmt.missing(highest) else f"{fmt.num(lowest)}–{fmt.num(highest)}"


def _ratio_cell(ratio, lower, upper, spread: bool) -> str:
    if fmt.missing(ratio):
        return fmt.DASH
    return fmt.ratio_range(stats.Summary(n=1, median=ratio, q1=lower, q3=upper)) if spread else f"{ratio:.2f}"


def display_frame(frame: pd.DataFrame, level: int = 0) -> pd.DataFrame:
    """The human table: medians with ratio to the baseline [IQR of round-by-round ratios].

    `level` drops secondary detail to fit a terminal: 1 the ratio IQRs, 2 also kern/call and
    host ovh. The figures and their ratios are never dropped. Statuses are whole here; render_text
    moves them under the table when it narrows.
    """
    units = frame["unit"].map(fmt.unit_text)
    out = pd.DataFrame({"probe": frame["probe"], "variant": frame["variant"], "size": frame["size"], "unit": units})
    for m in MODES:
        out[m] = [_figure(x, b) for x, b in zip(frame[m], frame[f"{m}_badge"])]
        out[f"{m} ×base"] = [
            _ratio_cell(r, a, b, level < 1)
            for r, a, b in zip(frame[f"{m}_ratio"], frame.get(f"{m}_ratio_q1", frame[f"{m}_ratio"]),
                               frame.get(f"{m}_ratio_q3", frame[f"{m}_ratio"]))]
        if m == "eager" and level < 1 and "eager_wmin" in frame:
            out[f"eager {WORKERS}"] = [_workers_cell(lo, hi) for lo, hi in zip(frame["eager_wmin"], frame["eager_wmax"])]
    if level < 2:
        out["kern/call"] = frame["kernels_per_call"].map(lambda x: fmt.num(x, 1))
        out["host ovh"] = frame["host_overhead"].map(fmt.num)
    if frame["host"].notna().any():  # build-time rows: ms, or the row's own unit when it says otherwise
        out["host"] = [_figure(h, "") + (f" {fmt.unit_text(u)}" if not fmt.missing(h) and u != "ms" else "")
                       + (f" {b}" if b and not fmt.missing(h) else "")   # the mark last: fit.grid's column of its own
                       for h, u, b in zip(frame["host"], frame["unit"], frame["host_badge"])]
    out["status"] = frame["status"].map(lambda s: "" if s == "ok" else str(s))
    return out


FIGURES = (*MODES, "host", "figure")   # columns whose cells may carry a ⚑ mark


def _head(column: str, cells) -> str:
    """A ratio column is headed `×base` after its mode's figure column, `×base [q1–q3]` where its
    cells carry the spread: a bracket is only ever q1–q3 over rounds."""
    if not column.endswith(" ×base"):
        return column
    return "×base" + (f" {SPREAD}" if any("[" in str(x) for x in cells) else "")


def headers(shown: pd.DataFrame, short: bool = True) -> list[str]:
    """The column heads of a display frame (`short`: a ratio's mode said by the column before it)."""
    heads = [_head(c, shown[c]) for c in shown.columns]
    return heads if short else [f"{c.split(' ', 1)[0]} {h}" if c.endswith(" ×base") else h
                                for c, h in zip(shown.columns, heads)]


def _grid(shown: pd.DataFrame, left=("variant", "note", "unit"), tight: bool = False) -> list[str]:
    """Columns two spaces apart (`tight`: a ratio one space after its figure's mark), names
    left-aligned and figures right-aligned with their marks in a column of their own (fit.grid),
    a rule under the header."""
    cols = list(shown.columns)
    gaps = ["" if i == 0 else " " if tight and " ×base" in c else "  " for i, c in enumerate(cols)]
    return fit.grid(headers(shown), shown.itertuples(index=False),
                    right=[i for i, c in enumerate(cols) if c not in left],
                    marked=[i for i, c in enumerate(cols) if c in FIGURES], gaps=gaps)


NAME_CAP = 12   # a longer variant name gets a line of its own only when the terminal is too narrow for it


def _name_cap(shown: pd.DataFrame, width: int | None, grid_of) -> float:
    """The widest variant name that stays in its column: whatever `width` leaves beside the other
    columns (never under NAME_CAP); no cap without a width."""
    if width is None:
        return float("inf")
    others = fit.widest(grid_of(shown.assign(variant=[""] * len(shown)))) - len("variant")
    return max(NAME_CAP, width - others)


def _narrow(frame: pd.DataFrame, level: int, width: int | None = None) -> tuple[list[str], list[str]]:
    """(table lines, status notes): one heading line per probe · size, then its variants.

    Level 0 is every column. From level 1 nothing is lost, only laid out closer: the unit column
    goes (said in the probe · size heading, or after the name), the host column too (a build-time
    row says `host <figure>` in place of the mode columns), a variant name wider than `width`
    leaves room for stands on a line of its own and a ratio sits one space after its figure.
    Level 2 drops the ratio IQRs and the worker range, 3 also kern/call and host ovh
    (display_frame)."""
    shown = display_frame(frame, max(level - 1, 0)).reset_index(drop=True)
    shown, notes = _numbered_notes(shown)
    shown, group_unit = _units_said(shown, level)
    host = shown.pop("host") if level >= 1 and "host" in shown else None

    def grid_of(table):
        return _grid(table.drop(columns=["probe", "size"]), tight=level >= 1)
    cap = _name_cap(shown, width, grid_of) if level >= 1 else float("inf")
    long = [len(v) > cap for v in shown["variant"]]
    named = shown.assign(variant=["" if cut else v for v, cut in zip(shown["variant"], long)])
    grid = grid_of(named)
    lines, last = grid[:2], None
    name_w = len(grid[1].split(" ", 1)[0])
    for k, (probe, size) in enumerate(zip(shown["probe"], shown["size"])):
        if (probe, size) != last:
            lines.append(f"{probe} · {size}" + (f" · {group_unit[(probe, size)]}" if group_unit[(probe, size)] else ""))
            last = (probe, size)
        if long[k]:
            lines.append(shown["variant"].iloc[k])
        lines.append(_narrow_line(shown, named, k, grid[2 + k], host, name_w))
    return lines, notes


def _numbered_notes(shown: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(the frame with each status replaced by its note's number in a `note` column, or without the
    column when no row has one; the numbered notes)."""
    notes: list[str] = []
    for i, status in enumerate(shown["status"]):
        if status:
            notes.append(f"[{len(notes) + 1}] {shown['probe'].iloc[i]}/{shown['variant'].iloc[i]}/"
                         f"{shown['size'].iloc[i]}: {status}")
            shown.iat[i, shown.columns.get_loc("status")] = f"[{len(notes)}]"
    shown = shown.rename(columns={"status": "note"}) if notes else shown.drop(columns=["status"])
    return shown, notes


def _units_said(shown: pd.DataFrame, level: int) -> tuple[pd.DataFrame, dict]:
    """(the frame without its unit column where it goes, each unit said after its variant's name
    unless its probe · size shares one; (probe, size) -> the unit its heading says, or None)."""
    shown["unit"] = ["" if u in (fmt.unit_text("us/call"), "ms") else u for u in shown["unit"]]   # said in the key
    units = (shown.pop("unit") if level >= 1 or not shown["unit"].astype(bool).any()
             else pd.Series([""] * len(shown)))
    # a unit column that went: a probe · size whose rows share one other unit says it in its
    # heading, any other row after its name
    group_unit = {}
    for key, group in units.groupby([shown["probe"], shown["size"]]):
        group_unit[key] = group.iloc[0] if group.nunique() == 1 else None
    shown["variant"] = [v if not u or group_unit[(p, z)] else f"{v} [{u}]"
                        for v, u, p, z in zip(shown["variant"], units, shown["probe"], shown["size"])]
    return shown, group_unit


def _narrow_line(shown: pd.DataFrame, named: pd.DataFrame, row: int, line: str, host, name_w: int) -> str:
    """Row k's grid line, or for a build-time row (host figure only) its name and `host <figure>`."""
    if host is not None and host.iloc[row] != fmt.DASH and all(shown[m].iloc[row] == fmt.DASH for m in MODES):
        note = shown["note"].iloc[row] if "note" in shown else ""
        line = f"{named['variant'].iloc[row].ljust(name_w)}  host {host.iloc[row]}" + (f"  {note}" if note else "")
    return line

def _long(frame: pd.DataFrame, width: int | None = None) -> tuple[list[str], list[str]]:
    """The narrowest layout: one line per (variant, mode) with its figure and ratio, the variant
    named on its first line, under probe · size headings. Nothing is cut or dropped."""
    shown = display_frame(frame, 2).reset_index(drop=True)
    notes: list[str] = []
    body: list = []
    heads: list = []
    last = None
    for i in range(len(shown)):
        probe, size, variant, status = (shown["probe"].iloc[i], shown["size"].iloc[i], shown["variant"].iloc[i],
                                        shown["status"].iloc[i])
        mark = ""
        if status:
            notes.append(f"[{len(notes) + 1}] {probe}/{variant}/{size}: {status}")
            mark = f"[{len(notes)}]"
        if (probe, size) != last:
            heads.append((len(body), f"{probe} · {size}"))
            last = (probe, size)
        body += _long_rows(shown, i, variant, mark)
    return _long_lines(body, heads, width), notes


def _long_rows(shown: pd.DataFrame, row: int, variant: str, mark: str) -> list:
    """Row i's lines of the long layout: [variant (first only), mode, figure, ×base, note (first only)]."""
    unit = shown["unit"].iloc[row]
    unit = "" if unit in (fmt.unit_text("us/call"), "ms") else unit
    cells = [(m, shown[m].iloc[row], shown[f"{m} ×base"].iloc[row]) for m in MODES if shown[m].iloc[row] != fmt.DASH]
    if "host" in shown and shown["host"].iloc[row] != fmt.DASH:
        cells.append(("host", shown["host"].iloc[row], ""))
    cells = cells or [("", fmt.DASH, "")]
    rows = []
    for k, (mode, figure, ratio) in enumerate(cells):
        num, badge = fit.split_mark(figure)
        rows.append([variant if k == 0 else "", mode, (f"{num} {unit}".strip() if mode != "host" else num)
                     + (f" {badge}" if badge else ""), "" if ratio == fmt.DASH else ratio, mark if k == 0 else ""])
    return rows


def _long_lines(body: list, heads: list, width: int | None) -> list[str]:
    """The long layout's grid with its headings (index in body, text) and long names on lines of their own."""
    frame = pd.DataFrame(body, columns=["variant", "mode", "figure", "×base", "note"])

    def grid_of(table):
        return _grid(table, left=("variant", "mode", "note"))
    firsts = [row[0] for row in body]
    cap = _name_cap(frame, width, grid_of)
    long = {k for k, v in enumerate(firsts) if len(v) > cap}   # a line of its own
    for k in long:
        heads.append((k, firsts[k]))
    heads.sort(key=lambda h: h[0])   # stable: a probe · size heading before its variant's line
    grid = grid_of(frame.assign(variant=["" if k in long else v for k, v in enumerate(firsts)]))
    lines = grid[:2]
    starts: dict = {}
    for k, text in heads:
        starts.setdefault(k, []).append(text)
    for k, line in enumerate(grid[2:]):
        lines += starts.get(k, [])
        lines.append(line)
    return lines

def render_text(frame: pd.DataFrame, width: int | None = None, wide: bool = False) -> str:
    """The terminal table: the legend of trust marks on top when any figure has one, what ×base
    means and each probe's baseline underneath. Callers print run_summary.caption(run) and
    run_summary.summary_lines(run) above it (asked for after the table: see the module's text).

    Every line fits in `width` columns (default: the terminal's, or $COLUMNS): it folds the unit
    and host columns (_narrow), drops the ratio IQRs and the worker range, then kern/call and host
    ovh, and moves statuses under the table as numbered notes; figures and ratios stay whole. A
    line still too wide is cut with '…' (a width under any level's need).
    `wide` keeps every column and the statuses inline (as --markdown and the CSV do).
    """
    width = fit.term_width() if width is None else width
    legend = _legend(frame)
    if wide:
        d = display_frame(frame)
        return "\n".join([*legend, *_grid(d, left=("probe", "variant", "size", "unit", "status")),
                          *textwrap.wrap(key_text(frame), 100)])
    level, (lines, notes) = fit.first_fit((_narrow(frame, lv, width) if lv < 4 else _long(frame, width) for lv in range(5)),
                                          width, key=lambda x: x[0])
    legend = [x for n in legend for x in fit.wrap(n, width)]
    foot = [x for n in notes for x in fit.wrap(n, width)]
    key = textwrap.wrap(key_text(frame), min(width, 100), break_long_words=True)
    dropped = {2: ["the ratio IQRs", "the worker range"],
               3: ["the ratio IQRs", "the worker range", "kern/call", "host ovh"],
               4: ["the ratio IQRs", "the worker range", "kern/call", "host ovh"]}.get(level, [])
    return "\n".join([*legend, *fit.cut(lines, width), *foot, *key, *fit.left_out(dropped, width)])


def render_markdown(frame: pd.DataFrame) -> str:
    d = display_frame(frame)
    return fmt.md_table(headers(d, short=False), d.itertuples(index=False)) + "\n"


def markdown_document(run: rec_mod.Run, frame: pd.DataFrame) -> str:
    """table.md: caption, trust summary (and legend), what the columns mean, the table. The
    table's parts are rendered first, the run's lines last (run_summary.markdown_head)."""
    legend = _legend(frame)
    marks = ["Marks: " + "; ".join(line.replace("  ", " ", 1) for line in legend)] if legend else []
    tail = [*marks, key_text(frame)]
    table = render_markdown(frame)
    return "\n\n".join([*run_summary.markdown_head(run), *tail]) + "\n\n" + table


def csv_text(frame: pd.DataFrame) -> str:
    """table.csv: every numeric column and `flags`; the badges are display only."""
    return frame.drop(columns=[c for c in frame if c.endswith("_badge")]).to_csv(index=False, float_format="%.4g")


def write_outputs(run: rec_mod.Run, out_dir: str | Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    df = build_table(run)
    return (write_text_atomic(out_dir / "table.csv", csv_text(df)),
            write_text_atomic(out_dir / "table.md", markdown_document(run, df)))
