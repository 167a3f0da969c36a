"""The committed H200 history in a scratch store, and a change injected into a stored run: shared by
the tests of the history check, the dashboard and its charts."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from sqlalchemy import text

from cudnn_hostbench.reports.history import db, ingest

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"
with gzip.open(EXPORT, "rt", encoding="utf-8") as _f:
    RUNS = sum(1 for line in _f if line.strip())   # the runs the committed export holds: a line each
GRAPH = ("fusion", "cudnn_fused", "epilogue-b16m512k1024n512", "graph")     # ~33 µs per call


def fresh(tmp_path) -> db.Store:
    st = db.open_store(f"sqlite:///{tmp_path / 'h.db'}", create=True)
    res = ingest.ingest_paths(st, [EXPORT])
    assert len(res.stored) == RUNS and not res.errors
    return st


def full_v1(st: db.Store) -> list[dict]:
    """The full runs of measurement version 1, oldest first."""
    return [r for r in st.runs() if r["n_figures"] >= 400 and str(r["measurement_version"]) == "1"]


def newest_reference(st: db.Store) -> dict:
    """The newest full run of measurement version 1 (the matrix parts after it measure a few probes)."""
    return full_v1(st)[-1]


def inject(st: db.Store, run_id: int, row: tuple, factor: float) -> None:
    """Multiplies one row's figure (and each worker's) in a stored run by `factor`."""
    f = st.figures([run_id])[run_id][row]
    with st.engine.begin() as c:
        rid = c.execute(text("SELECT id FROM hb_rows WHERE probe=:p AND variant=:v AND size=:s AND mode=:m"),
                        dict(zip("pvsm", row))).scalar()
        c.execute(text("UPDATE hb_figures SET value=:v, workers_json=:w WHERE run_id=:r AND row_id=:i"),
                  {"v": f.value * factor, "w": json.dumps([w * factor for w in f.workers]), "r": run_id, "i": rid})
