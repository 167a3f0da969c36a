"""Synthetic runs for CPU tests: records drawn from seeded noise, never measured figures."""
from __future__ import annotations

import random

from cudnn_hostbench.bench.measure.runfile import records, stats
from cudnn_hostbench.bench.measure.runfile.records import Record


def synthetic_records(seed: int = 0, rounds: int = 20, slow: dict | None = None) -> list[Record]:
    """A small execute-like probe at two sizes and three modes, rounds paired across variants."""
    rng = random.Random(seed)
    slow = slow or {}
    base_us = {"torch_mm": 8.0, "generic": 13.0, "pinned": 9.0}
    out = []
    for size in ("256", "1024"):
        for mode in ("eager", "graph", "device"):
            drift = [rng.uniform(0.9, 1.1) for _ in range(rounds)]  # shared per round
            samples = {}
            for v, us in base_us.items():
                f = slow.get((v, mode), 1.0)
                scale = 0.4 if mode != "eager" else 1.0
                samples[v] = [us * scale * d * f * rng.uniform(0.98, 1.02) for d in drift]
            for v, s in samples.items():
                role = "baseline" if v == "torch_mm" else ("trap" if v == "generic" else "fixed")
                out.append(Record("execute", v, size, mode, role=role, samples=s, calls_per_round=100,
                                  kernels_per_call=1.0 if mode == "device" else None,
                                  kernel_names=["nvjet_tst x1"] if mode == "device" else [],
                                  ratio=None if v == "torch_mm" else stats.ratio_summary(s, samples["torch_mm"]),
                                  baseline="torch_mm", label=v))
    out.append(Record("execute", "ordered", "256", "eager", status="unsupported: needs frontend >= 1.31",
                      role="fixed"))
    return out


FINGERPRINT = {"gpu_name": "NVIDIA H200", "sm_count": 132, "driver": "580.0", "cuda": "13.0", "torch": "2.11.0",
               "cudnn_backend": 91900, "cudnn_torch": 91900, "cudnn_frontend": "1.32.0", "python": "3.12.3",
               "cpu_model": "Xeon", "clock_source": "tsc", "datetime": "2026-11-29T00:00:00+00:00"}


def write_synthetic_run(path, seed: int = 0, exported: bool = False, **kw):
    """A synthetic run file: the engine's document, or (`exported`) pytest-benchmark's layout,
    which run files had up to format 2 and --benchmark-json exports have."""
    from cudnn_hostbench.bench.measure.runfile import export
    recs = synthetic_records(seed, **kw)
    write = export.pytest_benchmark_document if exported else records.run_document
    return records.write_run(path, write(recs, dict(FINGERPRINT)))


def hostbench_here(*args, cwd=None):
    """`hostbench ARGS` run in this process as `python -m cudnn_hostbench.scripts.cli ARGS` runs it
    in its own (a subprocess pays the imports of pandas, scipy and matplotlib, seconds, each time):
    a CompletedProcess of its exit status (argparse's SystemExit included), stdout, and stderr
    with the warnings Python's default filters would print there, run from `cwd` (default: the
    repository root). An exception the command lets out is raised here, where a process would
    print its traceback. Tests of what only a process shows (a closed pipe, the interpreter's own
    exit) and at least one test per command run the real process."""
    import contextlib
    import io
    import os
    import subprocess
    import warnings
    from pathlib import Path

    from cudnn_hostbench.scripts import cli
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.simplefilter("default")     # once per place, as a process prints them
        os.chdir(Path(__file__).resolve().parents[1] if cwd is None else cwd)
        try:
            code = cli.main(argv)
        except SystemExit as e:              # argparse's errors and --help
            if isinstance(e.code, str):
                print(e.code, file=err)
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        finally:
            os.chdir(old)
    quiet = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)   # Python's defaults
    said = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno)
                   for w in caught if not issubclass(w.category, quiet))
    return subprocess.CompletedProcess(["hostbench", *argv], code, out.getvalue(), err.getvalue() + said)
