"""The table: µs per call by mode, kernels per call, ratio to the probe's baseline with its spread,
host overhead.

Rows are probe / variant / size; built from a run's records only.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from cudnn_hostbench.bench.measure import records as rec_mod
from cudnn_hostbench.bench.measure import stats, trust
from cudnn_hostbench.bench.measure.files import write_text_atomic
from cudnn_hostbench.bench.measure.records import CALL_MODES as MODES

from . import fit, fmt

# what the brackets after a table ratio hold (the README figures say theirs: scripts/readme_figures.py);
# a bracket is always [q1–q3] over rounds; the range over worker processes has a column of its own
RATIO_BRACKET = "[q1–q3]: the interquartile range of those ratios over the kept rounds"
SPREAD = "[q1–q3]"
WORKERS = "workers min–max"   # the eager figure's lowest and highest per-worker median
ROW_FIELDS = ("probe", "variant", "size", "role", "unit", "status", "label", "baseline", "flags")


def build_table(run: rec_mod.Run) -> pd.DataFrame:
    """One row per (probe, variant, size); numeric medians plus display strings.

    `{mode}_badge` holds each figure's trust mark, `flags` the flags by mode (for the CSV).
    """
    rows = {}
    order = []
    for r in run.records:
        key = (r.probe, r.variant, r.size)
        if key not in rows:
            order.append(key)
            rows[key] = {"probe": r.probe, "variant": r.variant, "size": r.size, "role": r.role,
                         "unit": r.unit, "status": "ok", "label": r.label, "baseline": "", "flags": ""}
        row = rows[key]
        # a record that says ok but lost its samples has no figure, so no ratio either
        status = "no samples" if r.status == "ok" and not r.samples else r.status
        measured = status == "ok"
        ratio = r.ratio if measured and r.ratio else stats.Summary()
        if r.flags:
            row["flags"] = "; ".join(x for x in (row["flags"], f"{r.mode}: {','.join(r.flags)}") if x)
        if r.mode == "host":  # build-time probes: host milliseconds
            row["host"] = r.summary().median if measured else None
            row["host_badge"] = trust.badge(r)
            row["unit"] = r.unit
        elif r.mode in MODES:
            s = r.summary() if measured else stats.Summary()
            row[r.mode] = s.median
            row[f"{r.mode}_badge"] = trust.badge(r)
            row[f"{r.mode}_iqr"] = s.iqr
            if ratio and r.baseline:  # the baseline of a shown ratio
                row["baseline"] = r.baseline
            for k in ("median", "q1", "q3", "min", "max"):
                row[f"{r.mode}_ratio" + ("" if k == "median" else f"_{k}")] = getattr(ratio, k)
            meds = [w["median"] for w in r.workers if w.get("median") is not None] if measured else []
            row[f"{r.mode}_wmin"], row[f"{r.mode}_wmax"] = (min(meds), max(meds)) if len(meds) > 1 else (None, None)
            if r.mode == "device":
                row["kernels_per_call"] = r.kernels_per_call
                row["kernels"] = "; ".join(r.kernel_names[:4])
        if not measured and row["status"] == "ok":
            row["status"] = f"{r.mode}: {status}"
    df = pd.DataFrame([rows[k] for k in order])
    for col in ROW_FIELDS:
        if col not in df:
            df[col] = pd.Series(dtype=object)
    for col in [*MODES, *(f"{m}_ratio" for m in MODES), "kernels_per_call", "host"]:
        if col not in df:
            df[col] = float("nan")
    for col in [f"{m}_badge" for m in (*MODES, "host")]:
        df[col] = df[col].fillna("") if col in df else ""
    df["host_overhead"] = df["eager"] - df["device"]
    return df


def baselines(df: pd.DataFrame) -> dict[str, str]:
    """probe -> the baseline variant(s) its ratios are taken against, in table order."""
    out: dict[str, list] = {}
    for probe, b in zip(df["probe"], df["baseline"]):
        if b and b not in out.setdefault(probe, []):
            out[probe].append(b)
    return {p: ", ".join(bs) for p, bs in out.items() if bs}


def key_text(df: pd.DataFrame) -> str:
    """What the columns mean, naming each probe's baseline."""
    names = "; ".join(f"{p}: {b}" for p, b in baselines(df).items())
    return ("Medians of per-round µs/call (µs/op where the unit says so; build-time rows: host ms in "
            f"`host`); `×base` is the median of round-by-round ratios to the probe's baseline of the "
            f"same size and mode, {RATIO_BRACKET}" + (f" (baselines: {names})" if names else "")
            + f". `eager {WORKERS}`: the lowest and highest eager median of the worker processes "
            "(--wide and table.md). host ovh = eager − device.")


def _shown_kinds(df: pd.DataFrame) -> set:
    """The trust-lowering flag kinds some figure of `df` carries."""
    kinds = set()
    for text in df["flags"].fillna(""):
        for part in str(text).split("; "):
            kinds |= set(part.partition(": ")[2].split(","))
    return kinds & set(trust.SHOWN)


def _legend(df: pd.DataFrame) -> list[str]:
    """The legend of the trust marks some figure carries, one mark a line."""
    return trust.legend(_shown_kinds(df))


def _figure(x, badge: str) -> str:
    text = fmt.num(x)
    return f"{text} {badge}" if badge and text != "–" else text


def _workers_cell(lo, hi) -> str:
    return fmt.DASH if fmt.missing(lo) or fmt.missing(hi) else f"{fmt.num(lo)}–{fmt.num(hi)}"


def _ratio_cell(r, q1, q3, spread: bool) -> str:
    if fmt.missing(r):
        return fmt.DASH
    return fmt.ratio_range(stats.Summary(n=1, median=r, q1=q1, q3=q3)) if spread else f"{r:.2f}"


def display_frame(df: pd.DataFrame, level: int = 0) -> pd.DataFrame:
    """The human table: medians with ratio to the baseline [IQR of round-by-round ratios].

    `level` drops secondary detail to fit a terminal: 1 the ratio IQRs, 2 also kern/call and
    host ovh. The figures and their ratios are never dropped. Statuses are whole here; render_text
    moves them under the table when it narrows.
    """
    units = df["unit"].map(fmt.unit_text)
    out = pd.DataFrame({"probe": df["probe"], "variant": df["variant"], "size": df["size"], "unit": units})
    for m in MODES:
        out[m] = [_figure(x, b) for x, b in zip(df[m], df[f"{m}_badge"])]
        out[f"{m} ×base"] = [
            _ratio_cell(r, a, b, level < 1)
            for r, a, b in zip(df[f"{m}_ratio"], df.get(f"{m}_ratio_q1", df[f"{m}_ratio"]),
                               df.get(f"{m}_ratio_q3", df[f"{m}_ratio"]))]
        if m == "eager" and level < 1 and "eager_wmin" in df:
            out[f"eager {WORKERS}"] = [_workers_cell(lo, hi) for lo, hi in zip(df["eager_wmin"], df["eager_wmax"])]
    if level < 2:
        out["kern/call"] = df["kernels_per_call"].map(lambda x: fmt.num(x, 1))
        out["host ovh"] = df["host_overhead"].map(fmt.num)
    if df["host"].notna().any():  # build-time rows: ms, or the row's own unit when it says otherwise
        out["host"] = [_figure(h, "") + (f" {fmt.unit_text(u)}" if not fmt.missing(h) and u != "ms" else "")
                       + (f" {b}" if b and not fmt.missing(h) else "")   # the mark last: fit.grid's column of its own
                       for h, u, b in zip(df["host"], df["unit"], df["host_badge"])]
    out["status"] = df["status"].map(lambda s: "" if s == "ok" else str(s))
    return out


FIGURES = (*MODES, "host", "figure")   # columns whose cells may carry a ⚑ mark


def _head(c: str, cells) -> str:
    """A ratio column is headed `×base` after its mode's figure column, `×base [q1–q3]` where its
    cells carry the spread: a bracket is only ever q1–q3 over rounds."""
    if not c.endswith(" ×base"):
        return c
    return "×base" + (f" {SPREAD}" if any("[" in str(x) for x in cells) else "")


def headers(d: pd.DataFrame, short: bool = True) -> list[str]:
    """The column heads of a display frame (`short`: a ratio's mode said by the column before it)."""
    heads = [_head(c, d[c]) for c in d.columns]
    return heads if short else [f"{c.split(' ', 1)[0]} {h}" if c.endswith(" ×base") else h
                                for c, h in zip(d.columns, heads)]


def _grid(d: pd.DataFrame, left=("variant", "note", "unit"), tight: bool = False) -> list[str]:
    """Columns two spaces apart (`tight`: a ratio one space after its figure's mark), names
    left-aligned and figures right-aligned with their marks in a column of their own (fit.grid),
    a rule under the header."""
    cols = list(d.columns)
    gaps = ["" if i == 0 else " " if tight and " ×base" in c else "  " for i, c in enumerate(cols)]
    return fit.grid(headers(d), d.itertuples(index=False),
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


def _narrow(df: pd.DataFrame, level: int, width: int | None = None) -> tuple[list[str], list[str]]:
    """(table lines, status notes): one heading line per probe · size, then its variants.

    Level 0 is every column. From level 1 nothing is lost, only laid out closer: the unit column
    goes (said in the probe · size heading, or after the name), the host column too (a build-time
    row says `host <figure>` in place of the mode columns), a variant name wider than `width`
    leaves room for stands on a line of its own and a ratio sits one space after its figure.
    Level 2 drops the ratio IQRs and the worker range, 3 also kern/call and host ovh
    (display_frame)."""
    d = display_frame(df, max(level - 1, 0)).reset_index(drop=True)
    notes: list[str] = []
    for i, s in enumerate(d["status"]):
        if s:
            notes.append(f"[{len(notes) + 1}] {d['probe'].iloc[i]}/{d['variant'].iloc[i]}/{d['size'].iloc[i]}: {s}")
            d.iat[i, d.columns.get_loc("status")] = f"[{len(notes)}]"
    d = d.rename(columns={"status": "note"}) if notes else d.drop(columns=["status"])
    d["unit"] = ["" if u in (fmt.unit_text("us/call"), "ms") else u for u in d["unit"]]   # said in the key
    units = d.pop("unit") if level >= 1 or not d["unit"].astype(bool).any() else pd.Series([""] * len(d))
    # a unit column that went: a probe · size whose rows share one other unit says it in its
    # heading, any other row after its name
    group_unit = {}
    for key, us in units.groupby([d["probe"], d["size"]]):
        group_unit[key] = us.iloc[0] if us.nunique() == 1 else None
    d["variant"] = [v if not u or group_unit[(p, z)] else f"{v} [{u}]"
                    for v, u, p, z in zip(d["variant"], units, d["probe"], d["size"])]
    host = d.pop("host") if level >= 1 and "host" in d else None

    def grid_of(x):
        return _grid(x.drop(columns=["probe", "size"]), tight=level >= 1)
    cap = _name_cap(d, width, grid_of) if level >= 1 else float("inf")
    long = [len(v) > cap for v in d["variant"]]
    shown = d.assign(variant=["" if cut else v for v, cut in zip(d["variant"], long)])
    grid = grid_of(shown)
    lines, last = grid[:2], None
    name_w = len(grid[1].split(" ", 1)[0])
    for k, (probe, size) in enumerate(zip(d["probe"], d["size"])):
        if (probe, size) != last:
            lines.append(f"{probe} · {size}" + (f" · {group_unit[(probe, size)]}" if group_unit[(probe, size)] else ""))
            last = (probe, size)
        if long[k]:
            lines.append(d["variant"].iloc[k])
        line = grid[2 + k]
        if host is not None and host.iloc[k] != fmt.DASH and all(d[m].iloc[k] == fmt.DASH for m in MODES):
            note = d["note"].iloc[k] if "note" in d else ""
            line = f"{shown['variant'].iloc[k].ljust(name_w)}  host {host.iloc[k]}" + (f"  {note}" if note else "")
        lines.append(line)
    return lines, notes


def _long(df: pd.DataFrame, width: int | None = None) -> tuple[list[str], list[str]]:
    """The narrowest layout: one line per (variant, mode) with its figure and ratio, the variant
    named on its first line, under probe · size headings. Nothing is cut or dropped."""
    d = display_frame(df, 2).reset_index(drop=True)
    notes: list[str] = []
    body: list = []
    heads: list = []
    last = None
    for i in range(len(d)):
        probe, size, variant, status = d["probe"].iloc[i], d["size"].iloc[i], d["variant"].iloc[i], d["status"].iloc[i]
        mark = ""
        if status:
            notes.append(f"[{len(notes) + 1}] {probe}/{variant}/{size}: {status}")
            mark = f"[{len(notes)}]"
        if (probe, size) != last:
            heads.append((len(body), f"{probe} · {size}"))
            last = (probe, size)
        unit = d["unit"].iloc[i]
        unit = "" if unit in (fmt.unit_text("us/call"), "ms") else unit
        cells = [(m, d[m].iloc[i], d[f"{m} ×base"].iloc[i]) for m in MODES if d[m].iloc[i] != fmt.DASH]
        if "host" in d and d["host"].iloc[i] != fmt.DASH:
            cells.append(("host", d["host"].iloc[i], ""))
        cells = cells or [("", fmt.DASH, "")]
        for k, (m, fig, ratio) in enumerate(cells):
            num, badge = fit.split_mark(fig)
            body.append([variant if k == 0 else "", m, (f"{num} {unit}".strip() if m != "host" else num)
                         + (f" {badge}" if badge else ""), "" if ratio == fmt.DASH else ratio, mark if k == 0 else ""])
    frame = pd.DataFrame(body, columns=["variant", "mode", "figure", "×base", "note"])

    def grid_of(x):
        return _grid(x, left=("variant", "mode", "note"))
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
    return lines, notes


def render_text(df: pd.DataFrame, width: int | None = None, wide: bool = False) -> str:
    """The terminal table: the legend of trust marks on top when any figure has one, what ×base
    means and each probe's baseline underneath. Callers print caption() and
    trust.summary_lines(run) above it.

    Every line fits in `width` columns (default: the terminal's, or $COLUMNS): it folds the unit
    and host columns (_narrow), drops the ratio IQRs and the worker range, then kern/call and host
    ovh, and moves statuses under the table as numbered notes; figures and ratios stay whole. A
    line still too wide is cut with '…' (a width under any level's need).
    `wide` keeps every column and the statuses inline (as --markdown and the CSV do).
    """
    width = fit.term_width() if width is None else width
    legend = _legend(df)
    if wide:
        d = display_frame(df)
        return "\n".join([*legend, *_grid(d, left=("probe", "variant", "size", "unit", "status")),
                          *textwrap.wrap(key_text(df), 100)])
    level, (lines, notes) = fit.first_fit((_narrow(df, lv, width) if lv < 4 else _long(df, width) for lv in range(5)),
                                          width, key=lambda x: x[0])
    legend = [x for n in legend for x in fit.wrap(n, width)]
    foot = [x for n in notes for x in fit.wrap(n, width)]
    key = textwrap.wrap(key_text(df), min(width, 100), break_long_words=True)
    dropped = {2: ["the ratio IQRs", "the worker range"],
               3: ["the ratio IQRs", "the worker range", "kern/call", "host ovh"],
               4: ["the ratio IQRs", "the worker range", "kern/call", "host ovh"]}.get(level, [])
    return "\n".join([*legend, *fit.cut(lines, width), *foot, *key, *fit.left_out(dropped, width)])


def render_markdown(df: pd.DataFrame) -> str:
    d = display_frame(df)
    return fmt.md_table(headers(d, short=False), d.itertuples(index=False)) + "\n"


def markdown_document(run: rec_mod.Run, df: pd.DataFrame) -> str:
    """table.md: caption, trust summary (and legend), what the columns mean, the table."""
    marks = ["Marks: " + "; ".join(line.replace("  ", " ", 1) for line in _legend(df))] if _legend(df) else []
    head = [f"Run: `{Path(run.path).name}` — {caption(run)}", trust.summary_line(run),
            *([trust.time_text(run)] if trust.time_text(run) else []), *marks, key_text(df)]
    return "\n\n".join(head) + "\n\n" + render_markdown(df)


def csv_text(df: pd.DataFrame) -> str:
    """table.csv: every numeric column and `flags`; the badges are display only."""
    return df.drop(columns=[c for c in df if c.endswith("_badge")]).to_csv(index=False, float_format="%.4g")


def caption(run: rec_mod.Run) -> str:
    fp = run.fingerprint
    be = fp.get("cudnn_backend")
    return (f"{fp.get('gpu_name', '?')} · cuDNN {be} · frontend {fp.get('cudnn_frontend', '?')} · "
            f"torch {fp.get('torch', '?')} (CUDA {fp.get('cuda', '?')}) · driver {fp.get('driver', '?')} · "
            f"{fp.get('cpu_model', '?')} · {run.datetime}")


def write_outputs(run: rec_mod.Run, out_dir: str | Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    df = build_table(run)
    return (write_text_atomic(out_dir / "table.csv", csv_text(df)),
            write_text_atomic(out_dir / "table.md", markdown_document(run, df)))
