"""Is running N jobs at once on a node safe for the figures? One frontend version measured alone on
a GPU, then on the same GPU alongside N-1 other jobs (scripts/node/node_check.py), compared row by row
with compare (the verdict model with a history of one run): the practical thresholds per mode
within one machine start, and both runs here are one start (same boot, same GPU).

Safe means: every eager, graph and device row the two runs share is SAME (within its floor, raised
by the workers' spread where that is wider) and none is SLOWER, FASTER, UNSURE or KERNEL CHANGED.
A second alone run, when there is one, is the control: alone against alone shows how far the
same row moves with no neighbours at all.

Also the wall-time report: a matrix serial on one GPU against the same matrix in parallel on N.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cudnn_hostbench.bench.measure.runfile.records import Run
from cudnn_hostbench.reports import fmt
from cudnn_hostbench.reports.verdict import decide

MODES = ("eager", "graph", "device")
JUDGED = ("SAME", "SLOWER", "FASTER", "UNSURE", "KERNEL CHANGED")


@dataclass
class ModeCheck:
    mode: str
    rows: int = 0                  # rows judged (measured in both runs)
    same: int = 0
    max_change: float = 0.0        # largest |change| of a judged row
    floor: float = 0.0             # the mode's practical threshold (verdict.decide.PRACTICAL)
    past_floor: int = 0            # SAME rows whose |change| is past the bare floor (noise-limited)
    bad: list = field(default_factory=list)    # 'probe/variant/size: VERDICT +x.x %' of the rest


@dataclass
class SafetyCheck:
    label: str                     # 'alongside vs alone'
    modes: list
    problems: list                 # why the comparison itself does not hold (other GPU, other start, no rows)

    @property
    def safe(self) -> bool:
        return not self.problems and all(not m.bad for m in self.modes) and all(m.rows for m in self.modes)


def check(alone: Run, along: Run, label: str = "alongside vs alone") -> SafetyCheck:
    """The same version alone (base) against alongside N-1 others (new), on eager, graph, device rows."""
    from cudnn_hostbench.reports.judge import compare
    problems = []
    ga, gb = alone.fingerprint.gpu_uuid, along.fingerprint.gpu_uuid
    if ga and gb and ga != gb:
        problems.append(f"not the same GPU ({ga} vs {gb}): the same-start floors do not apply")
    sa, sb = alone.fingerprint.start, along.fingerprint.start
    if sa and sb and sa != sb:
        problems.append(f"not the same machine start ({sa} vs {sb}): the same-start floors do not apply")
    fa, fb = alone.fingerprint.cudnn_frontend, along.fingerprint.cudnn_frontend
    if fa != fb:
        problems.append(f"not the same frontend version ({fa} vs {fb})")
    df = compare.compare(alone, along)
    modes = []
    for mode in MODES:
        m = ModeCheck(mode, floor=decide.PRACTICAL[mode])
        for r in df[(df["mode"] == mode) & df["verdict"].isin(JUDGED)].itertuples(index=False):
            m.rows += 1
            ch = abs(r.change) if r.change == r.change else 0.0
            m.max_change = max(m.max_change, ch)
            if r.verdict == "SAME" or (r.verdict == "UNSURE" and ch <= m.floor):
                # UNSURE within the threshold: too noisy to show it, but nothing moved past it
                m.same += 1
                m.past_floor += r.verdict == "UNSURE"
            else:
                m.bad.append(f"{r.probe}/{r.variant}/{r.size}: {r.verdict} {r.change * 100:+.1f} %")
        if not m.rows:
            problems.append(f"no {mode} row measured in both runs")
        modes.append(m)
    # a shift the model takes out of every row of a kernel, block or size class is one finding: on one
    # start it is a regression, and it counts against the modes it moved
    for fd in df.attrs.get("findings") or []:
        if "regression" not in fd.status:
            continue
        hit = [m for m in modes if fd.name.split()[0] == m.mode or fd.name.endswith(f" {m.mode}")] or modes[1:]
        for m in hit:
            m.bad.append(f"{fd.kind} {fd.name}: {fd.change * 100:+.1f} %")
    return SafetyCheck(label, modes, problems)


def verdict_line(safety_check: SafetyCheck) -> str:
    if safety_check.safe:
        return (f"{safety_check.label}: SAFE: no eager, graph or device row moved past its mode's practical threshold "
                "under the verdict model")
    why = safety_check.problems + [f"{len(m.bad)} {m.mode} row(s) or finding(s) moved" for m in safety_check.modes if m.bad]
    return f"{safety_check.label}: NOT SHOWN SAFE: {'; '.join(why)}"


def table(safety_check: SafetyCheck) -> str:
    rows = [[m.mode, m.rows, m.same, f"{m.max_change * 100:.1f} %", f"{m.floor * 100:g} %", m.past_floor,
             "; ".join(m.bad[:5]) + (f"; and {len(m.bad) - 5} more" if len(m.bad) > 5 else "") or "–"]
            for m in safety_check.modes]
    return fmt.md_table(["mode", "rows", "within the threshold", "largest change", "practical threshold",
                         "of them UNSURE (too noisy to show it)", "moved"], rows)


def render(checks: list[SafetyCheck]) -> str:
    out = []
    for c in checks:
        out += [verdict_line(c), "", table(c), ""]
    return "\n".join(out)


def load_coverage(results: list[dict], checked: str) -> str:
    """How much of the checked job's time each load job ran beside it (from run_jobs' start and
    end times): a load job that ended early left its GPU idle for the rest."""
    me = next((r for r in results if r.get("job") == checked and "started_s" in r), None)
    load = [r for r in results if r is not me and "started_s" in r]
    if me is None or not load:
        return "Load: no load job ran beside the checked one."
    span = max(me["ended_s"] - me["started_s"], 1e-9)
    cover = [(max(0.0, min(r["ended_s"], me["ended_s"]) - max(r["started_s"], me["started_s"])) / span, r)
             for r in load]
    lo, hi = min(c for c, _ in cover), max(c for c, _ in cover)
    short = [f"GPU {(r.get('gpu') or {}).get('index', '?')} {c:.0%}" for c, r in cover if c < 0.9]
    return (f"Load: {len(load)} job(s) ran beside the checked run for {lo:.0%}-{hi:.0%} of its "
            f"{span:.0f} s" + (f"; under 90 %: {', '.join(short)}" if short else "") + ".")


# -- wall time: serial on one GPU against parallel on N ------------------------------------------

def matrix_wall(doc: dict) -> tuple[float | None, str]:
    """(wall seconds of a matrix, how known) from its matrix.json."""
    if isinstance(doc.get("wall_s"), (int, float)):
        return float(doc["wall_s"]), "matrix wall time"
    secs = [e.get("seconds") for e in doc.get("versions", []) if isinstance(e.get("seconds"), (int, float))]
    return (float(sum(secs)), "sum of the versions' suite seconds (installs not counted)") if secs else (None, "unknown")


def gpus_of(doc: dict) -> int:
    return len((doc.get("node") or {}).get("gpus") or []) or 1


def walltime(serial: dict, parallel: dict) -> tuple[str, list[str]]:
    """(Markdown report, problems) for two matrix.json documents of the same versions."""
    ok = lambda d: {e["label"]: e for e in d.get("versions", []) if e.get("status") == "ok"}  # noqa: E731
    sv, pv = ok(serial), ok(parallel)
    problems = []
    if set(sv) != set(pv):
        problems.append(f"the matrices measured different versions (serial {sorted(sv)}, parallel {sorted(pv)})")
    if serial.get("pytest_args") != parallel.get("pytest_args"):
        problems.append(f"the matrices ran different suites ({serial.get('pytest_args')} vs {parallel.get('pytest_args')})")
    ws, hs = matrix_wall(serial)
    wp, hp = matrix_wall(parallel)
    n = gpus_of(parallel)
    head = [["serial", gpus_of(serial), len(sv), fmt.num(ws, 0), hs],
            ["parallel", n, len(pv), fmt.num(wp, 0), hp]]
    lines = ["# Version matrix wall time: serial on one GPU against parallel on the node", "",
             fmt.md_table(["matrix", "GPUs", "versions ok", "wall s", "how known"], head), ""]
    if ws and wp:
        k = max(len(pv), 1)
        ideal = k / -(-k // n)   # versions over the waves they need, one version per GPU at a time
        lines += [f"Speed-up {ws / wp:.2f}× on {n} GPU(s) (ideal {ideal:.3g}×: {k} version(s) in "
                  f"{-(-k // n)} wave(s), one version per GPU at a time).", ""]
    per = [[v, fmt.num(sv[v].get("seconds"), 1), fmt.num(pv[v].get("seconds"), 1),
            (pv[v].get("gpu") or {}).get("index", "–"), (pv[v].get("gpu") or {}).get("cpus", "–")]
           for v in sorted(set(sv) & set(pv), key=lambda x: _key(x))]
    if per:
        lines += ["Per version, the suite's own seconds (longer in parallel: the jobs slowed one another):", "",
                  fmt.md_table(["version", "serial s", "parallel s", "GPU", "cores"], per), ""]
    lines += [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n", problems


def _key(label: str):
    from cudnn_hostbench.reports import store
    return store.version_key(label)
