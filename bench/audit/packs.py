"""Host cost per tensor of a variant pack: a least-squares line through the pack-size probe's
µs/call (eager: its paired ratio to the baseline, in the baseline's µs) against the number of
tensors in the pack (its size labels, 'p3' … 'p15'), per call form and mode. Used by the audit
(the `Slope` figure source) and by reports (README table, version matrix). Reads records only."""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudnn_hostbench.bench.audit.pace import host_pace

PROBE = "pack_size"
FORMS = ("generic", "pinned", "ordered")
_SIZE = re.compile(r"p(\d+)")


def tensors_of(size: str) -> int | None:
    """'p7' -> 7 (the pack-size probe's size labels), else None."""
    m = _SIZE.fullmatch(size or "")
    return int(m.group(1)) if m else None


def least_squares(xs, ys) -> tuple[float, float] | None:
    """(slope, intercept) of the least-squares line, or None with fewer than two distinct x."""
    pts = [(float(x), float(y)) for x, y in zip(xs, ys)]
    if len({x for x, _ in pts}) < 2:
        return None
    n = len(pts)
    mx, my = sum(x for x, _ in pts) / n, sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    slope = sxy / sxx
    return slope, my - slope * mx


@dataclass(frozen=True)
class Fit:
    variant: str
    mode: str
    slope_us: float            # µs per extra tensor
    intercept_us: float
    points: tuple              # ((tensors, median µs), ...) in tensor order
    worker_slopes: tuple = ()  # eager: the same line through each worker's ratios (between-process range)

    def range_text(self, count: bool = True) -> str:
        """' (N workers: min–max)' (or ' (workers min–max)'), or '' without per-worker slopes; brackets
        are left to the rounds' q1–q3."""
        w = self.worker_slopes
        if len(w) < 2:
            return ""
        span = f"{min(w):.3f}–{max(w):.3f}"
        return f" ({len(w)} workers: {span})" if count else f" (workers {span})"

    def describe(self) -> str:
        lo, hi = self.points[0][0], self.points[-1][0]
        return f"{self.slope_us:.3f} µs/tensor ({PROBE}/{self.variant} {self.mode}, {len(self.points)} packs of {lo}-{hi})"


def _baseline_us(run, probe: str, mode: str) -> float | None:
    """One µs/call for the probe's baseline over all pack sizes: the median of its per-size
    medians, fast-state figures only where there are any. The baseline (torch.mm on A·B alone)
    does the same work at every size, so one figure serves them all."""
    base = [r for r in run.records if r.probe == probe and r.mode == mode and r.ok and r.role == "baseline"
            and tensors_of(r.size) is not None]
    fast = [r for r in base if r.host_state == "fast"]
    meds = sorted(r.summary().median for r in (fast or base))
    return meds[len(meds) // 2] if meds else None


def fit(run, variant: str, mode: str = "eager", probe: str = PROBE) -> Fit | None:
    """The line through run's ok records of probe/variant in mode, one point per pack size. An
    eager point is the size's paired ratio to the baseline times one baseline µs for all sizes:
    absolute eager µs follow the host's state, which can differ from one pack size to the next
    (a run measured p3-p7 in the slow state and p11-p15 in the fast one, and its µs slope came
    out negative), while the round-by-round ratio cancels it."""
    base = _baseline_us(run, probe, mode) if mode == "eager" else None
    pts: list = []
    per_worker: dict = {}
    for rec in run.records:
        if (rec.probe, rec.variant, rec.mode) != (probe, variant, mode) or not rec.ok:
            continue
        tensors = tensors_of(rec.size)
        if tensors is not None:
            _add_points(rec, tensors, base, pts, per_worker)
    pts.sort()
    line = least_squares([x for x, _ in pts], [y for _, y in pts])
    if line is None:
        return None
    sizes = {x for x, _ in pts}
    ws = tuple(fw[0] for wp in per_worker.values()        # only workers that timed every size
               if {x for x, _ in wp} == sizes and (fw := least_squares(*zip(*sorted(wp)))) is not None)
    return Fit(variant, mode, line[0], line[1], tuple(pts), ws)


def _add_points(rec, tensors: int, base: float | None, pts: list, per_worker: dict) -> None:
    """A record's point (tensors, µs) and each worker's: its ratio times the baseline µs where it has
    one, else its median."""
    if base is not None and rec.ratio is not None and rec.ratio.median:
        pts.append((tensors, rec.ratio.median * base))
        for worker in rec.workers or ():
            if worker.get("ratio"):
                per_worker.setdefault(worker.get("worker"), []).append((tensors, worker["ratio"] * base))
    else:
        pts.append((tensors, rec.summary().median))


def fits(run, mode: str = "eager") -> dict:
    """{form: Fit} for every call form the run has at two or more pack sizes."""
    return {v: f for v in FORMS if (f := fit(run, v, mode)) is not None}


@dataclass(frozen=True)
class Slope:
    """An audit figure source: (slope of `trap` − slope of the cheapest `fixed`) µs per tensor,
    times a per-step count of tensors."""
    trap: str
    fixed: tuple
    count: str
    mode: str = "eager"

    def cite(self) -> str:
        return f"slope {PROBE}/{self.trap} − slope {PROBE}/{'|'.join(self.fixed)} {self.mode} × {self.count}"

    def price(self, run, here: float | None = None) -> tuple[float | None, str, bool]:
        """(µs per tensor, citation, flagged) or (None, why not, False), at this host's pace
        (`here`: the audit's host sentinel, µs; bench.audit.pace)."""
        if run is None:
            return None, f"no run file ({PROBE}/{self.trap})", False
        trap = fit(run, self.trap, self.mode)
        fixes = [f for v in self.fixed if (f := fit(run, v, self.mode)) is not None]
        if trap is None or not fixes:
            return None, f"no {PROBE} slopes in the run ({self.trap} vs {'|'.join(self.fixed)}, {self.mode})", False
        best = min(fixes, key=lambda f: f.slope_us)
        k, pace = host_pace(here, [r for r in run.records if r.probe == PROBE and r.mode == self.mode and r.ok
                                   and r.variant in (trap.variant, best.variant)])
        return ((trap.slope_us - best.slope_us) * k,
                f"{trap.describe()} − {best.describe()}{pace}", False)


NOTE_PREFIX = "variant packs per step:"
FORM_OF = {"dict": "pinned", "ordered": "ordered"}    # the pack-size variant that prices each pack form


def pack_note(counts: dict, run) -> str | None:
    """What each variant pack's tensors cost at the pack-size probe's slopes, as one note line
    (None when the step executes nothing). A pure function of the counts and the run, so a
    repriced audit gets it again from the new run."""
    sizes = counts.get("pack_sizes") or {}
    if not sizes:
        return None
    parts = []
    for name, per_step in sizes.items():
        n_text, _, form = name.partition(" tensors, ")
        f = fit(run, FORM_OF[form]) if run is not None and form in FORM_OF and n_text.isdigit() else None
        if f is None:
            parts.append(f"{name} ×{per_step:g}")
            continue
        us = int(n_text) * f.slope_us * per_step
        parts.append(f"{name} ×{per_step:g} ≈ {us:.2f} µs for its tensors ({n_text} × {f.slope_us:.3f} µs, "
                     f"slope of {PROBE}/{f.variant} {f.mode})")
    return f"{NOTE_PREFIX} " + "; ".join(parts)
