"""`hostbench ab`: an interleaved A/B job on one machine; every row judged on its own pairs.

    hostbench ab                                   # A/A: this environment against itself
    hostbench ab fe=1.31.0 fe=1.32.0 -k execute --hb-sizes 256
    hostbench ab current path=../my-wrapper-change --budget-min 10
    hostbench ab --resume results/ab-20261206-0300 --budget-min 5

Worker processes alternate between the sides (ABBA BAAB …) on this machine; each times every
selected row in every mode, so graph and device rows are replicated too. A first pass of
--first-pairs pairs covers every row; later pairs time only the blocks (probe × size) with a row
still UNSURE, and of those only the phase it needs (eager and graph, or the profiler's device
rows), until every row is decided, --pairs is reached or --budget-min runs out. Each row's
pair differences are judged by reports/verdict/paired.py (docs/compare.md, "A/B jobs"):
SLOWER / FASTER at a false discovery rate of 1 %, SAME with its minimum detectable change, UNSURE
with the pairs that would decide it, KERNEL CHANGED where the sides ran other kernels, UNMEASURED
where no process gave the row a figure.

The job folder (--out) keeps every process's records as they are written: a killed job keeps its
finished pairs, and --resume adds pairs to it. Writes ab.md, ab.csv, ab.json and ab.png there,
and one merged run file per side (sides/LABEL.json). Exit 0; 1 with --fail-on-regression when a
row is SLOWER; 2 on bad input or a side that crashed (the report still holds what finished).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

from cudnn_hostbench.bench.measure.workers import interleave
from cudnn_hostbench.bench.measure.workers.interleave import JobFolderError, JobSpec
from cudnn_hostbench.bench.measure.workers.worker import MIN_PASS_ROUNDS
from cudnn_hostbench.scripts import ab_sides

ROOT = Path(__file__).resolve().parents[1]


def add_parser(command) -> None:
    ap = command("ab", run, description=__doc__)
    add_arguments(ap)


def add_arguments(ap) -> None:
    ap.add_argument("sides", nargs="*", metavar="SIDE",
                    help="two or more side specs: current, fe=VER|WHEEL, cudnn=DIR, path=DIR, env.NAME=VALUE, "
                         "name=LABEL, comma-separated (none: current against current, an A/A job)")
    ap.add_argument("--wheels", nargs="+", default=[".whlm", ".whl"], help="folders of frontend wheels for fe=VER")
    ap.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest's -k: which probes and variants")
    ap.add_argument("--hb-sizes", dest="sizes", help="cube sizes of the matmul probes (default: the suite's)")
    ap.add_argument("--hb-tokens", dest="tokens", help="token counts of the transpose probe")
    ap.add_argument("--hb-modes", dest="modes", default="eager,graph,device", help="timing modes")
    ap.add_argument("--hb-heavy", dest="heavy", action="store_true", help="every plan, every size")
    ap.add_argument("--hb-rounds", dest="rounds", type=int, help="eager rounds per row in each process (default 12)")
    ap.add_argument("--hb-eager-passes", dest="eager_passes", type=int, default=1, metavar="K",
                    help="split each process's eager rounds over K passes, the last on cases built again, and "
                         "report where the eager noise lives (passes.md)")
    ap.add_argument("--reference", metavar="LABEL", help="the side every other is judged against (default: the first)")
    ap.add_argument("--out", help="the job folder (default results/ab-<stamp>)")
    ap.add_argument("--resume", metavar="DIR", help="add pairs to this job folder")
    ap.add_argument("--budget-min", type=float, default=20.0, help="minutes for this invocation's processes")
    ap.add_argument("--pairs", type=int, default=40, help="at most this many pairs per side in the job")
    ap.add_argument("--first-pairs", type=int, default=3, help="pairs over every row before any row is judged")
    ap.add_argument("--sharpen", action="store_true",
                    help="once every row is decided, spend the budget left on SAME rows whose MDC is past their "
                         "class's goal (eager 5 %%, graph and device under 20 µs 1.5 %%, graph from 100 µs 4 %%, "
                         "device from 100 µs 0.5 %%, build 25 %%)")
    ap.add_argument("--proc-timeout", type=float, default=900.0, help="seconds before a hung process is killed")
    ap.add_argument("--gpu-figure", choices=("auto", "ratio", "us"), default="auto",
                    help="GPU rows judged on their ratio to the block's baseline, or on µs (auto: ratio when the "
                         "sides differ in cuDNN or the frontend alone)")
    ap.add_argument("--json", metavar="PATH", help="also write the verdicts as JSON there (- for stdout)")
    ap.add_argument("--markdown", metavar="PATH", help="also write the report as Markdown there (- for stdout)")
    ap.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a row is SLOWER")
    ap.add_argument("--report-only", action="store_true",
                    help="with --resume: judge the job's finished pairs and write its reports again; run nothing")
    ap.add_argument("--root", default=str(ROOT), help="where probes/ is (the repository root)")
    ap.add_argument("--no-gpu-check", action="store_true", help=__import__("argparse").SUPPRESS)


def run(args) -> int:
    prog = args.prog
    try:
        job_dir, spec, made = prepare(args)
    except (ab_sides.SideError, JobFolderError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    try:
        if getattr(args, "report_only", False):
            return report_only(args, job_dir, spec)
        return execute(args, job_dir, spec)
    finally:
        if made and not any((job_dir / "procs").glob("p*")):   # nothing ran: no half-made folder
            shutil.rmtree(job_dir, ignore_errors=True)


# ---- setting up ------------------------------------------------------------------------------

# A process is one replicate of each row and the pairs replicate it: its rounds only have to keep
# its own noise to a tenth or less of the process-to-process variance the pairs average out. In
# every class that takes far fewer rounds than a single run needs (eager, graph, profiler: log
# 2026-12-06-2003), and a shorter process is more pairs in the same budget.
AB_ROUNDS = {"--hb-rounds": "12", "--hb-graph-rounds": "2", "--hb-device-rounds": "1", "--hb-device-more": "0"}
MAX_PASSES = 4   # --hb-eager-passes: past four, 12 rounds split below MIN_PASS_ROUNDS; the question needs three


def options_of(args) -> dict:
    from cudnn_hostbench.bench.measure.core.options import DEFAULT_SIZES, DEFAULT_TOKENS
    opts = {"--hb-modes": args.modes, "--hb-sizes": args.sizes or ",".join(DEFAULT_SIZES),
            "--hb-tokens": args.tokens or ",".join(DEFAULT_TOKENS), "--rootdir": str(Path(args.root).resolve()),
            **AB_ROUNDS}
    if args.rounds:
        if args.rounds < 3:
            raise ValueError(f"--hb-rounds {args.rounds}: a process needs at least 3 rounds")
        opts["--hb-rounds"] = str(args.rounds)
    passes = getattr(args, "eager_passes", 1)
    if passes != 1:
        if not 2 <= passes <= MAX_PASSES or int(opts["--hb-rounds"]) // passes < MIN_PASS_ROUNDS:
            raise ValueError(f"--hb-eager-passes {passes}: 2 to {MAX_PASSES} passes of at least {MIN_PASS_ROUNDS} "
                             f"of the {opts['--hb-rounds']} eager rounds each")
        opts["--hb-eager-passes"] = str(passes)
    if args.heavy:
        opts["--hb-heavy"] = "1"
    return opts


def selection_text(args) -> str:
    chosen = {"k": args.keyword or "", "sizes": args.sizes or "", "tokens": args.tokens or "", "modes": args.modes,
              "heavy": bool(args.heavy), "rounds": args.rounds or 0}
    if (getattr(args, "eager_passes", 1) or 1) > 1:   # only then: a job from before passes resumes as it was
        chosen["eager_passes"] = args.eager_passes
    return json.dumps(chosen, sort_keys=True)


def collect_cases(args, opts: dict) -> list:
    from cudnn_hostbench.bench.measure.core.options import SuiteOptions, split
    from cudnn_hostbench.bench.measure.workers.collect import SelectionError, collect
    suite = SuiteOptions(sizes=split(opts["--hb-sizes"]), tokens=split(opts["--hb-tokens"]),
                         heavy=bool(args.heavy), modes=split(args.modes), root=opts["--rootdir"])
    try:
        cases = collect(Path(args.root), suite, args.keyword)
    except SelectionError as e:
        raise ValueError(str(e)) from e
    if not cases:
        raise ValueError(f"no probe case selected (-k {args.keyword!r}, --hb-sizes {opts['--hb-sizes']})")
    return cases


def prepare(args) -> tuple[Path, JobSpec, bool]:
    """The job folder and its spec: a new job (sides set up and checked first, so a side that
    cannot run makes no folder) or the one --resume names."""
    check_options(args)
    if args.resume:
        return resumed(args)
    sides = new_sides(args)
    ref = reference_index(args, sides)
    opts = options_of(args)
    cases = collect_cases(args, opts)
    for s in sides:
        _ready(s, args)
    return new_job_folder(args, JobSpec(sides=sides, cases=cases, options=opts, reference=ref,
                                     selection=selection_text(args)))


def check_options(args) -> None:
    if args.json == "-" and args.markdown == "-":
        raise ValueError("--json - and --markdown -: only one of them can take stdout")
    if args.budget_min <= 0:
        raise ValueError(f"--budget-min {args.budget_min:g}: the job needs some time")
    if args.pairs < 1 or args.first_pairs < 1:
        raise ValueError("--pairs and --first-pairs must be at least 1")
    if getattr(args, "report_only", False) and not args.resume:
        raise ValueError("--report-only needs --resume DIR (the job to report)")


def resumed(args) -> tuple[Path, JobSpec, bool]:
    """The job --resume names; a selection or side set given with it must be the job's own."""
    job_dir = Path(args.resume)
    spec = JobSpec.load(job_dir)
    asked = bool(args.sides) or any(getattr(args, n) for n in ("keyword", "sizes", "tokens", "heavy", "rounds")) \
        or getattr(args, "eager_passes", 1) != 1
    if asked and (selection_text(args) != spec.selection or _labels(args) not in ([], [s.spec for s in spec.sides])):
        raise JobFolderError(f"{job_dir}: --resume of another suite or side set (the job has "
                             f"{', '.join(s.spec for s in spec.sides)}; {spec.selection})")
    if not getattr(args, "report_only", False):
        for s in spec.sides:
            _ready(s, args)
    return job_dir, spec, False


def new_sides(args) -> list:
    from cudnn_hostbench.scripts.matrix_part import find_wheels
    specs = args.sides or ["current", "current"]
    if len(specs) < 2:
        raise ValueError(f"one side ({specs[0]}): a job compares two or more (add `current` for this environment)")
    sides = [ab_sides.parse(s, find_wheels(args.wheels)) for s in specs]
    ab_sides.unique_labels(sides)
    return sides


def reference_index(args, sides: list) -> int:
    if not args.reference:
        return 0
    labels = [s.label for s in sides]
    if args.reference not in labels:
        raise ValueError(f"--reference {args.reference}: not a side ({', '.join(labels)})")
    return labels.index(args.reference)


def new_job_folder(args, spec: JobSpec) -> tuple[Path, JobSpec, bool]:
    """--out made (or refused: already a job, or not writable) with the spec written in it."""
    job_dir = Path(args.out or f"results/ab-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    if (job_dir / interleave.JOB_FILE).exists():
        raise JobFolderError(f"{job_dir}: already an A/B job (add pairs with --resume {job_dir})")
    made = not job_dir.exists()
    try:
        (job_dir / "procs").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise JobFolderError(f"--out {job_dir}: cannot make the folder ({e.strerror or e})") from e
    (job_dir / interleave.JOB_FILE).write_text(spec.to_json(), encoding="utf-8")
    return job_dir, spec, made


def _labels(args) -> list:
    return list(args.sides or [])


def _ready(side, args) -> None:
    ab_sides.install(side)
    if not args.no_gpu_check:
        side.checked = ab_sides.check(side)


# ---- the job ---------------------------------------------------------------------------------

class Clock:
    """The invocation's budget, and what a set of processes is expected to cost."""

    def __init__(self, budget_s: float):
        self.t0, self.budget_s = time.monotonic(), budget_s
        self.per_unit: list = []     # seconds per unit (block × phase) of finished processes

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.t0)

    def add(self, wall_s: float, units: int) -> None:
        self.per_unit.append(wall_s / max(units, 1))

    def set_cost(self, sides: int, units: int) -> float:
        """`sides` processes of `units` units at the median pace of the last 2 × `sides` processes.
        The first process of an invocation is left out once another finished: on a fresh machine it
        builds every graph cold, and its pace would stop a job a set early (log 2026-12-06-0539:
        160 s against 88-112 s for the whole suite)."""
        if not self.per_unit:
            return 0.0
        recent = sorted((self.per_unit[1:] or self.per_unit)[-2 * sides:])
        return sides * recent[len(recent) // 2] * units


def blocks_of(cases: list) -> list[tuple]:
    return list(dict.fromkeys((c[0], c[2]) for c in cases))


def phase_of(mode: str) -> str:
    """A worker times a block's eager and graph rows (and its build rows) together, its device
    rows in a phase of their own: the unit a later set can leave out."""
    return "device" if mode == "device" else "host"


def units_of(cases: list) -> list[tuple]:
    """(probe file, size, phase) of the cases, in collection order."""
    return list(dict.fromkeys((c[0], c[2], phase_of(c[4])) for c in cases))


def execute(args, job_dir: Path, spec: JobSpec) -> int:
    from cudnn_hostbench.reports.judge import ab as report
    k = len(spec.sides)
    clock = Clock(args.budget_min * 60)
    crashed = ""
    comparisons: list = []
    say = lambda message: print(f"ab: {message}", file=_out(args), flush=True)  # noqa: E731
    ahead = interleave.Ahead()
    labels = " · ".join(f"{'*' if i == spec.reference else ''}{s.label}" for i, s in enumerate(spec.sides))
    say(f"{job_dir}: {len(report.row_keys(spec.cases))} rows in {len(blocks_of(spec.cases))} blocks; sides {labels}")
    try:
        while True:
            procs = interleave.processes(job_dir, k)
            done_pairs = min((len(v) for v in interleave.pairs(procs, k, spec.reference).values()), default=0)
            comparisons = report.judge_job(job_dir, spec, procs, gpu_figure=args.gpu_figure) if done_pairs else []
            todo, why = next_blocks(spec, comparisons, done_pairs, args)
            _progress(say, done_pairs, comparisons, clock)
            if not todo:
                say(why)
                break
            wanted = set(todo)
            cases = [c for c in spec.cases if (c[0], c[2], phase_of(c[4])) in wanted]
            cost = clock.set_cost(k, len(todo))
            if clock.left() < max(cost, 1.0):
                say(f"budget: {clock.left() / 60:.1f} min left, a set of {len(todo)} unit(s) needs about "
                    f"{cost / 60:.1f}: stopping (--resume {job_dir} adds pairs)")
                break
            crashed = run_set(job_dir, spec, procs, cases, len(todo), clock, args, say, ahead)
            if crashed:
                break
    finally:
        ahead.close()
        procs = interleave.processes(job_dir, k)
        if any(p.ok for p in procs):
            comparisons = report.judge_job(job_dir, spec, procs, gpu_figure=args.gpu_figure)
            finish(args, job_dir, spec, procs, comparisons)
    if crashed:
        print(f"{args.prog}: {crashed}", file=sys.stderr)
        return 2
    slower = any(r.verdict == "SLOWER" for c in comparisons for r in c.judgement.rows)
    return 1 if args.fail_on_regression and slower else 0


def report_only(args, job_dir: Path, spec: JobSpec) -> int:
    """The reports of the finished pairs, judged again (after a harness update, or another --gpu-figure)."""
    from cudnn_hostbench.reports.judge import ab as report
    procs = interleave.processes(job_dir, len(spec.sides))
    if not any(p.ok for p in procs):
        print(f"{args.prog}: {job_dir}: no finished process to judge", file=sys.stderr)
        return 2
    comparisons = report.judge_job(job_dir, spec, procs, gpu_figure=args.gpu_figure)
    finish(args, job_dir, spec, procs, comparisons)
    slower = any(r.verdict == "SLOWER" for c in comparisons for r in c.judgement.rows)
    return 1 if args.fail_on_regression and slower else 0


def next_blocks(spec: JobSpec, comparisons: list, done_pairs: int, args) -> tuple[list, str]:
    """The units (probe file, size, phase) the next set times, or none and why the job stops. After
    the first pass a set times only the units with a row undecided (or, with --sharpen, blunt): a
    decided device phase is not profiled again while the block's eager rows still need pairs."""
    every = units_of(spec.cases)
    if done_pairs < args.first_pairs:
        return every, ""
    if done_pairs >= args.pairs:
        return [], f"--pairs {args.pairs} reached"
    left = args.pairs - done_pairs
    want: set = set()
    hopeless = 0
    for c in comparisons:
        for r in c.judgement.undecided():
            if (r.more_pairs or 0) > left and not _leaning(r):
                hopeless += 1
                continue
            want.add((r.key[0], r.key[2], phase_of(r.key[3])))
    if not want and args.sharpen:   # every row decided: pair the blunt ones toward their goal
        from cudnn_hostbench.reports.verdict import paired
        want = {(r.key[0], r.key[2], phase_of(r.key[3])) for c in comparisons for r in paired.blunt(c.judgement.rows)}
    files = {c[1]: c[0] for c in spec.cases}
    todo = [u for u in every if any(files.get(p) == u[0] and s == u[1] and ph == u[2] for p, s, ph in want)]
    if todo:
        return todo, ""
    decided = "every row decided" + (" and within its class's MDC goal" if args.sharpen else "")
    return [], (decided if not hopeless else
                f"{hopeless} UNSURE row(s) need more pairs than --pairs {args.pairs} allows; the rest are decided")


def _leaning(row) -> bool:
    """An UNSURE row whose interval already leaves out 0: more pairs may make it a finding, however
    far its MDC is from the threshold, so it is never given up."""
    return row.low is not None and row.high is not None and (row.low > 0 or row.high < 0)


def run_set(job_dir: Path, spec: JobSpec, procs: list, cases: list, units: int, clock: Clock, args, say,
            ahead: interleave.Ahead | None = None) -> str:
    """One set: a process per side in the set's Williams order, each next one started ahead during
    the one before (interleave.Ahead; the next set's first during this set's last). Returns a
    crash's line, or ''."""
    k = len(spec.sides)
    first = interleave.next_index(procs, k)
    set_index = first // k
    worker = interleave.worker_of(set_index, k)
    floor = _floor(procs)
    order = interleave.set_order(k, set_index)
    for pos, side_i in enumerate(order):
        side = spec.sides[side_i]
        folder = interleave.proc_folder(job_dir, first + pos, side_i)
        following = _following(job_dir, spec, first + pos + 1)
        then = (lambda next_proc=following: ahead.start(*next_proc)) if ahead is not None else None
        timeout = min(args.proc_timeout, max(60.0, clock.left() + 120))
        done = interleave.run_process(folder, side_env(side, set_index), cases, spec.options, worker, floor, timeout,
                                      ahead=ahead, then=then)
        clock.add(done["wall_s"], units)
        say(f"{folder.name} {side.label}: {done['wall_s']:.0f} s, {units} unit(s)")
        if done["rc"] != 0:
            return f"side {side.label} crashed in process {folder.name}: {done['error']} (log {folder / 'worker.log'})"
    return ""


def _following(job_dir: Path, spec: JobSpec, index: int) -> tuple[Path, dict]:
    """The folder and environment of process `index` (the next one, maybe of the next set)."""
    k = len(spec.sides)
    side_i = interleave.set_order(k, index // k)[index % k]
    return interleave.proc_folder(job_dir, index, side_i), side_env(spec.sides[side_i], index // k)


def side_env(side, set_index: int) -> dict:
    """A process's environment: the side's, the harness importable, the set's hash seed."""
    from cudnn_hostbench.bench.measure.workers.worker import package_root
    env = side.environ(dict(os.environ))
    env["PYTHONPATH"] = os.pathsep.join([*side.pythonpath, package_root(),
                                         *filter(None, [os.environ.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("PYTHONHASHSEED", interleave.hash_seed(set_index))
    return env


def _floor(procs: list) -> float | None:
    """The lowest host floor the job's processes learned, for the next ones to start from."""
    from cudnn_hostbench.bench.measure.workers.replicas import floor_of
    from cudnn_hostbench.reports.judge.ab import load_proc
    floors = []
    for p in procs[-6:]:
        run = load_proc(p.records) if p.ok else None
        f = floor_of(run.fingerprint) if run else None
        if f:
            floors.append(f)
    return min(floors) if floors else None


def _progress(say, pairs: int, comparisons: list, clock: Clock) -> None:
    if not comparisons:
        say(f"pairs 0 · {clock.left() / 60:.1f} min left")
        return
    rows = sum(len(c.judgement.rows) for c in comparisons)
    decided = sum(1 for c in comparisons for r in c.judgement.rows if r.verdict != "UNSURE")
    leaning = sum(1 for c in comparisons for r in c.judgement.rows if r.leans)
    dropped = sum(c.dropped for c in comparisons)
    say(f"pairs {pairs} ({dropped} row pair(s) dropped: host states differed) · rows decided {decided}/{rows}"
        f"{f' ({leaning} more leaning, paired on)' if leaning else ''} · {clock.left() / 60:.1f} min left")


def finish(args, job_dir: Path, spec: JobSpec, procs: list, comparisons: list) -> None:
    """The reports in the job folder, the merged run per side, and what --json / --markdown ask."""
    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    from cudnn_hostbench.reports.judge import ab as report
    from cudnn_hostbench.reports.judge import noise
    meta = {"job": str(job_dir), "sides": [{"label": s.label, "spec": s.spec, **(getattr(s, "checked", None) or {})}
                                           for s in spec.sides],
            "reference": spec.sides[spec.reference].label, "selection": json.loads(spec.selection or "{}"),
            "processes": sum(p.ok for p in procs), "processes_failed": sum(1 for p in procs if p.done and not p.ok),
            "processes_unfinished": sum(1 for p in procs if not p.done)}
    header = (f"Sides: {', '.join(f'{s.label} ({s.spec})' for s in spec.sides)}; reference "
              f"{meta['reference']}. {meta['processes']} finished processes"
              + (f", {meta['processes_unfinished']} unfinished (not used)" if meta["processes_unfinished"] else "")
              + ".")
    write_side_runs(job_dir, spec, procs)
    found = {}
    if "--hb-eager-passes" in spec.options:   # only then do its processes write pass lines to read again
        found = noise.of_job(comparisons, interleave.pairs(procs, len(spec.sides), spec.reference))
    if found:   # where the job's eager noise lives
        meta["eager_noise"] = {cls: {name: {"spread": v, "rows": n} for name, (v, n) in comps.items()}
                               for cls, comps in found.items()}
        write_text_atomic(job_dir / "passes.md", noise.markdown(found))
    report.write_reports(job_dir, comparisons, meta, header)
    for c in comparisons:
        print(report.text(c), file=_out(args))
    if args.json:
        doc = json.dumps(report.json_doc(comparisons, meta), indent=1)
        print(doc) if args.json == "-" else Path(args.json).write_text(doc, encoding="utf-8")
    if args.markdown:
        md = report.markdown(comparisons, header)
        print(md) if args.markdown == "-" else Path(args.markdown).write_text(md, encoding="utf-8")
    print(f"wrote {job_dir / 'ab.md'}, ab.csv, ab.json" + (", ab.png" if (job_dir / "ab.png").exists() else "")
          + (", passes.md" if found else ""),
          file=_out(args))


def _out(args):
    """Where the job talks: stderr when --json - or --markdown - take stdout."""
    return sys.stderr if "-" in (getattr(args, "json", None), getattr(args, "markdown", None)) else sys.stdout


def write_side_runs(job_dir: Path, spec: JobSpec, procs: list) -> list[Path]:
    """sides/LABEL.json: each side's processes merged as one run (every process a worker)."""
    from cudnn_hostbench.bench.measure.runfile.records import run_document, write_run
    from cudnn_hostbench.bench.measure.workers.replicas import merge_runs
    from cudnn_hostbench.reports.judge.ab import load_proc
    out = []
    for i, side in enumerate(spec.sides):
        runs = [r for r in (load_proc(p.records) for p in procs if p.side == i and p.ok) if r is not None]
        if not runs:
            continue
        recs, fp = merge_runs(runs)
        fp["ab_job"] = {"side": side.label, "spec": side.spec, "job": str(job_dir)}
        out.append(write_run(interleave.side_file(job_dir, side.label), run_document(recs, fp)))
    return out
