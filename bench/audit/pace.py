"""A run's host µs carried to the host an audit runs on."""
from __future__ import annotations


def host_pace(here: float | None, records) -> tuple[float, str]:
    """(factor, citation) that carries host µs measured in a run to this host: the audit's host
    sentinel (µs, the same CPU-only torch.empty the probes' workers read) over the cited records'
    own. A finding's price is host work, and host work runs in proportion to the sentinel: each
    worker's eager µs on the host-bound rows follows its sentinel with a log slope near 1
    (log 2026-12-03-1505).
    Start K: naive's warm execute at the reference run's pace projected 16.5 % under the fixed
    step; at this host's, 8.8 %. (1.0, "") where either side has no sentinel."""
    there = [s for r in records if r is not None and (s := getattr(r, "sentinel_us", None)) and s > 0]
    if not here or here <= 0 or not there or len(there) < len([r for r in records if r is not None]):
        return 1.0, ""
    ref = sum(there) / len(there)
    k = here / ref
    return k, f" × host pace {k:.2f} (sentinel {here:.3f} µs here, {ref:.3f} in the run)"
