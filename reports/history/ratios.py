"""Graph and device rows as paired ratios to their block's baseline, for judging against the same GPU.

The worker processes of one run sit at slightly different GPU speeds (clocks, power state), and
every row a process times shares its speed, so the ratio to the baseline the same process timed
spreads less between processes than the µs do (about a third less for graph rows, over half for
device rows; log 2026-12-01-1939). So against its own GPU's history a
graph or device row is judged on that ratio: worker by worker, the row's median over the
baseline's. Not against the fleet: another GPU may run the baseline's cuBLAS kernel a few % off the
rest, and every ratio of its blocks would move with it; the fleet keeps µs and the machine
factors.

Workers pair by position: a figure's workers are stored in worker order. A figure whose workers
are not the baseline's (one process missed one of them) carries the flag UNPAIRED and stays in µs.
"""
from __future__ import annotations

import dataclasses
import statistics

from cudnn_hostbench.bench.measure.runfile.stats import relative_spread

UNPAIRED = "unpaired"
MODES = ("graph", "device")


def pairable(fig) -> bool:
    return fig.mode in MODES and bool(fig.baseline) and fig.baseline != fig.variant and fig.status == "ok"


def ratio_of(fig, base):
    """`fig` as a paired ratio to `base` (same run, same block), or None where they do not pair."""
    if (base is None or base.status != "ok" or not fig.workers or len(fig.workers) != len(base.workers)
            or UNPAIRED in (fig.flags or "").split(",") or not all(b > 0 for b in base.workers)):
        return None
    rs = [w / b for w, b in zip(fig.workers, base.workers)]
    m = statistics.median(rs)
    return dataclasses.replace(fig, value=m, workers=rs, on_ratio=True, spread=relative_spread(rs))


def paired(figs: dict) -> dict:
    """run id -> row -> Figure, graph and device rows with a baseline as paired ratios where they pair."""
    out = {}
    for rid, fs in figs.items():
        mine = dict(fs)
        for row, f in fs.items():
            if pairable(f):
                got = ratio_of(f, fs.get((f.probe, f.baseline, f.size, f.mode)))
                if got is not None:
                    mine[row] = got
        out[rid] = mine
    return out
