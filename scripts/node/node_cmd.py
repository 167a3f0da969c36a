"""`hostbench node`: the GPUs of this node, and the reports of the node commands from their files.

  hostbench node plan [--gpus all|0,1,...]        each GPU's cores, and where they came from
  hostbench node report RUN.json...                each GPU's factor against the node's median
  hostbench node check ALONE ALONGSIDE [ALONE2]    alone against alongside: safe within the floors?
  hostbench node walltime SERIAL PARALLEL          a matrix serial on one GPU against parallel on N

Running the jobs: `hostbench run --all-gpus` (the slow GPU), version_matrix --gpus all (the
matrix), scripts/node/node_check.py (the safety check's three runs); docs/node.md.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def add_parser(command) -> None:
    add_arguments(command("node", run, description=__doc__))


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="node_action", required=True, parser_class=type(parser), metavar="ACTION")
    a = sub.add_parser("plan", help="each GPU of the node, its NUMA node and the cores its jobs are pinned to")
    a.add_argument("--gpus", default="all", help="GPUs to plan (all, or indices / UUIDs); cores as in the whole node")
    a = sub.add_parser("report", help="which GPU is slow, from one run file per GPU (hostbench run --all-gpus)")
    a.add_argument("runs", nargs="+", metavar="RUN", help="run files, one per GPU (e.g. results/node-*/gpu*/run.json)")
    a.add_argument("--markdown", metavar="OUT.md", help="also write the report as Markdown")
    a = sub.add_parser("check", help="the same version alone and alongside N-1 others: SAME within the floors?")
    a.add_argument("alone", help="run file measured alone on the GPU")
    a.add_argument("alongside", help="run file of the same version on the same GPU, alongside the others")
    a.add_argument("alone2", nargs="?", help="a second alone run (the control)")
    a.add_argument("--markdown", metavar="OUT.md", help="also write the check as Markdown")
    a = sub.add_parser("walltime", help="a version matrix's wall time, serial on one GPU against parallel on N")
    a.add_argument("serial", help="the serial matrix's folder (or its matrix.json)")
    a.add_argument("parallel", help="the parallel matrix's folder (version_matrix --gpus)")
    a.add_argument("--markdown", metavar="OUT.md", help="also write the report as Markdown")


def _bad(prog: str, msg: str) -> int:
    print(f"{prog}: {msg}", file=sys.stderr)
    return 2


def _write(prog: str, path: str | None, text: str) -> int | None:
    if not path:
        return None
    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    from cudnn_hostbench.scripts.args import check_out_file
    problem = check_out_file(path)
    if problem:
        return _bad(prog, f"--markdown {path}: {problem}")
    try:
        write_text_atomic(path, text)
    except OSError as e:
        return _bad(prog, f"--markdown {path}: cannot write ({e.strerror or e})")
    print(f"wrote {path}")
    return None


def label_of(path: str, index: int) -> str:
    """'GPU 3' for .../gpu3/run.json (hostbench run --all-gpus), else the file's name."""
    m = re.fullmatch(r"gpu(\d+)", Path(path).parent.name)
    return f"GPU {m.group(1)}" if m else f"{index}: {path}"


def plan(args) -> int:
    from cudnn_hostbench.bench.measure.node import placement
    try:
        p = placement.node_plan(args.gpus)
    except placement.NodeError as e:
        return _bad(args.prog, str(e))
    print("\n".join(p.lines()))
    return 0


def report(args) -> int:
    from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run
    from cudnn_hostbench.scripts.node import slow_gpu as rep
    try:
        runs = {label_of(p, i): load_run(p, need_records=True) for i, p in enumerate(args.runs, 1)}
    except RunFileError as e:
        return _bad(args.prog, str(e))
    fs = rep.factors(runs)
    print(rep.render_text(fs), end="")
    return _write(args.prog, args.markdown, rep.markdown(fs, runs=runs)) or 0


def check(args) -> int:
    from cudnn_hostbench.bench.measure.runfile.records import RunFileError, load_run
    from cudnn_hostbench.scripts.node import safety as node_safety
    try:
        alone, along = load_run(args.alone, need_records=True), load_run(args.alongside, need_records=True)
        alone2 = load_run(args.alone2, need_records=True) if args.alone2 else None
    except RunFileError as e:
        return _bad(args.prog, str(e))
    checks = [node_safety.check(alone, along, "alongside vs alone")]
    if alone2 is not None:
        checks += [node_safety.check(alone2, along, "alongside vs alone2"),
                   node_safety.check(alone, alone2, "alone2 vs alone (control)")]
    text = node_safety.render(checks)
    print(text, end="")
    bad = _write(args.prog, args.markdown, "# Alone against alongside\n\n" + text)
    if bad:
        return bad
    return 0 if all(c.safe for c in checks if "alongside" in c.label) else 1


def _matrix(path: str) -> dict:
    p = Path(path)
    p = p / "matrix.json" if p.is_dir() else p
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{p}: cannot read ({e.strerror or e})") from None
    except ValueError as e:
        raise ValueError(f"{p}: not a matrix.json ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("versions"), list):
        raise ValueError(f"{p}: not a matrix.json (no 'versions' list)")
    return doc


def walltime(args) -> int:
    from cudnn_hostbench.scripts.node import safety as node_safety
    try:
        serial, parallel = _matrix(args.serial), _matrix(args.parallel)
    except ValueError as e:
        return _bad(args.prog, str(e))
    text, _ = node_safety.walltime(serial, parallel)
    print(text, end="")
    return _write(args.prog, args.markdown, text) or 0


ACTIONS = {"plan": plan, "report": report, "check": check, "walltime": walltime}


def run(args) -> int:
    args.prog = f"{getattr(args, 'prog', None) or 'hostbench node'} {args.node_action}"
    return ACTIONS[args.node_action](args)
