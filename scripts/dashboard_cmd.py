"""`hostbench dashboard`: a static HTML dashboard over runs or a history store."""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.scripts.args import name_problem


def add_parser(command) -> None:
    from cudnn_hostbench.reports.dashboard import MANIFEST

    p = command("dashboard", run,
                description="Write a static HTML dashboard over runs or a history store: per GPU, the newest "
                            "run's verdicts against its history first, trust marks by kind, trends with the "
                            "history band and version changes, the frontend version view, the runs. "
                            "No scripts, nothing fetched: it opens from file://.",
                epilog="Exit status: 0 written; 2 bad input or --out (one line on stderr, nothing written). "
                       "Unreadable run files among readable ones are skipped, one warning line each.")
    p.add_argument("paths", nargs="*", metavar="RUN_OR_DIR",
                   help="run files (run.json, records.jsonl), A/B job folders (hostbench ab: the job's chart "
                        "and table led by the rows that moved) or folders scanned recursively for them "
                        "(with --store: stored first)")
    p.add_argument("--store", metavar="URL", help="read the runs from this history store (sqlite:///FILE or "
                                                  "postgresql://...; see hostbench history)")
    p.add_argument("--last", type=int, default=100, help="newest runs per GPU in the trends")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"folder to write into, made if missing. It overwrites DIR/index.html (one page, charts inline) "
                        f"and DIR/{MANIFEST} (the list of files it wrote); a rebuild removes only files "
                        f"that list names, and a non-empty folder without it is refused")
    p.add_argument("--order", choices=["date", "version"], default="date",
                   help="order runs by date, or by nvidia-cudnn-frontend version")
    p.add_argument("--title", default="hostbench dashboard", help="page title")


def run(a) -> int:
    from cudnn_hostbench.reports import dashboard, store
    from cudnn_hostbench.reports.history import db

    def say(msg: str) -> None:
        print(f"{a.prog}: {store.one_line(msg)}", file=sys.stderr)

    if name_problem(a.out):
        say(f"--out: {name_problem(a.out)}: {a.out}")   # the reason first: one_line cuts long lines
        return 2
    try:
        dashboard.previous_files(Path(a.out))  # before loading anything: a bad --out is the one message
    except dashboard.OutError as e:
        say(str(e))
        return 2
    if not a.paths and not a.store:
        say("name run files or folders, or a store with --store URL")
        return 2
    if a.last < 1:
        say(f"--last {a.last}: must be at least 1")
        return 2
    runs, errors, st, jobs = [], [], None, []
    if a.paths:   # read first: only a run to store makes a store
        from cudnn_hostbench.reports.history import abjobs
        job_dirs, paths = abjobs.split(a.paths)
        try:
            jobs = [abjobs.read(j) for j in job_dirs]
        except abjobs.JobError as e:
            say(str(e).replace("; nothing stored", "; nothing written").replace("nothing of the job stored",
                                                                                  "nothing written"))
            return 2
        if paths:
            runs, errors = store.load_runs(paths, a.order)
    if a.store:
        try:
            st = db.open_store(a.store, create=bool(runs or jobs))
            n = st.count()[0]
        except db.StoreError as e:
            for x in errors if not runs else []:
                say(f"skipped {x}")
            say(str(e))
            return 2
        if not n and not runs and not jobs:
            st.close()
            for x in errors:
                say(f"skipped {x}")
            say(f"{st.shown}: the store holds no runs; nothing written")
            return 2
    if a.paths:
        for r in runs:
            for w in getattr(r, "warnings", None) or []:
                say(f"warning: {w}")
        if not runs and not jobs and st is None:
            if not errors:
                say(f"{' '.join(a.paths)}: no run files found (*.json, *.jsonl); nothing written")
            for k, e in enumerate(errors):
                say(f"{e}{'; no run left to show, nothing written' if k == len(errors) - 1 else ''}")
            return 2
        for e in errors:
            say(f"skipped {e}")
    try:
        if st is not None:
            for job in jobs:   # jobs and files named beside --store are stored first (each once)
                st.ingest_job(job)
            for r in runs:
                st.ingest_run(r)
            index = dashboard.build([], a.out, errors, a.order, a.title, store=st, last=a.last, jobs=jobs)
            n = st.count()[0]
        else:
            index = dashboard.build(runs, a.out, errors, a.order, a.title, last=a.last, jobs=jobs)
            n = len(runs) + len(dashboard.job_runs(jobs))
    except dashboard.OutError as e:
        say(str(e))
        return 2
    except db.StoreError as e:
        say(str(e))
        return 2
    except OSError as e:
        say(f"{a.out}: cannot write the dashboard ({e.strerror or e})")
        return 2
    finally:
        if st is not None:
            st.close()
    print(f"wrote {index} ({n} runs" + (f", {len(jobs)} A/B job{'s' if len(jobs) != 1 else ''}" if jobs else "")
          + ")")
    return 0
