"""Trust signals: which figures were measured with rounds thrown away, clock drops, an unstable
host or a wide spread between worker processes, in one place every renderer reads.

A record carries `flags` (set when it is measured or merged); a run carries `host_state` in its
fingerprint. Renderers show `badge(rec)` next to a figure and `LEGEND` once, and each run's
`summary_line(run)`.
"""
from __future__ import annotations

import statistics

# flag -> (letter shown next to a figure, what it means)
FLAGS = {
    "discarded": ("d", "some rounds were discarded (host in its slow state, or GPU clock drop) and redone"),
    "clock_drop": ("c", "the GPU clock dropped below 95 % of the clock the same work usually runs at"),
    "host_unstable": ("h", "no steady host state: too few clean rounds, every round kept; not comparable"),
    "slow_host": ("s", "eager figure timed in the host's slow state (its fast state was too rare): "
                       "compared only with slow-state figures"),
    "wide_spread": ("w", "worker processes disagree by more than 10 %"),
}
WIDE_SPREAD = 0.10
LEGEND = "; ".join(f"{letter}: {text}" for letter, text in FLAGS.values())


def badge(rec) -> str:
    """'' or e.g. '⚑dw' for a record's flags, in FLAGS order."""
    letters = "".join(FLAGS[f][0] for f in FLAGS if f in (getattr(rec, "flags", None) or ()))
    return f"⚑{letters}" if letters else ""


def relative_spread(values) -> float | None:
    """(max - min) / median of per-worker figures; None with fewer than two."""
    xs = sorted(v for v in values if v is not None and v == v)
    if len(xs) < 2:
        return None
    mid = statistics.median(xs)
    return (xs[-1] - xs[0]) / mid if mid else None


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
    if rec.mode == "eager" and getattr(rec, "host_state", "") == "slow":
        out.append("slow_host")
    if rec.spread is not None and rec.spread > WIDE_SPREAD:
        out.append("wide_spread")
    return out


def summary_line(run) -> str:
    """One line per run: workers, host floor, rounds kept and discarded (and why), flagged rows."""
    fp = run.fingerprint or {}
    hs = fp.get("host_state") or {}
    kept = sum(len(r.samples) for r in run.records if r.ok and r.mode != "host")
    why: dict = {}
    for r in run.records:
        for k, n in (r.rounds_discarded or {}).items():
            why[k] = why.get(k, 0) + n
    catch = fp.get("catch_up") or {}
    focus = (fp.get("focus_workers") or {}).get("workers", 0)
    parts = [f"{fp.get('workers', 1) - focus - (1 if catch else 0)} worker(s)"
             + (f" + {focus} focus-only worker(s)" if focus else "")
             + (f" + a catch-up worker for {', '.join(catch.get('blocks', []))} (timed fast: "
                f"{', '.join(catch.get('timed_fast', [])) or 'none'})" if catch else "")]
    cut = fp.get("budget_cut") or {}
    if cut:
        what = ([f"{cut['focus_workers_dropped']} focus-only worker(s) dropped"] if cut.get("focus_workers_dropped") else []) \
            + ([f"no catch-up worker for {', '.join(cut['catch_up_skipped'])}"] if cut.get("catch_up_skipped") else [])
        parts.append(f"cut to fit --hb-budget-s {cut.get('budget_s', 0):g}: {', '.join(what)}")
    if hs.get("floor_us"):
        parts.append(f"host floor {hs['floor_us']:.2f} µs")
    states = [r.host_state for r in run.records if r.mode == "eager" and r.ok and getattr(r, "host_state", "")]
    parts.append("host UNSTABLE (eager figures not comparable)" if hs.get("unstable") else
                 (f"eager figures in the host's fast state {states.count('fast')}, slow {states.count('slow')}"
                  if states else "host stable" if hs else "host state not recorded"))
    waits = [w for w in hs.get("per_worker") or [hs] if isinstance(w, dict)]
    waited = sum((w.get("gate_s") or 0) + (w.get("focus_s") or 0) for w in waits)
    if waited:
        parts.append(f"{waited:.0f} s waited for the fast state before eager rounds")
    disc = sum(why.values())
    parts.append(f"{kept} rounds kept, {disc} discarded"
                 + (" (" + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(why.items())) + ")" if disc else ""))
    flagged = sum(1 for r in run.records if r.flags)
    parts.append(f"{flagged} figure(s) flagged" if flagged else "no figure flagged")
    return "; ".join(parts)
