"""The suite never writes a person's history store: every test runs with $HOSTBENCH_STORE on a
temporary store (tests/conftest.py), and the stores a person would get by default are
fingerprinted before the suite and compared after it."""
from __future__ import annotations

import hashlib
from pathlib import Path


def default_stores() -> list[Path]:
    """Where a person's default store is, as if $HOSTBENCH_STORE were unset: this checkout's
    results/history.db, and the one an installed harness would use from here."""
    from cudnn_hostbench.reports.history import where
    found = [where.default_store()]
    if where.checkout() is not None:
        found.append(where.checkout() / "results" / "history.db")
    return list(dict.fromkeys(found))


def snapshot(paths: list[Path]) -> dict[Path, tuple | None]:
    """Each file's size, mtime and sha256 (None where there is none)."""
    out: dict[Path, tuple | None] = {}
    for p in paths:
        try:
            st = p.stat()
            out[p] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        except OSError:
            out[p] = None
    return out


def changed(before: dict[Path, tuple | None]) -> list[str]:
    """One line per guarded store that is not as it was."""
    now = snapshot(list(before))
    return [f"{p}: {'made' if before[p] is None else 'removed' if now[p] is None else 'changed'} by the tests"
            for p in before if now[p] != before[p]]


def temporary_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'history.db'}"
