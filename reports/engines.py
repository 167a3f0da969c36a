"""The engine probe's rows as one table per size: every built plan with its engine, eager µs/call,
GPU µs/call (graph replay) and device µs, the heuristic's pick and the autotuned plan marked, and
the host-cost spread across engines stated. Reads records only.

    hostbench engines RUN [--out DIR]
"""
from __future__ import annotations

import re
import sys

from cudnn_hostbench.bench.measure.runfile import trust
from cudnn_hostbench.reports import fmt, marks_text

_ID = re.compile(r"plan (\d+) '([^']*)'")


def plans(run) -> dict:
    """{size: [row]} with row = {index, name, eager, graph, device, heuristic, autotuned, flags}:
    `flags` mode -> the figure's trust-lowering flags (the table's ⚑ marks)."""
    by: dict = {}
    for r in run.records:
        if r.probe != "engine" or not r.variant.startswith("plan_"):
            continue
        row = by.setdefault(r.size, {}).setdefault(r.variant, {"index": int(r.variant[5:]), "name": "",
                                                                 "heuristic": False, "autotuned": False,
                                                                 "flags": {}})
        if r.ok:
            row[r.mode] = r.summary().median
            row["flags"][r.mode] = trust.shown_flags(r)
        m = _ID.search(r.note or "")
        if m:
            row["name"] = m.group(2)
        row["heuristic"] |= "HEURISTIC'S PICK" in (r.note or "")
        row["autotuned"] |= "autotuned (GPU time)" in (r.note or "")
    return {s: sorted((x for x in rows.values() if "eager" in x), key=lambda x: x["index"]) for s, rows in by.items()}


def badge(row: dict, mode: str) -> str:
    """The table's mark of one figure of a plan row ('' or e.g. '⚑h')."""
    return trust.badge(type("F", (), {"flags": row.get("flags", {}).get(mode, [])}))


def figure(row: dict, mode: str) -> str:
    text = fmt.num(row.get(mode))
    b = badge(row, mode) if mode in row else ""
    return f"{text} {b}" if b else text


def _caveat(rows: list, mode: str, said: set) -> str:
    """' (⚑h: no steady host state: …; not comparable)' when a figure a difference stands on carries
    a mark ('(⚑h, as above)' once said), else ''."""
    kinds = [k for k in trust.SHOWN if any(k in x.get("flags", {}).get(mode, []) for x in rows)]
    parts = [f"⚑{trust.MARKS[k].letter}" + (", as above" if k in said else f": {trust.MARKS[k].meaning}")
             for k in kinds]
    said.update(kinds)
    return " (" + "; ".join(parts) + ")" if parts else ""


def spread(rows: list) -> str:
    """One sentence: the eager range over engines, and the heuristic's pick against the cheapest.
    A difference whose figures carry a ⚑ mark says so beside it (as the table marks them)."""
    if not rows:
        return "no plan measured"
    said: set = set()
    lo = min(rows, key=lambda x: x["eager"])
    hi = max(rows, key=lambda x: x["eager"])
    text = (f"eager µs/call over {len(rows)} plans: {lo['eager']:.2f} (plan {lo['index']} '{lo['name']}') to "
            f"{hi['eager']:.2f} (plan {hi['index']} '{hi['name']}'), a spread of {hi['eager'] - lo['eager']:.2f} µs"
            + _caveat([lo, hi], "eager", said))
    h = next((x for x in rows if x["heuristic"]), None)
    if h is not None:
        cheapest_graph = min(rows, key=lambda x: x.get("graph", float("inf")))
        text += (f"; the heuristic's pick (plan {h['index']}) costs {h['eager'] - lo['eager']:+.2f} µs eager"
                 + _caveat([h, lo], "eager", said) + " and "
                 f"{h.get('graph', float('nan')) - cheapest_graph.get('graph', float('inf')):+.2f} µs GPU"
                 + _caveat([h, cheapest_graph], "graph", said) + " against the cheapest plan of each")
    return text


def markdown(run) -> str:
    out = []
    for size, rows in plans(run).items():
        body = [[x["index"], x["name"], figure(x, "eager"), figure(x, "graph"), figure(x, "device"),
                 " ".join(t for t, on in (("heuristic's pick", x["heuristic"]), ("autotuned", x["autotuned"])) if on)]
                for x in rows]
        kinds = {k for x in rows for fl in x.get("flags", {}).values() for k in fl}
        marks = ("Marks, as `hostbench table` puts them: " + "; ".join(marks_text.legend(kinds)) + ".\n\n") if kinds else ""
        out.append(f"### Engines at {size}³ bf16 matmul\n\n{spread(rows)}.\n\n{marks}"
                   + fmt.md_table(["plan", "engine", "eager µs", "GPU µs (replay)", "device µs", "mark"], body))
    return "\n\n".join(out) + "\n"


if __name__ == "__main__":   # a report imports no scripts (tests/test_layers.py): the command is the way in
    print("python -m cudnn_hostbench.reports.engines: run `hostbench engines` instead", file=sys.stderr)
    sys.exit(2)
