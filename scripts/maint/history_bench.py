"""Scale benchmark of the history store (a script, not a timed test).

    hostbench history-bench [--runs 1000] [--url URL ...] [--start-pg]

Builds a synthetic history of --runs runs x 431 rows, resampled from the committed H200 history
(reports/reference/h200/history.hbx.jsonl.gz): each synthetic run takes every row's figure from a
randomly drawn committed full run, on one history key, one night apart. Then measures, per store:
the ingest rate, one history check of the newest run, and the dashboard of the latest 100 runs.
--start-pg starts a throwaway PostgreSQL server from the distribution's binaries (as the tests do).
Prints a Markdown table (the engineering log keeps the figures measured on the CI machine: log 2026-12-01-0359).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import platform
import random
import sys
import time
from pathlib import Path

from cudnn_hostbench.reports import store
from cudnn_hostbench.reports.dashboard import site as dashboard
from cudnn_hostbench.reports.history import db, ingest
from cudnn_hostbench.reports.judge import check
from cudnn_hostbench.scripts.cli import alias, exit_with
from cudnn_hostbench.scripts.maint import pg_server
from cudnn_hostbench.scripts.maint.scratch import scratch, stop_requested

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"


def committed_runs() -> list[tuple[dict, list[db.Figure]]]:
    """The committed full runs of measurement version 1: one history key, 12 runs, 437 rows (the
    matrix parts measure a few probes only; the version-2 runs have other rows)."""
    out = []
    for doc in ingest._export_lines(EXPORT):
        if doc["run"]["n_figures"] >= 400 and str(doc["run"].get("measurement_version")) == "1":
            out.append((doc["run"], [db.Figure(**f) for f in doc["figures"]]))
    return out


def synthetic(runs: int, seed: int = 0):
    """`runs` (meta, figures) pairs: per row, the figure of a randomly drawn committed run."""
    base = committed_runs()
    rows = {}
    for _, figs in base:
        for f in figs:
            rows.setdefault(f.row, [])
    for _, figs in base:
        for f in figs:
            rows[f.row].append(f)
    rng = random.Random(seed)
    start = _dt.datetime(2024, 1, 1, 2, 0, tzinfo=_dt.timezone.utc)
    for i in range(runs):
        meta = dict(base[rng.randrange(len(base))][0])
        meta.pop("id", None)
        meta.pop("n_figures", None)
        meta.update(source_hash=f"synthetic-{seed}-{i:06d}", source_path=f"synthetic/run{i:06d}.json",
                    started_at=(start + _dt.timedelta(days=i)).isoformat(), commit_id=f"{rng.getrandbits(160):040x}")
        figs = [dataclasses.replace(rng.choice(choices)) for choices in rows.values()]
        yield meta, figs


def bench(url: str, runs: int, out: Path) -> dict:
    from cudnn_hostbench.bench.measure.core.progress import Counter, step
    st = db.open_store(url, create=True)
    try:
        t0 = time.perf_counter()
        figures = 0
        counter = Counter(f"history-bench: {st.shown}: ingesting run", runs)   # a terminal only
        for i, (meta, figs) in enumerate(synthetic(runs)):
            if stop_requested():               # a signal whose KeyboardInterrupt was swallowed
                raise KeyboardInterrupt("signal")
            st.ingest(meta, figs)
            figures += len(figs)
            if (i + 1) % 10 == 0 or i + 1 == runs:
                counter(i + 1)
        counter.done()
        ingest_s = time.perf_counter() - t0
        newest = st.runs()[-1]["id"]
        step(f"history-bench: one history check of run {newest}")
        t0 = time.perf_counter()
        _, verdicts = check.check(st, newest)
        check_s = time.perf_counter() - t0
        step("history-bench: the dashboard of the latest 100 runs")
        t0 = time.perf_counter()
        dashboard.build([], out, store=st, last=100)
        dash_s = time.perf_counter() - t0
        return {"runs": runs, "figures": figures, "ingest_s": ingest_s, "runs_per_s": runs / ingest_s,
                "figures_per_s": figures / ingest_s, "check_s": check_s, "dashboard_s": dash_s,
                "verdicts": check.counts(verdicts), "mdc": check.median_mdc(verdicts),
                "page_kb": (out / "index.html").stat().st_size / 1024}
    finally:
        st.close()


def add_parser(command) -> None:
    p = command("history-bench", run, description=__doc__)
    p.add_argument("--runs", type=int, default=1000, help="synthetic runs in the history")
    p.add_argument("--url", action="append", default=[], help="store URL to fill (must be empty; repeatable)")
    p.add_argument("--start-pg", action="store_true", help="also start a throwaway PostgreSQL and measure it")


def run(args) -> int:
    if args.runs < 1:
        print(f"{args.prog}: --runs {args.runs}: must be at least 1", file=sys.stderr)
        return 2
    rows = []
    with contextlib.ExitStack() as stack:   # the temporary store, sites and server go, whatever ends this
        tmp = stack.enter_context(scratch("hostbench-bench-"))
        urls = list(args.url) or [f"sqlite:///{tmp / 'history.db'}"]
        if args.start_pg:
            try:
                server = stack.enter_context(pg_server.Server())
                urls.append(server.new_database("bench"))
            except (pg_server.Unavailable, RuntimeError, OSError) as e:
                print(f"{args.prog}: --start-pg: {store.one_line(str(e))}", file=sys.stderr)
                return 2
        for k, url in enumerate(urls):
            try:
                r = bench(url, args.runs, tmp / f"site{k}")
            except db.StoreError as e:
                print(f"{args.prog}: {store.one_line(str(e))}", file=sys.stderr)
                return 2
            engine = "PostgreSQL" if url.startswith("postgres") else "SQLite"
            print(f"{engine}: {r}", flush=True)
            rows.append(f"| {engine} | {r['runs']} × {r['figures'] // r['runs']} | {r['ingest_s']:.1f} s "
                        f"({r['runs_per_s']:.1f} runs/s, {r['figures_per_s']:.0f} figures/s) | {r['check_s']:.2f} s "
                        f"| {r['dashboard_s']:.2f} s ({r['page_kb']:.0f} KB) |")
    print(f"\nmachine: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print("| store | history | ingest | one history check | dashboard, latest 100 runs |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


main = alias("history-bench")   # python -m cudnn_hostbench.scripts.maint.history_bench

if __name__ == "__main__":
    exit_with(main())
