"""`hostbench history ingest|check|export|exclude`: the history store from the command line.

Bad input (an unreadable run file among others is skipped with one line; a store that cannot be
opened, a corrupt or foreign database, a newer schema, a server that cannot be reached, a lock
held past the retries) ends with one line on stderr and exit 2; nothing stored is lost.
"""
from __future__ import annotations

import sys

DESCRIPTION = __doc__


def _say(prog: str, msg: str) -> None:
    from cudnn_hostbench.reports import store as runstore
    print(f"{prog}: {runstore.one_line(msg)}", file=sys.stderr)


def add_parser(command) -> None:
    """Declares the history command on the cli's `command(name, func, ...)` helper."""
    from cudnn_hostbench.reports.history import check, db
    p = command("history", main, description=DESCRIPTION,
                epilog=f"The store: --store URL, else ${db.ENV_URL}, else results/history.db (SQLite). "
                       "Team store: postgresql://user@host/db. Details: docs/history.md")
    hs = p.add_subparsers(dest="action", required=True, metavar="{ingest,check,export,exclude,upgrade}")

    def action(name, help_):
        q = hs.add_parser(name, help=help_, description=help_)
        q.add_argument("--store", metavar="URL", help="store URL (sqlite:///FILE or postgresql://...)")
        q.set_defaults(prog=q.prog)
        return q

    q = action("ingest", "store run files, folders (scanned recursively) or history exports; the same run "
                         "twice is stored once, each run in one transaction")
    q.add_argument("paths", nargs="+", metavar="RUN_OR_DIR")
    q = action("check", "judge a run against the runs on its history key (same GPU, driver, CUDA, cuDNN, "
                        "frontend, torch, measurement version)")
    q.add_argument("run", nargs="?", default="latest",
                   help="a run file (ingested first), a run id of the store, or 'latest' (the newest run)")
    q.add_argument("--last", type=int, default=check.DEFAULT_LAST, help="history runs per row")
    q.add_argument("--min-history", type=int, default=check.MIN_HISTORY,
                   help="fewer history runs than this: 'too little history', the pairwise gate instead")
    q.add_argument("--all", action="store_true", help="print every row, not only the changed ones")
    q.add_argument("--wide", action="store_true",
                   help="every column and whole notes, however wide (default: fit $COLUMNS or the terminal)")
    q.add_argument("--fail-on-regression", nargs="?", const="confirmed", choices=["confirmed", "any"],
                   help="exit 1 on a SLOWER row: 'confirmed' (default) only when a second run shows it too")
    q = action("export", "write the store (or one GPU of it) as a compact export (*.hbx.jsonl.gz)")
    q.add_argument("out", help="file to write (replaced atomically)")
    q.add_argument("--gpu", help="only runs of this GPU name")
    q = action("exclude", "leave a run out of every history (it stays stored)")
    q.add_argument("run_id", type=int)
    q.add_argument("--why", default="excluded by hand", help="reason, kept with the run")
    action("upgrade", "migrate a store made by an older hostbench to this one's schema (Alembic; on "
                      "PostgreSQL in one transaction); back the store up first")


def _pick(store, what: str, prog: str):
    """A run id from 'latest', an id, or a run file (ingested first)."""
    from pathlib import Path

    from cudnn_hostbench.reports.history import ingest
    if what == "latest":
        runs = store.runs()
        if not runs:
            raise LookupError(f"{store.shown}: the store holds no runs")
        return max(runs, key=lambda r: (r["started_at"], r["id"]))["id"]
    if what.isdigit() and not Path(what).exists():
        return int(what)
    res = ingest.ingest_paths(store, [what])
    if res.errors:
        raise LookupError(res.errors[0])
    got = res.stored + res.already
    if len(got) != 1:
        raise LookupError(f"{what}: name one run file to check ({len(got)} runs found)")
    return got[0][1]


def main(a) -> int:
    from cudnn_hostbench.reports.history import check, db, ingest
    prog = a.prog
    try:
        store = db.open_store(a.store, upgrade=a.action == "upgrade")
    except db.StoreError as e:
        _say(prog, str(e))
        return 2
    if a.action == "upgrade":
        before, after = store.upgraded or (None, None)
        print(f"{store.shown}: schema revision {after}" + (" (was " + str(before) + ")" if before != after
                                                            else ", nothing to do"))
        store.close()
        return 0
    try:
        if a.action == "ingest":
            res = ingest.ingest_paths(store, a.paths)
            for e in res.errors:
                _say(prog, f"skipped {e}")
            print(f"{store.shown}: stored {len(res.stored)} run(s), {len(res.already)} already stored"
                  + (f", {len(res.errors)} unreadable" if res.errors else ""))
            return 2 if res.errors and not (res.stored or res.already) else 0
        if a.action == "export":
            n = ingest.export(store, a.out, a.gpu)
            print(f"wrote {a.out} ({n} runs)")
            return 0
        if a.action == "exclude":
            if not store.exclude(a.run_id, a.why):
                _say(prog, f"{store.shown}: no run with id {a.run_id}")
                return 2
            print(f"run {a.run_id} is left out of every history ({a.why})")
            return 0
        if a.last < 1 or a.min_history < 1:
            _say(prog, "--last and --min-history must be at least 1")
            return 2
        rid = _pick(store, a.run, prog)
        target, verdicts = check.check(store, rid, a.last, a.min_history)
        print(check.render(target, verdicts, a.all, wide=a.wide))
        slower = [v for v in verdicts if v.verdict == "SLOWER"]
        if a.fail_on_regression == "any" and slower:
            return 1
        if a.fail_on_regression == "confirmed" and any(v.state == "confirmed" for v in slower):
            return 1
        return 0
    except (db.StoreError, LookupError) as e:
        _say(prog, str(e).strip("'\""))
        return 2
    except BrokenPipeError:
        raise   # the cli's main ends quietly on a closed pipe
    except OSError as e:
        _say(prog, f"{getattr(e, 'filename', '') or ''}: {e.strerror or e}")
        return 2
    finally:
        store.close()
