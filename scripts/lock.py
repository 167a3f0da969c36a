"""The exact package versions behind a run, as a pip constraints file.

    hostbench lock RUN.json [--out constraints.txt]

The versions come from the run's own fingerprint (`packages`, recorded as it ran), so the file
names what measured the figures, never what happens to be installed here. Install the measuring
environment from it with `pip install -c constraints.txt -e ".[gpu]"`.
"""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile.environment import known
from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run
from cudnn_hostbench.scripts.cli import alias, exit_with


def constraints(run) -> str:
    fp = run.fingerprint
    pk = dict(fp.packages or {})
    if not pk:
        raise RunFileError(f"{run.path}: the run records no package versions (runs from before cudnn-hostbench 0.2)")
    pk.pop("cudnn-hostbench", None)   # the harness itself is the checkout, at the commit below
    commit = fp.commit_info.id or "unknown"
    head = [f"# Exact versions behind {Path(run.path).name}: {known(fp.gpu_name)}, driver {known(fp.driver)},",
            f"# Python {known(fp.python)}, harness commit {commit[:12]}; written by scripts/lock.py from the",
            "# run's fingerprint. Install: pip install -c THIS_FILE -e \".[gpu]\""]
    return "\n".join(head + [f"{n}=={v}" for n, v in sorted(pk.items())]) + "\n"


def add_parser(command) -> None:
    p = command("lock", run, description=__doc__.split("\n\n")[0])
    p.add_argument("run", help="a run file (run.json)")
    p.add_argument("--out", help="write here instead of stdout")


def run(args) -> int:
    try:
        text = constraints(load_run(args.run, need_records=True))
    except RunFileError as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 2
    if not args.out:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text)
    except OSError as e:
        print(f"{args.prog}: --out {args.out}: cannot write ({e.strerror or e})", file=sys.stderr)
        return 2
    return 0


main = alias("lock")   # python -m cudnn_hostbench.scripts.lock: `hostbench lock`

if __name__ == "__main__":
    exit_with(main())
