"""`hostbench run`: the probes on this GPU, or the committed reference run without one.

With a GPU it runs `pytest probes --benchmark-only` (extra arguments pass through to pytest, e.g.
--hb-workers 1 --hb-sizes 256 -k execute), which runs the suite in worker processes and writes
results/<stamp>/run.json (one pytest-benchmark JSON), records.jsonl, table.csv and table.md.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reports" / "reference"


def reference_runs(gpu: str | None = None) -> list[Path]:
    """The committed reference run of each GPU folder (run.json, or run.json.gz), or of `gpu`'s."""
    from cudnn_hostbench.bench.measure.runfile.records import run_file_in
    if not REFERENCE.is_dir():   # an installed copy holds no reference runs
        return []
    folders = [REFERENCE / gpu] if gpu else sorted(p for p in REFERENCE.iterdir() if p.is_dir())
    return [f for f in map(run_file_in, folders) if f is not None]


def reference_problem(gpu: str) -> str | None:
    """Why `--gpu NAME` names no committed reference run (one line), or None when it names one."""
    if gpu and "/" not in gpu and gpu not in (".", "..") and reference_runs(gpu):
        return None
    have = ", ".join(p.parent.name for p in reference_runs()) or "none"
    return f"--gpu {gpu}: no committed reference run for that GPU (there are: {have})"


def cuda_available() -> tuple[bool, str]:
    try:
        import torch
    except ImportError as e:
        return False, f"torch is not importable ({e})"
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA GPU"
    return True, ""


def render_reference(wide: bool = False) -> int:
    from cudnn_hostbench.bench.measure.runfile import records
    from cudnn_hostbench.reports import fit, run_summary, table
    from cudnn_hostbench.reports.history import where
    runs = reference_runs()
    if not runs:
        print("no committed reference run under reports/reference/", file=sys.stderr)
        return 2
    for path in runs:
        try:
            run = records.load_run(path)
        except records.RunFileError as e:
            print(f"skipping reference run: {e}", file=sys.stderr)
            continue
        width = fit.WIDE if wide else fit.term_width()
        print(f"\nreference run {where.shown(path)}")   # a path that works from here
        print("\n".join(fit.wrap(run_summary.caption(run), width, hang="  ")))
        print(run_summary.summary_line(run) if wide else "\n".join(run_summary.summary_lines(run, width)))
        print(table.render_text(table.build_table(run), wide=wide))
    return 0


def pinned_config(root: Path) -> list[str]:
    """pytest arguments that fix where the settings come from. Without them a value given as
    `--hb-out /elsewhere` (not `--hb-out=/elsewhere`) is taken for a path while pytest looks for its
    config file, before the plugin's options are known, and the probes' settings are missed."""
    cfg = root / "pyproject.toml"
    return [*(["-c", str(cfg)] if cfg.is_file() else []), "-o", "python_files=probe_*.py test_*.py"]


def add_parser(command) -> None:
    p = command("run", run, extra="unknown", description=__doc__,
                epilog="other arguments go to pytest (e.g. --hb-workers 1 --hb-sizes 256 -k execute)")
    p.add_argument("--out", help="result folder (default results/<stamp>)")
    p.add_argument("--reference", action="store_true", help="render the committed reference run(s) only")
    p.add_argument("--wide", action="store_true",
                   help="the table with every column and the run summary in full (default: fit the terminal, "
                        "the summary in three lines)")
    from cudnn_hostbench.scripts.node import all_gpus
    all_gpus.add_arguments(p)


def run(args) -> int:
    if args.reference and args.rest:   # nothing of a run is asked for: an argument here is a mistake
        print(f"{args.prog}: --reference renders the committed run(s) and takes no other arguments: "
              f"{' '.join(args.rest)}", file=sys.stderr)
        return 2
    if args.all_gpus or args.gpus:   # every GPU of the node at once (scripts/node/all_gpus.py)
        from cudnn_hostbench.scripts.node import all_gpus
        args.pytest_args = args.rest
        return all_gpus.run(args)
    return main(args.out, args.reference, args.rest, wide=args.wide)


def main(out: str | None = None, reference: bool = False, pytest_args=(), wide: bool = False) -> int:
    ok, why = cuda_available()
    if not ok and not reference and (out or pytest_args):   # a run was asked for: it cannot be done here
        asked = ([f"--out {out}"] if out else []) + list(pytest_args)
        print(f"hostbench run: {why}; probes need a CUDA GPU, so {' '.join(asked)} cannot run here "
              "(`hostbench run` alone shows the committed reference run)", file=sys.stderr)
        return 2
    if reference or not ok:
        if not reference:
            print(f"hostbench run: {why}; probes need a CUDA GPU. Showing the committed reference run(s) "
                  "instead (measured on real hardware; see log/README.md).", file=sys.stderr)
        return render_reference(wide)
    import pytest

    from cudnn_hostbench.reports.history import where
    # results/ of the checkout, the project or the user's data folder, never inside the package;
    # the finished run goes into history.db beside its folder: the default store
    out = Path(out or where.results_dir() / _dt.datetime.now().strftime("%Y%m%d-%H%M%S"))
    if out.exists() and not out.is_dir():
        print(f"hostbench run: --out {out}: exists and is not a folder", file=sys.stderr)
        return 2
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    args = [str(ROOT / "probes"), "--benchmark-only", "-q", "-p", "no:cacheprovider", "-rfs",
            f"--hb-out={out}", "--rootdir", str(ROOT),
            "--benchmark-columns=median,iqr,min,max,rounds", "--benchmark-sort=name",
            "-o", "testpaths=probes", *pinned_config(ROOT),
            # the CLI imported the harness before pytest could mark its plugin modules for rewriting
            "-W", "ignore::pytest.PytestAssertRewriteWarning", *(["--hb-wide"] if wide else []), *pytest_args]
    code = pytest.main(args)
    if code == pytest.ExitCode.USAGE_ERROR:   # pytest said which option, in one line
        if made and not any(out.iterdir()):
            out.rmdir()
        return 2
    # pytest's 1 means some probe failed its numerics: the figures that were measured are kept
    print(f"results in {out}", flush=True)
    sys.stderr.flush()
    # skip interpreter teardown: the frontend's nanobind module reports its live objects as
    # 'leaks' at exit, pages of noise after the table; everything is already written
    os._exit(int(code))
