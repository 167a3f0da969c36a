"""When two stored runs are one run: the same start time, history key and commit, and the same
figures. A file's bytes are not its identity: a run written again (re-indented, re-serialized, a
copy through an export) has new bytes and is still the run it was, and counting it twice would
make it its own history.

Figures are compared to 1e-9 relative, not bit for bit: a run file keeps samples in seconds and a
partial records.jsonl in µs, and the conversion may move the last bit of a median.
"""
from __future__ import annotations

import hashlib
import math

REL = 1e-9
FIELDS = ("status", "unit", "value", "median_us", "workers", "spread")


def lock_key(meta: dict) -> int:
    """A signed 64-bit number for (start time, key, commit): PostgreSQL's advisory lock, so two
    writers of the same run take turns."""
    text = "\0".join(str(meta.get(k) or "") for k in ("started_at", "history_key", "commit_id"))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def _close(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=REL, abs_tol=0.0) or (math.isnan(a) and math.isnan(b))
        except (TypeError, ValueError):
            return False
    return a == b


def same_figures(new: list, stored: dict) -> bool:
    """`new` (Figures) against one stored run's {row: Figure}."""
    if len(new) != len(stored):
        return False
    for f in new:
        g = stored.get(f.row)
        if g is None:
            return False
        for k in FIELDS:
            a, b = getattr(f, k), getattr(g, k)
            if k == "status":
                a, b = a[:2000], b[:2000]   # what the store keeps of a long error
            if not _close(a, b):
                return False
    return True
