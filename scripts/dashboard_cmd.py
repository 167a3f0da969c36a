"""`hostbench dashboard`: a static HTML dashboard over runs or a history store."""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.scripts.args import name_problem


def add_parser(command) -> None:
    from cudnn_hostbench.reports.dashboard.site import MANIFEST

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
    p.add_argument("--gpu", metavar="NAME",
                   help="the committed reference runs and A/B jobs of this GPU (reports/reference/NAME), as "
                        "if its folder were named")
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


def _sayer(args):
    """The function that prints one line on stderr, led by the command's name."""
    from cudnn_hostbench.reports import store

    def say(msg: str) -> None:
        print(f"{args.prog}: {store.one_line(msg)}", file=sys.stderr)
    return say


def _reference_paths(folder: Path, say) -> list[str]:
    """A GPU's committed folder as dashboard inputs: abjobs.split's run paths and whole A/B jobs. A
    committed job that keeps only its report (ab.json, ab.md; its processes' files stay where it
    ran) is left out with one line naming its table."""
    from cudnn_hostbench.reports.history import abjobs

    jobs, rest = abjobs.split([folder])
    whole = [j for j in jobs if (j / abjobs.JOB_FILE).is_file()]
    for j in jobs:
        if j not in whole:
            say(f"skipped {j}: an A/B job's report without its processes; its table is {j / 'ab.md'}")
    return [str(p) for p in (*rest, *whole)]


def _option_problem(args, say) -> int | None:
    """2 (with its line said) for a bad --out, no input or a bad --last; None when they are good."""
    from cudnn_hostbench.reports.dashboard import site as dashboard

    if name_problem(args.out):
        say(f"--out: {name_problem(args.out)}: {args.out}")   # the reason first: one_line cuts long lines
        return 2
    try:
        dashboard.previous_files(Path(args.out))  # before loading anything: a bad --out is the one message
    except dashboard.OutError as e:
        say(str(e))
        return 2
    if args.gpu is not None:
        from cudnn_hostbench.scripts.run import REFERENCE, reference_problem
        problem = reference_problem(args.gpu)
        if problem:
            say(problem)
            return 2
        args.paths = [*args.paths, *_reference_paths(REFERENCE / args.gpu, say)]
    if not args.paths and not args.store:
        say("name run files or folders, or a store with --store URL")
        return 2
    if args.last < 1:
        say(f"--last {args.last}: must be at least 1")
        return 2
    return None


def _read_paths(args, say):
    """(runs, unreadable files, A/B jobs) named on the command line, or 2 for a job that cannot be read."""
    from cudnn_hostbench.reports import store
    from cudnn_hostbench.reports.history import abjobs

    runs: list = []
    errors: list = []
    job_dirs, paths = abjobs.split(args.paths)
    try:
        jobs = [abjobs.read(j) for j in job_dirs]
    except abjobs.JobError as e:
        say(str(e).replace("; nothing stored", "; nothing written").replace("nothing of the job stored",
                                                                              "nothing written"))
        return 2
    if paths:
        runs, errors = store.load_runs(paths, args.order)
    return runs, errors, jobs


def _open_store(args, say, runs: list, errors: list, jobs: list):
    """The --store opened (made only when there is something to store into it), or 2 (said) when it
    cannot be opened or holds nothing to show."""
    from cudnn_hostbench.reports.history import db

    try:
        st = db.open_store(args.store, create=bool(runs or jobs))
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
    return st


def _say_loaded(args, say, runs: list, errors: list, jobs: list, st) -> int | None:
    """The runs' warnings and the files skipped; 2 (said) when nothing is left to show."""
    for r in runs:
        for w in getattr(r, "warnings", None) or []:
            say(f"warning: {w}")
    if not runs and not jobs and st is None:
        if not errors:
            say(f"{' '.join(args.paths)}: no run files found (*.json, *.jsonl); nothing written")
        for k, e in enumerate(errors):
            say(f"{e}{'; no run left to show, nothing written' if k == len(errors) - 1 else ''}")
        return 2
    for e in errors:
        say(f"skipped {e}")
    return None


def _build(args, runs: list, errors: list, jobs: list, st) -> tuple:
    """Write the dashboard (storing the runs and jobs named beside --store first): (its index, runs shown)."""
    from cudnn_hostbench.reports.dashboard import site as dashboard

    if st is None:
        index = dashboard.build(runs, args.out, errors, args.order, args.title, last=args.last, jobs=jobs)
        return index, len(runs) + len(dashboard.job_runs(jobs))
    for job in jobs:   # jobs and files named beside --store are stored first (each once)
        st.ingest_job(job)
    for r in runs:
        st.ingest_run(r)
    index = dashboard.build([], args.out, errors, args.order, args.title, store=st, last=args.last, jobs=jobs)
    return index, st.count()[0]


def run(args) -> int:
    from cudnn_hostbench.reports.dashboard import site as dashboard
    from cudnn_hostbench.reports.history import db

    say = _sayer(args)
    code = _option_problem(args, say)
    if code is not None:
        return code
    runs, errors, st, jobs = [], [], None, []
    if args.paths:   # read first: only a run to store makes a store
        read = _read_paths(args, say)
        if isinstance(read, int):
            return 2
        runs, errors, jobs = read
    if args.store:
        st = _open_store(args, say, runs, errors, jobs)
        if isinstance(st, int):
            return 2
    if args.paths and _say_loaded(args, say, runs, errors, jobs, st) is not None:
        return 2
    try:
        index, n = _build(args, runs, errors, jobs, st)
    except dashboard.OutError as e:
        say(str(e))
        return 2
    except db.StoreError as e:
        say(str(e))
        return 2
    except OSError as e:
        say(f"{args.out}: cannot write the dashboard ({e.strerror or e})")
        return 2
    finally:
        if st is not None:
            st.close()
    print(f"wrote {index} ({n} runs" + (f", {len(jobs)} A/B job{'s' if len(jobs) != 1 else ''}" if jobs else "")
          + ")")
    return 0
