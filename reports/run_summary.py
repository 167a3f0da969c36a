"""A run's lines as text: its caption (what it was measured on), its summary (workers, host
states, rounds kept and discarded, flagged figures) in one line (`summary_line`, --wide), at most
SUMMARY_LINES lines fitted to a width (`summary_lines`) or parts (`summary_parts`), and where its
time went (`time_text`). Every renderer of a run (the table, the pytest report, `hostbench run` and
`table`, the results pages) reads them from here. The flagged figures are the records' own marks
(`rec.badge`, `run.mark_counts()`, from bench/measure/runfile/marks.py); the legend is
reports/marks_text.py's.
"""
from __future__ import annotations

from pathlib import Path

from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint, HostState, known
from cudnn_hostbench.bench.measure.runfile.marks import MARKS
from cudnn_hostbench.bench.measure.runfile.records import MIN_PROCESSES


def caption(run) -> str:
    """What the run was measured on, in one line: GPU, cuDNN, frontend, torch, CUDA, driver, CPU, time."""
    fp = run.fingerprint
    return (f"{known(fp.gpu_name)} · cuDNN {fp.cudnn_backend} · frontend {known(fp.cudnn_frontend)} · "
            f"torch {known(fp.torch)} (CUDA {known(fp.cuda)}) · driver {known(fp.driver)} · "
            f"{known(fp.cpu_model)} · {run.datetime}")


def markdown_head(run) -> list[str]:
    """table.md's paragraphs about the run: its file and caption, its summary, its time (if recorded)."""
    time = time_text(run)
    return [f"Run: `{Path(run.path).name}` — {caption(run)}", summary_line(run), *([time] if time else [])]


def _top_ups(fingerprint: Fingerprint) -> tuple[list, int, set, set]:
    """The run's top-up workers (a catch-up worker in older runs), focus-only workers, and the
    blocks the top-ups ran and timed fast."""
    tops, focus = fingerprint.top_ups_run(), fingerprint.focus_count
    return (tops, focus, {b for t in tops for b in t.get("blocks", [])},
            {b for t in tops for b in t.get("timed_fast", [])})


def _host_text(run, host_state: HostState, fast_state: str) -> str:
    """The eager figures' host states, or why there are none; `fast_state` names the fast one."""
    states = [r.host_state for r in run.records if r.mode == "eager" and r.ok and getattr(r, "host_state", "")]
    if host_state.unstable:
        return "host UNSTABLE (eager figures not comparable)"
    if states:
        return f"{fast_state} {states.count('fast')}, slow {states.count('slow')}"
    return "host stable" if host_state else "host state not recorded"


def counts_text(counts: dict[str, int]) -> str:
    """'3 ⚑s, 1 ⚑w' for run.mark_counts() (or trust.count_marks())."""
    return ", ".join(f"{n} ⚑{MARKS[k].letter}" for k, n in counts.items())


def _flagged_text(run) -> str:
    flagged = sum(1 for r in run.records if r.badge)
    return f"{flagged} figure(s) flagged ({counts_text(run.mark_counts())})" if flagged else "no figure flagged"


def _fast_text(blocks: list, fast: list) -> str:
    """Which top-up blocks were timed in the fast state, in the fewest names: all, none, or all but
    the few that were not (most are, so listing them would repeat the block list)."""
    if fast == blocks:
        return "all"
    if not fast:
        return "none"
    slow = [b for b in blocks if b not in fast]
    return f"all but {', '.join(slow)}" if len(slow) < len(fast) else ", ".join(fast)


def _floor_text(host_state: HostState) -> str:
    """The host floor; its range over the workers where they differ (each judges by its own:
    hoststate.process_floor)."""
    own = [w.floor_us for w in host_state.per_worker if isinstance(w, HostState) and w.floor_us]
    if own and max(own) > min(own) * 1.01:
        return f"host floor {min(own):.2f}-{max(own):.2f} µs (per worker)"
    return f"host floor {host_state.floor_us:.2f} µs"


def summary_line(run) -> str:
    """One line per run: workers, host floor, rounds kept and discarded (and why), flagged rows."""
    fp = run.fingerprint
    host_state = fp.host_state
    kept = sum(len(r.samples) for r in run.records if r.ok and r.mode != "host")
    parts = [_workers_text(fp)]
    few = fp.few_processes or []
    if few:
        parts.append(f"eager rows on fewer than {MIN_PROCESSES} processes (⚑p) in {len(few)} block(s)")
    cut = fp.budget_cut or {}
    if cut:
        parts.append(_cut_text(cut))
    if host_state.floor_us:
        parts.append(_floor_text(host_state))
    parts.append(_host_text(run, host_state, "eager figures in the host's fast state"))
    waited = _waited_text(host_state)
    if waited:
        parts.append(waited)
    parts.append(_rounds_text(kept, _discarded_by_reason(run)))
    parts.append(_flagged_text(run))
    return "; ".join(parts)


def _workers_text(fingerprint: Fingerprint) -> str:
    """The run's workers, its focus-only ones, and its top-ups with the blocks they ran."""
    tops, focus, block_set, fast_set = _top_ups(fingerprint)
    blocks, fast = sorted(block_set), sorted(fast_set)
    return (f"{fingerprint.workers - focus - len(tops)} worker(s)"
            + (f" + {focus} focus-only worker(s)" if focus else "")
            + ((" + a catch-up worker" if len(tops) == 1 else f" + {len(tops)} top-up workers")
               + f" for {', '.join(blocks)} (timed fast: "
               + _fast_text(blocks, fast) + ")" if tops else ""))


def _cut_text(cut: dict) -> str:
    """What the budget cut from the run."""
    what = ([f"{cut['focus_workers_dropped']} focus-only worker(s) dropped"] if cut.get("focus_workers_dropped") else []) \
        + ([f"no top-up worker for {', '.join(cut['catch_up_skipped'])}"] if cut.get("catch_up_skipped") else [])
    return f"cut to fit --hb-budget-s {cut.get('budget_s', 0):g}: {', '.join(what)}"


def _waited_text(host_state: HostState) -> str:
    """How long the workers waited for the fast state before eager rounds ('' when they did not)."""
    waits = host_state.waits()
    waited = sum((w.gate_s or 0) + (w.focus_s or 0) for w in waits)
    if not waited:
        return ""
    gave = sum(1 for w in waits if w.gave_up)
    return (f"{waited:.0f} s waited for the fast state before eager rounds"
            + (f" ({gave} worker(s) stopped waiting: their waits found none)" if gave else ""))


def _discarded_by_reason(run) -> dict:
    """reason -> rounds discarded for it, over the run's records."""
    why: dict = {}
    for rec in run.records:
        for reason, count in (rec.rounds_discarded or {}).items():
            why[reason] = why.get(reason, 0) + count
    return why


def _rounds_text(kept: int, why: dict) -> str:
    disc = sum(why.values())
    return (f"{kept} rounds kept, {disc} discarded"
            + (" (" + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(why.items())) + ")" if disc else ""))

BUILD_TOP = 5          # blocks named in the building line (the largest)
TIME_NAMES = {"startup": "start-up", "warm": "warm-up", "build": "building", "eager": "eager rounds",
              "wait_fast": "waiting for the fast state", "graph": "graph", "device": "device", "host": "build-time rows",
              "other": "other"}


def time_text(run) -> str:
    """Where the run's time went (s), over all workers and per worker ('' for runs from before
    workers recorded it): start-up, warm-up, building, eager rounds, waiting for the fast host
    state, graph, device, build-time rows and the rest; and the parent's own time."""
    fp = run.fingerprint
    table = fp.workers_table()
    per = [w.time_s for w in table if isinstance(w.time_s, dict)]
    if not any(per):
        return ""
    roles = [w.role for w in table]
    total: dict = {}
    for times in per:
        for key, secs in times.items():
            total[key] = total.get(key, 0.0) + secs
    out = [f"time (s): all workers {sum(total.values()):.1f} = {_time_parts(total)}"]
    for i, times in enumerate(per):
        role = roles[i] if i < len(roles) else ""
        out.append(f"worker {i + 1}{' ' + role if role else ''} {sum(times.values()):.1f} = {_time_parts(times)}")
    wall = fp.suite_wall_s
    if wall and len(per) > 1:
        out.append(f"the run {wall:.1f} (the parent's own {max(0.0, wall - sum(total.values())):.1f})")
    building = _building_text(fp)
    if building:
        out.append(building)
    return "; ".join(out)


def _time_parts(times: dict) -> str:
    return ", ".join(f"{TIME_NAMES.get(k, k)} {v:.1f}" for k, v in times.items() if v >= 0.05)


def _building_text(fingerprint: Fingerprint) -> str:
    """The largest blocks' building time, all workers ('' where the run has none)."""
    builds = {k: v for k, v in (fingerprint.build_s or {}).items() if isinstance(v, (int, float))}
    if not builds:
        return ""
    top = sorted(builds.items(), key=lambda kv: -kv[1])[:BUILD_TOP]
    plans = [v for v in (fingerprint.plans_s or {}).values() if isinstance(v, (int, float))]
    return ("building by block, all workers: " + ", ".join(f"{k} {v:.1f}" for k, v in top)
            + (f" (of {sum(builds.values()):.1f} over {len(builds)} blocks)" if len(builds) > BUILD_TOP else "")
            + (f"; in cuDNN's build steps {sum(plans):.1f} of {sum(builds.values()):.1f}" if plans else ""))

def summary_parts(run) -> list[str]:
    """The run summary in short parts, most telling first (summary_lines packs them): workers,
    host state, rounds, flagged figures. The blocks and the discard reasons are summary_line's."""
    fp = run.fingerprint
    hs = fp.host_state
    tops, focus, blocks, fast = _top_ups(fp)
    workers = f"{fp.workers - focus - len(tops)} worker(s)" + (f" + {focus} focus-only" if focus else "")
    if tops:
        workers += (f" + {len(tops)} top-up for {len(blocks)} block(s) ("
                    + ("all" if fast >= blocks else f"{len(fast & blocks)}") + " timed fast)")
    parts = [workers]
    few = fp.few_processes or []
    if few:
        parts.append(f"⚑p in {len(few)} block(s)")
    if fp.budget_cut:
        parts.append(f"cut to fit --hb-budget-s {fp.budget_cut.get('budget_s', 0):g}")
    if hs.floor_us:
        parts.append(_floor_text(hs))
    parts.append(_host_text(run, hs, "eager in the fast host state"))
    kept = sum(len(r.samples) for r in run.records if r.ok and r.mode != "host")
    disc = sum(n for r in run.records for n in (r.rounds_discarded or {}).values())
    parts.append(f"{kept} rounds kept, {disc} discarded")
    parts.append(_flagged_text(run))
    return parts


SUMMARY_LINES = 3


def _pack(parts: list[str], width: int) -> list[str]:
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += "; " + part
        else:
            lines.append(part if len(part) <= width else part[:width - 1] + "…")
    return lines


def summary_lines(run, width: int = 100) -> list[str]:
    """The run summary in at most three lines of `width`: summary_parts packed '; '-joined and
    what --wide adds (every block, every discard reason: summary_line). Where three lines cannot
    hold them all, the hint goes first, then the first parts (the workers, the host state) give
    way to a '…'; the rounds and the flagged figures stay."""
    parts = summary_parts(run)
    hint = "--wide: blocks and discard reasons" + (", time per worker" if time_text(run) else "")
    lines = _pack([*parts, hint], width)
    while len(lines) > SUMMARY_LINES and len(parts) > 2:
        parts = parts[1:]
        lines = _pack(["…", *parts], width)
    return lines[:SUMMARY_LINES]
