"""Build-time (host mode) rows: records in ms made by a probe's own measure(), and their helpers."""
from __future__ import annotations

import math
import time
from typing import Any, Callable

from cudnn_hostbench.bench.cudnn_graphs.build import as_unsupported
from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.probe import Case
from cudnn_hostbench.bench.measure.runfile import stats
from cudnn_hostbench.bench.measure.runfile.records import Record
from cudnn_hostbench.bench.measure.runfile.status import OK, Status, error


def ensure_clean_host() -> None:
    """Build-time probes time the host too: refuse after a profiler session (see bench.measure.core.timing)."""
    if timing.profiler_has_run():
        raise timing.ContaminatedError(
            "host-mode timing after a torch.profiler session in this process would read slow; "
            "host-mode items must run before device-mode ones")


def time_ms(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def host_record(probe, size: str, variant: str, samples=None, status: Status = OK, note: str = "",
                ratio=None, baseline: str = "", unit: str = "ms") -> Record:
    v = probe.variant(variant)
    samples = [float(x) for x in (samples or [])]
    if status.ok and not samples:
        status = error("no samples")
    return Record(probe.name, variant, size, "host", status=str(status), role=v.role, unit=unit, samples=samples,
                  calls_per_round=1, ratio=ratio, baseline=baseline, label=v.label, note=note)


def host_placeholders(probe) -> dict:
    """Cases for a probe's host-only (build-time) variants, so that building the probe's call
    variants does not stamp them "not built for this size" before measure() runs: the runner
    checks every variant that build() returns, and skips host-only ones when timing."""
    return {v.name: Case(fn=lambda: None, note="build-time row: measured in host mode")
            for v in probe.variants if set(v.modes) <= {"host"}}


def safe_measure(get_probe: Callable[[], Any], measure: Callable) -> Callable:
    """Wraps a build-time measure so that it never raises: a failure becomes the status of the
    probe's host-mode variants only (the runner would otherwise stamp it on every variant,
    overwriting eager/graph figures already recorded)."""
    def wrapped(ctx, size, opt):
        probe = get_probe()
        host = [v.name for v in probe.variants if "host" in v.modes]
        try:
            ensure_clean_host()
            recs = list(measure(ctx, size, opt))
        except Exception as e:  # noqa: BLE001
            return [host_record(probe, size, n, status=Status.of(as_unsupported(e))) for n in host]
        have = {r.variant for r in recs}
        recs += [host_record(probe, size, n, status=error("not measured")) for n in host if n not in have]
        return recs
    return wrapped


def stats_ratio(num, den):
    """Summary of paired ratios num[i]/den[i] (repeat by repeat), or None."""
    n = min(len(num), len(den))
    return stats.ratio_summary(list(num)[:n], list(den)[:n]) if n else None


def median(xs) -> float:
    s = stats.summarize(xs)
    return s.median if s else float("nan")


def fmt_ms(x: float) -> str:
    return "–" if x is None or math.isnan(x) else (f"{x:.3g} ms" if x < 100 else f"{x:.0f} ms")
