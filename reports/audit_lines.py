"""The audit's host time by source line, as text and Markdown: the line table with its callees,
the lines no finding explains, and the step projected with every finding fixed
(bench.audit.lines computes them; reports.audit_report places them)."""
from __future__ import annotations

from cudnn_hostbench.reports.fmt import DASH, md_table, num

TOP = 15          # rows shown; the rest summed in one line


def _callees(row: dict, limit: int = 4) -> str:
    cs = row.get("callees") or []
    text = "; ".join(f"{c['callee']} [{c['kind']}] {c['us']:.1f}" for c in cs[:limit])
    if len(cs) > limit:
        text += f"; {len(cs) - limit} more {sum(c['us'] for c in cs[limit:]):.1f}"
    if row.get("spill"):
        text += f" (may include operators {', '.join(row['spill'][:3])})"
    return text


def _pct(share) -> str:
    return DASH if share is None else f"{share * 100:.0f} %"


def header(lines: dict) -> str:
    """How the lines were sampled and how well they add up."""
    if lines.get("error"):
        return f"host time by line: not sampled: {lines['error']}"
    over = lines.get("overhead")
    head = (f"host time by source line: {lines.get('steps', 0)} steps sampled every {num(lines.get('interval_us'), 0)} µs "
            f"({lines.get('samples', 0)} samples); sampling overhead "
            f"{DASH if over is None else f'{over * 100:+.1f} %'} (plain {num(lines.get('step_us_plain'), 1)} vs "
            f"sampled {num(lines.get('step_us_sampled'), 1)} µs/step)")
    if lines.get("overhead_not_signal"):
        head += (" that did not fall with a longer interval (the timed calls' wrappers, not the signal): "
                 "these lines kept, the kept lines' share of it in the projection's error")
    if lines.get("wrap_overhead") is not None:
        head += f"; the timed calls' wrappers alone {lines['wrap_overhead'] * 100:+.1f} %"
    if lines.get("rounds_other_state"):
        how = (f"the host's sentinel, off the state around {lines['rounds_host_off']}"
               if str(lines.get("matched_on") or "").startswith("host sentinel") else "their plain round's time")
        head += (f"; {lines['rounds_other_state']} of {lines['rounds']} sampled rounds left out, run in another host "
                 f"state than the {lines.get('base') or 'eager figure'} (by {how})")
    if lines.get("timed_calls"):
        shown = [c.replace("…", "") for c in lines["timed_calls"]]
        head += (f"; long calls timed, not sampled, each charged to its own line ({', '.join(shown[:4])}"
                 + (f" and {len(shown) - 4} more" if len(shown) > 4 else "") + ")")
    if lines.get("state_note"):
        head += f"\n  {lines['state_note']}"
    if lines.get("verdict"):
        return head + f"\n  {lines['verdict']}"
    cover = (f"lines sum to {lines['sum_us']:.1f} µs/step = {_pct(lines.get('coverage'))} of the "
             f"{lines.get('base') or 'eager step'} ({num(lines.get('eager_us'), 1)} µs)")
    return head + "\n  " + (lines["note"] if lines.get("note") else cover + ", within 10 %") + \
        f"; between steps {lines.get('loop_us', 0):.1f}, outside the step {lines.get('outside_us', 0):.1f} µs/step"


def _rows(lines: dict, rows: list) -> tuple[list, list]:
    shown, rest = rows[:TOP], rows[TOP:]
    return shown, ([f"{len(rest)} more lines", sum(r["us"] for r in rest)] if rest else [])


def text(lines: dict, projection: dict, rem: list) -> list:
    if not lines:
        proj = _projection_text(projection)
        return ["", *proj] if proj else []
    out = ["", header(lines)]
    if lines.get("error") or lines.get("verdict"):
        return out + _projection_text(projection)
    shown, rest = _rows(lines, lines["rows"])
    out.append(f"  {'µs/step':>8} {'share':>6}  line (function): what it called [kind] µs/step")
    for r in shown:
        out.append(f"  {r['us']:8.2f} {_pct(r.get('share')):>6}  {r['line']} ({r['function']}): {_callees(r)}")
    if rest:
        out.append(f"  {rest[1]:8.2f}         {rest[0]}")
    if rem:
        out.append("lines no finding explains, most time first:")
        out += [f"  {r['us']:8.2f} µs/step  {r['line']}: {_callees(r)}" for r in rem[:TOP]]
    return out + _projection_text(projection)


def _projection_text(projection: dict) -> list:
    if not projection or projection.get("projected_us") is None:
        return []
    err = f" ± {projection['err_us']:.1f}" if projection.get("err_us") is not None else ""
    how = (f"from the lines: {len(projection.get('dropped') or [])} dropped, "
           f"{len(projection.get('reduced') or [])} reduced by their findings' cost"
           + (f", {len(projection['timed'])} with too few samples taking the counting pass's execute time"
              if projection.get("timed") else "")
           if projection.get("method") == "lines" else projection.get("method", ""))
    ceiling = (f"CUDA-graph ceiling {num(projection.get('graph_us'))} µs/step" if projection.get("graph_us") is not None
               else "no CUDA-graph ceiling (not capturable)")
    now = (f"µs/step in a plain loop, now {num(projection.get('base_us'))} (eager {num(projection.get('eager_us'))})"
           if projection.get("base") == "loop" else f"µs/step eager, now {num(projection.get('eager_us'))}"
           + (f" (the plain loop, {num(projection.get('loop_us'))}, ran in another host state)"
              if projection.get("loop_state_differs") else ""))
    line = (f"projected with every finding fixed: {projection['projected_us']:.2f}{err} {now} ({how}); {ceiling}; "
            f"device {num(projection.get('device_us'))} µs/step")
    if projection.get("unpriced"):
        line += f"; left in (no price): {', '.join(projection['unpriced'])}"
    if projection.get("warmed"):
        line += f"; executes after a rebuild priced warm ({projection['warm_from']})"
    if projection.get("freed"):
        line += f"; frees of the removed objects taken off ({', '.join(projection['freed'])})"
    if projection.get("wrappers_us"):
        how = (f" (measured: a round with the wrappers and no timer ran {projection['wrappers_measured'] * 100:+.1f} % over "
               "the plain round)" if projection.get("wrappers_measured") is not None else " (the sampler's overhead)")
        line += (f"; {projection['wrappers_us']:.2f} µs/step of the timed calls' wrappers{how} taken off "
                 "the lines that make those calls, not off every line")
    if projection.get("cold"):
        line += f"; {projection['cold']}"
    if projection.get("device_bound"):
        line += f"; {projection['device_bound']}"
    return [line, *fixed_line(projection), *sync_lines(projection)]


def fixed_line(projection: dict) -> list:
    """The hand-fixed step (--fixed), timed in the same plain-loop rounds, against the projection."""
    if not projection.get("fixed_us") or projection.get("projected_us") is None:
        return []
    return [f"the fixed step {projection.get('fixed_target') or ''} in a plain loop of this process"
            f"{projection.get('fixed_how') or ''}: {projection['fixed_us']:.2f} µs/step; the projection is "
            f"{projection['projected_us'] / projection['fixed_us'] - 1:+.1%} off it"]


def sync_lines(projection: dict) -> list:
    """Each sync now and projected: fixed cost + wait, and its line's projected cost."""
    if not projection.get("sync_lines"):
        return []
    out = [f"syncs (µs/step), {projection.get('sync_model', '')}:"]
    by_line: dict = {}
    for x in projection.get("syncs") or ():
        by_line.setdefault(x["line"], []).append(x)
    for r in projection["sync_lines"]:
        if r.get("fixed_us") is None:
            out.append(f"  {r['line']}: sync {r['sync_now_us']:.1f} µs/step, kept; line {r['now_us']:.1f} → "
                       f"{r['proj_us']:.1f}")
            continue
        names = ", ".join(x["sync"] for x in by_line.get(r["line"], ()))
        out.append(f"  {r['line']} {names}: now {r['fixed_us']:.1f} fixed + {r['wait_us']:.1f} wait; projected "
                   f"{r['fixed_us']:.1f} + {r['wait_proj_us']:.1f} = {r['cost_proj_us']:.1f} µs/step (line "
                   f"{r['now_us']:.1f} → {r['proj_us']:.1f})")
    return out


def sync_markdown(projection: dict) -> list:
    if not projection.get("sync_lines"):
        return []
    names: dict = {}
    for x in projection.get("syncs") or ():
        names.setdefault(x["line"], []).append(x["sync"])
    rows = [[f"`{r['line']}`", ", ".join(names.get(r["line"], ())) or "–", num(r.get("fixed_us")), num(r.get("wait_us")),
             num(r.get("wait_proj_us")), num(r.get("cost_proj_us")), f"{r['now_us']:.2f}", f"{r['proj_us']:.2f}"]
            for r in projection["sync_lines"]]
    return ["", f"Syncs (µs/step), {projection.get('sync_model', '')}:", "",
            md_table(["line", "sync", "fixed", "wait now", "wait projected", "sync projected", "line now",
                      "line projected"], rows)]


def finding_lines(finding) -> str:
    """'at examples/x.py:31 (1/step, 12.3 µs), ...' for a finding, '' when no line was counted."""
    items = getattr(finding, "lines", None) or []
    parts = []
    for x in items[:6]:
        n = "" if x.get("per_step") is None else f"{x['per_step']:g}/step"
        us = "" if x.get("us") is None else f"{x['us']:.1f} µs"
        detail = ", ".join(p for p in (n, us) if p)
        parts.append(f"{x['line']}" + (f" ({detail})" if detail else ""))
    if len(items) > 6:
        parts.append(f"{len(items) - 6} more")
    return ", ".join(parts)


def markdown(lines: dict, projection: dict, rem: list) -> list:
    head = header(lines).removeprefix("host time by source line: ").replace("\n  ", "\n\n") if lines else ""
    md = ["", "## Host time by source line", "", head[:1].upper() + head[1:]] if lines else []
    if lines and not (lines.get("error") or lines.get("verdict")):
        shown, rest = _rows(lines, lines["rows"])
        rows = [[f"`{r['line']}`", r["function"], f"{r['us']:.2f}", _pct(r.get("share")), _callees(r, 6)] for r in shown]
        if rest:
            rows.append([rest[0], "", f"{rest[1]:.2f}", "", ""])
        md += ["", md_table(["line", "function", "µs/step", "share of eager", "what it called [kind] µs/step"], rows)]
        if rem:
            md += ["", "### Lines no finding explains", "",
                   md_table(["line", "µs/step", "what it called [kind] µs/step"],
                            [[f"`{r['line']}`", f"{r['us']:.2f}", _callees(r, 6)] for r in rem[:TOP]])]
    proj = _projection_text(projection)
    if proj:
        md += ["", "## Projected with every finding fixed", "", proj[0].removeprefix("projected with every finding fixed: ")]
        for x in fixed_line(projection):
            md += ["", x[:1].upper() + x[1:] + "."]
        for what in ("dropped", "reduced", "timed", "warmed", "freed"):
            if projection.get(what):
                md.append(f"\n{what.capitalize()}: " + ", ".join(f"`{x}`" for x in projection[what]) + ".")
        md += sync_markdown(projection)
    return md
