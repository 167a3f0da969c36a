"""The host floor as a covariate of an eager pair: what `paired.judge` takes out before it judges.

Every worker process measures its host's speed before it times anything (the host-state
sentinel's floor: a CPU-only `torch.empty`, no cuDNN in it). Two processes of one job, on one
machine start and both in the fast host state, still draw floors up to 16 % apart, and an eager
pair's difference follows the pair's difference of floor: a call's µs with it, a ratio to
torch.mm against it, since torch.mm's call answers the host's speed more than the cuDNN calls do
(log 2026-12-06-1307). Per pair i of a comparison, x_i = log(floor of B) - log(floor of A), and
per class of eager rows (its level and whether a ratio; a ratio row's µs joins its level's µs rows):

    β        = Σ_rows Σ_i (w_i - w̄)(x_i - x̄) / Σ_rows Σ_i (x_i - x̄)²   (rows centred on their own
               means, so a row's change does not move it; w: d with its residuals winsorized as
               the trimmed mean trims, refitted until β settles)
    adjusted = d_i - β·x_i   (the change at equal floors)

One slope a class, not one a row: a row's own slope on a handful of pairs cost more degrees of
freedom than it took out on three of four quick A/A jobs, while a pooled slope took out the
floor's share on all four; and not one for every level: a heavy call's ratio hardly answers the
host, and a slope fitted mostly on light rows put the floor's noise into it (log 2026-12-06-1635).

A comparison is not adjusted where the floor cannot be a nuisance: fewer than MIN_PAIRS pairs
with a floor on both sides, floors that do not vary, or floors that differ by side (a t test on
the x_i at SIDE_Q: the sides' environments, a torch or a Python of their own, change the
host's cost, which is then part of the change and not noise).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

MODE = "eager"      # the mode adjusted: its figures are host-bound; graph and device rows are not
MIN_PAIRS = 4       # pairs with a floor on both sides, fewer: no adjustment
MIN_POINTS = 6      # a group's points past its rows' means (the slope's degrees of freedom), fewer: none
SIDE_Q = 0.01       # the floors differ by side at this level: no adjustment
TRIM = 0.2          # paired.TRIM: the share of a row's residuals the slope winsorizes at each end
ROUNDS = 20         # refits of the slope on winsorized residuals (it settles within a few)


@dataclass
class Adjustment:
    """What the floor took out of one comparison."""
    diffs: dict = field(default_factory=dict)       # key -> adjusted pair differences (rows adjusted only)
    us_diffs: dict = field(default_factory=dict)    # key -> adjusted µs differences of a ratio row
    slopes: dict = field(default_factory=dict)      # class -> β
    note: str = ""                                  # why nothing was adjusted, where nothing was

    def summary(self) -> dict:
        return {"slopes": dict(self.slopes), "rows": len(self.diffs), "note": self.note}


def covariate(row) -> list | None:
    """The row's x per usable pair (aligned with row.diffs), or None where a pair has no floor."""
    floors = getattr(row, "floors", None)
    if not floors or not row.aligned:
        return None
    xs = [floors[i] if i < len(floors) else None for i, d in enumerate(row.aligned) if d is not None]
    if len(xs) != len(row.diffs) or any(x is None for x in xs):
        return None
    return xs


def pair_floors(rows: list) -> list:
    """The comparison's x per pair (the rows share one list), without the pairs that have none."""
    for r in rows:
        if getattr(r, "floors", None):
            return [x for x in r.floors if x is not None]
    return []


def why_not(xs: list) -> str:
    """Why a comparison with these per-pair floor differences is not adjusted ("" when it is)."""
    if len(xs) < MIN_PAIRS:
        return f"{len(xs)} pair(s) with a host floor on both sides: the floor needs {MIN_PAIRS}"
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    if sd <= 1e-12:
        return "the host floor did not vary between processes"
    from scipy import stats as st
    p = 2 * st.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1)
    if p <= SIDE_Q:
        return f"the sides' host floors differ ({math.expm1(mean) * 100:+.1f} %, p {p:.1g}): part of the change"
    return ""


def slope(groups: list) -> float | None:
    """β over (diffs, xs) of a class's rows (module docstring); None where its points past the
    rows' means are fewer than MIN_POINTS or x does not vary within rows. Robust as the trimmed
    mean is: each row's residuals are winsorized and the slope refitted (ROUNDS times), so a tail
    pair does not set it; winsorizing the differences themselves would pull in the pairs with
    the widest floor differences, the ones that show the slope, and flatten it."""
    groups = [(list(d), list(x)) for d, x in groups if len(d) >= 3]
    if sum(len(d) - 1 for d, _ in groups) < MIN_POINTS:
        return None
    beta = 0.0
    for _ in range(ROUNDS):
        pseudo = []
        for d, x in groups:
            level = [a - beta * b for a, b in zip(d, x)]
            mean = sum(level) / len(level)
            resid = winsorized([v - mean for v in level])
            pseudo.append(([mean + beta * b + e for b, e in zip(x, resid)], x))
        beta_next = _ols(pseudo)
        if beta_next is None:
            return None
        if abs(beta_next - beta) < 1e-6:
            return beta_next
        beta = beta_next
    return beta


def _ols(groups: list) -> float | None:
    """The least-squares slope of d on x, every row centred on its own means."""
    num = den = 0.0
    for d, x in groups:
        dm, xm = sum(d) / len(d), sum(x) / len(x)
        num += sum((a - dm) * (b - xm) for a, b in zip(d, x))
        den += sum((b - xm) ** 2 for b in x)
    return num / den if den > 1e-18 else None


def winsorized(d: list, trim: float = TRIM) -> list:
    """d with its `trim` share at each end pulled in to the nearest kept value: the slope reads the
    pairs the trimmed mean judges, not the tail it leaves out (a heavy row's tail put the floor's
    noise into its class, log 2026-12-06-1635)."""
    n = len(d)
    g = int(math.floor(trim * n))
    if g == 0:
        return list(d)
    ys = sorted(d)
    return [min(max(v, ys[g]), ys[n - g - 1]) for v in d]


def adjust(rows: list) -> Adjustment:
    """The eager rows' pair differences at equal host floors (module docstring)."""
    out = Adjustment()
    eager: list[tuple] = []
    for r in rows:
        x = covariate(r) if r.key[3] == MODE else None
        if x is not None:
            eager.append((r, x))
    if not eager:
        return out
    out.note = why_not(pair_floors(rows))
    if out.note:
        return out
    groups: dict = {}
    for r, x in eager:
        groups.setdefault(r.cls, []).append((r.diffs, x))
        if r.on_ratio and len(r.us_diffs) == len(x):    # its µs: the same host, as its class's µs rows
            groups.setdefault(us_class(r.cls), []).append((r.us_diffs, x))
    for cls, group in groups.items():
        beta = slope(group)
        if beta is not None:
            out.slopes[cls] = beta
    for r, x in eager:
        beta = out.slopes.get(r.cls)
        if beta is not None:
            out.diffs[r.key] = [d - beta * xi for d, xi in zip(r.diffs, x)]
        beta = out.slopes.get(us_class(r.cls))
        if r.on_ratio and beta is not None and len(r.us_diffs) == len(x):
            out.us_diffs[r.key] = [d - beta * xi for d, xi in zip(r.us_diffs, x)]
    return out


def us_class(cls: str) -> str:
    """The class of a ratio row's µs figure: "eager light ratio" -> "eager light"."""
    return cls.removesuffix(" ratio")
