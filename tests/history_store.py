"""The committed H200 history in a scratch store, and a change injected into a stored run: shared by
the tests of the history check, the dashboard and its charts."""
from __future__ import annotations

import gzip
import json
import os
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text

from cudnn_hostbench.reports.history import db, ingest

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"
with gzip.open(EXPORT, "rt", encoding="utf-8") as _f:
    RUNS = sum(1 for line in _f if line.strip())   # the runs the committed export holds: a line each
GRAPH = ("fusion", "cudnn_fused", "epilogue-b16m512k1024n512", "graph")     # ~33 µs per call


def sample_export(tmp_path, every: int = 10) -> Path:
    """Every `every`-th run of the committed export and its newest, in tmp_path: both measurement
    versions and both GPUs' runs, for a test whose property does not depend on the count of runs.
    The same bytes each time (gzip's mtime 0), so stored_url ingests it once per process."""
    lines = gzip.decompress(EXPORT.read_bytes()).decode().splitlines()
    picked = lines[::every] + ([lines[-1]] if (len(lines) - 1) % every else [])
    out = Path(tmp_path) / f"sample-{every}.hbx.jsonl.gz"
    out.write_bytes(gzip.compress(("\n".join(picked) + "\n").encode(), mtime=0))
    return out


_BUILT: dict = {}   # export bytes' digest -> (a store this process ingested it into, once; ingest's Result)


def _built(tmp_path, export: Path) -> tuple[Path, ingest.Result]:
    """The store this process ingested `export` into through the ingest API, and what the ingest
    returned: made at the first call, in pytest's own temporary folder (tmp_path's parent), which
    pytest cleans."""
    import hashlib
    digest = hashlib.sha256(Path(export).read_bytes()).hexdigest()
    if digest not in _BUILT:
        built = Path(tmp_path).parent / f"hb-store-{digest[:12]}" / "h.db"
        built.parent.mkdir(exist_ok=True)
        st = db.open_store(f"sqlite:///{built}", create=True)
        res = ingest.ingest_paths(st, [Path(export)])
        st.close()
        _BUILT[digest] = (built, res)
    return _BUILT[digest]


def ingested(tmp_path, export: Path = EXPORT) -> ingest.Result:
    """What `ingest.ingest_paths` returned for `export` into an empty SQLite store (the store
    stored_url copies): a test of the ingest API's counts reads it instead of ingesting again."""
    return _built(tmp_path, export)[1]


def stored_url(tmp_path, export: Path = EXPORT) -> str:
    """The URL of a scratch SQLite store in tmp_path holding `export`, as `history ingest` writes
    it: ingested once per test process, copied for each test (an ingest of the committed export
    takes 8-10 s on a CPU core; a test that checks the ingest itself calls ingest)."""
    import shutil
    built, res = _built(tmp_path, export)
    assert res.stored and not res.errors, res.errors
    shutil.copyfile(built, tmp_path / "h.db")
    return f"sqlite:///{tmp_path / 'h.db'}"


_SITES: dict = {}   # the export's path -> the dashboard this process rendered of its store, once


def committed_dashboard(tmp_path, export: Path = EXPORT) -> Path:
    """The folder `hostbench dashboard --store` writes for the store of `export`, run from the
    repository root as the README says: rendered once per test process (the whole committed
    history takes seconds) for the tests that only read it, in pytest's own temporary folder."""
    from cudnn_hostbench.scripts import cli
    if export not in _SITES:
        url = stored_url(tmp_path, export)
        out = Path(tmp_path).parent / f"hb-dashboard-{len(_SITES)}"
        with _chdir(ROOT):
            assert cli.main(["dashboard", "--store", url, "--out", str(out)]) == 0
        _SITES[export] = out
    return _SITES[export]


@contextmanager
def _chdir(path: Path):
    """In `path` for the block (contextlib.chdir, which Python 3.10 lacks)."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def fresh(tmp_path) -> db.Store:
    st = db.open_store(stored_url(tmp_path))
    assert len(st.runs()) == RUNS
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
