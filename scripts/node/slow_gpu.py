"""Which GPU of a node is slow: each GPU's GPU-bound rows (graph and device modes) against the
node's median of the same row, from one run per GPU taken at the same time (hostbench run
--all-gpus).

Per GPU: the factor is the median over rows of (its figure / the node's median figure of that row),
over the rows every GPU measured. It is flagged SLOW when the factor exceeds 1 by more than its
noise, the larger of:
  - the between-start scale: GPU-bound rows of one GPU model move together by about 1.5 % from one
    machine start to the next (bench/measure/runfile/machine.py), and two GPUs of one node are two
    physical GPUs, so that much is how far two healthy GPUs may differ;
  - SPREAD_MULT x the GPU's own spread: the median over its rows of the between-worker spread
    ((max - min) / median of its worker processes), or with one worker, of the rounds' IQR over
    their median: a change within the spread of the
    processes that measured it is not shown.
The output names the basis that set each GPU's threshold. With two GPUs the node's median is
their mean, so a GPU is flagged only when it is slower than the other by twice its threshold.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass

from cudnn_hostbench.bench.measure.runfile.records import Run
from cudnn_hostbench.reports import fmt

GPU_BOUND = ("graph", "device")
BETWEEN_START = 0.015   # GPU-bound rows between machine starts (H200 fleet), see the docstring
SPREAD_MULT = 1.5   # a GPU is off the node's median past this multiple of its own between-worker spread
BASIS_START = "between-start scale"
BASIS_OWN = "own spread"


@dataclass
class GpuFactor:
    gpu: str                 # 'GPU 3'
    uuid: str
    name: str
    rows: int                # rows compared (measured on every GPU)
    factor: float | None     # median over rows of figure / node median
    low: float | None        # min and max of the per-row factors
    high: float | None
    slower_rows: int         # rows above the node median
    own_spread: float        # median over rows of its own spread (relative)
    threshold: float         # the flag's noise floor (relative)
    basis: str               # what set the threshold: BASIS_START or BASIS_OWN
    slow: bool


def row_spread(rec) -> float:
    """The record's own relative noise: its between-worker spread, else its rounds' IQR/median."""
    if rec.spread is not None and len(rec.workers) > 1:
        return float(rec.spread)
    s = rec.summary()
    return float(s.iqr / s.median) if s and s.median and s.iqr is not None else 0.0


def gpu_rows(run: Run) -> dict:
    """{(probe, variant, size, mode): record} of the run's measured GPU-bound rows."""
    return {r.key: r for r in run.records if r.mode in GPU_BOUND and r.ok}


def factors(runs: dict[str, Run]) -> list[GpuFactor]:
    """One GpuFactor per run, keyed by its GPU's label ('GPU 3'), in the order given."""
    rows = {label: gpu_rows(run) for label, run in runs.items()}
    common = set.intersection(*(set(r) for r in rows.values())) if rows else set()
    node_median = {k: statistics.median(rows[g][k].summary().median for g in rows) for k in common}
    out = []
    for label, run in runs.items():
        fs = sorted(rows[label][k].summary().median / node_median[k] for k in common if node_median[k])
        own = statistics.median(row_spread(rows[label][k]) for k in common) if common else 0.0
        threshold, basis = max((BETWEEN_START, BASIS_START), (SPREAD_MULT * own, BASIS_OWN))
        f = statistics.median(fs) if fs else None
        out.append(GpuFactor(label, run.fingerprint.gpu_uuid, str(run.fingerprint.gpu_name or ""),
                             len(fs), f, fs[0] if fs else None, fs[-1] if fs else None,
                             sum(1 for x in fs if x > 1), own, threshold, basis,
                             bool(f is not None and len(runs) > 1 and f - 1 > threshold)))
    return out


def _pct(share: float) -> str:
    return f"{share * 100:.1f} %"


def table_rows(factors: list[GpuFactor]) -> list[list]:
    return [[f.gpu, f.uuid or "–", f.name or "–", f.rows,
             f"{f.factor:.3f}× [{f.low:.3f}–{f.high:.3f}]" if f.factor is not None else "–",
             f"{f.slower_rows}/{f.rows}", _pct(f.own_spread),
             f"{_pct(f.threshold)} ({f.basis})", "SLOW" if f.slow else "ok"] for f in factors]


HEADER = ["gpu", "uuid", "name", "rows", "factor [min–max over rows]", "rows slower", "own spread",
          "flag above", "verdict"]


def summary_line(factors: list[GpuFactor], failed: tuple | list = ()) -> str:
    slow = [f"{f.gpu} ({f.uuid or 'no UUID'}) {f.factor:.3f}×" for f in factors if f.slow]
    if len(factors) < 2:
        head = f"{len(factors)} GPU measured: no node median to compare against"
    elif slow:
        head = f"{len(slow)} slow GPU(s) of {len(factors)}: {', '.join(slow)}"
    else:
        head = f"no slow GPU among {len(factors)}: every factor within its noise"
    return head + (f"; {len(failed)} job(s) failed" if failed else "")


def noise_text() -> str:
    return (f"Factor: the median over the GPU-bound rows (graph, device) every GPU measured of the GPU's figure "
            f"over the node's median figure. A GPU is flagged SLOW when its factor exceeds 1 by more than the "
            f"larger of the {BASIS_START} ({_pct(BETWEEN_START)}: GPU-bound rows between machine starts) and "
            f"{SPREAD_MULT:g} × its {BASIS_OWN} (median over its rows of the between-worker spread, or with one "
            f"worker the rounds' IQR over their median); 'flag above' names which one set it.")


def render_text(factors: list[GpuFactor], failed: tuple | list = ()) -> str:
    lines = [summary_line(factors, failed), fmt.md_table(HEADER, table_rows(factors)), noise_text()]
    lines += [f"failed: {line}" for line in failed]
    return "\n".join(lines) + "\n"


def markdown(factors: list[GpuFactor], failed: tuple | list = (), runs: dict | None = None) -> str:
    text = ["# Which GPU of the node is slow", "", summary_line(factors, failed), "", fmt.md_table(HEADER, table_rows(factors)),
            "", noise_text(), ""]
    if failed:
        text += ["## Jobs that failed", ""] + [f"- {line}" for line in failed] + [""]
    if runs:
        text += ["## Run files", ""] + [f"- {label}: {run.path}" for label, run in runs.items()] + [""]
    return "\n".join(text)


def to_json(factors: list[GpuFactor], failed: tuple | list = ()) -> str:
    return json.dumps({"between_start": BETWEEN_START, "spread_mult": SPREAD_MULT, "modes": list(GPU_BOUND),
                       "gpus": [asdict(f) for f in factors], "failed": list(failed)}, indent=1)
