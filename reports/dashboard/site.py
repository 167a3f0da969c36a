"""`hostbench dashboard`: a static HTML page from the history store that leads with what changed.

Over a store (`--store URL`), or over run files and folders (ingested first into a store in
memory, so both read the same way): per GPU, the verdicts of the run reports/judge/lead.py
picks against its history (reports/judge/check.py), trust marks as counts that expand, trends
with the history band, every variant's round ratios, the frontend version heatmap and the runs
(reports/dashboard/page.py; figures drawn with seaborn, reports/dashboard/charts.py, inlined as SVG).
A/B job folders (`hostbench ab`) among the files, or A/B jobs in the store, lead the page: each
night's paired change per row and the newest job whole (reports/dashboard/abpage.py).
One HTML file, no scripts, nothing fetched: it opens from file://.

The output folder holds a manifest (MANIFEST) of the files the dashboard wrote; a rebuild only
ever replaces or removes files it lists, and a non-empty folder without one is refused.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic

MANIFEST = ".hostbench-dashboard"
LAST = 100    # runs per GPU in the trends


class OutError(Exception):
    """The --out folder cannot be used; the message names it and says why."""


def memory_store(runs, jobs=()):
    """A store in memory holding `runs` (loaded Run objects) and A/B `jobs` (history.abjobs.Job:
    their sides' runs and paired results), for a dashboard over files."""
    from cudnn_hostbench.reports.history import db
    st = db.open_store("sqlite://", create=True)
    for job in jobs:
        st.ingest_job(job)
    for r in runs:
        try:
            h = db.file_hash(r.path)
        except OSError:
            h = f"{r.path}:{r.datetime}"
        st.ingest_run(r, h)
    return st


def job_runs(jobs) -> list:
    """The side runs of A/B jobs, loaded (their rounds are drawn as any run file's)."""
    return [s.run for job in jobs for s in job.sides.values() if s.run is not None]


def render_store(st, folder: Path, errors=(), title: str = "hostbench dashboard", last: int = LAST,
                 runs=(), order: str = "date") -> list[str]:
    """Writes index.html into `folder`; returns the paths written, relative to it. `runs`: loaded
    run files, whose rounds the page draws (the store keeps per-worker figures only). `order`
    'version': each GPU leads with its newest frontend version's run (a version matrix). A line
    per GPU on stderr while it works, when stderr is a terminal."""
    from cudnn_hostbench.reports.dashboard import page
    loaded = {str(r.path): r for r in runs}
    (folder / "index.html").write_text(page.render(st, title, last, [str(e) for e in errors], loaded=loaded,
                                                   order=order, progress=progress_line()),
                                       encoding="utf-8")
    return ["index.html"]


def progress_line():
    """say(text) for a terminal (bench/measure/core/progress.py), or None when stderr is not one."""
    from cudnn_hostbench.bench.measure.core import progress
    return progress.say if progress.on_terminal() else None


def render(runs, folder: Path, errors=(), order: str = "date", title: str = "hostbench dashboard",
           jobs=()) -> list[str]:
    """The dashboard of loaded runs and A/B jobs (the trends order by date; `order` 'version' leads
    each GPU with its newest frontend version, the version view is in version order either way)."""
    st = memory_store(runs, jobs)
    try:
        return render_store(st, folder, errors, title, runs=list(runs) + job_runs(jobs), order=order)
    finally:
        st.close()


# -- the output folder: write only into our own, remove only what we wrote ------------------
def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def previous_files(out: Path) -> set[str]:
    """Files an earlier build wrote into `out` (its manifest); raises OutError when `out` cannot
    be used: a file, under a file, unwritable, or a non-empty folder without a manifest."""
    if out.exists() and not out.is_dir():
        raise OutError(f"{out}: --out names a file, not a folder")
    up = _existing_ancestor(out)
    if not up.is_dir():
        raise OutError(f"{out}: {up} is a file, not a folder")
    if not os.access(up, os.W_OK | os.X_OK):
        raise OutError(f"{out}: cannot write in {up}")
    if not out.exists():
        return set()
    man = out / MANIFEST
    if not man.is_file():
        if any(out.iterdir()):
            raise OutError(f"{out}: folder is not empty and has no {MANIFEST} manifest (not written by "
                           "hostbench dashboard); refusing to write into it, choose a new or empty folder")
        return set()
    names = set()
    for line in man.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        # only plain relative paths below `out`: a damaged manifest must not reach elsewhere
        if line and not line.startswith("#") and not Path(line).is_absolute() and ".." not in Path(line).parts:
            names.add(line)
    return names


def publish(stage: Path, out: Path, written: list[str], old: set[str]) -> None:
    """Moves the staged files into `out`, writes the manifest, removes files only the old one listed."""
    for name in written:
        target = out / name
        parent = target.parent
        while parent != out and parent != parent.parent:  # e.g. img is a user's file
            if parent.exists() and not parent.is_dir():
                raise OutError(f"{parent}: is a file, the dashboard needs a folder there")
            parent = parent.parent
        if (target.exists() or target.is_symlink()) and name not in old:
            raise OutError(f"{target}: exists and was not written by hostbench dashboard; "
                           "move it or choose another --out")
    for name in sorted(written, key=lambda n: n == "index.html"):  # the page last: its images first
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / name, out / name)
    write_text_atomic(out / MANIFEST, "# files written by hostbench dashboard; a rebuild replaces them and removes "
                      "those it no longer writes, and touches nothing else\n" + "\n".join(written) + "\n")
    for name in sorted(old - set(written)):
        p = out / name
        if p.is_file() or p.is_symlink():
            p.unlink()


def build(runs, out: str | Path, errors=(), order: str = "date", title: str = "hostbench dashboard",
          store=None, last: int = LAST, jobs=()) -> Path:
    """Renders into a staging folder beside `out`, then moves the files in: a failure leaves `out`
    as it was. From `store` when given (`jobs` already stored in it), else from `runs` and A/B
    `jobs`. Returns the index path; raises OutError when `out` cannot be used."""
    out = Path(out)
    old = previous_files(out)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=_existing_ancestor(out.parent)))
    try:
        written = render_store(store, stage, errors, title, last, list(runs) + job_runs(jobs), order) \
            if store is not None else render(runs, stage, errors, order, title, jobs)
        out.mkdir(parents=True, exist_ok=True)
        publish(stage, out, written, old)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"
