"""The exact package versions behind a run, as a pip constraints file.

    python3 -m cudnn_hostbench.scripts.lock RUN.json [--out constraints.txt]

The versions come from the run's own fingerprint (`packages`, recorded as it ran), so the file
names what measured the figures, never what happens to be installed here. Install the measuring
environment from it with `pip install -c constraints.txt -e ".[gpu]"`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cudnn_hostbench.bench.measure.records import RunFileError, load_run


def constraints(run) -> str:
    fp = run.fingerprint
    pk = dict(fp.get("packages") or {})
    if not pk:
        raise RunFileError(f"{run.path}: the run records no package versions (runs from before cudnn-hostbench 0.2)")
    pk.pop("cudnn-hostbench", None)   # the harness itself is the checkout, at the commit below
    commit = (fp.get("commit_info") or {}).get("id") or "unknown"
    head = [f"# Exact versions behind {Path(run.path).name}: {fp.get('gpu_name', '?')}, driver {fp.get('driver', '?')},",
            f"# Python {fp.get('python', '?')}, harness commit {commit[:12]}; written by scripts/lock.py from the",
            "# run's fingerprint. Install: pip install -c THIS_FILE -e \".[gpu]\""]
    return "\n".join(head + [f"{n}=={v}" for n, v in sorted(pk.items())]) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m cudnn_hostbench.scripts.lock", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run file (run.json)")
    ap.add_argument("--out", help="write here instead of stdout")
    a = ap.parse_args(argv)
    try:
        text = constraints(load_run(a.run, need_records=True))
    except RunFileError as e:
        print(f"lock: {e}", file=sys.stderr)
        return 2
    if not a.out:
        sys.stdout.write(text)
        return 0
    try:
        Path(a.out).write_text(text)
    except OSError as e:
        print(f"lock: --out {a.out}: cannot write ({e.strerror or e})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
