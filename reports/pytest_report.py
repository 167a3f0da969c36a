"""The reporting half of the pytest plugin: after a run, the table beside the run file and a
summary in the terminal. Kept out of bench/ because bench never imports reports."""
from __future__ import annotations

import sys

import pytest

from cudnn_hostbench.bench.measure import records, trust


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
    terminalreporter.write_line(trust.summary_line(run))
    terminalreporter.write_line(table.render_text(table.build_table(run)))
    terminalreporter.write_line(f"run file: {path}  (table.csv, table.md beside it)")
    if run.fingerprint.get("cudnn_error"):
        terminalreporter.write_line(f"cuDNN was not usable, so every cuDNN variant is unsupported: "
                                    f"{run.fingerprint['cudnn_error']}", red=True)
    cal = run.fingerprint.get("calibration_us", {})
    if cal.get("after_over_before", 1) > 1.2:
        terminalreporter.write_line(
            f"note: host calibration after the profiler phase is {cal['after_over_before']:.2f}x slower "
            "than before it; host figures were all taken before it")
