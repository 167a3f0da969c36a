"""`hostbench reprice AUDIT --run-file RUN`: a saved audit priced again from another run file."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile.files import ready_dir
from cudnn_hostbench.scripts.args import bad, name_problem


def add_parser(command) -> None:
    p = command("reprice", run,
                description="Price a saved audit's findings again from another run file of the probes (e.g. "
                            "after a new run on the same GPU). What the audit measured of the step (its modes, "
                            "counts, kernels and sampled stacks) stays as it was; the costs, their citations, the "
                            "line table and the projection are computed again.",
                epilog="exit codes: 0 written; 2 bad input (an unreadable audit or run file, a bad --out)")
    p.add_argument("audit", help="audit.json, or the folder `hostbench audit --out` wrote it to")
    p.add_argument("--run-file", required=True, help="run file with the probes' figures to price with")
    p.add_argument("--out", help="folder for the new audit.md, audit.json and flame.html (default: the audit's "
                                 "own folder, replacing its files)")


def run(args) -> int:
    import json

    from cudnn_hostbench.bench.audit.auditor import AuditReport, price
    from cudnn_hostbench.bench.audit.cost import _rel
    from cudnn_hostbench.bench.measure.runfile import records
    from cudnn_hostbench.reports import audit_report

    src = Path(args.audit)
    src = src / "audit.json" if src.is_dir() else src
    try:
        report = AuditReport.from_dict(json.loads(src.read_text(encoding="utf-8")))
    except OSError as e:
        return bad(args.prog, f"{src}: cannot read ({e.strerror or e})")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return bad(args.prog, f"{src}: not an audit.json written by `hostbench audit --out` ({e})")
    try:
        run = records.load_run(args.run_file, need_records=True)
    except records.RunFileError as e:
        return bad(args.prog, str(e))
    out = Path(args.out) if args.out else src.parent
    if name_problem(str(out)):
        return bad(args.prog, f"--out {out}: {name_problem(str(out))}")
    problem = ready_dir(out)   # made and written to before the report: a bad --out prints nothing
    if problem:
        return bad(args.prog, f"--out {out}: {problem}")
    gpu, ran_on = report.env.get("gpu_name"), run.fingerprint.gpu_name
    note = "given (re-priced)"
    if gpu and ran_on and gpu != ran_on:
        note += f"; the run is from {ran_on}, the audit from {gpu}"
    priced = price(dataclasses.replace(report, run_file=_rel(Path(args.run_file)), run_note=note), run)
    print(audit_report.render_text(priced), end="")
    try:
        for p in audit_report.write_outputs(priced, out):
            print(f"wrote {p}")
    except OSError as e:
        return bad(args.prog, f"{out}: cannot write ({e.strerror or e})")
    return 0
