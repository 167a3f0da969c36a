"""`hostbench history ingest|check|list|show|export|exclude|include|upgrade`: the history store
from the command line. Only ingest makes a store; the others read an existing one.

Bad input (an unreadable run file among others is skipped with one line; a store that cannot be
opened, a corrupt or foreign database, a newer schema, a server that cannot be reached, a lock
held past the retries) ends with one line on stderr and exit 2; nothing stored is lost. An A/B job
folder (`hostbench ab`) that cannot be read (a corrupt ab.json, none, a side's run that does not
load) is one line and exit 2 with nothing stored of anything named (reports/history/abjobs.py).
"""
from __future__ import annotations

import sys

DESCRIPTION = __doc__


def _say(prog: str, msg: str) -> None:
    from cudnn_hostbench.reports import store as runstore
    print(f"{prog}: {runstore.one_line(msg)}", file=sys.stderr)


def add_parser(command) -> None:
    """Declares the history command on the cli's `command(name, func, ...)` helper."""
    from cudnn_hostbench.reports.history import db, where
    from cudnn_hostbench.reports.judge import check
    p = command("history", main, description=DESCRIPTION,
                epilog=f"The store: --store URL, else ${db.ENV_URL}, else results/history.db of this checkout, "
                       "of the project you run from, or of your data folder (here: "
                       f"{where.shown(where.default_store())}). Team store: postgresql://user@host/db. "
                       "Details: docs/history.md")
    hs = p.add_subparsers(dest="action", required=True,
                          metavar="{ingest,check,list,show,export,exclude,include,upgrade}")

    def action(name, help_):
        q = hs.add_parser(name, help=help_, description=help_)
        q.add_argument("--store", metavar="URL", help="store URL (sqlite:///FILE, a .db file, or postgresql://...)")
        q.set_defaults(prog=q.prog)
        return q

    q = action("ingest", "store run files, folders (scanned recursively), history exports or A/B job folders "
                         "(hostbench ab: each side's run as a run, and the job's paired results); the same run "
                         "or job twice is stored once, each run and each job in one transaction")
    q.add_argument("paths", nargs="+", metavar="RUN_OR_DIR")
    q = action("check", "judge a run against the runs on its history key (same GPU, driver, CUDA, cuDNN, "
                        "frontend, torch, measurement version)")
    q.add_argument("run", nargs="?", default="latest",
                   help="a run file (ingested first), a run id of the store, or 'latest' (the newest run)")
    q.add_argument("--last", type=int, default=check.DEFAULT_LAST, help="history runs per row")
    q.add_argument("--json", metavar="OUT", help="also write the verdicts and findings as JSON (for CI; the shape "
                                                 "of compare --json, with \"pass\"); - for stdout")
    q.add_argument("--markdown", metavar="OUT.md", help="also write the check as Markdown, every row; - for stdout")
    q.add_argument("--all", action="store_true", help="print every row, not only the changed ones")
    q.add_argument("--wide", action="store_true",
                   help="every column and whole notes, however wide (default: fit $COLUMNS or the terminal)")
    q.add_argument("--fail-on-regression", nargs="?", const="confirmed", choices=["confirmed", "any"],
                   help="exit 1 on a regression: 'confirmed' (default) a SLOWER row or a finding that a run of "
                        "another start (or the run's own GPU's history) shows too; 'any' every SLOWER row and "
                        "regression finding")
    q = action("list", "the runs the store holds: id, start time, GPU, history key, machine start and GPU, "
                       "probes, excluded or not")
    q.add_argument("--gpu", help="only runs of this GPU name")
    q = action("show", "one stored run in full")
    q.add_argument("run_id", type=int)
    q.add_argument("--figures", action="store_true",
                   help="also its table, rendered from the store (also when the run's file is gone)")
    q.add_argument("--wide", action="store_true", help="with --figures: every column, however wide")
    q = action("export", "write the store (or one GPU of it) as a compact export (*.hbx.jsonl.gz)")
    q.add_argument("out", help="file to write (replaced atomically)")
    q.add_argument("--gpu", help="only runs of this GPU name")
    q = action("exclude", "leave a run out of every history (it stays stored)")
    q.add_argument("run_id", type=int)
    q.add_argument("--why", default="excluded by hand", help="reason, kept with the run")
    q = action("include", "take an excluded run back into every history (undoes exclude)")
    q.add_argument("run_id", type=int)
    action("upgrade", "migrate a store made by an older hostbench to this one's schema (Alembic; on "
                      "PostgreSQL in one transaction); back the store up first")


def _known(store, run_id: int) -> dict:
    """The run with this id; LookupError saying how to list the ids."""
    run = store.run(run_id)
    if run is None:
        raise LookupError(f"{store.shown}: no run with id {run_id}; `hostbench history list"
                          f"{_store_arg(store)}` lists the ids")
    return run


def _store_arg(store) -> str:
    """' --store URL' for a command to print, unless the store is the default one."""
    from cudnn_hostbench.reports.history import db
    return "" if store.url == db.as_url(db.default_url()) else f" --store {store.shown}"


def _pick(store, what: str, prog: str) -> tuple[int, str]:
    """(run id, why it is the one judged) from 'latest' (the dashboard's rule: reports.judge.lead),
    an id, or a run file (ingested first)."""
    from pathlib import Path

    from cudnn_hostbench.reports.history import ingest
    from cudnn_hostbench.reports.judge import lead
    if what == "latest":
        if not store.runs():
            raise LookupError(f"{store.shown}: the store holds no runs")
        return lead.latest_in(store)
    if what.isdigit() and not Path(what).exists():
        return _known(store, int(what))["id"], ""
    res = ingest.ingest_paths(store, [what])
    if res.errors:
        raise LookupError(res.errors[0])
    got = res.stored + res.already
    if len(got) != 1:
        raise LookupError(f"{what}: name one run file to check ({len(got)} runs found)")
    return got[0][1], ""


def _made_by(url: str | None):
    """For a SQLite store that is not there yet: (its file, the folders that are not there either,
    innermost first), what an ingest that stores nothing (interrupted, failed) removes again; else None."""
    from cudnn_hostbench.reports.history import db
    try:
        path = db.sqlite_path(db.as_url(url or db.default_url()))
        if path is None or path.exists():
            return None
        return path, [d for d in path.parents if not d.exists()]
    except OSError:   # a name the OS refuses: open_store names it
        return None


def _remove_if_empty(made, opened: list) -> None:
    """Removes a store this ingest made (and the folders it made for it) when it holds no run."""
    from cudnn_hostbench.reports.history import db
    if made is None or not made[0].exists():
        return
    path, folders = made
    try:
        st = opened[-1] if opened else db.open_store(str(path))
        empty = st.count()[0] == 0
    except Exception:   # noqa: BLE001  (cut off before its schema was whole: nothing stored in it)
        empty = True
    if not empty:
        return
    for st in opened:
        st.close()
    for p in [path, *(path.with_name(path.name + x) for x in ("-journal", "-wal", "-shm"))]:
        p.unlink(missing_ok=True)
    for d in folders:
        try:
            d.rmdir()
        except OSError:
            break


def _ingest(args) -> int:
    """Opens (makes) the store only at the first readable run: a failed ingest leaves none behind,
    nor does one interrupted (Ctrl-C) before its first run was stored; a store that was there keeps
    what it had (each run is stored in one transaction)."""
    from cudnn_hostbench.reports.history import abjobs, db, ingest
    opened = []
    made = _made_by(args.store)

    def store():
        opened.append(db.open_store(args.store, create=True))
        return opened[-1]
    try:
        res = ingest.ingest_paths(store, args.paths)
    except (db.StoreError, abjobs.JobError) as e:
        _remove_if_empty(made, opened)
        _say(args.prog, str(e))
        return 2
    except OSError as e:
        _remove_if_empty(made, opened)
        _say(args.prog, f"{getattr(e, 'filename', '') or ''}: {e.strerror or e}")
        return 2
    except BaseException:   # Ctrl-C (the cli says so, exit 130): no store left behind that holds nothing
        _remove_if_empty(made, opened)
        raise
    finally:
        for st in opened:
            st.close()
    if not (res.stored or res.already or res.jobs):   # nothing readable: the reasons alone, exit 2
        for e in res.errors or [f"{' '.join(args.paths)}: no run file or history export in it; nothing stored"]:
            _say(args.prog, e)
        return 2
    for e in res.errors:
        _say(args.prog, f"skipped {e}")
    for path, rid in res.already:
        print(f"{path}: already stored as run {rid}")
    for path, got in res.jobs:
        runs = ", ".join(f"{label} run {rid}" for label, (rid, _) in got["runs"].items()) or "no side's run"
        print(f"{path}: A/B job " + ("already stored" if got["already"] else f"stored, {got['rows']} paired "
                                     "result(s)") + f"; its sides: {runs}")
    print(f"{opened[0].shown}: stored {len(res.stored)} run(s), {len(res.already)} already stored"
          + (f", {len(res.errors)} unreadable" if res.errors else ""))
    return 0


def _upgrade(store) -> int:
    """`history upgrade`: the store's schema revision, before and after."""
    before, after = store.upgraded or (None, None)
    print(f"{store.shown}: schema revision {after}" + (" (was " + str(before) + ")" if before != after
                                                        else ", nothing to do"))
    store.close()
    return 0


def _export(args, store) -> int:
    """`history export`: the store (or one GPU of it) as an export file."""
    from cudnn_hostbench.reports.history import ingest

    if args.gpu and not store.runs(gpu=args.gpu):   # an empty export would look like a result
        gpus = sorted({r["gpu"] for r in store.runs()})
        raise LookupError(f"{store.shown}: no run of GPU {args.gpu!r}; its runs' GPUs: "
                          f"{', '.join(gpus) or 'none (the store is empty)'}")
    n = ingest.export(store, args.out, args.gpu)
    print(f"wrote {args.out} ({n} runs)")
    return 0


def _show(args, store) -> int:
    """`history show`: one stored run in full (and its figures with --figures)."""
    from cudnn_hostbench.reports import listing

    shown = _known(store, args.run_id)
    print(listing.show_text(store, shown))
    if args.figures:
        print(listing.figures_text(store, shown, wide=args.wide))
    return 0


def _exclude(args, store) -> int:
    """`history exclude`: leave a run out of every history."""
    _known(store, args.run_id)
    store.exclude(args.run_id, args.why)
    print(f"run {args.run_id} is left out of every history ({args.why}); "
          f"`hostbench history include {args.run_id}{_store_arg(store)}` takes it back")
    return 0


def _include(args, store) -> int:
    """`history include`: take an excluded run back into every history."""
    if not _known(store, args.run_id)["excluded"]:
        print(f"run {args.run_id} was not excluded; nothing to do")
        return 0
    store.include(args.run_id)
    print(f"run {args.run_id} is back in every history")
    return 0


def _check_problem(args, prog: str) -> int | None:
    """2 (said) for a bad --last, --json or --markdown of `history check`; None when they are good."""
    from cudnn_hostbench.scripts.args import check_out_file

    if args.last < 1:
        _say(prog, "--last must be at least 1")
        return 2
    if args.json == "-" and args.markdown == "-":
        _say(prog, "--json - and --markdown -: only one of them can go to stdout")
        return 2
    for opt, path in (("--json", args.json), ("--markdown", args.markdown)):
        problem = path and path != "-" and check_out_file(path)
        if problem:   # before any work: a bad path is one line, nothing judged or written
            _say(prog, f"{opt} {path}: {problem}")
            return 2
    return None


def _check(args, store, prog: str) -> int:
    """`history check`: judge a run against its history; 1 on a regression with --fail-on-regression."""
    from cudnn_hostbench.bench.measure.core.progress import step
    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    from cudnn_hostbench.reports.judge import check

    code = _check_problem(args, prog)
    if code is not None:
        return code
    rid, led = _pick(store, args.run, prog)
    why = _known(store, rid)["excluded"]
    if why:   # judged all the same; it is only left out of the other runs' histories
        print(f"note: run {rid} is excluded ({why}): it is in no other run's history; "
              f"`hostbench history include {rid}{_store_arg(store)}` takes it back")
    target, verdicts = check.check(store, rid, args.last, progress=step)   # lines on a terminal only
    gate = args.fail_on_regression or "confirmed"
    outs = {"--json": (args.json, lambda: check.to_json(target, verdicts, gate)),
            "--markdown": (args.markdown, lambda: check.markdown(target, verdicts, led))}
    for path, text in outs.values():
        if path and path != "-":
            write_text_atomic(path, text())   # before printing: a bad path is one line
    stdout = [text for path, text in outs.values() if path == "-"]
    print(stdout[0]() if stdout else check.render(target, verdicts, args.all, wide=args.wide, why=led))
    return 1 if args.fail_on_regression and check.regressions(target, verdicts, args.fail_on_regression) else 0


def _act(args, store, prog: str) -> int:
    """Run the action on the open store."""
    from cudnn_hostbench.reports import listing

    if args.action == "list":
        print(listing.list_text(store, args.gpu))
        return 0
    actions = {"show": _show, "export": _export, "exclude": _exclude, "include": _include}
    if args.action in actions:
        return actions[args.action](args, store)
    return _check(args, store, prog)


def main(args) -> int:
    from cudnn_hostbench.reports.history import db
    prog = args.prog
    if args.action == "ingest":
        return _ingest(args)
    try:
        store = db.open_store(args.store, upgrade=args.action == "upgrade")
    except db.StoreError as e:
        _say(prog, str(e))
        return 2
    if args.action == "upgrade":
        return _upgrade(store)
    try:
        return _act(args, store, prog)
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
