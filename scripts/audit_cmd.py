"""`hostbench audit FILE.py:make_step`: which traps your own step hits, priced with the probes' figures."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from cudnn_hostbench.scripts.args import bad, name_problem

ROOT = Path(__file__).resolve().parent.parent   # where results/ and reports/reference/ are


def add_parser(command) -> None:
    from cudnn_hostbench.bench.audit import count, target
    from cudnn_hostbench.bench.audit.auditor import COUNT_STEPS
    from cudnn_hostbench.bench.measure.core import timing

    p = command("audit", run,
                description=("Which integration traps your own step hits, and what each costs on this GPU: times "
                             "the step eager, replayed in a CUDA graph and on the device, counts what it calls, "
                             "samples its host time by source line, prices each trap with the probes' figures "
                             f"and projects the step with every trap fixed. It {target.NEEDS}."),
                epilog="exit codes: 0 done; 2 bad input (including a line sampler that cannot start), or no CUDA "
                       "GPU / cuDNN frontend here; 1 the audit failed part way (nothing written)")
    p.add_argument("target", help="path/to/file.py:make_step; make_step() sets up and returns a zero-argument step")
    p.add_argument("--run-file", help="run file with the probes' figures (default: newest results/*/run.json "
                                      "measured on this GPU, else reports/reference/<gpu>/run.json)")
    p.add_argument("--fixed", metavar="FILE.py:make_step",
                   help="your hand-fixed version of the step: timed in the same plain-loop rounds, interleaved, "
                        "so the projection is checked against it in this process")
    p.add_argument("--out", help="also write audit.md, audit.json and flame.html into this folder (default: print only)")
    p.add_argument("--rounds", type=int, default=timing.Options.rounds,
                   help="interleaved timing rounds per mode")
    p.add_argument("--count-steps", type=int, default=COUNT_STEPS,
                   help=f"steps in the counting pass, at least {count.MIN_STEPS}")


def run(args) -> int:
    from cudnn_hostbench.bench.audit import audit, rules, target
    from cudnn_hostbench.reports import audit_report

    problem = _input_problem(args)
    if problem is not None:
        return bad(args.prog, problem)
    try:
        factory = target.load_factory(args.target)
        fixed_factory = target.load_factory(args.fixed) if args.fixed else None
    except target.AuditInputError as e:
        return bad(args.prog, str(e))
    try:
        ctx = _gpu_context()
    except Exception as e:  # noqa: BLE001 - NoGpuError, or a CUDA start-up failure
        return bad(args.prog, f"{target.NEEDS}; here: {rules.error_line(f'{type(e).__name__}: {e}')}")
    try:
        with _on_stream(ctx):   # set-up sees the audit's stream as current
            step = target.make_step(factory, args.target.rpartition(":")[2])
            target.first_call(step)
            fixed = None
            if fixed_factory is not None:
                try:
                    fixed = target.make_step(fixed_factory, args.fixed.rpartition(":")[2])
                    target.first_call(fixed)
                except target.AuditInputError as e:
                    return bad(args.prog, f"--fixed {args.fixed}: {e}")
        report = audit(step, run_file=args.run_file, rounds=args.rounds, count_steps=args.count_steps, ctx=ctx,
                       target=args.target, checked=True, root=ROOT, fixed=fixed, fixed_target=args.fixed or "")
    except target.AuditInputError as e:
        return bad(args.prog, f"{args.target}: {e}")
    except Exception as e:  # noqa: BLE001 - e.g. the step failing later: say so, write nothing
        bad(args.prog, f"{args.target}: audit failed: {rules.error_line(f'{type(e).__name__}: {e}')}")
        return 1
    print(audit_report.render_text(report), end="")
    if args.out:
        for p in audit_report.write_outputs(report, args.out):
            print(f"wrote {p}")
    _end_after_user_code(0)
    return 0


def _input_problem(args) -> str | None:
    """What is wrong with the command line, the targets or the run file (None when nothing): the
    user's own mistakes first, as they hold on any machine, then what this machine lacks."""
    from cudnn_hostbench.bench.audit import count, target
    from cudnn_hostbench.bench.measure.runfile import records

    if args.rounds < 1 or args.count_steps < count.MIN_STEPS:
        return f"--rounds must be at least 1 and --count-steps at least {count.MIN_STEPS}"
    if args.out and name_problem(args.out):
        return f"--out {args.out}: {name_problem(args.out)}"
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        return f"--out {args.out} exists and is not a folder"
    try:
        target.parse_target(args.target)
        if args.fixed:
            target.parse_target(args.fixed)
        if args.run_file:
            records.load_run(args.run_file, need_records=True)
    except (target.AuditInputError, records.RunFileError) as e:
        return str(e)
    problem = target.environment_problem()
    if problem:
        return f"{target.NEEDS}; here: {problem}"
    return None

def _end_after_user_code(code: int) -> None:
    """Ends the process once everything is written. The audited step's objects (its module's
    caches, ops it registered in torch's dispatcher) live until interpreter teardown, where the
    frontend's nanobind module reports them as leaks: pages of noise after the report. The
    harness cannot release objects the user's code owns, so it skips that teardown."""
    if "cudnn" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _gpu_context():
    from cudnn_hostbench.bench.measure.core.gpu_context import GpuContext
    return GpuContext()


def _on_stream(ctx):
    import torch
    return torch.cuda.stream(ctx.stream)
