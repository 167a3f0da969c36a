"""`hostbench matrix` as one interleaved job over its versions (the default; `--serial` runs one
suite per version, one after another, as before): a side per frontend wheel (and per --cudnn-lib),
processes alternating in Williams order on this machine, each version judged against the
reference version (the newest unless --reference names another) by the paired verdict. Each
side's processes merged are its run file, run-fe<ver>.json, so matrix.md, the store and the
dashboard read the parts as before; the job's own report is in OUT/ab/.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

# pytest options the job takes, and their ab option names: (name, takes a value)
SELECTION = {"-k": ("keyword", True), "--hb-sizes": ("sizes", True), "--hb-tokens": ("tokens", True),
             "--hb-modes": ("modes", True), "--hb-rounds": ("rounds", True), "--hb-heavy": ("heavy", False)}


class MatrixArgsError(ValueError):
    """A pytest argument the interleaved matrix cannot pass on."""


def selection(pytest_args: list[str]) -> dict:
    """The job's selection from the arguments after --; anything else is an error (use --serial)."""
    out: dict = {}
    i = 0
    while i < len(pytest_args):
        arg = pytest_args[i]
        name, eq, value = arg.partition("=")
        if name not in SELECTION:
            raise MatrixArgsError(f"pytest argument {arg!r} is not a selection an interleaved matrix takes "
                                  f"({', '.join(SELECTION)}); --serial passes any")
        field, takes = SELECTION[name]
        if takes and not eq:
            i += 1
            if i >= len(pytest_args):
                raise MatrixArgsError(f"{name} needs a value")
            value = pytest_args[i]
        out[field] = int(value) if field == "rounds" else (value if takes else True)
        i += 1
    return out


def side_specs(wheels: dict, libs: list) -> list[tuple[str, str, str | None, Path]]:
    """(label, side spec, backend folder, wheel) per version and backend, in version order."""
    from cudnn_hostbench.scripts.matrix_part import lib_label
    out = []
    for ver, wheel in wheels.items():
        for lib in libs or [None]:
            label = ver if lib is None else f"{ver}+cudnn{lib_label(lib)}"
            spec = f"fe={wheel},name={label}" + (f",cudnn={lib}" if lib else "")
            out.append((label, spec, lib, wheel))
    return out


def job_args(args, specs: list[str], reference: str, sel: dict, out: Path) -> argparse.Namespace:
    budget = args.deadline / 60 if args.deadline else args.budget_min
    return argparse.Namespace(
        sides=specs, wheels=args.wheels, keyword=sel.get("keyword"), sizes=sel.get("sizes"), tokens=sel.get("tokens"),
        modes=sel.get("modes", "eager,graph,device"), heavy=sel.get("heavy", False), rounds=sel.get("rounds"),
        reference=reference, out=str(out / "ab"), resume=None, budget_min=budget, pairs=args.pairs,
        first_pairs=args.first_pairs, sharpen=False, proc_timeout=args.timeout * 4, gpu_figure="auto", json=None, markdown=None,
        fail_on_regression=False, root=args.root, no_gpu_check=False, prog=args.prog)


def run(args, wheels: dict, pytest_args: list[str], out: Path) -> int:
    """The interleaved matrix; returns the exit status (matrix.json and matrix.md as the serial one writes)."""
    from cudnn_hostbench.scripts import ab_cmd
    from cudnn_hostbench.scripts.matrix_merge import merge
    try:
        sel = selection(pytest_args)
    except (MatrixArgsError, ValueError) as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 2
    entries, good = ready_sides(args, wheels)
    labels = [label for label, _ in good]
    if len(good) < 2:
        print(f"{args.prog}: {len(good)} version(s) import here; an interleaved matrix needs two "
              f"({'; '.join(e['detail'] for e in entries if e['detail'])[:300]})", file=sys.stderr)
        return 2
    reference = args.reference or labels[-1]
    if reference not in labels:
        print(f"{args.prog}: --reference {reference}: not a version that imports here ({', '.join(labels)})",
              file=sys.stderr)
        return 2
    t0 = time.monotonic()
    code = ab_cmd.run(job_args(args, [s for _, s in good], reference, sel, out))
    parts(args, entries, out, code, t0)
    doc = {"pytest_args": pytest_args, "python": sys.version.split()[0], "interleaved": True, "reference": reference,
           "ab_job": "ab", "wall_s": round(time.monotonic() - t0, 1), "versions": entries}
    (out / "matrix.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    med = merge(out, entries, args.dashboard)
    if med is not None:
        print(med.to_string(float_format=lambda v: f"{v:.2f}"))
    print(f"wrote {out / 'matrix.md'} and the A/B report {out / 'ab' / 'ab.md'}")
    return code if code else (0 if any(e["status"] == "ok" for e in entries) else 1)


def ready_sides(args, wheels: dict) -> tuple[list, list]:
    """matrix.json's entry per version (status '' when ready, else why not) and the (label, spec)
    of every version that installs and imports here."""
    from cudnn_hostbench.scripts import ab_sides
    entries, good = [], []
    for label, spec, lib, wheel in side_specs(wheels, args.cudnn_lib):
        entry = {"version": label.split("+")[0], "label": label, "cudnn_lib": lib, "wheel": wheel.name,
                 "run_file": "", "status": "", "detail": ""}
        try:
            side = ab_sides.parse(spec, wheels)
            ab_sides.install(side, args.python)
            got = ab_sides.check(side, args.python)
            entry.update(imported=got["frontend"], backend=got["cudnn"])
            good.append((label, spec))
        except ab_sides.SideError as e:
            entry.update(status="import failed", detail=str(e))
        entries.append(entry)
        print(f"fe {label}: {'ready' if not entry['status'] else entry['status'] + ' ' + entry['detail'][-200:]}",
              flush=True)
    return entries, good


def parts(args, entries: list, out: Path, code: int, t0: float) -> None:
    """Each version's merged processes as its run-fe<ver>.json part, stored like a serial part."""
    from cudnn_hostbench.bench.measure.workers.interleave import JobSpec, side_file
    from cudnn_hostbench.scripts.matrix_part import store_part
    spec = JobSpec.load(out / "ab") if (out / "ab" / "ab-job.json").exists() else None
    for e in entries:
        if e["status"]:
            continue
        src = side_file(out / "ab", e["label"])
        if spec is None or not src.exists():
            e.update(status="failed", detail=f"no finished process (A/B job exit {code})")
            continue
        e["run_file"] = f"run-fe{e['label'].replace('+cudnn', '-cudnn')}.json"
        shutil.copyfile(src, out / e["run_file"])
        e.update(status="ok", seconds=round(time.monotonic() - t0, 1))
        line = store_part(args.store, out / e["run_file"])
        if line:
            print(line, flush=True)
