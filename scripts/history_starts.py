"""Record the machine start of the committed H200 runs in the history export.

Those runs predate machine identity in the fingerprint (their host name is `vm` everywhere), so
their starts come from the engineering log (docs/measurements.md, "Machine starts of the
committed runs", which gives the evidence for each). A start here is a label, 'log:<date> <what>';
the GPU's UUID stays unknown. The export is read into a scratch store, each run is matched by its
source path and the minute it started, and the export is written again (same format, same order):

    python3 -m cudnn_hostbench.scripts.history_starts reports/reference/h200/history.hbx.jsonl.gz
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sqlalchemy import update

from cudnn_hostbench.scripts.cli import alias

# (end of the source path, started_at to the minute) -> start label
STARTS = {
    ("aa/pair3/run1.json", "2026-11-29T22:07"): "log:2026-11-29 pair 3",
    ("aa/pair3/run2.json", "2026-11-29T22:12"): "log:2026-11-29 pair 3",
    ("aa/pair4/run1.json", "2026-11-29T22:47"): "log:2026-11-29 pair 4",
    ("aa/pair4/run2.json", "2026-11-29T22:51"): "log:2026-11-29 pair 4",
    ("aa/pair5/run1.json", "2026-11-29T23:07"): "log:2026-11-29 pair 5",
    ("aa/pair5/run2.json", "2026-11-29T23:11"): "log:2026-11-29 pair 5",
    ("aa/pair6/run1.json", "2026-11-29T23:47"): "log:2026-11-29 pair 6",
    ("aa/pair6/run2.json", "2026-11-29T23:53"): "log:2026-11-29 pair 6",
    ("aa/pair7/run1.json", "2026-11-30T00:11"): "log:2026-11-30 pair 7",
    ("aa/pair7/run2.json", "2026-11-30T00:17"): "log:2026-11-30 pair 7",
    ("aa/run1.json", "2026-11-30T00:53"): "log:2026-11-30 pair 8",
    ("aa/run2.json", "2026-11-30T00:58"): "log:2026-11-30 pair 8",
    **{(f"matrix/run-fe{v}.json", t): "log:2026-11-30 pair 8" for v, t in (
        ("1.20.0", "2026-11-30T01:04"), ("1.26.0", "2026-11-30T01:05"), ("1.28.0", "2026-11-30T01:06"),
        ("1.31.0", "2026-11-30T01:07"), ("1.32.0", "2026-11-30T01:09"))},
    ("aa/run1.json", "2026-12-01T04:15"): "log:2026-12-01 calls A-C",
    ("run.json", "2026-12-01T04:23"): "log:2026-12-01 calls A-C",
    ("/tmp/refD.json", "2026-12-01T05:23"): "log:2026-12-01 calls 1-3",
    ("matrix/run-fe1.28.0.json", "2026-12-01T05:31"): "log:2026-12-01 calls 1-3",
    ("matrix/run-fe1.31.0.json", "2026-12-01T05:33"): "log:2026-12-01 calls 1-3",
    ("matrix/run-fe1.32.0.json", "2026-12-01T05:34"): "log:2026-12-01 calls 1-3",
    ("matrix/run-fe1.20.0.json", "2026-12-01T05:38"): "log:2026-12-01 call 4",
    ("matrix/run-fe1.26.0.json", "2026-12-01T05:40"): "log:2026-12-01 call 4",
    ("/tmp/fw-run1.json", "2026-12-01T06:02"): "log:2026-12-01 call 6",
    ("/tmp/fw-run2.json", "2026-12-01T06:04"): "log:2026-12-01 call 6",
}


def start_of(source_path: str, started_at: str) -> str:
    for (tail, minute), start in STARTS.items():
        if source_path.endswith(tail) and started_at.startswith(minute):
            return start
    return ""


def add_parser(command) -> None:
    p = command("history-starts", run, description=(__doc__ or "").split("\n")[0])
    p.add_argument("export", help="an existing export (*.hbx.jsonl.gz), rewritten in place")


def run(a) -> int:
    from cudnn_hostbench.reports.history import db, ingest
    from cudnn_hostbench.reports.history import schema as S
    args = [a.export]
    if not Path(args[0]).is_file():
        print(f"{a.prog}: {args[0]}: no such export", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        st = db.open_store(f"sqlite:///{Path(tmp) / 'h.db'}", create=True)
        res = ingest.ingest_paths(st, [args[0]])
        if res.errors:
            print(f"{a.prog}: {res.errors[0]}", file=sys.stderr)
            return 2
        missing = []
        with st.engine.begin() as c:
            for r in st.runs():
                s = start_of(r["source_path"], r["started_at"])
                if not s:
                    missing.append(f"{r['source_path']} {r['started_at'][:16]}")
                c.execute(update(S.runs).where(S.runs.c.id == r["id"]).values(start=s))
        n = ingest.export(st, args[0])
        st.close()
    print(f"wrote {args[0]} ({n} runs; no start known for {len(missing)}: {', '.join(missing) or 'none'})")
    return 0


main = alias("history-starts")   # python -m cudnn_hostbench.scripts.history_starts

if __name__ == "__main__":
    sys.exit(main())
