"""Host time by source line, from the line sampler's stacks (audit.json's `sampling`): the line
table, the lines each finding's calls were counted on, the lines no finding explains, and the step
projected with every finding fixed. Pure functions of a saved audit, so `hostbench reprice`
recomputes them without a GPU."""
from __future__ import annotations

import math
from collections import Counter

from cudnn_hostbench.bench.audit import callsite
from cudnn_hostbench.bench.audit import timeline as audit_timeline
from cudnn_hostbench.bench.audit.count import ALLOC_FNS, ALLOC_METHODS, BUILD_STEPS, VIEW_METHODS

MAX_GAP = 0.10            # the lines must sum to the eager step within this share
SPARSE = 30               # a kept line with fewer samples takes its execute time from the counting pass
NO_USER = "(no user frame)"

# per-step counts whose lines tie a finding to the source (counts["lines"])
RULE_KEYS = {
    "rebuild": ("graphs_created", *BUILD_STEPS), "generic_execute": ("execute",), "set_stream": ("set_stream",),
    "stream_query": ("stream_queries",), "new_pack": ("new_packs",), "new_output": ("cuda_factory_calls",),
    "views": ("tensor_views",), "metadata": ("stride_reads", "shape_reads"), "transpose": ("copies_transposed",),
    "layout_copy": ("copies_channels_last",), "copy": ("copies_other",), "interleave": ("executes", "cublas_calls"),
    "custom_op": ("custom_op_calls", "custom_op_autograd_calls"), "dispatcher": ("dispatcher_calls",),
    "pack_size": ("executes",), "sync": ("syncs",), "capture": ("syncs", "graphs_created"),
    # issue 67
    "raw_stream": ("stream_ptr_queries",), "override": ("override_executes",),
    "cuda_graph_update": ("cuda_graph_populates", "cuda_graph_updates"), "fe_wrapper": ("fe_wrapper_calls",),
    "sdpa_provider": ("sdpa_provider_calls", "sdpa_provider_bwd_calls"), "alignment": ("misaligned_executes",),
}
# fixing these removes the call from the step; the others make a needed call cheaper
REMOVES = frozenset({"rebuild", "new_output", "set_stream", "stream_query", "raw_stream", "views", "metadata", "transpose",
                     "layout_copy", "copy", "new_pack", "capture"})
# counts that mark a line as doing work the fixed step still does; a sync stays (a finite check is
# the user's own), re-priced for the projected host (bench.audit.timeline)
KEEPS = ("executes", "cublas_calls", "custom_op_calls", "custom_op_autograd_calls", "dispatcher_calls", "syncs",
         "fe_wrapper_calls", "sdpa_provider_calls", "sdpa_provider_bwd_calls", "fe_op_calls")
# a sync's callee on its line, by name: its time is the sync's (fixed + wait), re-priced apart
SYNC_ATTRS = frozenset({"item", "cpu", "tolist", "synchronize", "__bool__", "__int__", "__float__",
                        "bool", "int", "float"})
# removed findings whose cost is device time of copy kernels: the fixed step's syncs wait less
DEVICE_COPIES = frozenset({"transpose", "layout_copy", "copy"})
_COPIES = ("contiguous", "clone", "copy_", "to")
# the calls each removing finding takes out of a line (by the callee's name; a rebuild: any frontend
# call but the ones a built graph still makes). Python glue around them (tuple(), list(), an
# operator) goes with them; any other callee on the line stays.
REMOVED_CALLS = {
    "views": frozenset(VIEW_METHODS) | {"operator []"}, "metadata": frozenset({"stride", "size", "dim"}),
    "new_output": frozenset(ALLOC_FNS) | frozenset(ALLOC_METHODS), "transpose": frozenset(_COPIES),
    "layout_copy": frozenset(_COPIES), "copy": frozenset(_COPIES), "set_stream": frozenset({"set_stream"}),
    "stream_query": frozenset({"current_stream", "cuda_stream"}),
    "raw_stream": frozenset({"current_stream", "cuda_stream"}),
    "sync": frozenset({"item", "cpu", "tolist", "synchronize", "bool", "int", "float"}),
}
# findings whose per-step objects (a graph and its plans, a tensor) are freed where their last
# reference dies: at the return of the function that made them (time on its caller's call line, the
# callee's frame gone) or, for the step's result, in the loop between steps: the naive example's
# frees land on its caller's line and between steps, where its fixed step has next to nothing.
FREES = frozenset({"rebuild", "new_output", "transpose", "layout_copy", "copy"})
# fixed by calling the implementation directly: the line loses its measured dispatcher time
DIRECT = frozenset({"custom_op", "dispatcher"})
# frontend calls a step still makes once its graph is built: any other frontend call is a rebuild
RUN_CALLS = frozenset({"execute", "execute_plan_at_index", "set_stream", "_raw_set_stream"})


def _line_of(stack: dict) -> tuple[str, str]:
    frames = stack.get("frames") or []
    user = [f for f in frames if f[3]]
    if not user:
        return NO_USER, frames[-1][2] if frames else ""
    f = user[-1]
    return f"{f[0]}:{f[1]}", f[2]


def table(sampling: dict | None, eager_us: float | None, base: str = "") -> dict:
    """{"rows": [{line, function, us, n, share, callees: [{callee, kind, us}], spill}], sum_us, ...}
    most time first; {} without sampling, {"error"} when the sampler failed. `eager_us`: the step's
    µs the lines are held to, `base` what it is ("plain loop"; "" for the eager median)."""
    if not sampling:
        return {}
    if sampling.get("error"):
        return {"error": sampling["error"]}
    calls = _calls_into(sampling.get("stacks") or ())
    out = []
    for row in sorted(_rows_of(sampling.get("stacks") or ()).values(), key=lambda r: -r["us"]):
        row["callees"] = [{"callee": c, "kind": k, "us": u}
                          for (c, k), u in sorted(row["callees"].items(), key=lambda x: -x[1])]
        row["share"] = row["us"] / eager_us if eager_us else None
        row["calls_into"] = sorted(calls.get(row["line"], ()))
        out.append(row)
    total = sum(row["us"] for row in out)
    lines_table = {"rows": out, "sum_us": total, "eager_us": eager_us, **_sampling_fields(sampling),
                   "coverage": total / eager_us if eager_us else None, **({"base": base} if base else {})}
    lines_table["note"] = gap_note(lines_table)
    return lines_table


def _calls_into(stacks) -> dict:
    """line -> the user functions it calls into (the next user frame down)."""
    calls: dict = {}
    for stack in stacks:
        user = [f for f in stack.get("frames") or () if f[3]]
        for outer, inner in zip(user, user[1:]):
            calls.setdefault(f"{outer[0]}:{outer[1]}", set()).add(inner[2])
    return calls


def _rows_of(stacks) -> dict:
    """line -> its row: sampled µs and samples, by callee, timed and dispatcher-entry µs, spill."""
    rows: dict = {}
    for stack in stacks:
        line, function = _line_of(stack)
        row = rows.setdefault(line, {"line": line, "function": function, "us": 0.0, "n": 0, "callees": {},
                                     "spill": []})
        row["us"] += stack["us"]
        row["n"] += stack["n"]
        if stack.get("timed"):
            row["timed_us"] = row.get("timed_us", 0.0) + stack["us"]
        if _entered_from_dispatcher(stack):
            row["dispatch_entry_us"] = row.get("dispatch_entry_us", 0.0) + stack["us"]
        key = (stack["callee"], stack["kind"])
        row["callees"][key] = row["callees"].get(key, 0.0) + stack["us"]
        row["spill"] += [s for s in stack.get("spill") or () if s not in row["spill"]]
    return rows


def _sampling_fields(sampling: dict) -> dict:
    """The sampler's own figures, as the line table carries them."""
    return {"loop_us": sampling.get("loop_us", 0.0),
            "outside_us": sampling.get("outside_us", 0.0), "overhead": sampling.get("overhead"),
            "interval_us": sampling.get("interval_us"), "samples": sampling.get("samples"),
            "step_us_sampled": sampling.get("step_us_sampled"), "step_us_plain": sampling.get("step_us_plain"),
            "steps": sampling.get("steps"), "verdict": sampling.get("verdict", ""),
            "rounds": sampling.get("rounds"), "rounds_other_state": sampling.get("rounds_other_state", 0),
            "rounds_host_off": sampling.get("rounds_host_off", 0), "matched_on": sampling.get("matched_on", ""),
            "state_note": sampling.get("state_note", ""), "timed_calls": sampling.get("timed_calls") or [],
            "overhead_not_signal": bool(sampling.get("overhead_not_signal")),
            "wrap_overhead": sampling.get("wrap_overhead")}


ENTRY = 4          # an instruction offset at most this: the function's entry (RESUME, after its cell set-up)


def _entered_from_dispatcher(stack: dict) -> bool:
    """A sample at the entry of a user function that the dispatcher called (a registered op's
    impl): the time the dispatcher took to reach it lands there, at its first signal point."""
    frames = stack.get("frames") or []
    user = [i for i, f in enumerate(frames) if f[3]]
    if not user or stack.get("kind") != callsite.PYTHON:
        return False
    inner = frames[user[-1]]
    if len(inner) < 5 or inner[4] is None or inner[4] > ENTRY:
        return False
    between = frames[user[-2] + 1:user[-1]] if len(user) > 1 else frames[:user[-1]]
    return any(sampler_file_kind(f[0]) for f in between)


def sampler_file_kind(name: str) -> bool:
    n = name.replace("\\", "/")
    return "torch/_ops.py" in n or "torch/_library/" in n or n.endswith("torch/library.py")


def _base(lines_table: dict) -> str:
    return lines_table.get("base") or "eager step"


def gap_note(lines_table: dict) -> str:
    """'' when the lines sum to the eager step within MAX_GAP, else by how much and where the rest went."""
    eager, total = lines_table.get("eager_us"), lines_table.get("sum_us") or 0.0
    if not eager:
        return "no eager figure to compare the lines with"
    gap = total / eager - 1
    if abs(gap) <= MAX_GAP:
        return ""
    why = []
    if lines_table.get("outside_us", 0) > MAX_GAP * eager / 2:
        why.append(f"{lines_table['outside_us']:.1f} µs/step waited outside the step (the sync after each sampled round: "
                   "the GPU ran behind the host, so this step is device-bound there)")
    if lines_table.get("loop_us", 0) > MAX_GAP * eager / 2:
        why.append(f"{lines_table['loop_us']:.1f} µs/step landed between steps (operators at the end of the step, whose "
                   "time goes to the next call: the loop's)")
    if lines_table.get("overhead") is not None and abs(lines_table["overhead"]) > MAX_GAP / 2:
        why.append(f"sampling changed the step by {lines_table['overhead'] * 100:+.0f} %")
    plain = lines_table.get("step_us_plain")
    if plain and abs(plain / eager - 1) > MAX_GAP / 2:
        why.append(f"the sampler's own plain rounds ran at {plain:.1f} µs/step against the "
                   f"{lines_table.get('base') or 'eager mode'}'s "
                   f"{eager:.1f} (another host state, or rounds without a sync per call)")
    return (f"the lines sum to {total:.1f} µs/step, {total / eager * 100:.0f} % of the {_base(lines_table)} ({eager:.1f} µs)"
            + (": " + "; ".join(why) if why else ""))


def _attr(callee: str) -> str:
    name = callee.rstrip("()").rsplit(".", 1)[-1]
    return name.lstrip("…")


def tie(findings, counts: dict, lines_table: dict) -> dict:
    """{rule: [{"line", "per_step", "us"}]}: where each finding's calls were counted (counts["lines"]),
    with the line's sampled µs; a rebuild also ties the lines whose sampled callee builds a graph."""
    where = counts.get("lines") or {}
    us = {r["line"]: r["us"] for r in lines_table.get("rows") or ()}
    out = {}
    for f in findings:
        got = {}
        for key in RULE_KEYS.get(f.rule, ()):
            for line, n in (where.get(key) or {}).items():
                got[line] = got.get(line, 0.0) + n
        if f.rule == "rebuild":
            for r in lines_table.get("rows") or ():
                if any(c["kind"] == callsite.CUDNN and _attr(c["callee"]) not in RUN_CALLS for c in r["callees"]):
                    got.setdefault(r["line"], None)
        out[f.rule] = [{"line": ln, "per_step": n, "us": us.get(ln)}
                       for ln, n in sorted(got.items(), key=lambda x: -(us.get(x[0]) or 0))]
    return out


def remainder(lines_table: dict, tied: dict) -> list:
    """The table's rows on no finding's lines, most time first."""
    covered = {x["line"] for v in tied.values() for x in v}
    return [r for r in lines_table.get("rows") or () if r["line"] not in covered]


def _fixed_how(fixed_loop: dict) -> str:
    """How the fixed step's loop was timed, for the report: interleaved round by round (audits
    without `timed`), in blocks alternating with the step's loop, or (said nowhere) after it."""
    if not fixed_loop.get("median"):
        return ""
    timed = fixed_loop.get("timed") or ""
    return " (interleaved with the step's rounds)" if not timed else f" ({timed})" if timed.startswith("alternating") else ""


def _mode_median(modes: dict, mode: str):
    return (modes.get(mode) or {}).get("median")


def _base_figures(modes: dict, sampled: bool) -> tuple:
    """(the plain loop's median, or None where the projection stands on the eager rounds; the base µs)."""
    loop = _mode_median(modes, "loop")
    eager_state = (modes.get("eager") or {}).get("host_state")
    loop_state = (modes.get("loop") or {}).get("host_state")
    # another host state: without lines the eager rounds' figure stands (the findings are priced in
    # it); the sampled rounds were kept where their plain round matched the loop, and the fixed loop
    # is held to the loop's state, so lines stay on the loop: scaled to an eager figure of the other
    # state, the projection lands off the fixed step by the states' ratio
    if loop is not None and eager_state and loop_state != eager_state and not sampled:
        loop = None
    return loop, loop if loop is not None else _mode_median(modes, "eager")


def _projection_head(modes: dict, loop, eager) -> dict:
    """The figures every projection carries: the modes' medians and what the base is."""
    fixed_loop = modes.get("fixed_loop") or {}
    return {"eager_us": _mode_median(modes, "eager"), "loop_us": _mode_median(modes, "loop"),
            "base_us": eager, "loop_state_differs": loop is None and bool(_mode_median(modes, "loop")),
            "base": "loop" if loop is not None else "eager", "graph_us": _mode_median(modes, "graph"),
            "device_us": _mode_median(modes, "device"),
            "graph_error": (modes.get("graph") or {}).get("error"),
            "fixed_us": fixed_loop.get("median"),
            "fixed_target": fixed_loop.get("target", ""),
            "fixed_how": _fixed_how(fixed_loop)}


def _project_priced(findings, priced: list, modes: dict, loop, eager, head: dict) -> dict:
    """Without lines: the base figure − the priced findings."""
    # the findings are priced in eager rounds' µs; the loop runs the same host code at its own
    # pace (as the line path scales the sampled lines to it), so their sum is scaled to it too
    eager_rounds_us = _mode_median(modes, "eager")
    pace = eager / eager_rounds_us if loop is not None and eager_rounds_us else 1.0
    projected = max(0.0, eager - pace * sum(f.cost_us for f in priced))
    return dict(head, projected_us=projected, method="eager − priced findings", err_us=None,
                unpriced=sorted({f.rule for f in findings if f.cost_us is None} - {"capture"}), dropped=[],
                reduced=[])


def _rules_by_line(tied: dict) -> dict:
    """line -> the rules tied to it."""
    rules_on: dict = {}
    for rule, items in tied.items():
        for item in items:
            rules_on.setdefault(item["line"], set()).add(rule)
    return rules_on


def _add_cut(cut: dict, line: str, us: float) -> None:
    cut[line] = cut.get(line, 0.0) + us


def _direct_cuts(findings, tied: dict, rows: list, cut: dict) -> None:
    """A registered op's lines lose their time inside the dispatcher and the time to enter the impl."""
    rows_by = {row["line"]: row for row in rows}
    for finding in findings:
        if finding.rule in DIRECT:             # measured: the line's time inside the dispatcher
            for item in tied.get(finding.rule) or ():
                row = rows_by.get(item["line"])
                if row is not None:
                    _add_cut(cut, item["line"], sum(
                        c["us"] for c in row["callees"] if c["kind"] == callsite.DISPATCHER))
    if any(finding.rule in DIRECT for finding in findings):    # and the time it took to enter the op's impl
        for row in rows:
            if row.get("dispatch_entry_us"):
                _add_cut(cut, row["line"], row["dispatch_entry_us"])


def _priced_cuts(priced: list, tied: dict, rules_on: dict, keeps: set, cut: dict) -> None:
    """Each priced finding's cost, shared by count over the kept lines it was counted on."""
    for finding in priced:
        if finding.rule in DIRECT:
            continue
        items = tied.get(finding.rule) or []
        kept = [item for item in items if not _dropped(item["line"], rules_on, keeps)]
        count = sum(item["per_step"] or 0 for item in kept)
        for item in kept:
            share = (item["per_step"] or 0) / count if count else 1 / len(kept)
            _add_cut(cut, item["line"], finding.cost_us * share)


def _wrapper_overhead(lines_table: dict, rows: list, total: float) -> tuple[float, float]:
    """(the timed calls' wrappers' sampled µs, the sampled µs of timed calls)."""
    # an overhead the sampler found in the timed calls' wrappers, not the signal, sits on the lines
    # that make those calls (an execute, a sync: lines a fix keeps): it comes off them before the
    # lines are scaled to the loop, not off every line in proportion: taken off every line, the
    # removed lines' time shrinks by the share the kept ones carried and the projection lands above
    # the fixed step (log 2026-12-04-1248)
    # the wrappers' cost is measured where the audit ran a round with them and no timer
    # (`wrap_overhead`); an audit from before that infers it from an overhead the interval did not move
    wrap, on_timed = 0.0, sum(row.get("timed_us", 0.0) for row in rows)
    overhead = lines_table.get("wrap_overhead")
    if overhead is None and lines_table.get("overhead_not_signal"):
        overhead = lines_table.get("overhead")
    if overhead is not None and overhead > 0 and on_timed > 0:
        wrap = min(total * overhead / (1 + overhead), on_timed)
    return wrap, on_timed


def _cold_execute_us(row: dict) -> float:
    """A line's sampled µs of cuDNN run calls and Python: what a warm execute replaces."""
    return sum(c["us"] for c in row["callees"]
               if (c["kind"] == callsite.CUDNN and _attr(c["callee"]) in RUN_CALLS) or c["kind"] == callsite.PYTHON)


def _frees_and_warm(rows: list, ctx: dict, warm_us, scale: float, freed: list) -> list:
    """Cut the frees of removed objects from their callers' lines and, with the rebuild fixed, an
    execute line's cold time down to the warm figure; returns the warmed lines."""
    rules_on, keeps, cut, where = ctx["rules_on"], ctx["keeps"], ctx["cut"], ctx["where"]
    makers = {row["function"] for row in rows
              if _dropped(row["line"], rules_on, keeps) and rules_on[row["line"]] & FREES}
    warmed = []
    # a signal due while a C call runs (a teardown, a cold execute) is taken at the next bytecode, so
    # part of that call's time is sampled as the line's own Python just after it (the naive example's
    # execute line and its rebuilding function's caller carry such "Python", its fixed step next to
    # none: log 2026-12-02-1013): it goes with the call it followed
    glue = (callsite.CALL, callsite.PYTHON)
    for row in rows:
        if set(row.get("calls_into") or ()) & makers:
            gone = sum(c["us"] for c in row["callees"] if c["kind"] in glue)
            if gone > 0:
                _add_cut(cut, row["line"], gone)
                freed.append(row["line"])
        execs = (where.get("executes") or {}).get(row["line"])
        if warm_us is not None and execs and not _dropped(row["line"], rules_on, keeps):
            # the probe's warm figure is the whole statement's eager µs/call, its Python glue included
            cold = _cold_execute_us(row)
            warm = warm_us * execs / scale      # in sampled time, as the line's
            if cold > warm:
                _add_cut(cut, row["line"], cold - warm)
                warmed.append(row["line"])
    return warmed


def _sync_callee_us(rows: list, sync_lines: set) -> dict:
    """sync line -> its sync callees' sampled µs."""
    sync_now = {}
    for row in rows:
        if row["line"] in sync_lines:
            sync_now[row["line"]] = sum(c["us"] for c in row["callees"] if _attr(c["callee"]) in SYNC_ATTRS)
    return sync_now


def _keep_rows(rows: list, ctx: dict, kept: dict, scale: float, per_exec: float) -> None:
    """What each line keeps once fixed, into `kept` (its µs, variance, and which lines went how)."""
    rules_on, keeps, cut, where = ctx["rules_on"], ctx["keeps"], ctx["cut"], ctx["where"]
    sync_now, warmed = ctx["sync_now"], ctx["warmed"]
    for row in rows:
        if _dropped(row["line"], rules_on, keeps):
            left = _left_after_removal(row, rules_on[row["line"]])
            (kept["reduced"] if left > 0 else kept["dropped"]).append(row["line"])
            kept["us"] += left
            kept["var"] += left ** 2 / max(row["n"] * left / row["us"], 1) if row["us"] > 0 else 0.0
            continue
        us, samples = row["us"], row["n"]
        execs = (where.get("executes") or {}).get(row["line"])
        if samples < SPARSE and execs and per_exec > 0 and row["line"] not in warmed and not row.get("timed_us"):
            # too few samples on a line that executes (a slow step's one cheap line): its execute
            # time as the counting pass timed it, in eager units, plus what else the line sampled
            rest = sum(c["us"] for c in row["callees"] if c["kind"] != callsite.CUDNN)
            us, samples = per_exec * execs / scale + rest, max(samples, SPARSE)
            kept["timed"].append(row["line"])
        left = max(0.0, us - sync_now.get(row["line"], 0.0) - cut.get(row["line"], 0.0))
        if row["line"] in cut:
            kept["reduced"].append(row["line"])
        kept["us"] += left
        if row["line"] in sync_now:
            kept["left_of"][row["line"]] = left
        # a warmed line is the probe's figure; a timed call's own time is measured, not sampled (5 %)
        timed_us = min(us, row.get("timed_us", 0.0))
        kept["var"] += ((0.1 * left) ** 2 if row["line"] in warmed
                        else (us - timed_us) ** 2 / max(samples, 1) + (0.05 * timed_us) ** 2)


def _wrapper_share(rows: list, ctx: dict, kept: dict, wrap: float, on_timed: float, scale: float,
                   lines_table: dict, extra: dict) -> None:
    """Take the wrappers' share on the lines the fixes keep off the kept µs."""
    # the share of it on lines the fixes keep (a dropped line took its own with it); a warmed
    # line's time is the run file's figure, which never ran in the wrappers: charged the wrappers'
    # share of cold executes, a projection can fall to 0 (log 2026-12-04-1814)
    kept_timed = sum(row.get("timed_us", 0.0) for row in rows
                     if not _dropped(row["line"], ctx["rules_on"], ctx["keeps"]) and row["line"] not in ctx["warmed"])
    kept["us"] = max(0.0, kept["us"] - wrap * kept_timed / on_timed)
    extra["wrappers_us"] = wrap * scale
    if lines_table.get("wrap_overhead") is not None:
        extra["wrappers_measured"] = lines_table["wrap_overhead"]


def project(findings, counts: dict, lines_table: dict, tied: dict, modes: dict,
            warm_execute: tuple | None = None, timeline: dict | None = None) -> dict:
    """The eager step with every finding fixed, and the CUDA-graph ceiling beside it.

    From the lines when the step was sampled: a line whose every finding removes its call (a
    rebuild, an allocation, a copy, a view, a stream query) and that does no work the fixed step
    keeps (an execute, a cuBLAS call, a registered op) loses the measured time of those calls and
    their Python glue, keeping any other call on it (REMOVED_CALLS); a line
    that keeps its work loses its findings' priced cost, shared by count over their lines, except a
    registered op (custom_op, dispatcher), whose fix is the direct call: that line loses the time
    it measured inside the dispatcher. A step that rebuilds its graph runs each execute cold: with the
    rebuild fixed, an execute line's cuDNN time is the execute probe's warm figure (`warm_execute`:
    (µs, citation), cost.warm_execute). The frees of a removed finding's objects go with it: the call
    time of a line calling into the function that made them, and the loop's time between steps when
    the step allocates its outputs (FREES). A sync stays: its callee's time comes off its line
    and the sync is priced again from the timeline (fixed cost + the wait for the device work
    queued when the projected host reaches it; bench.audit.timeline). Lines are in sampled time,
    scaled to the plain loop's µs/step (modes["loop"]; the eager median for audits without one).
    Without sampling: that figure − the priced findings."""
    sampled = bool(lines_table.get("rows")) and not lines_table.get("verdict")
    loop, eager = _base_figures(modes, sampled)
    device = _mode_median(modes, "device")
    out = _projection_head(modes, loop, eager)
    if eager is None:
        return dict(out, projected_us=None, method="none", note="no eager figure")
    priced = [f for f in findings if f.cost_us is not None]
    rows = [] if lines_table.get("verdict") else lines_table.get("rows") or []   # unresolved: not by line
    if not rows:
        return _project_priced(findings, priced, modes, loop, eager, out)
    return _project_lines(findings, priced, counts, lines_table, tied, rows, (eager, device, out),
                          warm_execute, timeline)


def _project_lines(findings, priced: list, counts: dict, lines_table: dict, tied: dict, rows: list, base: tuple,
                   warm_execute: tuple | None, timeline: dict | None) -> dict:
    """The projection from the sampled lines (project's docstring); `base`: (the base µs, the
    device's µs, the projection's head)."""
    eager, device, out = base
    where = counts.get("lines") or {}
    keeps = {line for key in KEEPS for line in (where.get(key) or {})}
    rules_on = _rules_by_line(tied)
    unpriced = _unpriced(findings, tied, rules_on, keeps)
    cut: dict = {}                             # line -> µs taken off a kept line
    _direct_cuts(findings, tied, rows, cut)
    _priced_cuts(priced, tied, rules_on, keeps, cut)
    total = lines_table["sum_us"] + lines_table.get("loop_us", 0.0) + lines_table.get("outside_us", 0.0)
    wrap, on_timed = _wrapper_overhead(lines_table, rows, total)
    total -= wrap
    scale = eager / total if total > 0 else 1.0
    rules = {f.rule for f in findings}
    kept, freed = _kept_start(rules, lines_table.get("loop_us", 0.0))
    per_exec = (counts.get("execute_us") or 0) / counts["executes"] if counts.get("executes") else 0.0
    warm_us = warm_execute[0] if warm_execute and "rebuild" in rules else None
    ctx = {"rules_on": rules_on, "keeps": keeps, "cut": cut, "where": where}
    ctx["warmed"] = warmed = _frees_and_warm(rows, ctx, warm_us, scale, freed)
    ctx["sync_now"] = sync_now = _sync_callee_us(rows, set(where.get("syncs") or {}))
    _keep_rows(rows, ctx, kept, scale, per_exec)
    extra: dict = {"freed": freed} if freed else {}
    if wrap > 0:
        _wrapper_share(rows, ctx, kept, wrap, on_timed, scale, lines_table, extra)
    extra.update(_warm_notes(rules, warm_us, warm_execute, where, warmed))
    kept_us = _with_outside(kept["us"], lines_table.get("outside_us", 0.0), total)
    host_proj, host_now = kept_us * scale, (total - sum(sync_now.values())) * scale
    lines = {"unpriced": unpriced, "dropped": kept["dropped"], "reduced": kept["reduced"], "timed": kept["timed"],
             "host_now_us": host_now, "host_proj_us": host_proj}
    return _with_syncs((out, lines), priced, rows, ctx, kept, (host_now, host_proj, kept_us, scale), device, timeline,
                       lines_table, extra)


def _kept_start(rules: set, loop_us: float) -> tuple[dict, list]:
    """(what the fixed step keeps before its lines: the loop's time between steps; what is freed)."""
    freed = []
    if "new_output" in rules and loop_us > 0:       # the step's result, allocated per step, dies in the loop
        freed.append("between steps")
        loop_us = 0.0
    return {"us": loop_us, "var": 0.0, "dropped": [], "reduced": [], "timed": [], "left_of": {}}, freed


def _unpriced(findings, tied: dict, rules_on: dict, keeps: set) -> list:
    """The rules left in the projection unpriced."""
    # a finding with no price is left in, unless every line it was counted on is dropped
    unpriced = sorted(f.rule for f in findings if f.cost_us is None
                      and not (tied.get(f.rule) and all(_dropped(x["line"], rules_on, keeps) for x in tied[f.rule])))
    # capture: the ceiling beside it; sync: kept and priced from the timeline
    return [u for u in unpriced if u not in DIRECT and u not in ("capture", "sync")]


def _with_outside(kept_us: float, outside: float, total: float) -> float:
    """The kept µs with the time outside the step, spread as the step shrinks."""
    # time outside the step (the sync after each round) is a per-round cost: a faster step spreads
    # it over proportionally more steps; kept whole per step, a slow step's few samples there put its
    # projection far above the fixed step (log 2026-12-01-1550)
    if outside > 0:
        kept_us += outside * min(1.0, kept_us / max(total - outside, 1e-9))
    return kept_us


def _with_syncs(head: tuple, priced: list, rows: list, ctx: dict, kept: dict, host: tuple, device,
                timeline: dict | None, lines_table: dict, extra: dict) -> dict:
    """The projection with the syncs priced again from the timeline, held to the device's time;
    `head`: (the figures every projection carries, the lines' own)."""
    host_now, host_proj, kept_us, scale = host
    cut_dev = sum(f.cost_us for f in priced if f.rule in DEVICE_COPIES) if device is not None else 0.0
    timeline = timeline or {}
    syncs = sync_projection(timeline.get("segments") or [], device, host_now, host_proj, cut_dev,
                            ctx["sync_now"], kept["left_of"], {r["line"]: r["us"] for r in rows}, scale,
                            timeline.get("error"), timeline.get("launches_error"))
    syncs["sync_model"] += _fixed_state_note(timeline) if syncs["syncs"] else ""
    proj = host_proj + sum(x["cost_proj_us"] for x in syncs["sync_lines"])
    var_syncs = sum((0.1 * x["wait_proj_us"]) ** 2 for x in syncs["syncs"])
    # a loop of steps runs no faster than its device work (one stream): the kernels the fixes keep
    floor = device - cut_dev if device is not None else None
    if floor is not None and proj < floor:
        extra["device_bound"] = (f"device-bound: held to the device's {floor:.2f} µs/step (the host alone "
                                 f"would take {proj:.2f})")
        proj = floor
    # the sampler's distortion (its overhead; lines scaled back to the loop): the kept lines are
    # known to within that share of themselves
    var_distortion = (max(0.0, lines_table.get("overhead") or 0.0) * kept_us * scale) ** 2
    out, lines = head
    return dict(out, projected_us=proj, err_us=math.sqrt(kept["var"] * scale ** 2 + var_syncs + var_distortion),
                method="lines", **lines, **syncs, **extra)

def _warm_notes(rules: set, warm_us, warm_execute: tuple | None, where: dict, warmed: list) -> dict:
    """What the projection says of cold executes: priced cold (no warm figure), or warmed from where."""
    notes: dict = {}
    if "rebuild" in rules and warm_us is None and where.get("executes"):
        notes["cold"] = (f"each execute after a rebuild runs cold and stays so priced: no warm figure "
                         f"({warm_execute[1] if warm_execute else 'no run file'})")
    if warmed:
        notes.update(warmed=warmed, warm_from=warm_execute[1] if warm_execute else None)
    return notes

def _fixed_state_note(timeline: dict) -> str:
    """Which host state the drained syncs' fixed costs come from, where it is not the loop's plainly."""
    want = timeline.get("want_state")
    if not want:
        return ""
    if timeline.get("fixed_held"):
        return f"; fixed costs from {timeline.get('drained_steps')} drained steps held to the host's {want} state"
    if timeline.get("fixed_held") is False:
        return (f"; the drained syncs could not be held to the host's {want} state ({timeline.get('tries')} tries): "
                "their fixed costs are of whichever state the host was in")
    if timeline.get("host_state") != want:
        return (f"; the timeline pass ran in the host's {timeline.get('host_state')} state, not the {want} state of the "
                f"loop ({timeline.get('tries')} tries): its fixed costs are that state's")
    return ""


def sync_projection(segments, device_us, host_now: float, host_proj: float, cut_dev: float, sync_now: dict,
                    left_of: dict, row_us: dict, scale: float, why: str | None = None,
                    unplaced: str | None = None) -> dict:
    """{"syncs": each sync now and projected (timeline.project_syncs), "sync_lines": each sync
    line now and projected (what else it keeps + its syncs' fixed cost and projected wait),
    "sync_model": how they were priced}. Without a timeline a sync keeps its sampled time."""
    based = rebase(segments, sync_now, host_now, scale)
    # each sync line's other calls (now, projected; shared among its syncs) run last before its sync
    on_line = Counter(s["line"] for s in based)
    tails = [((max(0.0, row_us.get(s["line"], 0.0) - sync_now[s["line"]]) * scale / on_line[s["line"]],
               left_of.get(s["line"], 0.0) * scale / on_line[s["line"]]) if s["line"] in sync_now else None)
             for s in based]
    syncs = audit_timeline.project_syncs(based, device_us, host_now, host_proj, cut_dev, tails)
    by_line: dict = {}
    for x in syncs:
        by_line.setdefault(x["line"], []).append(x)
    out = []
    for line, now in sync_now.items():
        own, left = by_line.get(line), left_of.get(line, 0.0) * scale
        row = {"line": line, "now_us": row_us.get(line, now) * scale, "sync_now_us": now * scale}
        if own:
            # rebased on the sampled rounds (rebase): already in the loop's µs, the wait what the sampled
            # sync took past its fixed cost, and a wait that shrinks stops at zero (project_syncs)
            fixed, wait, wait_p = (sum(x[k] for x in own) for k in ("fixed_us", "wait_us", "wait_proj_us"))
            row.update(fixed_us=fixed, wait_us=wait, wait_proj_us=wait_p, cost_proj_us=fixed + wait_p)
        else:     # no timeline (an audit from before it, or a sync the pass did not see): kept as sampled
            row.update(fixed_us=None, wait_us=None, wait_proj_us=None, cost_proj_us=now * scale)
        row["proj_us"] = left + row["cost_proj_us"]
        out.append(row)
    kept = f"kept at their sampled time: {why or 'this audit has no timeline'}"
    model = ("each at its fixed cost (the timeline's drained syncs) + the device work still queued when the "
             "projected host reaches it (the sampled rounds' sync time past that cost, now; the sync line's "
             "other calls run last before it" + ("; the wait's change replayed from the step's kernel launches"
                                                 if any(x.get("from_launches") for x in syncs) else
                                                 f"; kernel launches not placed: {unplaced}" if unplaced else "")
             + ")" if syncs
             else kept if sync_now else "")
    return {"syncs": syncs, "sync_lines": out, "sync_model": model}


def rebase(segments: list, sync_now: dict, host_now: float, scale: float) -> list:
    """The timeline's segments in the sampled rounds' figures. The timeline pass runs apart from the
    sampled rounds, on a VM in whatever host state it finds: a pass whose host ran slower than the
    device never waits at the sync, so scaled to the sampled sync its whole time reads as fixed cost
    and stays in the projection (log 2026-12-03-0826). Per sync: its time the sampled one (the loop's state, shared among
    the syncs of one line as the pass shared it), its fixed cost the drained pass's (capped at that
    time), the host before it the sampled host time shared as the pass shared it. The wait is what
    is left. A sync the sampler did not see keeps the pass's sync figures; its host segment is
    rebased with the others, so every segment's host stands in one state's µs."""
    if not sync_now:
        return [dict(s) for s in segments]
    hosts = [max(0.0, s["host_us"]) for s in segments]
    total_h = sum(hosts)
    on_line: dict = {}        # line -> (the pass's sync µs on it, its syncs)
    for s in segments:
        us, n = on_line.get(s["line"], (0.0, 0))
        on_line[s["line"]] = (us + max(0.0, s["sync_us"]), n + 1)
    out = []
    for s, h in zip(segments, hosts):
        host = host_now * (h / total_h if total_h > 0 else 1 / len(segments))
        now = sync_now.get(s["line"])
        if now is None:
            out.append(dict(s, host_us=host))
            continue
        own, n = on_line[s["line"]]
        sync = now * scale * (max(0.0, s["sync_us"]) / own if own > 0 else 1 / n)
        out.append(dict(s, sync_us=sync, fixed_us=min(s["fixed_us"], sync), host_us=host))
    return out


def _dropped(line: str, rules_on: dict, keeps: set) -> bool:
    """Whether every finding on the line removes its call and the line does no work the fixed step keeps."""
    rules = rules_on.get(line)
    return bool(rules) and rules <= REMOVES and line not in keeps


def _left_after_removal(row: dict, rules: set) -> float:
    """µs of a line's callees that its removing findings do not explain (another call on it)."""
    names = frozenset().union(*(REMOVED_CALLS.get(r, ()) for r in rules))
    left = 0.0
    for c in row["callees"]:
        label, kind = c["callee"], c["kind"]
        name = label if label.startswith("operator ") else _attr(label)
        if name in names or kind in (callsite.PYTHON, callsite.OPERATOR):
            continue
        if "rebuild" in rules and kind == callsite.CUDNN and name not in RUN_CALLS:
            continue
        left += c["us"]
    return left


def against(projected: dict, measured_eager_us: float | None) -> float | None:
    """The projection over a fixed version's measured eager µs/step, minus 1."""
    p = (projected or {}).get("projected_us")
    return p / measured_eager_us - 1 if p is not None and measured_eager_us else None
