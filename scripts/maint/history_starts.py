"""Record the machine start of the committed H200 runs in the history export.

Those runs predate machine identity in the fingerprint (their host name is `vm` everywhere), so
their starts come from the engineering log (log 2026-12-01-1242, "Machine starts of the
committed runs", which gives the evidence for each), kept as data in
reports/reference/h200/starts.json. A start here is a label, 'log:<date> <what>';
the GPU's UUID stays unknown. The export is read into a scratch store, each run is matched by its
source path and the minute it started, and the export is written again (same format, same order):

    python3 -m cudnn_hostbench.scripts.maint.history_starts reports/reference/h200/history.hbx.jsonl.gz
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from sqlalchemy import update

from cudnn_hostbench.scripts.cli import alias, exit_with

STARTS_FILE = Path(__file__).resolve().parents[2] / "reports" / "reference" / "h200" / "starts.json"


def _starts() -> dict[tuple[str, str], str]:
    """(end of the source path, started_at to the minute) -> start label, from the log's data file."""
    rows = json.loads(STARTS_FILE.read_text())
    return {(r["path_end"], r["started_minute"]): r["start"] for r in rows}


def start_of(source_path: str, started_at: str) -> str:
    for (tail, minute), start in _starts().items():
        if source_path.endswith(tail) and started_at.startswith(minute):
            return start
    return ""


def add_parser(command) -> None:
    p = command("history-starts", run, description=(__doc__ or "").split("\n")[0])
    p.add_argument("export", help="an existing export (*.hbx.jsonl.gz), rewritten in place")


def run(args) -> int:
    from cudnn_hostbench.reports.history import db, ingest
    from cudnn_hostbench.reports.history import schema as S
    exports = [args.export]
    if not Path(exports[0]).is_file():
        print(f"{args.prog}: {exports[0]}: no such export", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        st = db.open_store(f"sqlite:///{Path(tmp) / 'h.db'}", create=True)
        res = ingest.ingest_paths(st, [exports[0]])
        if res.errors:
            print(f"{args.prog}: {res.errors[0]}", file=sys.stderr)
            return 2
        missing = []
        with st.engine.begin() as c:
            for r in st.runs():
                if r.get("start"):     # a start of its own (machine identity, or a label set before): kept
                    continue
                s = start_of(r["source_path"], r["started_at"])
                if not s:
                    missing.append(f"{r['source_path']} {r['started_at'][:16]}")
                    continue
                c.execute(update(S.runs).where(S.runs.c.id == r["id"]).values(start=s))
        n = ingest.export(st, exports[0])
        st.close()
    print(f"wrote {exports[0]} ({n} runs; no start known for {len(missing)}: {', '.join(missing) or 'none'})")
    return 0


main = alias("history-starts")   # python -m cudnn_hostbench.scripts.maint.history_starts

if __name__ == "__main__":
    exit_with(main())
