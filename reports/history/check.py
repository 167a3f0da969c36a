"""The history gate: judge one run's rows against the runs on the same history key.

Per row, the history is the judged figure of the last `last` (default 30) earlier runs on the
same key that measured it (eager rows: only those timed in the same host state; runs a person
excluded are left out). With fewer than `minimum` such runs the row says "too little history"
and falls back to the pairwise gate (reports.gate.judge) against the newest of them.

Otherwise: location and scale are the robust median and MAD of the history (reports.robust);
the smallest change the row can be judged on is
    mdc = max(minimum effect of the mode, K x max(scale x sqrt(1 + pi/(2n)), the run's own standard error))
and a change past it is SLOWER/FASTER when every worker of the run lies on the same side of the
history's median (else UNSURE). The pairwise gate's host rules stay: eager rows of a host-unstable
run, or timed in the slow host state, or judged on absolute µs, are never more than UNSURE; a change
where the device kernels differ from the history's newest is KERNEL CHANGED.

A change is *confirmed* when the next run on the key shows it too (or, for the newest run, when
the run before it already did), *suspect* when the next run does not, and *new* with no next run.
"""
from __future__ import annotations

import math
import statistics
import textwrap
from dataclasses import dataclass

from .. import gate, robust
from . import db

DEFAULT_LAST = 30
CONFIRM_LOOKAHEAD = 5   # later runs searched for the first that measured a changed row
MIN_HISTORY = 8
K = 2.0
# µs rows: a change under this many µs per call is not judged. On the newest machine start the
# 2.6 µs torch_mm device kernels moved by -0.07 and -0.08 µs (-2.5 %, -2.9 %) in both runs while
# every heavier row stayed: a machine's floor, not software
MIN_ABS_US = 0.1
K_HOST = 4.0   # build-time rows: heavy-tailed between runs (up to 52 % between A/A runs)
# the least change worth a verdict when the history is quiet; host (build-time) rows keep the
# pairwise gate's floor, their run-to-run swings are large and not worth a finer rule
MIN_EFFECT = {"eager": 0.03, "graph": 0.015, "device": 0.015, "host": gate.THRESHOLD["host"]}


@dataclass
class Verdict:
    probe: str
    variant: str
    size: str
    mode: str
    unit: str            # 'us' or 'x <baseline>'
    value: float | None
    location: float | None
    change: float
    mdc: float | None    # minimum detectable change (relative)
    n: int               # runs in the history
    verdict: str
    state: str = ""      # confirmed / suspect / new, for SLOWER/FASTER/KERNEL CHANGED
    note: str = ""
    on_ratio: bool = False
    host_state: str = ""

    @property
    def row(self) -> tuple:
        return (self.probe, self.variant, self.size, self.mode)


def _usable(f: db.Figure | None, like: db.Figure) -> bool:
    return (f is not None and f.status == "ok" and f.value is not None and f.on_ratio == like.on_ratio
            and (like.mode != "eager" or f.host_state == like.host_state))


def _judge(f: db.Figure, hist: list[float], run_unstable: bool, kernels: str) -> tuple[str, float, float, str, float]:
    loc = statistics.median(hist)
    rel = robust.relative_scale(hist) or 0.0
    mdc = robust.detectable(rel, len(hist), K_HOST if f.mode == "host" else K, MIN_EFFECT.get(f.mode, 0.05),
                           f.spread, len(f.workers or ()))
    change = f.value / loc - 1 if loc else float("nan")
    if not abs(change) > mdc:
        return "SAME", change, mdc, "", loc
    if not f.on_ratio and abs(f.value - loc) < MIN_ABS_US:
        return "SAME", change, mdc, f"under {MIN_ABS_US:g} µs per call", loc
    if f.workers and len(f.workers) >= 2 and not all((w > loc) == (change > 0) for w in f.workers):
        return "UNSURE", change, mdc, "workers straddle the history's median", loc
    if f.mode == "eager" and run_unstable:
        return "UNSURE", change, mdc, "host-unstable run: eager rows are not judged", loc
    if f.mode == "eager" and f.host_state == "slow":
        return "UNSURE", change, mdc, "slow host state: its eager figures drift between processes", loc
    if f.mode == "eager" and not f.on_ratio:
        return "UNSURE", change, mdc, "absolute eager µs (host-bound between processes)", loc
    if kernels and f.kernels and kernels != f.kernels:
        return "KERNEL CHANGED", change, mdc, f"kernels: history {kernels}; this run {f.kernels}", loc
    return ("SLOWER" if change > 0 else "FASTER"), change, mdc, "", loc


def _shows(g: db.Figure | None, like: db.Figure, loc: float, mdc: float, change: float) -> bool | None:
    """Whether another run's figure shows the same change (None: it did not measure the row)."""
    if not _usable(g, like):
        return None
    c = g.value / loc - 1
    return abs(c) > mdc and (c > 0) == (change > 0)


def _pairwise(f: db.Figure, old: db.Figure, run_unstable: bool) -> tuple[str, float, str]:
    ov, nv = old.workers or [old.value], f.workers or [f.value]
    change = statistics.median(nv) / statistics.median(ov) - 1 if statistics.median(ov) else float("nan")
    floor = gate.THRESHOLD.get(f.mode, 0.05)
    if f.mode == "eager" and "slow" in (f.host_state, old.host_state):
        floor = gate.SLOW_EAGER_THRESHOLD
    if abs(change) <= floor:
        # within the pairwise floor: SAME whatever the rank test says (it is not run: scipy
        # costs seconds to import, more than the rest of a check)
        return "SAME", change, "within the pairwise floor"
    a = gate.Side(ov, [], False, frozenset(old.kernels.split(";")) - {""}, old.host_state, old.median_us or 0.0)
    b = gate.Side(nv, [], run_unstable, frozenset(f.kernels.split(";")) - {""}, f.host_state, f.median_us or 0.0)
    v, change, _, note = gate.judge(a, b, f.mode)
    if v == "UNSURE" and "too few samples" in note and abs(change) <= gate.THRESHOLD.get(f.mode, 0.05):
        v, note = "SAME", "one process a side: within the pairwise floor"
    if f.mode == "eager" and not f.on_ratio and v in ("SLOWER", "FASTER"):
        v, note = "UNSURE", "absolute eager µs (host-bound between processes)"
    return v, change, note


def check(store: db.Store, run_id: int, last: int = DEFAULT_LAST, minimum: int = MIN_HISTORY) -> tuple[dict, list[Verdict]]:
    """(the judged run's store row, one Verdict per row of it)."""
    everyone = [r for r in store.runs() if r["id"] == run_id]
    if not everyone:
        raise db.StoreError(f"{store.shown}: no run with id {run_id}")
    target = everyone[0]
    same = [r for r in store.runs(key=target["history_key"]) if not r["excluded"] or r["id"] == run_id]
    pos = next(i for i, r in enumerate(same) if r["id"] == run_id)
    # twice `last` runs are read: rows that some runs skip (other host state, a partial run) still
    # find `last` values where there are
    before = same[max(0, pos - 2 * last):pos]
    after = same[pos + 1:pos + 1 + CONFIRM_LOOKAHEAD]
    figs = store.figures([r["id"] for r in before] + [run_id] + [r["id"] for r in after])
    mine = figs[run_id]
    out = []
    for row, f in mine.items():
        unit = f"x {f.baseline}" if f.on_ratio else "us"
        if f.status != "ok" or f.value is None:
            out.append(Verdict(*row, unit, None, None, float("nan"), None, 0, "UNMEASURED", note=f.status[:120]))
            continue
        hist_f = [figs[r["id"]].get(row) for r in before]
        hist_f = [h for h in hist_f if _usable(h, f)][-last:]
        hist = [h.value for h in hist_f]
        if len(hist) < minimum:
            if not hist_f:
                out.append(Verdict(*row, unit, f.value, None, float("nan"), None, 0, "NO HISTORY",
                                   note="no earlier run on this key measured this row", on_ratio=f.on_ratio,
                                   host_state=f.host_state))
                continue
            v, change, note = _pairwise(f, hist_f[-1], bool(target["host_unstable"]))
            loc, mdc = hist_f[-1].value, gate.THRESHOLD.get(f.mode, 0.05)
            note = f"too little history ({len(hist)} < {minimum} runs): pairwise gate against the newest; {note}"
            note = note.rstrip("; ")
        else:
            v, change, mdc, note, loc = _judge(f, hist, bool(target["host_unstable"]), hist_f[-1].kernels)
        state = ""
        if v in ("SLOWER", "FASTER", "KERNEL CHANGED"):
            later = [figs[r["id"]].get(row) for r in after]
            later = [g for g in later if _usable(g, f)]
            if later:
                state = "confirmed" if _shows(later[0], f, loc, mdc, change) else "suspect"
            else:
                state = "confirmed" if hist_f and _shows(hist_f[-1], f, loc, mdc, change) else "new"
        out.append(Verdict(*row, unit, f.value, loc, change, mdc, len(hist), v, state, note, f.on_ratio, f.host_state))
    return target, out


def mode_class(v: Verdict) -> str:
    """graph / device / eager trap ratio (fast state) / other: the classes the MDC is reported for."""
    if v.mode in ("graph", "device"):
        return v.mode
    if v.mode == "eager" and v.on_ratio and v.host_state == "fast":
        return "eager ratio (fast state)"
    return "other"


def median_mdc(verdicts: list[Verdict], minimum: int = MIN_HISTORY) -> dict[str, float]:
    """Median minimum detectable change per class, over rows with a full history."""
    by: dict[str, list[float]] = {}
    for v in verdicts:
        if v.mdc is not None and v.n >= minimum and not math.isnan(v.mdc):
            by.setdefault(mode_class(v), []).append(v.mdc)
    return {k: statistics.median(xs) for k, xs in sorted(by.items())}


ORDER = {"SLOWER": 0, "KERNEL CHANGED": 1, "FASTER": 2, "UNSURE": 3, "NO HISTORY": 4, "UNMEASURED": 5, "SAME": 6}


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    c: dict[str, int] = {}
    for v in verdicts:
        c[v.verdict] = c.get(v.verdict, 0) + 1
    return dict(sorted(c.items(), key=lambda kv: ORDER.get(kv[0], 9)))


def _note_refs(rows: list[Verdict]) -> tuple[list[str], dict[str, int]]:
    """Each row's note parts as numbers ('1,3'), each distinct part numbered once."""
    parts: dict[str, int] = {}
    refs = []
    for v in rows:
        pieces: list[str] = []
        for x in v.note.split("; "):   # "kernels: base A; new B" is one part
            if pieces and x.startswith("new "):
                pieces[-1] += "; " + x
            elif x:
                pieces.append(x)
        ks = [parts.setdefault(x, len(parts) + 1) for x in pieces]
        refs.append(",".join(map(str, ks)))
    return refs, parts


def _grid(head: list[str], body: list[list[str]], right: set) -> list[str]:
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]

    def line(r):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [line(head), line(["-" * w for w in widths]), *map(line, body)]


def _table(rows: list[Verdict], refs: list[str], width: int) -> tuple[list[str], bool]:
    """(lines, unit column dropped): verdict, state, row, unit, change, mdc, runs, note numbers;
    to fit, probe and size move into heading lines, then the whole row name (and the unit goes).
    Nothing is cut."""
    head = ["verdict", "state", "row", "unit", "change", "mdc", "runs", "note"]
    for level in range(3):
        cells = [[v.verdict, v.state, "/".join(v.row) if level == 0 else f"{v.variant}/{v.mode}",
                  "×" + v.unit[2:] if v.on_ratio else "µs", "" if math.isnan(v.change) else f"{v.change * 100:+.1f}%",
                  "" if v.mdc is None else f"{v.mdc * 100:.1f}%", str(v.n), r] for v, r in zip(rows, refs)]
        keep = [i for i in range(len(head)) if not (level == 2 and i in (2, 3))]
        body = [[c[i] for i in keep] for c in cells]
        right = {keep.index(i) for i in (4, 5, 6)}
        lines = _grid([head[i] for i in keep], body, right)
        if max(map(len, lines)) + 2 <= width:
            break
    if level == 0:
        return ["  " + x for x in lines], False
    out, last = ["  " + x for x in lines[:2]], None
    for v, line in zip(rows, lines[2:]):
        name = (v.probe, v.size) if level == 1 else (v.probe, v.size, v.variant, v.mode)
        if name != last:
            last = name
            out += textwrap.wrap(" · ".join(name) + (f" [{v.unit}]" if level == 2 else ""), width,
                                 subsequent_indent="    ", break_long_words=True)
        out.append("  " + line)
    return out, level == 2


def render(target: dict, verdicts: list[Verdict], show_all: bool = False, width: int | None = None,
           wide: bool = False, why: str = "") -> str:
    """Text for a terminal: the run (and `why` it is the one judged), counts, the changed rows
    first, each with its MDC. Rows without history, SAME and UNMEASURED rows are counted, listed
    only with `show_all`. Every line fits `width` (default $COLUMNS or the terminal) unless `wide`."""
    from .. import fmt
    width = 10**6 if wide else fmt.term_width() if width is None else width

    def wrap(text: str, indent: str = "") -> list[str]:
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_long_words=True)
    lines = wrap(f"run {target['id']} ({target['started_at'][:19]}, {target['gpu']}, frontend {target['frontend']}, "
                 f"commit {target['commit_id'][:7]}) against its history" + (f": {why}" if why else ""))
    c = counts(verdicts)
    lines += wrap(", ".join(f"{n} {k}" for k, n in c.items()), "  ")
    noise_limited = sum(1 for v in verdicts if v.verdict == "SAME" and v.mdc and v.mdc > 2 * MIN_EFFECT.get(v.mode, 0.05))
    if noise_limited:
        lines += wrap(f"{noise_limited} SAME rows are noise-limited (detect only changes over twice the mode's "
                      "minimum effect)", "  ")
    mm = median_mdc(verdicts)
    if mm:
        lines += wrap("median minimum detectable change, rows with full history: "
                      + ", ".join(f"{k} {x * 100:.1f} %" for k, x in mm.items()), "  ")
    hidden = ("SAME", "UNMEASURED", "NO HISTORY")
    rows = sorted((v for v in verdicts if show_all or v.verdict not in hidden),
                  key=lambda v: (ORDER.get(v.verdict, 9), -abs(v.change) if not math.isnan(v.change) else 0))
    if not rows:
        return "\n".join(lines)
    refs, parts = _note_refs(rows)
    if wide:
        refs = [v.note for v in rows]
    table, dropped = _table(rows, refs, width)
    lines += table
    if not wide:
        for part, k in parts.items():
            lines += wrap(f"[{k}] {part}", "  ")
    no_history = c.get("NO HISTORY", 0)
    if no_history and not show_all:
        lines += wrap(f"({no_history} row(s) with no history on this key, not listed: no earlier run measured them; "
                      "--all lists them)", "  ")
    if dropped:
        lines += wrap(f"(row and unit in the heading lines to fit {width} columns; --wide shows every column)", "  ")
    return "\n".join(lines)
