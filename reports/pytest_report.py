"""The reporting half of the pytest plugin: after a run, the table beside the run file, a summary
in the terminal, and the run stored in the history store. Kept out of bench/ because bench never
imports reports.

The store: $HOSTBENCH_STORE (a URL; `off` stores nothing), else history.db beside the run's
folder (results/history.db for results/<stamp>/run.json). A store that cannot take the run is one
line; the run file is kept either way and can be ingested later (hostbench history ingest).
"""
from __future__ import annotations

import sys

import pytest

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.reports import fit, run_summary


@pytest.hookimpl(trylast=True)   # after pytest-benchmark's group tables: the answer comes last
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    path = getattr(getattr(config, "_hostbench", None), "run_path", None)
    if path is None:
        return
    from cudnn_hostbench.reports import table  # here, not at import: pandas costs each worker process a second
    try:
        run = records.load_run(path)
        table.write_outputs(run, path.parent)
    except records.RunFileError as e:
        print(f"hostbench: {e}", file=sys.stderr)
        return
    terminalreporter.write_sep("=", "cudnn-hostbench: µs per call against each probe's baseline")
    option = getattr(config, "getoption", None)
    wide = bool(option("hb_wide", False)) if option else False   # hostbench run --wide
    if wide:
        terminalreporter.write_line(run_summary.summary_line(run))
        if run_summary.time_text(run):
            terminalreporter.write_line(run_summary.time_text(run))
    else:
        terminalreporter.write_line("\n".join(run_summary.summary_lines(run, fit.term_width())))
    terminalreporter.write_line(table.render_text(table.build_table(run), wide=wide))
    terminalreporter.write_line(f"run file: {path}  (table.csv, table.md beside it)")
    terminalreporter.write_line(store_run(run, path))
    if run.fingerprint.cudnn_error:
        terminalreporter.write_line(f"cuDNN was not usable, so every cuDNN variant is unsupported: "
                                    f"{run.fingerprint.cudnn_error}", red=True)
    cal = run.fingerprint.calibration_us
    if cal.get("after_over_before", 1) > 1.2:
        note = (f"note: host calibration after the profiler phase is {cal['after_over_before']:.2f}x slower "
                "than before it; host figures were all taken before it")
        terminalreporter.write_line(note if wide else "\n".join(fit.wrap(note, fit.term_width(), hang="  ")))


def store_url_for(path) -> str | None:
    """The store a finished run goes into (None: $HOSTBENCH_STORE=off)."""
    import os
    from pathlib import Path
    url = os.environ.get("HOSTBENCH_STORE", "")
    if url.lower() in ("off", "none", "0"):
        return None
    return url or f"sqlite:///{Path(path).resolve().parent.parent / 'history.db'}"


def store_run(run, path) -> str:
    """Ingests a finished run; one line saying where it went, or why it did not."""
    url = store_url_for(path)
    if url is None:
        return "history store: off (HOSTBENCH_STORE=off)"
    try:
        from cudnn_hostbench.reports.history import db
    except ImportError as e:   # sqlalchemy missing: the run file is still the archive
        return f"history store: not stored ({e}); ingest later with hostbench history ingest"
    try:
        st = db.open_store(url, create=True)
        try:
            rid, new = st.ingest_run(run)
        finally:
            st.close()
    except (db.StoreError, OSError) as e:
        return f"history store: not stored ({e}); the run file is kept: hostbench history ingest {path}"
    return (f"history store: {f'run {rid} stored' if new else f'already stored as run {rid}'} in {db._shown(url)}; "
            f"hostbench history check {rid} --store {db._shown(url)}")
