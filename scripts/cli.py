"""`hostbench` command: one subcommand per entry point; each is `module:function(argv) -> int`."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "run": ("scripts.run", "main", "run the probes on this GPU (or render the reference run without one)"),
    "table": ("reports.table", "main", "render the table of a saved run (JSON or partial JSONL)"),
    "compare": ("reports.compare", "main", "compare two runs: verdicts per benchmark, exit 1 on regression"),
    "dashboard": ("reports.dashboard", "main", "write a static HTML dashboard over runs"),
    "audit": ("bench.audit", "main", "audit your own integration step for known traps"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: hostbench {" + ",".join(COMMANDS) + "} ...\n")
        for name, (_, _, text) in COMMANDS.items():
            print(f"  {name:10s} {text}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    mod, fn, _ = COMMANDS[argv[0]]
    return int(getattr(importlib.import_module(mod), fn)(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
