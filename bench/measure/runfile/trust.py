"""Trust signals: which figures were measured with rounds thrown away, clock drops, an unstable
host or a wide spread between worker processes, in one place every renderer reads.

A record carries `flags` (set when it is measured or merged); a run carries `host_state` in its
fingerprint. marks.py defines each kind once (MARKS); only the kinds that lower trust mark a figure.
A record shows its mark as `rec.badge` and a run counts them with `run.mark_counts()` (records.py,
from marks.py), so a renderer never comes back here; `badge(rec)` and `count_marks(run)` do the
same for any object with `flags` or `records`. The words (the legend, the counts as text) are
reports/marks_text.py's, and a run's summary text is reports/run_summary.py's. What is left here:
the flags a record earns (flags_for) and the figures that cannot be measurements (check_run).
"""
from __future__ import annotations

import math
import re
import statistics

# the marks are defined in marks.py (records.py reads them too); renderers read them here as well
from cudnn_hostbench.bench.measure.runfile.marks import FLAGS, MARKS, SHOWN, Mark, badge_of, shown_of  # noqa: F401
from cudnn_hostbench.bench.measure.runfile.records import MIN_PROCESSES, Run

WIDE_SPREAD = 0.10


def shown_flags(rec) -> list[str]:
    """The record's flags that lower trust, in MARKS order (any object with `flags`)."""
    return shown_of(getattr(rec, "flags", None))


def badge(rec) -> str:
    """'' or e.g. '⚑cw' for a record's trust-lowering flags (any object with `flags`; a Record
    has it as `rec.badge`)."""
    return badge_of(getattr(rec, "flags", None))


def count_marks(run, shown_only: bool = True) -> dict[str, int]:
    """flag -> how many of the run's figures carry it (only the trust-lowering kinds unless
    `shown_only` is False), in MARKS order; kinds no figure carries are left out."""
    return Run.mark_counts(run, shown_only)   # Run's own count, for any object with `records`


def kinds_in(text: str) -> set:
    """The trust-lowering kinds whose letters follow a ⚑ in rendered text (e.g. a saved audit's
    citations); a letter of a kind that no longer marks a figure (d) is not one."""
    letters = set("".join(re.findall(r"⚑([a-z]+)", text or "")))
    return {k for k in SHOWN if MARKS[k].letter in letters}


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
