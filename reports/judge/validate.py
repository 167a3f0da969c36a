"""Validation of the verdict model on history exports, out of sample (`hostbench verdict-check`).

Nested leave-one-start-out: each machine start's runs are judged against every other start's runs
(a GPU new to the history), and its later runs also with its earlier ones (the same GPU). Every
variance, prior and tail the model uses is learned from that history alone, inside the fold: the
model has no constant fitted on the runs it is checked on. No software changed between runs of one
history key, so every SLOWER, FASTER or KERNEL CHANGED is false; findings (a machine factor or a
kernel term past the FDR) are counted apart, as the information they are.

Then known changes are injected into each judged run, one at a time:
- single rows, per class: device +4 %, graph under 20 µs +4 %, heavy graph +8 %, eager trap
  ratio +8 %; and each row at 1.2x and 0.5x its printed MDC (MDC honesty);
- structured: one kernel across its rows +5 %, one probe x size +10 %, a baseline with its rows
  +10 %, every GPU-bound row +3 %.
"""
from __future__ import annotations

import dataclasses
import os
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"
MIN_STARTS = 3       # a history key is validated when its runs come from this many starts
SINGLE = {"device": 0.04, "graph light": 0.04, "graph heavy": 0.08, "eager ratio": 0.08}
ROWS_PER_CLASS = 3   # single-row injections per class and judged run
SEED = 20261202


def load(paths: list[Path]) -> tuple[list[dict], dict]:
    """Every run of the exports (oldest first) with an id, and its figures: (runs, {id: {row: Figure}})."""
    from cudnn_hostbench.reports.history import ingest
    errors: list[str] = []
    runs, figs = [], {}
    for i, (label, meta, fl) in enumerate(ingest.runs_in(paths, errors), 1):
        meta = dict(meta, id=i, label=label)
        runs.append(meta)
        figs[i] = {f.row: f for f in fl}
    if errors:
        raise ValueError(errors[0])
    if not runs:
        raise ValueError(f"{', '.join(map(str, paths))}: no run in it")
    runs.sort(key=lambda r: r["started_at"])
    return runs, figs


def _n(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def folds(runs: list[dict]) -> list[tuple[dict, list[dict], str]]:
    """(judged run, its history, 'fleet' or 'same GPU') of every run of a key with MIN_STARTS starts."""
    from cudnn_hostbench.reports.verdict import model
    by: dict[str, list[dict]] = defaultdict(list)
    for r in runs:
        by[r["history_key"]].append(r)
    out = []
    for rs in by.values():
        starts = {model.start_of(r) for r in rs}
        if len(starts) < MIN_STARTS:
            continue
        for s in sorted(starts):
            mine = [r for r in rs if model.start_of(r) == s]
            others = [r for r in rs if model.start_of(r) != s]
            for j, t in enumerate(mine):
                before = sorted(others + mine[:j], key=lambda r: r["started_at"])
                out.append((t, before, "same GPU" if j >= 2 else "fleet"))
    return out


def cls_of(fig) -> str | None:
    """The single-row injection class of a figure, or None."""
    from cudnn_hostbench.reports.verdict import structure
    if fig.mode == "device" and not fig.on_ratio:
        return "device"
    if fig.mode == "graph" and not fig.on_ratio:
        size = structure.size_class(fig)
        return "graph heavy" if size == "heavy" else "graph light" if size == "light" else None
    if fig.mode == "eager" and fig.on_ratio and fig.host_state == "fast":
        return "eager ratio"
    return None


def _scaled(figs: dict, tid: int, rows: set, factor: float) -> dict:
    """figs with the target's `rows` (and their workers) multiplied by `factor`."""
    fs = dict(figs[tid])
    for row in rows:
        f = fs[row]
        fs[row] = dataclasses.replace(f, value=f.value * factor, workers=[w * factor for w in (f.workers or [])],
                                      median_us=(f.median_us or 0) * (1 if f.on_ratio else factor))
    return {**figs, tid: fs}


@dataclasses.dataclass
class Result:
    runs: int = 0
    false_runs: int = 0
    false_rows: list = dataclasses.field(default_factory=list)
    findings: list = dataclasses.field(default_factory=list)
    mdc: dict = dataclasses.field(default_factory=lambda: defaultdict(list))      # (scale, class) -> MDCs
    z: dict = dataclasses.field(default_factory=lambda: defaultdict(list))        # class -> z of no-change rows
    # (scale, class, processes) -> [caught, tried]; MDC multiple -> [caught, tried]
    single: dict = dataclasses.field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    honesty: dict = dataclasses.field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    # name -> [caught, reported with a finding, tried]
    structured: dict = dataclasses.field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))
    # class -> [caught, tried]: the same single-row change on this run and on the previous run of another start
    two: dict = dataclasses.field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    seconds: float = 0.0


def _changed(judgement, rows: set) -> bool:
    return any(v.row in rows and v.verdict in ("SLOWER", "KERNEL CHANGED") for v in judgement.verdicts)


def run(paths: list[Path], limit: int | None = None, progress=None, jobs: int | None = None) -> Result:
    """Judges every fold (folds()), in `jobs` processes (default: the CPUs, at most JOBS). Each
    fold draws its injections from a generator seeded by its own index, so the figures are the
    same whatever the number of processes."""
    from cudnn_hostbench.reports.verdict import model
    t0 = time.monotonic()
    runs, figs = load(paths)
    todo = folds(runs)[:limit or None]
    if not todo:   # a run file, or an export of too few machine starts: say so, not an empty report
        keys, starts = {r["history_key"] for r in runs}, {model.start_of(r) for r in runs}
        raise ValueError(f"{', '.join(map(str, paths))}: {_n(len(runs), 'run')} on {_n(len(keys), 'history key')} "
                         f"from {_n(len(starts), 'machine start')}; nothing to judge out of sample (a history key "
                         f"needs runs from {MIN_STARTS} starts: give history exports, `hostbench history export`)")
    jobs = max(1, min(jobs or os.cpu_count() or 1, JOBS, len(todo)))
    res = Result()
    parts: list[dict] = []
    if jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool
        # spawn: a fresh interpreter per process (no fork of a threaded test runner); each loads the
        # exports once and judges contiguous folds, which share their history's fitted priors
        chunk = max(1, len(todo) // (jobs * 4))
        try:
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                     initializer=_init, initargs=(list(paths), limit)) as pool:
                for part in pool.map(_judge_here, range(len(todo)), chunksize=chunk):
                    if progress:
                        progress(len(parts), len(todo), todo[len(parts)][0])
                    parts.append(part)
        except BrokenProcessPool:   # a process could not start (a __main__ it cannot re-import): the rest here
            pass
    state = _State(runs, figs, todo)
    for i in range(len(parts), len(todo)):
        if progress:
            progress(i, len(todo), todo[i][0])
        parts.append(_judge(state, i))
    for part in parts:
        _add(res, part)
    res.seconds = time.monotonic() - t0
    return res


JOBS = 4            # processes that judge folds at most


@dataclasses.dataclass
class _State:
    runs: list
    figs: dict
    todo: list
    priors: dict = dataclasses.field(default_factory=dict)


_HERE: list[_State] = []   # a pool process's loaded exports (set by _init)


def _init(paths: list[Path], limit: int | None) -> None:
    runs, figs = load(paths)
    _HERE[:] = [_State(runs, figs, folds(runs)[:limit or None])]


def _judge_here(index: int) -> dict:
    return _judge(_HERE[0], index)


def _add(res: Result, part: dict) -> None:
    """Adds one fold's figures (_judge) to the result, in fold order."""
    res.runs += 1
    res.false_runs += part["false_run"]
    res.false_rows += part["false_rows"]
    res.findings += part["findings"]
    for name in ("mdc", "z"):
        for k, xs in part[name]:
            getattr(res, name)[k].extend(xs)
    for name in ("single", "honesty", "structured", "two"):
        for k, xs in part[name]:
            acc = getattr(res, name)[k]
            for j, x in enumerate(xs):
                acc[j] += x


def _no_change(res: Result, figs: dict, target: dict, judgement) -> list:
    """The fold's run judged as it is (no change): its false verdicts and findings, each judged
    row's MDC and z; the judged rows."""
    from cudnn_hostbench.reports.verdict import decide, model
    bad = [v for v in judgement.verdicts if v.verdict in decide.CHANGED]
    res.false_runs += bool(bad)
    res.false_rows += [(target["label"], "/".join(v.row), v.verdict, round(v.change * 100, 1), round(v.z or 0.0, 1),
                        v.scale) for v in bad]
    res.findings += [(target["label"], fd.line()) for fd in judgement.findings if fd.status]
    judged = [v for v in judgement.verdicts if v.z is not None]
    for v in judged:
        f = figs[target["id"]][v.row]
        res.mdc[(v.scale, model.row_class(f))].append(v.mdc)
        res.z[model.row_class(f)].append(v.z)
    return judged


def _single(res: Result, figs: dict, target: dict, before: list, history, cls: str, verdict) -> None:
    """One row's injections: its class's change alone, on two starts (fleet rows with a previous
    start), and 1.2 and 0.5 times its MDC (honesty)."""
    from cudnn_hostbench.reports.verdict import judge, model
    t = target
    got = judge.judge_run(dict(t), before, [], _scaled(figs, t["id"], {verdict.row}, 1 + SINGLE[cls]), history=history)
    k = res.single[(verdict.scale, cls, min(verdict.processes, 3))]
    k[0] += _changed(got, {verdict.row})
    k[1] += 1
    prev = model.previous_start(history)
    if verdict.scale == "fleet" and prev is not None and verdict.row in figs[prev["id"]]:
        both = _scaled(_scaled(figs, t["id"], {verdict.row}, 1 + SINGLE[cls]), prev["id"], {verdict.row},
                       1 + SINGLE[cls])
        got = judge.judge_run(dict(t), before, [], both, history=history)
        k = res.two[cls]
        k[0] += _changed(got, {verdict.row})
        k[1] += 1
    for mult in (1.2, 0.5):
        got = judge.judge_run(dict(t), before, [], _scaled(figs, t["id"], {verdict.row}, 1 + mult * verdict.mdc),
                               history=history)
        h = res.honesty[mult]
        h[0] += _changed(got, {verdict.row})
        h[1] += 1


def _judge(state: _State, index: int) -> dict:
    """One fold's figures, as plain lists (they cross a process boundary): its no-change verdicts,
    then its injections, drawn from a generator seeded by the fold's index."""
    from cudnn_hostbench.reports.verdict import judge
    runs, figs = state.runs, state.figs
    t, before, _ = state.todo[index]
    rng = random.Random(f"{SEED}:{index}")
    res = Result()
    md = judge.fit(dict(t), before, figs, prior=_prior(runs, figs, t, state.priors))
    jd = judge.judge_run(dict(t), before, [], figs, history=md)
    judged = _no_change(res, figs, t, jd)
    by_cls: dict[str, list] = defaultdict(list)
    for v in judged:
        c = cls_of(figs[t["id"]][v.row])
        if c and v.verdict in ("SAME", "UNSURE"):
            by_cls[c].append(v)
    for c, vs in sorted(by_cls.items()):
        for v in rng.sample(vs, min(ROWS_PER_CLASS, len(vs))):
            _single(res, figs, t, before, md, c, v)
    for name, rows, factor, kinds in _structured(figs[t["id"]], jd, rng):
        got = judge.judge_run(dict(t), before, [], _scaled(figs, t["id"], rows, factor), history=md)
        k = res.structured[name]
        k[0] += _changed(got, rows) or any(fd.status and fd.kind in kinds for fd in got.findings)
        k[1] += any(fd.status for fd in got.findings)
        k[2] += 1
    return {"false_run": res.false_runs, "false_rows": res.false_rows, "findings": res.findings,
            **{name: [(k, list(v)) for k, v in getattr(res, name).items()]
               for name in ("mdc", "z", "single", "honesty", "structured", "two")}}


def _prior(runs: list[dict], figs: dict, target: dict, cache: dict) -> dict | None:
    """The store prior a fold's run is judged with, fitted inside the fold: the newest key's runs of
    every other start (as the shipped prior is the newest key's); none for runs of that key itself,
    whose own history is the same runs. Fitted once per set of runs: a start with no run on the
    newest key leaves all of them, so a history whose starts mostly lack that key is fitted once."""
    from cudnn_hostbench.reports.verdict import calibrate, model
    newest = runs[-1]["history_key"]
    if target["history_key"] == newest:
        return None
    start = model.start_of(target)
    if start not in cache:
        rest = [r for r in runs if r["history_key"] == newest and model.start_of(r) != start]
        ids = tuple(r["id"] for r in rest)
        if ids not in cache:
            cache[ids] = calibrate.fit(rest, figs) if len(rest) >= 2 else None
        cache[start] = cache[ids]
    return cache[start]


def _structured(figures: dict, judgement, rng: random.Random) -> list[tuple[str, set, float, tuple[str, ...]]]:
    """The structured injections for one run: (name, rows, factor, finding kinds that report it): a
    probe x size, baseline included, is one block of GPU rows, reported as its kernel or its block."""
    from cudnn_hostbench.reports.verdict import structure
    ok = {v.row for v in judgement.verdicts if v.z is not None}
    out: list[tuple[str, set, float, tuple[str, ...]]] = []
    kernels: dict[str, set] = defaultdict(set)
    for row in ok:
        f = figures[row]
        if structure.is_gpu_row(f) and f.kernels:
            kernels[f.kernels].add(row)
    big = sorted(k for k, rows in kernels.items() if len(rows) >= 3)
    if big:
        out.append(("one kernel +5 %", kernels[rng.choice(big)], 1.05, ("kernel",)))
    blocks: dict[tuple, set] = defaultdict(set)
    for row in ok:
        if figures[row].mode in structure.GPU_MODES and not figures[row].on_ratio:
            blocks[(row[0], row[2])].add(row)
    if blocks:
        key = rng.choice(sorted(blocks))
        out.append(("one probe x size +10 %", blocks[key], 1.10, ("kernel", "gpu block")))
        base = sorted(r for r in blocks[key] if figures[r].role == "baseline")   # a set: sorted, or the hash seed picks
        if base:
            b = figures[base[0]]
            rows = {r for r in ok if r[0] == b.probe and r[2] == b.size and figures[r].mode == b.mode
                    and (r == b.row or (not figures[r].on_ratio and figures[r].baseline == b.variant))}
            out.append(("a baseline with its rows +10 %", rows, 1.10, ("kernel", "gpu block")))
    gpu = {r for r in ok if structure.is_gpu_row(figures[r]) and structure.size_class(figures[r]) != "light"}
    if gpu:
        out.append(("every GPU-bound row +3 %", gpu, 1.03, ("machine",)))
    return out


def bound(hits: int, trials: int, level: float = 0.95) -> float:
    """The one-sided upper confidence bound of a binomial rate with hits of trials (Clopper-Pearson)."""
    from scipy import stats
    return 1.0 if hits >= trials else float(stats.beta.ppf(level, hits + 1, trials - hits))


def report(res: Result, markdown: bool = False) -> str:
    from cudnn_hostbench.reports.verdict.decide import mdc_text
    lines = [f"verdict-check: {res.runs} runs judged out of sample in {res.seconds:.0f} s",
             f"false verdicts: {len(res.false_rows)} on {res.false_runs} of {res.runs} runs; per-run false-alarm "
             f"rate {res.false_runs / max(res.runs, 1) * 100:.1f} %, 95 % upper bound "
             f"{bound(res.false_runs, res.runs) * 100:.1f} %"]
    lines += [f"  {label}: {row} {verdict} {chg:+.1f} % (z {z:+.1f}, {scale})"
              for label, row, verdict, chg, z, scale in res.false_rows[:20]]
    lines.append(f"findings past the FDR on no-change runs: {len(res.findings)}")
    lines += [f"  {label}: {text}" for label, text in res.findings[:20]]
    lines.append("median MDC by scale and class (rows):")
    for (scale, c), xs in sorted(res.mdc.items()):
        lines.append(f"  {scale:9s} {c:24s} {mdc_text(statistics.median(xs)):>8s}  ({len(xs)})")
    lines.append("calibration, no-change z by class: share past 2 and 3 (normal: 4.6 %, 0.27 %)")
    for c, zs in sorted(res.z.items()):
        a = [abs(z) for z in zs]
        lines.append(f"  {c:24s} {sum(x > 2 for x in a) / len(a) * 100:5.1f} %  {sum(x > 3 for x in a) / len(a) * 100:5.2f} %"
                     f"  max {max(a):.1f}  ({len(a)})")
    lines.append("single-row injections, caught (scale, class, processes):")
    for (scale, c, p), (k, n) in sorted(res.single.items()):
        lines.append(f"  {scale:9s} {c:12s} +{SINGLE[c] * 100:g} %  {p} proc  {k}/{n} = {k / n * 100:.0f} %")
    lines.append("the same single-row change on this run and the previous run of another start (two starts), caught:")
    for c, (k, n) in sorted(res.two.items()):
        lines.append(f"  fleet     {c:12s} +{SINGLE[c] * 100:g} %  {k}/{n} = {k / max(n, 1) * 100:.0f} %")
    lines.append("MDC honesty (caught at a multiple of the printed MDC; targets >= 80 % at 1.2x, <= 10 % at 0.5x):")
    for mult, (k, n) in sorted(res.honesty.items(), reverse=True):
        lines.append(f"  {mult:g} x MDC: {k}/{n} = {k / max(n, 1) * 100:.0f} %")
    lines.append("structured injections: caught (as a row verdict or a finding), reported as a finding:")
    for name, (k, fnd, n) in sorted(res.structured.items()):
        lines.append(f"  {name:32s} {k}/{n} caught, {fnd}/{n} with a finding")
    return "\n".join(lines)


