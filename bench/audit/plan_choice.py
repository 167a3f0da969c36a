"""Which plan the user's step should pin: the engine probe's rows (every built plan of the matmul
graph, eager µs/call and GPU µs/call) read from the run file the audit prices with. An op-by-op
step pays eager µs/call (host + GPU), a CUDA-graphed one only GPU time; the two winners can differ
because engines differ in host cost per execute, not only in kernel time."""
from __future__ import annotations

import re

_ID = re.compile(r"plan (\d+) '([^']*)'")
PREFIX = "plan choice ("   # how the note starts: a repriced report replaces it


def _plans(run, size: str) -> dict:
    out = {}
    for r in run.records:
        if r.probe != "engine" or r.size != size or not r.variant.startswith("plan_") or not r.ok:
            continue
        d = out.setdefault(r.variant, {"note": ""})
        d[r.mode] = r.summary().median
        d["note"] = d["note"] or r.note
    return {k: v for k, v in out.items() if "eager" in v and "graph" in v}


def _name(variant, figure) -> str:
    m = _ID.search(figure["note"])
    return f"plan {m.group(1)} '{m.group(2)}'" if m else variant.replace("_", " ")


def recommend(run, counts: dict | None = None, want: str = "256") -> str | None:
    """One sentence naming the plan that minimises an eager step and the one that minimises a
    graphed step, each with both figures, and the heuristic's pick beside them; None when the run
    has no engine rows or the step executes no cuDNN graph."""
    if run is None:
        return None
    if counts is not None and not any((counts.get(k) or 0) > 0 for k in
                                      ("execute", "execute_plan_at_index", "execute_ordered")):
        return None
    sizes = sorted({r.size for r in run.records if r.probe == "engine"},
                   key=lambda s: (s != want, int(s) if s.isdigit() else 1 << 30))
    for size in sizes:
        plans = _plans(run, size)
        if plans:
            break
    else:
        return None
    e = min(plans, key=lambda k: plans[k]["eager"])
    g = min(plans, key=lambda k: plans[k]["graph"])
    heur = next((k for k, d in plans.items() if "HEURISTIC'S PICK" in d["note"]), None)

    def figs(k):
        return f"{plans[k]['eager']:.2f} µs/call eager, {plans[k]['graph']:.2f} µs GPU"
    text = (f"{PREFIX}engine probe, {size}³ bf16 matmul, {len(plans)} plans): an op-by-op step pays eager "
            f"µs/call, so pin {_name(e, plans[e])} ({figs(e)}); a CUDA-graphed step pays GPU time only: "
            f"{_name(g, plans[g])} ({figs(g)})")
    if heur is not None:
        text += f"; the heuristic's pick, {_name(heur, plans[heur])}, runs {figs(heur)}"
    if e != g:
        text += "; the two winners differ: choose by how the step runs"
    return text
