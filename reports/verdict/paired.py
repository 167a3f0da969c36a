"""The paired verdict of an interleaved A/B job (`hostbench ab`): every row judged on its own pairs.

A pair is two neighbouring worker processes of one job, one per side, on one machine start. Per
row and pair the judged figure is d = log(figure of B) - log(figure of A); an eager row's, taken
to equal host floors first (covariate.py: the host speed each process drew, which it measures). Per row:

    estimate    m   = the 20 % trimmed mean of the n pair differences (Yuen)
    its scale   s²  = (n-1)·s_w² / (h-1),  h = n - 2·floor(0.2·n),  s_w² the winsorized variance
                SE² = s² / h,  with d = h - 1 degrees of freedom
    moderated   s̃²  = (d0·s0² + d·s²) / (d0 + d)        (s0², d0: the row's class prior, below)
                t   = m / sqrt(s̃² / h),  on d0 + d degrees of freedom

The class prior (s0², d0) is fitted over the job's own rows of one class by the method of moments
on log s² (Smyth 2004, limma's `fitFDist`): rows borrow strength from each other, so three pairs
judge a row on any GPU model with no stored history. Two guards keep the borrowing honest, since
the rows of a job are not the independent rows limma assumes:
- d0 is at most the blocks its rows come from times their median d: rows timed in the same
  processes (a block's variants, sharing its baseline) agree with each other by construction;
- the variance a row is judged on is never below its own s², nor below s0²: a row tighter than
  its class on a few pairs was, in resampled A/A jobs, mostly a row whose tail had not shown yet
  (log 2026-12-06-1027).
SLOWER / FASTER are Benjamini-Hochberg discoveries at Q over the job's rows whose signs also pass
the exact sign-flip test at Q (the share of the 2^n sign patterns of its pairs whose mean is as
far from 0): a t test cannot tell a row whose processes sit on two levels from a change, while
no pattern of signs is rarer than 2/2^n, so a row is found only from SIGN_PAIRS pairs on. A row
that is not one gets its minimum detectable change at 80 % power, at the per-row level a further
discovery would need:

    MDC = exp((t_{1-α/2} + t_{0.8}) · sqrt(s̃² / h)) - 1,   α = Q·(R+1)/m   (R discoveries of m rows)

The MDC is what the job catches: a row its t test flags before SIGN_PAIRS pairs leans SLOWER or
FASTER and is paired on until its signs can pass (its interval leaves out 0, so `hostbench ab`
never gives it up).

SAME when the MDC is within its class's practical threshold (decide.PRACTICAL), else UNSURE with
the pairs that would bring it there. A row whose kernels differ between the sides is KERNEL
CHANGED, whatever its change: the figures measure two different things.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from cudnn_hostbench.reports.verdict import covariate, decide
from cudnn_hostbench.reports.verdict import pool as pools

TRIM = 0.2           # trimmed share at each end: pair differences are heavy-tailed (t with 3-7 df)
MIN_PAIRS = 3        # fewer pairs give a row no verdict (2 df is the least a t test can stand on)
Q = decide.Q         # false discovery rate over the job's rows
POWER = decide.POWER
INTERVAL = 0.95      # the printed interval of each change
MAX_DF = 1e6         # a prior of infinite weight, as a number scipy takes
MIN_CLASS_ROWS = 8   # a class of fewer judged rows (a block's baselines alone) takes its mode's prior:
#                      a moment fit over a handful of variances is mostly its own noise
SIGN_PAIRS = math.ceil(math.log2(2 / Q))   # the fewest pairs whose sign patterns can pass at Q (8 at 1 %)
SIGN_ENUMERATE = 16  # up to this many pairs the sign-flip test counts every pattern; past it, a fixed sample


@dataclass
class PairedRow:
    """One row's pairs: what the judgement reads."""
    key: tuple                  # (probe, variant, size, mode)
    cls: str                    # its noise class: pooled for moderation, and its practical threshold
    diffs: list                 # log(B) - log(A), one per usable pair
    level_us: float | None = None   # side A's median µs (the class and the table read it)
    on_ratio: bool = False      # judged on the ratio to its block's baseline in the same process
    dropped: int = 0            # pairs left out: the sides ran in different host states
    kernels: tuple = ((), ())   # the kernels each side ran most often (device rows)
    race: bool = False          # its plan is a timing race: a kernel difference is a pick, not a change
    aligned: list = field(default_factory=list)   # diffs by the comparison's pair index, None where unusable
    no_figure: int = 0          # pairs whose processes both timed the row but gave no figure to pair (0 µs)
    us_diffs: list = field(default_factory=list)   # a ratio row's µs differences: evidence for its
    #                                                 µs class's prior only, never its own verdict
    floors: list = field(default_factory=list)     # the comparison's log host-floor difference (B - A)
    #   per pair, aligned as `aligned` (None: a side with no floor); shared by its rows (covariate.py)


@dataclass
class RowVerdict:
    key: tuple
    cls: str
    verdict: str                # SLOWER, FASTER, SAME, UNSURE, KERNEL CHANGED, UNMEASURED
    change: float | None        # B over A - 1, the trimmed mean of the pairs
    low: float | None = None    # its INTERVAL interval
    high: float | None = None
    mdc: float | None = None    # minimum detectable change (a share, 0.02 = 2 %)
    pairs: int = 0
    dropped: int = 0
    df: float = 0.0
    p: float | None = None
    q: float | None = None      # Benjamini-Hochberg adjusted p
    more_pairs: int | None = None   # UNSURE: pairs that would bring its MDC within the threshold
    on_ratio: bool = False
    level_us: float | None = None
    note: str = ""
    leans: str = ""             # UNSURE found by its t test whose signs do not pass yet: SLOWER or FASTER
    floor_adjusted: bool = False    # judged on its pairs at equal host floors (covariate.py)

    @property
    def moved(self) -> bool:
        return self.verdict in ("SLOWER", "FASTER", "KERNEL CHANGED")

    def to_dict(self) -> dict:
        probe, variant, size, mode = self.key
        d = {"probe": probe, "variant": variant, "size": size, "mode": mode, "class": self.cls,
             "verdict": self.verdict, "change": self.change, "interval": [self.low, self.high], "mdc": self.mdc,
             "pairs": self.pairs, "pairs_dropped": self.dropped, "df": self.df, "p": self.p, "q": self.q,
             "more_pairs": self.more_pairs, "on_ratio": self.on_ratio, "level_us": self.level_us}
        if self.note:
            d["note"] = self.note
        if self.leans:
            d["leans"] = self.leans
        if self.floor_adjusted:
            d["floor_adjusted"] = True
        return d


@dataclass
class Prior:
    """A class's variance prior: s0² on d0 degrees of freedom (d0 = 0: no moderation)."""
    s2: float = 0.0
    df: float = 0.0
    rows: int = 0


@dataclass
class Judgement:
    rows: list = field(default_factory=list)       # RowVerdict, in the job's row order
    priors: dict = field(default_factory=dict)     # class -> Prior
    floor: dict = field(default_factory=dict)      # covariate.Adjustment.summary(): slopes, rows, note

    def counts(self) -> dict:
        out: dict = {}
        for r in self.rows:
            out[r.verdict] = out.get(r.verdict, 0) + 1
        return out

    def undecided(self) -> list:
        return [r for r in self.rows if r.verdict == "UNSURE"]


def kept(pairs: int, trim: float = TRIM) -> int:
    """h: the pairs a trimmed mean of `pairs` keeps."""
    return pairs - 2 * int(math.floor(trim * pairs))


def trimmed(sample: list, trim: float = TRIM) -> tuple[float, float, int]:
    """(trimmed mean, its per-row variance scale s², h kept) of a sample: Yuen's estimate, whose
    standard error is sqrt(s²/h)."""
    n = len(sample)
    h = kept(n, trim)
    g = (n - h) // 2
    ys = sorted(sample)
    mean = sum(ys[g:n - g]) / h
    if n < 2:
        return mean, 0.0, h
    wins = [min(max(y, ys[g]), ys[n - g - 1]) for y in ys]
    wm = sum(wins) / n
    sw2 = sum((w - wm) ** 2 for w in wins) / (n - 1)
    return mean, (n - 1) * sw2 / max(h - 1, 1), h


def fit_prior(s2s: list, dfs: list) -> Prior:
    """limma's fitFDist (pool.fit_prior) over the rows with degrees of freedom: the scaled
    inverse-chi² prior of their variances; no moderation under 3 rows, no cap below MAX_DF."""
    pts = [(s, d) for s, d in zip(s2s, dfs) if d > 0]
    if len(pts) < 3:
        return Prior(rows=len(pts))
    floor = max(1e-12, 1e-6 * sorted(s for s, _ in pts)[len(pts) // 2])   # an exact 0 would be -inf
    s0, d0 = pools.fit_prior([(max(s, floor), d) for s, d in pts], max_df=MAX_DF)
    return Prior(s2=s0, df=d0, rows=len(pts))


# The precision `hostbench ab --sharpen` pairs a SAME row toward, by mode and size class: issue 66's
# targets for a job over the default suite (what a version question needs to see). SAME keeps its
# meaning (the MDC within the practical threshold); a goal only spends budget left after the
# decisions. Rows between 20 and 100 µs ("gpu-bound") take the goal of the light rows of their mode
# for device and of the heavy rows for graph, the looser neighbour of what they are closest to.
GOALS = {"eager": 0.05, "graph light": 0.015, "graph gpu-bound": 0.04, "graph heavy": 0.04,
         "device light": 0.015, "device gpu-bound": 0.015, "device heavy": 0.005, "host": 0.25}


def goal(cls: str) -> float:
    """The MDC `--sharpen` aims at for a row of this class (GOALS; the eager goal where none is set)."""
    mode, _, size = cls.partition(" ")
    size = size.removesuffix(" ratio").removesuffix("ratio").strip()
    return GOALS.get(f"{mode} {size}".strip(), GOALS.get(mode, GOALS["eager"]))


def blunt(rows: list) -> list:
    """The SAME rows whose MDC is past their class's goal: what `--sharpen` pairs further."""
    return [r for r in rows if r.verdict == "SAME" and r.mdc is not None and r.mdc > goal(r.cls)]


def practical(cls: str) -> float:
    """The class's practical threshold: decide.PRACTICAL, read by mode and size class."""
    mode, _, size = cls.partition(" ")
    if mode in ("graph", "device") and size.startswith("heavy"):
        return decide.PRACTICAL.get(f"{mode} heavy", decide.PRACTICAL[mode])
    return decide.PRACTICAL.get(mode, decide.PRACTICAL["eager"])


def judge(rows: list, q: float = Q) -> Judgement:
    """Every row's verdict (module docstring), on its eager pairs at equal host floors (covariate.py)."""
    floor = covariate.adjust(rows)
    judged = {r.key: floor.diffs.get(r.key, r.diffs) for r in rows}
    est: dict = {}
    for r in rows:
        if len(judged[r.key]) >= MIN_PAIRS:
            est[r.key] = trimmed(judged[r.key])
    us_est = {r.key: trimmed(floor.us_diffs.get(r.key, r.us_diffs)) for r in rows
              if r.on_ratio and len(r.us_diffs) >= MIN_PAIRS}
    priors = class_priors(rows, est, us_est)
    tests = _tests(rows, est, priors)
    qs = bh(({k: v[3] for k, v in tests.items()}))
    found = sum(1 for v in qs.values() if v <= q)
    alpha = q * (found + 1) / max(len(tests), 1)
    quantiles = _quantiles(tests, alpha)
    out = Judgement(priors=priors, floor=floor.summary())
    for r in rows:
        v = _verdict(r, judged[r.key], tests.get(r.key), qs.get(r.key), q, alpha, quantiles.get(r.key))
        v.floor_adjusted = r.key in floor.diffs
        out.rows.append(v)
    return out


def class_priors(rows: list, est: dict, us_est: dict | None = None) -> dict:
    """The variance prior of each class, fitted over its judged rows. A class judged on µs also
    takes the µs differences of the ratio rows of its mode and size (`us_est`): the same kind of
    figure, carrying the same process offset, so a block's baseline, alone on µs in a quick
    question, has rows like it. A class of fewer than MIN_CLASS_ROWS takes the prior of its
    mode's rows judged the same way; with fewer than 3 of those, none: the row stands on its own
    pairs. Never the other kind's: a baseline on µs that borrowed its mode's ratio rows' prior
    was found FASTER in an A/A (log 2026-12-06-0800)."""
    us_est = us_est or {}

    def evidence(members):
        got = [est[r.key] for r in members if r.key in est]
        if members and not members[0].on_ratio:
            mine = {(r.key[3], r.cls) for r in members}
            got += [us_est[r.key] for r in rows if r.key in us_est and (r.key[3], r.cls.removesuffix(" ratio")) in mine]
        return got

    out = {}
    for cls in sorted({r.cls for r in rows}):
        members = [r for r in rows if r.cls == cls]
        got = evidence(members)
        if len(got) < MIN_CLASS_ROWS:
            first = members[0]
            members = [r for r in rows if r.key[3] == first.key[3] and r.on_ratio == first.on_ratio]
            got = evidence(members)
        out[cls] = capped(fit_prior([s2 for _, s2, _ in got], [h - 1 for _, _, h in got]), members, got)
    return out


def capped(prior: Prior, members: list, got: list) -> Prior:
    """The prior with d0 at most the blocks (probe × size) of its rows times their median d (module
    docstring): a fit over the variants of one block, which share its processes, read their
    agreement as tens of degrees of freedom, and resampled A/A jobs of one block found changes
    that were not there (log 2026-12-06-1027)."""
    if not got or prior.df <= 0:
        return prior
    blocks = len({(r.key[0], r.key[2]) for r in members}) or 1
    dfs = sorted(h - 1 for _, _, h in got)
    return Prior(prior.s2, min(prior.df, blocks * dfs[len(dfs) // 2]), prior.rows)


def _tests(rows: list, est: dict, priors: dict) -> dict:
    """{key: (m, se, df, p)} of the rows with an estimate; scipy takes every row's t in one call
    (a call per row was most of a resampled validation's time).

    A row's moderated variance is never below its own nor its class's s0²: a row whose pairs
    spread past its class's (a call whose processes split in two levels, a tail of its own) keeps
    its spread, and a row that looks tighter than its class on a few pairs is judged at the
    class's. Moderated down, such rows made resampled A/A jobs false (logs 2026-12-06-0800 and
    2026-12-06-1027). It costs rows truly tighter than their class, or whose spread came out high
    by chance, some power."""
    import numpy as np
    from scipy import stats as st
    got = {}
    for r in rows:
        if r.key not in est:
            continue
        m, s2, h = est[r.key]
        pr = priors[r.cls]
        d = h - 1
        s2m = (pr.df * pr.s2 + d * s2) / (pr.df + d) if pr.df + d > 0 else s2
        got[r.key] = (m, math.sqrt(max(s2m, s2, pr.s2 if pr.df > 0 else 0.0, 0.0) / h), min(pr.df + d, MAX_DF))
    if not got:
        return {}
    m, se, df = (np.array(col, dtype=float) for col in zip(*got.values()))
    t = np.divide(np.abs(m), se, out=np.zeros_like(m), where=se > 0)
    p = 2 * st.t.sf(t, df)
    p = np.where(se > 0, p, np.where(m == 0, 1.0, 0.0))
    return {k: (*v, float(pk)) for (k, v), pk in zip(got.items(), p)}


def _quantiles(tests: dict, alpha: float) -> dict:
    """{key: (t at the interval's edge, t at 1 - alpha/2, t at POWER)} on each row's df, in one call each."""
    import numpy as np
    from scipy import stats as st
    if not tests:
        return {}
    df = np.array([v[2] for v in tests.values()], dtype=float)
    cols = (st.t.ppf(0.5 + INTERVAL / 2, df), st.t.ppf(1 - alpha / 2, df), st.t.ppf(POWER, df))
    return {k: tuple(float(c[i]) for c in cols) for i, k in enumerate(tests)}


def bh(p_values: dict) -> dict:
    """Benjamini-Hochberg adjusted p per key."""
    order = sorted(p_values, key=lambda key: p_values[key])
    m = len(order)
    adj: dict = {}
    running = 1.0
    for i in range(m - 1, -1, -1):
        k = order[i]
        running = min(running, p_values[k] * m / (i + 1))
        adj[k] = running
    return adj


def _verdict(row: PairedRow, diffs: list, test, q_value, q: float, alpha: float,
             quantiles: tuple | None) -> RowVerdict:
    v = RowVerdict(row.key, row.cls, "UNSURE", None, pairs=len(row.diffs), dropped=row.dropped, on_ratio=row.on_ratio,
                   level_us=row.level_us)
    kernel = _kernel_change(row)
    if test is None and not row.diffs and row.no_figure:
        v.verdict = "UNMEASURED"     # more pairs cannot help: its figure is 0 or missing in every process
        v.note = f"no figure to pair in {row.no_figure} pair(s) (0 or missing)"
        return v
    if test is None:
        v.note = f"{len(row.diffs)} pair(s): a verdict needs {MIN_PAIRS}"
        v.more_pairs = MIN_PAIRS - len(row.diffs)
        if kernel:
            v.verdict, v.note = "KERNEL CHANGED", kernel
        return v
    m, se, df, p = test
    v.change, v.p, v.q, v.df = math.expm1(m), p, q_value, df
    assert quantiles is not None    # judge() gives every row with a test its quantiles
    t_edge, t_alpha, t_power = quantiles
    half = t_edge * se
    v.low, v.high = math.expm1(m - half), math.expm1(m + half)
    mdc_log = (t_alpha + t_power) * se
    v.mdc = math.expm1(mdc_log)
    limit = practical(row.cls)
    if kernel:
        v.verdict, v.note = "KERNEL CHANGED", kernel
    elif q_value is not None and q_value <= q and sign_flip_p(diffs) <= q:
        v.verdict = "SLOWER" if m > 0 else "FASTER"
    elif q_value is not None and q_value <= q:     # flagged: the job pairs it on until its signs can pass
        v.leans = "SLOWER" if m > 0 else "FASTER"
        v.note = f"leans {v.leans}: its signs do not pass yet"
        v.more_pairs = max(SIGN_PAIRS - v.pairs, 1)
    elif v.mdc <= limit:
        v.verdict = "SAME"
    else:
        v.more_pairs = more_pairs(v.pairs, se, df, alpha, limit)
    return v


def sign_flip_p(diffs: list) -> float:
    """The exact two-sided sign-flip p of a row's mean: the share of the sign patterns of its
    pairs whose |mean| is at least its own (every pattern up to SIGN_ENUMERATE pairs; past it, a
    fixed sample of 8192 with its own pattern counted in, so p is never 0). Under no change a
    pair's sign is a coin, whatever the distribution of its size: the null that `hostbench
    ab-check` resamples."""
    import numpy as np
    x = np.asarray(diffs, dtype=float)
    if x.size == 0:
        return 1.0
    at_least = abs(x.sum()) * (1 - 1e-12)
    if x.size <= SIGN_ENUMERATE:
        return float(np.mean(np.abs(_sign_patterns(x.size) @ x) >= at_least))
    return (int(np.sum(np.abs(_sign_patterns(x.size) @ x) >= at_least)) + 1) / (8192 + 1)   # the sample counts as one pattern


@functools.lru_cache(maxsize=None)
def _sign_patterns(n: int):
    """sign_flip_p's ±1 patterns of n pairs, one a row: all 2^n up to SIGN_ENUMERATE, past it the fixed
    sample of 8192. Made once per n (read-only): a resampled validation tests thousands of rows."""
    import numpy as np
    if n <= SIGN_ENUMERATE:
        signs = 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    else:
        signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(8192, n))
    signs.flags.writeable = False
    return signs


def more_pairs(pairs: int, se: float, df: float, alpha: float, limit: float, most: int = 1000) -> int:
    """The pairs past its `pairs` that bring the MDC within `limit`, at today's moderated variance: each
    added pair adds a degree of freedom as well as shrinking the standard error, so a row
    judged on 3 pairs (2 df) is not written off by its t quantile alone. (`most` when none do;
    past 64 more, a count of a grid about 15 % apart.)"""
    import numpy as np
    h = kept(pairs)
    s2 = se * se * h
    m, hm = _counts(pairs, most)
    mdc = _t_sums(pairs, max(0.0, df - (h - 1)), alpha, most) * np.sqrt(s2 / hm)
    within = np.flatnonzero(mdc <= math.log1p(limit))
    return int(m[within[0]] - pairs) if within.size else most


@functools.lru_cache(maxsize=4096)
def _t_sums(pairs: int, prior_df: float, alpha: float, most: int):
    """t_{1-α/2} + t_{POWER} at each of more_pairs' counts past `pairs` (_counts), on the prior's df plus
    the count's: kept per (pairs, prior df, α), which the rows of a class share within a judgement."""
    import numpy as np
    from scipy import stats as st
    dfm = np.minimum(prior_df + _counts(pairs, most)[1] - 1, MAX_DF)
    out = st.t.ppf(1 - alpha / 2, dfm) + st.t.ppf(POWER, dfm)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=None)
def _counts(pairs: int, most: int):
    """more_pairs' pair counts past `pairs` and the pairs each keeps: every count up to 64 more, then a grid
    about 15 % apart (far counts are an order of magnitude). Made once per (pairs, most), read-only."""
    import numpy as np
    m = np.unique(np.concatenate([np.arange(pairs + 1, pairs + 65), np.geomspace(pairs + 65, pairs + most, 20).astype(int)]))
    hm = np.array([kept(int(x)) for x in m], dtype=float)
    m.flags.writeable = hm.flags.writeable = False
    return m, hm


def _kernel_change(row: PairedRow) -> str:
    a, b = row.kernels
    if not a or not b or tuple(a) == tuple(b):
        return ""
    if row.race:
        return ""      # an autotune pick may differ from process to process: not a change of the sides
    return f"kernels differ: A {', '.join(a[:2])}; B {', '.join(b[:2])}"
