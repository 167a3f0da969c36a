"""The history check: one run judged against the runs on its history key with the verdict model
(reports/verdict: the model, its decisions and findings; docs/history.md, "The model").

This module reads the store around the run (the `last` earlier runs and a few later ones for
confirmation) and renders the result for a terminal or as JSON for CI.
"""
from __future__ import annotations

import math
import statistics
import textwrap
from collections import Counter

from cudnn_hostbench.reports import fit
from cudnn_hostbench.reports.history import db
from cudnn_hostbench.reports.verdict import calibrate, decide, judge, model
from cudnn_hostbench.reports.verdict.decide import Finding, Verdict, mdc_text  # noqa: F401  (the check's result types)
from cudnn_hostbench.reports.verdict.model import DEFAULT_LAST

CONFIRM_LOOKAHEAD = decide.CONFIRM_LOOKAHEAD


def check(store: db.Store, run_id: int, last: int = DEFAULT_LAST, curves: bool = False,
          progress=None) -> tuple[dict, list[Verdict]]:
    """(the judged run's store row with what the check learned of its machine and its findings
    under 'findings', one Verdict per row); `curves`: with the dashboard's calibration and power;
    `progress(text)`: told each step (a line on a terminal)."""
    everyone = [r for r in store.runs() if r["id"] == run_id]
    if not everyone:
        raise db.StoreError(f"{store.shown}: no run with id {run_id}")
    target = dict(everyone[0])
    same = [r for r in store.runs(key=target["history_key"]) if not r["excluded"] or r["id"] == run_id]
    pos = next(i for i, r in enumerate(same) if r["id"] == run_id)
    # twice `last` runs are read: rows that some runs skip (other host state, a partial run) still
    # find `last` values where there are
    before = same[max(0, pos - 2 * last):pos]
    after = same[pos + 1:pos + 1 + CONFIRM_LOOKAHEAD]
    if progress is not None:
        progress(f"history check: reading the figures of run {run_id} and {len(before) + len(after)} run(s) "
                 "of its history")
    figs = store.figures([r["id"] for r in before] + [run_id] + [r["id"] for r in after])
    if progress is not None:
        progress(f"history check: judging {len(figs.get(run_id, {}))} rows of run {run_id}")
    # the runs read, they go straight to the model: the check's way passes this module once
    jd = judge.judge_run(target, before, after, figs, last, calibrate.load(target.get("gpu")), curves=curves)
    jd.target["findings"] = jd.findings
    return jd.target, jd.verdicts


def mode_class(verdict: Verdict) -> str:
    """graph / device / eager trap ratio (fast state) / other: the classes the MDC is reported for."""
    if verdict.mode in ("graph", "device"):
        return verdict.mode
    if verdict.mode == "eager" and verdict.on_ratio and verdict.host_state == "fast":
        return "eager ratio (fast state)"
    return "other"


def median_mdc(verdicts: list[Verdict], minimum: int = 1) -> dict[str, float]:
    """Median minimum detectable change per class, over rows judged on a history of `minimum` runs or more."""
    by: dict[str, list[float]] = {}
    for v in verdicts:
        if v.mdc is not None and v.n >= minimum and not math.isnan(v.mdc):
            by.setdefault(mode_class(v), []).append(v.mdc)
    return {k: statistics.median(xs) for k, xs in sorted(by.items())}


ORDER = {"SLOWER": 0, "KERNEL CHANGED": 1, "FASTER": 2, "FINDING": 3, "UNSURE": 4, "PICK CHANGED": 5,
         "NO HISTORY": 6, "UNMEASURED": 7, "SAME": 8}


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    c: dict[str, int] = {}
    for v in verdicts:
        c[v.verdict] = c.get(v.verdict, 0) + 1
    return dict(sorted(c.items(), key=lambda kv: ORDER.get(kv[0], 9)))


def machine_line(target: dict) -> str:
    """Where the run ran and what it is judged against, in one line."""
    start = target.get("start") or "unknown start"
    own = target.get("same_gpu_runs", 0)
    fleet = (f"the fleet ({target.get('history_runs', 0)} runs on {target.get('history_starts', 0)} starts: "
             "every variance component)")
    if own >= model.MIN_OWN:
        against = (f"rows judged against its own GPU's {own} earlier runs on this key where they predict it "
                   f"better than {fleet}")
    elif own:
        against = f"{own} earlier run(s) on this GPU, too few to judge by (needs {model.MIN_OWN}): judged against {fleet}"
    else:
        against = f"no earlier run on this GPU: judged against {fleet}"
    return f"  machine: start {start}; {against}"


def finding_lines(target: dict, every: bool = False) -> list[str]:
    """The run's findings past the FDR (a regression or information about this GPU), and with
    `every` its machine factors whatever their z."""
    fs = target.get("findings") or []
    shown = [f for f in fs if f.status or (every and f.kind == "machine")]
    # a machine factor within its noise is shown for what it is: no finding
    return [f.line() if f.status else f.line()[:-1] + ": no finding)" for f in shown]


def change_text(verdict: Verdict, sep: str = "") -> str:
    """The change the verdict judged, `*` when it is net of the run's structure (adjusted_note says by what)."""
    if math.isnan(verdict.change):
        return ""
    return f"{verdict.change * 100:+.1f}{sep}%" + ("*" if verdict.adjusted_by else "")


def _padded(cell: str) -> str:
    """A change cell without the * mark keeps its place, so the digits line up."""
    return cell if not cell or cell.endswith("*") else cell + " "


def adjusted_note(verdict: Verdict) -> str:
    """What a row's judged change is net of ('' when nothing adjusted it), with its raw change."""
    if not verdict.adjusted_by or math.isnan(verdict.change):
        return ""
    return f"change* net of {decide.adjusted_text(verdict.adjusted_by)}"


def full_note(verdict: Verdict) -> str:
    return "; ".join(x for x in (verdict.note, adjusted_note(verdict)) if x)


def _note_refs(rows: list[Verdict]) -> tuple[list[str], dict[str, int]]:
    """Each row's note parts as numbers ('1,3'), each distinct part numbered once."""
    parts: dict[str, int] = {}
    refs = []
    for v in rows:
        pieces: list[str] = []
        for x in full_note(v).split("; "):   # "kernels: base A; new B" is one part
            if pieces and x.startswith("new "):
                pieces[-1] += "; " + x
            elif x:
                pieces.append(x)
        ks = [parts.setdefault(x, len(parts) + 1) for x in pieces]
        refs.append(",".join(map(str, ks)))
    return refs, parts


def _grid(head: list[str], body: list[list[str]], right: set) -> list[str]:
    return fit.grid(head, body, right=right)


def _table(rows: list[Verdict], refs: list[str], width: int) -> tuple[list[str], bool]:
    """(lines, unit column dropped): verdict, state, row, unit, change, mdc, runs, note numbers;
    to fit, probe and size move into heading lines, then the whole row name (and the unit goes).
    Nothing is cut."""
    # "on": the scale the MDC came from (same GPU, fleet, pairwise)
    head = ["verdict", "state", "row", "unit", "change", "z", "mdc", "on", "runs", "note"]

    def layout(level: int) -> list[str]:
        cells = [[v.verdict, v.state, "/".join(v.row) if level == 0 else f"{v.variant}/{v.mode}",
                  "×" + v.unit[2:] if v.on_ratio else "µs", _padded(change_text(v)),
                  "" if v.z is None else f"{v.z:+.1f}",
                  "" if v.mdc is None else mdc_text(v.mdc, ""), v.scale, str(v.n), r] for v, r in zip(rows, refs)]
        # level 2: the row and its unit into heading lines, the scale too; level 3: the z as well
        keep = [i for i in range(len(head)) if not (level >= 2 and i in (2, 3, 7)) and not (level >= 3 and i in (1, 5))
                and not (level == 4 and i == 8)]
        body = [[c[i] for i in keep] for c in cells]
        right = {keep.index(i) for i in (4, 5, 6, 8) if i in keep}
        return ["  " + x for x in _grid([head[i] for i in keep], body, right)]
    level, lines = fit.first_fit(map(layout, range(5)), width)
    lines = [x[2:] for x in lines]
    if level == 0:
        return ["  " + x for x in lines], False
    out, last = ["  " + x for x in lines[:2]], None
    for v, line in zip(rows, lines[2:]):
        name = (v.probe, v.size) if level == 1 else (v.probe, v.size, v.variant, v.mode)
        if level >= 3 and v.z is not None:
            name = (*name, f"z {v.z:+.1f}" + (f" {v.state}" if v.state else ""))
        if level == 4:
            name = (*name, f"{v.n} runs")
        if name != last:
            last = name
            out += textwrap.wrap(" · ".join(name) + (f" [{v.unit}], mdc on {v.scale}" if level >= 2 else ""), width,
                                 subsequent_indent="    ", break_long_words=True)
        out.append("  " + line)
    return out, level >= 2


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=True)


def _history_lines(target: dict, width: int) -> list[str]:
    """Where the run was judged, its findings, and what partial runs did to its history."""
    lines = _wrap(machine_line(target).strip(), width, "  ")
    for x in finding_lines(target, every=True):
        lines += _wrap(x, width, "  ")
    if target.get("partial"):
        lines += _wrap(f"a partial run (probes {target.get('probes', '')}): its GPU state may differ from "
                       "a full run's; judged against partial runs where two measured the row, and a change "
                       "against full runs is UNSURE at most", width, "  ")
    elif target.get("partial_runs"):
        lines += _wrap(f"{len(target['partial_runs'])} partial run(s) in the history left out where two full "
                       "runs measured the row (a few probes: the GPU state may differ)", width, "  ")
    return lines


def _unsure_lines(unsure: list[Verdict], width: int) -> list[str]:
    """One line for the UNSURE rows: how many, their MDCs, their largest parts."""
    biggest = Counter(v.note.split("largest part: ", 1)[-1].split(")")[0] for v in unsure if "largest part" in v.note)
    return _wrap(f"{len(unsure)} rows UNSURE: too noisy to see their class's practical threshold ("
                 + ", ".join(f"{k} {x * 100:g} %" for k, x in decide.PRACTICAL.items()) + ")"
                 + unsure_mdc(unsure) + "; largest part: "
                 + ", ".join(f"{k} {n}" for k, n in biggest.most_common()) + " (--all lists them)", width, "  ")


def _head_lines(target: dict, verdicts: list[Verdict], show_all: bool, width: int, why: str) -> list[str]:
    """The lines above the table: the run, counts, history, median MDCs, the UNSURE rows."""
    lines = _wrap(f"run {target['id']} ({target['started_at'][:19]}, {target['gpu']}, frontend {target['frontend']}, "
                  f"commit {target['commit_id'][:7]}) against its history" + (f": {why}" if why else ""), width)
    lines += _wrap(", ".join(f"{n} {k}" for k, n in counts(verdicts).items()), width, "  ")
    if "history_runs" in target:
        lines += _history_lines(target, width)
    median = median_mdc(verdicts)
    if median:
        lines += _wrap("median minimum detectable change (caught with 80 % probability): "
                       + ", ".join(f"{k} {mdc_text(x)}" for k, x in median.items()), width, "  ")
    unsure = [v for v in verdicts if v.verdict == "UNSURE"]
    if unsure and not show_all:
        lines += _unsure_lines(unsure, width)
    return lines


def _table_lines(rows: list[Verdict], width: int, wide: bool) -> tuple[list[str], bool]:
    """(the table of `rows` with its legend and numbered notes, whether the unit column was dropped)."""
    refs, parts = _note_refs(rows)
    if wide:
        refs = [full_note(v) for v in rows]
    lines, dropped = _table(rows, refs, width)
    if any(v.adjusted_by and not math.isnan(v.change) for v in rows):
        lines += _wrap("* the change the verdict judged, net of the run's structure (the note names the terms; "
                       "--json gives the raw change too)", width, "  ")
    if not wide:
        for part, k in parts.items():
            lines += _wrap(f"[{k}] {part}", width, "  ")
    return lines, dropped


def render(target: dict, verdicts: list[Verdict], show_all: bool = False, width: int | None = None,
           wide: bool = False, why: str = "") -> str:
    """Text for a terminal: the run (and `why` it is the one judged), counts, the changed rows
    first, each with its MDC. Rows without history, SAME and UNMEASURED rows are counted, listed
    only with `show_all`. Every line fits `width` (default $COLUMNS or the terminal) unless `wide`."""
    width = fit.WIDE if wide else fit.term_width() if width is None else width
    lines = _head_lines(target, verdicts, show_all, width, why)
    hidden = ("SAME", "UNMEASURED", "NO HISTORY", "UNSURE")
    rows = sorted((v for v in verdicts if show_all or v.verdict not in hidden),
                  key=lambda v: (ORDER.get(v.verdict, 9), -abs(v.change) if not math.isnan(v.change) else 0))
    no_history = counts(verdicts).get("NO HISTORY", 0)
    tail = _wrap(f"({no_history} row(s) with no history on this key, not listed: no earlier run measured them; "
                 "--all lists them)", width, "  ") if no_history and not show_all else []
    if not rows:
        return "\n".join(lines + tail + ([] if wide else _wrap("(--all lists every row; --wide shows every column "
                                                                "and whole notes)", width, "  ")))
    table, dropped = _table_lines(rows, width, wide)
    lines += table + tail
    if dropped:
        lines += fit.left_out(["the row and unit columns (in the heading lines)"], width, indent="  ")
    return "\n".join(lines)


def regressions(target: dict, verdicts: list[Verdict], which: str = "confirmed") -> list[str]:
    """What fails --fail-on-regression: SLOWER rows and regression findings; 'confirmed' only those
    that a run of another start shows too, or that stand on the run's own GPU's history."""
    out = [f"{'/'.join(v.row)} SLOWER {v.change * 100:+.1f} %" for v in verdicts if v.verdict == "SLOWER"
           and (which == "any" or v.state.startswith("confirmed") or (v.scale == "same GPU" and v.state != "suspect"))]
    out += [f.line() for f in target.get("findings") or [] if f.status == "regression" and f.change > 0
            and (which == "any" or f.state in ("confirmed by another start", "own GPU"))]
    return out


def unsure_mdc(unsure: list[Verdict]) -> str:
    """', their MDC 12.3 % (median; 5.1-80.2 %)': the UNSURE rows' MDCs as numbers."""
    xs = sorted(v.mdc for v in unsure if v.mdc is not None and not math.isnan(v.mdc))
    if not xs:
        return ""
    med = statistics.median(xs)
    return (f", their MDC {mdc_text(med)}" if xs[0] == xs[-1] else
            f", their MDC {mdc_text(med)} (median; {mdc_text(xs[0])} to {mdc_text(xs[-1])})")


def row_json(verdict: Verdict) -> dict:
    def num(value):
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
    return {"probe": verdict.probe, "variant": verdict.variant, "size": verdict.size, "mode": verdict.mode,
            "unit": verdict.unit, "value": num(verdict.value), "location": num(verdict.location),
            "change": num(verdict.change), "raw_change": num(verdict.raw_change),
            "adjusted_by": list(verdict.adjusted_by), "z": num(verdict.z), "p": num(verdict.p),
            "mdc": num(verdict.mdc), "runs": verdict.n, "scale": verdict.scale, "verdict": verdict.verdict,
            "state": verdict.state, "note": verdict.note, "processes": verdict.processes}


def to_json(target: dict, verdicts: list[Verdict], which: str = "confirmed") -> str:
    """The check's result for CI, in the shape compare --json writes (decide.report_json): `pass` under
    --fail-on-regression `which`, the counts, the findings past the FDR, every row (`verdicts`: the
    same rows, the key older readers know), and the run."""
    run = {k: target.get(k) for k in ("id", "started_at", "gpu", "frontend", "commit_id", "history_key", "start",
                                       "same_gpu_runs", "history_runs", "history_starts", "partial")}
    rows = [row_json(v) for v in verdicts]
    return decide.report_json("history check", not regressions(target, verdicts, which), counts(verdicts),
                              target.get("findings") or [], rows, gate=which, run=run, verdicts=rows)


def markdown(target: dict, verdicts: list[Verdict], why: str = "") -> str:
    """The check as Markdown, every row: the run, counts, where it is judged, findings, then the rows."""
    lines = ["# hostbench history check", "",
             f"- run {target['id']} ({target['started_at'][:19]}, {target['gpu']}, frontend {target['frontend']}, "
             f"commit {target['commit_id'][:7]})" + (f": {why}" if why else ""),
             "- " + ", ".join(f"{n} {k}" for k, n in counts(verdicts).items())]
    if "history_runs" in target:
        lines.append("- " + machine_line(target).strip())
    lines += [f"- finding: {x}" for x in finding_lines(target)]
    mm = median_mdc(verdicts)
    if mm:
        lines.append("- median minimum detectable change (caught with 80 % probability): "
                     + ", ".join(f"{k} {mdc_text(x)}" for k, x in mm.items()))
    lines += ["- change: the figure each verdict judged (`*`: net of the run's structure, the raw change "
              "beside it); mdc: the change the row would catch with 80 % probability (UNSURE: past its "
              "class's practical threshold)", ""]
    rows = sorted(verdicts, key=lambda v: (ORDER.get(v.verdict, 9), -abs(v.change) if not math.isnan(v.change) else 0))
    head = ["verdict", "state", "row", "unit", "value", "change", "raw", "z", "mdc", "on", "runs", "note"]
    body = [[v.verdict, v.state, "/".join(v.row), "×" + v.unit[2:] if v.on_ratio else "µs",
             "" if v.value is None else f"{v.value:.4g}", change_text(v, " "),
             f"{v.raw_change * 100:+.1f} %" if v.adjusted_by and not math.isnan(v.change) else "",
             "" if v.z is None else f"{v.z:+.1f}", "" if v.mdc is None else mdc_text(v.mdc), v.scale, str(v.n),
             full_note(v)] for v in rows]
    from cudnn_hostbench.reports import fmt
    return "\n".join(lines + ["## Rows", "", fmt.md_table(head, body), ""])
