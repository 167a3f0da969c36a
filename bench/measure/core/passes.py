"""More eager passes over a process's blocks, for finding where the eager noise lives
(`hostbench ab --hb-eager-passes K`).

In an A/B job the process is the replicate: a row's eager figure moves a few percent from process
to process, little from round to round (log 2026-12-06-2003), and the move is a block's own, not
the process's: neighbouring blocks of one process hardly share it (log 2026-12-06-2208). What a
cheaper replicate than a process would be depends on where that move comes from:
- the moment a block was timed: then timing the same built cases again, minutes later, redraws it;
- the state its build left (objects and tensors at other addresses, another plan picked): then
  only cases built again redraw it;
- the process itself: then nothing short of another process does.

With K passes the process's eager rounds are split over K passes. Pass 1 is the usual one; after
every block's first pass (before the profiler phase, which leaves eager timing unusable), passes
2 .. K-1 time the same cases again and pass K times cases built anew, numerics checked first, the
old ones still alive so the new ones land elsewhere. Every pass's figure is written as a `pass`
line of records.jsonl (readers of records skip it); the row's record becomes the pooled figure of
all its passes (reports/judge/noise.py reads the components back out).
"""
from __future__ import annotations

import dataclasses
import statistics

PASS_KIND = "pass"


def pass_line(rec, number: int, rebuilt: bool, samples: list, ratio, host_state: str) -> dict:
    """One pass's figure of a row, as records.jsonl carries it."""
    return {"kind": PASS_KIND, "key": list(rec.key), "pass": number, "rebuilt": rebuilt, "n": len(samples),
            "median": statistics.median(samples) if samples else None,
            "ratio": ratio.median if ratio is not None else None, "host_state": host_state}


def run(session, blocks: list) -> None:
    """Passes 2 .. K over `blocks` ((probe, size) whose first eager pass is recorded), in order."""
    total = session.eager_passes
    for number in range(2, total + 1):
        for probe, size in blocks:
            try:
                one(session, probe, size, number, rebuilt=number == total)
            except Exception as e:  # noqa: BLE001 - a failed pass costs that pass, never a figure already made
                session.say(f"{probe.name}/{size} eager pass {number} failed: {type(e).__name__}: {e}")


def one(session, probe, size, number: int, rebuilt: bool) -> None:
    """One more pass over a block's eager variants, merged into their records."""
    tag = f"{probe.name}/{size}"
    timed = session.cases(probe, size)
    if number == 2:   # the first pass's figures, before its records are pooled with later ones
        for name in timed:
            old = session.records.get((probe.name, name, size, "eager"))
            if old is not None and old.ok:
                session.writer.write(pass_line(old, 1, False, old.samples, old.ratio, old.host_state))
    cases = fresh_cases(session, probe, size, timed, tag) if rebuilt else timed
    if not cases:
        return
    got = session._measure_eager(probe, size, cases, tag)
    if got is None:
        session.say(f"{tag} eager pass {number}: not timed")
        return
    recs, _, meta = got
    merge(session, probe, recs, number, rebuilt, meta.get("host_state") or "")


def fresh_cases(session, probe, size, timed: dict, tag: str) -> dict:
    """The block's variants built again and checked against torch; {} when the build fails."""
    gpu = session.context()
    try:
        with session._phase("build"):
            built = probe.build(probe.context(gpu), size)
    except Exception as e:  # noqa: BLE001 - a probe that cannot build twice: this pass is left out, said once
        session.say(f"{tag} eager pass on rebuilt cases left out: {type(e).__name__}: {e}")
        return {}
    fresh = {}
    for name in timed:
        case = built.get(name)
        if case is not None and not isinstance(case, BaseException) and session._check(case, gpu).ok:
            fresh[name] = case
    return fresh


def merge(session, probe, recs: list, number: int, rebuilt: bool, host_state: str) -> None:
    """Writes each new pass's line and replaces the row's record by its pooled figure: the
    samples of every pass, the ratio over the rounds of every pass (rounds stay paired: a pass
    times every variant of the block in each of its rounds)."""
    old = {r.variant: session.records.get(r.key) for r in recs}
    pooled = {r.variant: old[r.variant].samples + r.samples for r in recs
              if old[r.variant] is not None and old[r.variant].ok}
    for rec in recs:
        if rec.variant not in pooled:
            continue
        session.writer.write(pass_line(rec, number, rebuilt, rec.samples, rec.ratio, host_state))
        session._put(dataclasses.replace(old[rec.variant], samples=pooled[rec.variant],
                                         ratio=session._ratio(probe, pooled, rec.variant)))
