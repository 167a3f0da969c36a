"""Trust signals: which figures were measured with rounds thrown away, clock drops, an unstable
host or a wide spread between worker processes, in one place every renderer reads.

A record carries `flags` (set when it is measured or merged); a run carries `host_state` in its
fingerprint. MARKS defines each kind once; only the kinds that lower trust mark a figure.
Renderers show `badge(rec)` next to a figure, `legend()` (or LEGEND) once, `count_marks(run)` as
a count by kind, and each run's `summary_line(run)`, which also counts discarded rounds.
"""
from __future__ import annotations

import math
import re
import statistics
from typing import NamedTuple

from cudnn_hostbench.bench.measure.runfile import run_format
from cudnn_hostbench.bench.measure.runfile.records import MIN_PROCESSES


class Mark(NamedTuple):
    letter: str          # shown after ⚑ next to a figure
    meaning: str         # the legend's words
    lowers_trust: bool   # only these mark a figure; the others are counted in the summary line
    short: str           # a few words, for prose (README, docs)


# Every mark, defined once: the table, compare, the dashboard, the README figures and the audit
# read it from here. A record's `flags` keep every kind (the record is the full account); a figure
# shows only the kinds that make what was kept less trustworthy.
MARKS = {
    "discarded": Mark("d", "some rounds were discarded (slow host state or clock drop) and redone", False,
                      "rounds discarded and redone"),
    "clock_drop": Mark("c", "the GPU clock dropped below 95 % of its usual clock on kept rounds", True,
                       "clock dropped on kept rounds"),
    "host_unstable": Mark("h", "no steady host state: every round kept; not comparable", True,
                          "no steady host state"),
    "slow_host": Mark("s", "eager figure timed in the host's slow state; compared only with slow-state figures",
                      True, "timed in the slow host state"),
    "wide_spread": Mark("w", "worker processes disagree by more than 10 %", True, "workers disagree"),
    "few_processes": Mark("p", "eager figure on fewer than 3 worker processes; the verdict widens it", True,
                          "fewer than 3 processes"),
}
FLAGS = {k: (m.letter, m.meaning) for k, m in MARKS.items()}   # flag -> (letter, meaning), in order
SHOWN = tuple(k for k, m in MARKS.items() if m.lowers_trust)
WIDE_SPREAD = 0.10


def legend(kinds=SHOWN) -> list[str]:
    """One line per shown mark, e.g. '⚑c  the GPU clock dropped ...' (at most 100 characters each)."""
    return [f"⚑{MARKS[k].letter}  {MARKS[k].meaning}" for k in SHOWN if k in kinds]


def short_legend() -> str:
    """'c: clock dropped on kept rounds; h: ...' for the marks that mark a figure."""
    return "; ".join(f"{MARKS[k].letter}: {MARKS[k].short}" for k in SHOWN)


LEGEND = "; ".join(f"{MARKS[k].letter}: {MARKS[k].meaning}" for k in SHOWN)


def shown_flags(rec) -> list[str]:
    """The record's flags that lower trust, in MARKS order."""
    have = set(getattr(rec, "flags", None) or ())
    return [k for k in SHOWN if k in have]


def badge(rec) -> str:
    """'' or e.g. '⚑cw' for a record's trust-lowering flags, in MARKS order."""
    letters = "".join(MARKS[k].letter for k in shown_flags(rec))
    return f"⚑{letters}" if letters else ""


def count_marks(run, shown_only: bool = True) -> dict[str, int]:
    """flag -> how many of the run's figures carry it (only the trust-lowering kinds unless
    `shown_only` is False), in MARKS order; kinds no figure carries are left out."""
    kinds = SHOWN if shown_only else tuple(MARKS)
    counts = {k: 0 for k in kinds}
    for r in run.records:
        for k in set(getattr(r, "flags", None) or ()) & set(kinds):
            counts[k] += 1
    return {k: n for k, n in counts.items() if n}


def kinds_in(text: str) -> set:
    """The trust-lowering kinds whose letters follow a ⚑ in rendered text (e.g. a saved audit's
    citations); a letter of a kind that no longer marks a figure (d) is not one."""
    letters = set("".join(re.findall(r"⚑([a-z]+)", text or "")))
    return {k for k in SHOWN if MARKS[k].letter in letters}


def counts_text(counts: dict[str, int]) -> str:
    """'3 ⚑s, 1 ⚑w' for count_marks()."""
    return ", ".join(f"{n} ⚑{MARKS[k].letter}" for k, n in counts.items())


def flags_for(rec, host_unstable: bool = False) -> list[str]:
    """The flags a record earns from its own fields (and the run's host state)."""
    out = []
    if any((rec.rounds_discarded or {}).values()):
        out.append("discarded")
    clk = rec.clock_mhz or {}
    if clk.get("sm_min") and clk.get("top") and clk["sm_min"] < 0.95 * clk["top"]:
        out.append("clock_drop")
    if host_unstable and rec.mode == "eager":
        out.append("host_unstable")
    if rec.mode in ("eager", "host") and getattr(rec, "host_state", "") == "slow":
        out.append("slow_host")
    if rec.spread is not None and rec.spread > WIDE_SPREAD:
        out.append("wide_spread")
    # graph and device rows are measured by the full workers only (--hb-full-workers): their
    # processes agree within 0.5 %, so one process is a figure; an eager row's move 3-30 %
    if rec.mode == "eager" and getattr(rec, "processes", MIN_PROCESSES) < MIN_PROCESSES:
        out.append("few_processes")
    return out


def _top_ups(fingerprint: dict) -> tuple[list, int, set, set]:
    """The run's top-up workers (a catch-up worker in older runs), focus-only workers, and the
    blocks the top-ups ran and timed fast."""
    tops, focus = run_format.extra_workers(fingerprint)
    return (tops, focus, {b for t in tops for b in t.get("blocks", [])},
            {b for t in tops for b in t.get("timed_fast", [])})


def _host_text(run, host_state: dict, fast_state: str) -> str:
    """The eager figures' host states, or why there are none; `fast_state` names the fast one."""
    states = [r.host_state for r in run.records if r.mode == "eager" and r.ok and getattr(r, "host_state", "")]
    if host_state.get("unstable"):
        return "host UNSTABLE (eager figures not comparable)"
    if states:
        return f"{fast_state} {states.count('fast')}, slow {states.count('slow')}"
    return "host stable" if host_state else "host state not recorded"


def _flagged_text(run) -> str:
    flagged = sum(1 for r in run.records if shown_flags(r))
    return f"{flagged} figure(s) flagged ({counts_text(count_marks(run))})" if flagged else "no figure flagged"


def _fast_text(blocks: list, fast: list) -> str:
    """Which top-up blocks were timed in the fast state, in the fewest names: all, none, or all but
    the few that were not (most are, so listing them would repeat the block list)."""
    if fast == blocks:
        return "all"
    if not fast:
        return "none"
    slow = [b for b in blocks if b not in fast]
    return f"all but {', '.join(slow)}" if len(slow) < len(fast) else ", ".join(fast)


def _floor_text(host_state: dict) -> str:
    """The host floor; its range over the workers where they differ (each judges by its own:
    hoststate.process_floor)."""
    own = [w["floor_us"] for w in host_state.get("per_worker") or [] if isinstance(w, dict) and w.get("floor_us")]
    if own and max(own) > min(own) * 1.01:
        return f"host floor {min(own):.2f}-{max(own):.2f} µs (per worker)"
    return f"host floor {host_state['floor_us']:.2f} µs"


def summary_line(run) -> str:
    """One line per run: workers, host floor, rounds kept and discarded (and why), flagged rows."""
    fp = run.fingerprint or {}
    host_state = fp.get("host_state") or {}
    kept = sum(len(r.samples) for r in run.records if r.ok and r.mode != "host")
    parts = [_workers_text(fp)]
    few = fp.get("few_processes") or []
    if few:
        parts.append(f"eager rows on fewer than {MIN_PROCESSES} processes (⚑p) in {len(few)} block(s)")
    cut = fp.get("budget_cut") or {}
    if cut:
        parts.append(_cut_text(cut))
    if host_state.get("floor_us"):
        parts.append(_floor_text(host_state))
    parts.append(_host_text(run, host_state, "eager figures in the host's fast state"))
    waited = _waited_text(host_state)
    if waited:
        parts.append(waited)
    parts.append(_rounds_text(kept, _discarded_by_reason(run)))
    parts.append(_flagged_text(run))
    return "; ".join(parts)


def _workers_text(fingerprint: dict) -> str:
    """The run's workers, its focus-only ones, and its top-ups with the blocks they ran."""
    tops, focus, block_set, fast_set = _top_ups(fingerprint)
    blocks, fast = sorted(block_set), sorted(fast_set)
    return (f"{fingerprint.get('workers', 1) - focus - len(tops)} worker(s)"
            + (f" + {focus} focus-only worker(s)" if focus else "")
            + ((" + a catch-up worker" if len(tops) == 1 else f" + {len(tops)} top-up workers")
               + f" for {', '.join(blocks)} (timed fast: "
               + _fast_text(blocks, fast) + ")" if tops else ""))


def _cut_text(cut: dict) -> str:
    """What the budget cut from the run."""
    what = ([f"{cut['focus_workers_dropped']} focus-only worker(s) dropped"] if cut.get("focus_workers_dropped") else []) \
        + ([f"no top-up worker for {', '.join(cut['catch_up_skipped'])}"] if cut.get("catch_up_skipped") else [])
    return f"cut to fit --hb-budget-s {cut.get('budget_s', 0):g}: {', '.join(what)}"


def _waited_text(host_state: dict) -> str:
    """How long the workers waited for the fast state before eager rounds ('' when they did not)."""
    waits = [w for w in host_state.get("per_worker") or [host_state] if isinstance(w, dict)]
    waited = sum((w.get("gate_s") or 0) + (w.get("focus_s") or 0) for w in waits)
    if not waited:
        return ""
    gave = sum(1 for w in waits if w.get("gave_up"))
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
    fp = run.fingerprint or {}
    table = run_format.workers_of(fp)
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
    wall = fp.get("suite_wall_s")
    if wall and len(per) > 1:
        out.append(f"the run {wall:.1f} (the parent's own {max(0.0, wall - sum(total.values())):.1f})")
    building = _building_text(fp)
    if building:
        out.append(building)
    return "; ".join(out)


def _time_parts(times: dict) -> str:
    return ", ".join(f"{TIME_NAMES.get(k, k)} {v:.1f}" for k, v in times.items() if v >= 0.05)


def _building_text(fingerprint: dict) -> str:
    """The largest blocks' building time, all workers ('' where the run has none)."""
    builds = {k: v for k, v in (fingerprint.get("build_s") or {}).items() if isinstance(v, (int, float))}
    if not builds:
        return ""
    top = sorted(builds.items(), key=lambda kv: -kv[1])[:BUILD_TOP]
    plans = [v for v in (fingerprint.get("plans_s") or {}).values() if isinstance(v, (int, float))]
    return ("building by block, all workers: " + ", ".join(f"{k} {v:.1f}" for k, v in top)
            + (f" (of {sum(builds.values()):.1f} over {len(builds)} blocks)" if len(builds) > BUILD_TOP else "")
            + (f"; in cuDNN's build steps {sum(plans):.1f} of {sum(builds.values()):.1f}" if plans else ""))

def summary_parts(run) -> list[str]:
    """The run summary in short parts, most telling first (summary_lines packs them): workers,
    host state, rounds, flagged figures. The blocks and the discard reasons are summary_line's."""
    fp = run.fingerprint or {}
    hs = fp.get("host_state") or {}
    tops, focus, blocks, fast = _top_ups(fp)
    workers = f"{fp.get('workers', 1) - focus - len(tops)} worker(s)" + (f" + {focus} focus-only" if focus else "")
    if tops:
        workers += (f" + {len(tops)} top-up for {len(blocks)} block(s) ("
                    + ("all" if fast >= blocks else f"{len(fast & blocks)}") + " timed fast)")
    parts = [workers]
    few = fp.get("few_processes") or []
    if few:
        parts.append(f"⚑p in {len(few)} block(s)")
    if fp.get("budget_cut"):
        parts.append(f"cut to fit --hb-budget-s {fp['budget_cut'].get('budget_s', 0):g}")
    if hs.get("floor_us"):
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


# a stored ratio may differ from the ratio of its two medians (it is the median of round-by-round
# ratios), but not by this factor: the reference runs keep within RATIO_AGREE_MEASURED (tests)
RATIO_AGREE = 1.5


def _bad_number(value) -> bool:
    return value is None or not math.isfinite(value) or value <= 0


def _bad_part(value) -> bool:
    return value is None or not math.isfinite(value)


def is_part(rec) -> bool:
    """A waterfall part ('path.part'): a difference of two timings, or a part the path does not
    have (torch.mm has no integration layer), so zero or a noisy negative is a real reading."""
    from cudnn_hostbench.bench.measure.core.waterfall import PARTS
    return rec.probe == "waterfall" and rec.variant.rsplit(".", 1)[-1] in PARTS


def impossible_figures(run) -> list[str]:
    """'probe/variant/size mode: why' for each figure that cannot be a measurement: a NaN,
    infinite, zero or negative median (of the rounds or of a worker), or a stored ratio to the
    baseline that is not positive and finite or disagrees with the two medians by more than
    RATIO_AGREE times."""
    out = []
    for rec in run.records:
        if not rec.ok:
            continue
        problem = _impossible(run, rec, f"{rec.probe}/{rec.variant}/{rec.size} {rec.mode}")
        if problem:
            out.append(problem)
    return out


def _impossible(run, rec, name: str) -> str:
    """'name: why' where the record's figure cannot be a measurement, else ''."""
    med = rec.summary().median
    if is_part(rec):
        return f"{name}: a part that is not a finite number" if any(_bad_part(x) for x in rec.samples) else ""
    bad = [x for x in rec.samples if _bad_number(x)]
    if bad or _bad_number(med):
        shown = statistics.median(rec.samples) if bad and len(bad) * 2 >= len(rec.samples) else med
        problem = f"{name}: median {shown:g}" if isinstance(shown, float) else f"{name}: median {shown}"
        if bad and not _bad_number(shown):
            problem += f", {len(bad)} sample(s) not positive and finite ({bad[0]:g})"
        return problem
    if any(_bad_number(w.get("median")) for w in rec.workers if "median" in w):
        return f"{name}: a worker's median is not a positive number"
    if not rec.ratio or rec.mode == "host":
        return ""
    return _ratio_problem(run, rec, name, med)


def _ratio_problem(run, rec, name: str, med: float) -> str:
    """'name: why' where the stored ratio is not a number or disagrees with the two medians, else ''."""
    ratio = rec.ratio.median
    if _bad_number(ratio):
        return f"{name}: ratio {ratio}"
    base = run.find(rec.probe, rec.baseline, rec.size, rec.mode) if rec.baseline else None
    if base is not None and base.ok and base is not rec:
        base_med = base.summary().median
        if not _bad_number(base_med) and not 1 / RATIO_AGREE <= ratio / (med / base_med) <= RATIO_AGREE:
            return f"{name}: stored ratio {ratio:.3g} but medians give {med / base_med:.3g}"
    return ""

def check_run(run, path=None) -> None:
    """Raises ValueError with one line naming the file and its impossible figures, if any."""
    bad = impossible_figures(run)
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise ValueError(f"{path or run.path}: {len(bad)} figure(s) cannot be measurements, refused: "
                         f"{'; '.join(bad[:3])}{more}")
