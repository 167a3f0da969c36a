"""Leave-one-start-out check of the history gate on the committed H200 history (CPU only).

Each machine start's runs are judged against all the other starts' runs (the fleet), as a nightly
run on a fresh machine is; a start's later runs are also judged with its earlier ones in the history
(the same GPU, once it has noise.MIN_OWN of them; before that the fleet). Every measurement version
whose full runs come from at least MIN_STARTS starts is checked on its own. No software changed
between these runs, so every SLOWER, FASTER or KERNEL CHANGED is false. Then one change at a time
is injected into each start's runs, and must be the only row called: +4 % on a GPU-bound graph row,
+4 % on a device row, +8 % on an eager trap ratio.

    python3 -m cudnn_hostbench.scripts.loso_check [EXPORT] [--markdown]
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

from cudnn_hostbench.scripts.cli import alias

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"
CHANGED = ("SLOWER", "FASTER", "KERNEL CHANGED")
FULL = 400          # figures in a full run of measurement 1 (437); the matrix parts hold 45
# (name, row, factor): one injected change each, the rows the history tests use
INJECT = [("graph +4 %", ("fusion", "cudnn_fused", "epilogue-b16m512k1024n512", "graph"), 1.04),
          ("device +4 %", ("sdpa", "cudnn_sdpa", "b32h32s128d128", "device"), 1.04),
          ("eager trap ratio +8 %", ("wrapper", "naive", "1024", "eager"), 1.08)]
EAGER = "eager ratio (fast state)"
CLASSES = ("graph", "device", EAGER)
MIN_STARTS = 3      # a measurement version is checked when its full runs come from this many starts


@dataclasses.dataclass
class Result:
    starts: list            # (start, runs, false verdicts against the fleet, against the same GPU, picks)
    mdc_fleet: dict         # class -> list of MDCs
    mdc_same: dict
    caught: dict            # injection name -> (caught alone, tried)
    false_rows: list        # (start, run id, verdict text)


def _scratch(export: Path):
    """The export read into a scratch SQLite store (ValueError: the export's first unreadable part)."""
    from cudnn_hostbench.reports.history import db, ingest
    tmp = tempfile.mkdtemp(prefix="hb-loso-")
    st = db.open_store(f"sqlite:///{Path(tmp) / 'h.db'}", create=True)
    res = ingest.ingest_paths(st, [export])
    if res.errors:
        raise ValueError(res.errors[0])
    return st


def _full(runs: list[dict], version: int) -> list[dict]:
    """The full runs of measurement `version`: at least FULL figures in version 1, else at least half
    the version's largest run."""
    of = [r for r in runs if int(r["measurement_version"]) == version]
    least = FULL if version == 1 else max((r["n_figures"] for r in of), default=0) / 2
    return [r for r in of if r["n_figures"] >= least]


def load(export: Path = EXPORT, version: int = 1):
    """The committed history in a scratch store: (store, its full runs of measurement `version`)."""
    st = _scratch(export)
    full = _full(st.runs(), version)
    if not full:
        raise _nothing(export, version)
    return st, full


def _nothing(export: Path, version: int) -> ValueError:
    return ValueError(f"{export}: no full run of measurement {version} in it: nothing to leave out")


def versions(export: Path = EXPORT) -> list[int]:
    """Measurement versions whose full runs come from at least MIN_STARTS machine starts."""
    st = _scratch(export)
    runs = st.runs()
    st.close()
    return _versions(runs)


def _versions(runs: list[dict]) -> list[int]:
    from cudnn_hostbench.reports.history import noise
    return [v for v in sorted({int(r["measurement_version"]) for r in runs})
            if len({noise.start_of(r) for r in _full(runs, v)}) >= MIN_STARTS]


def _inject(figs: dict, run_id: int, row: tuple, factor: float) -> dict | None:
    f = figs[run_id].get(row)
    if f is None or f.value is None:
        return None
    out = dict(figs)
    out[run_id] = dict(figs[run_id])
    out[run_id][row] = dataclasses.replace(f, value=f.value * factor, workers=[w * factor for w in f.workers])
    return out


def run(export: Path = EXPORT, version: int = 1) -> Result:
    st, full = load(export, version)
    figs = st.figures([r["id"] for r in full])
    st.close()
    return _judge(full, figs)


def _judge(full: list[dict], figs: dict) -> Result:
    """Each start's full runs judged against the others' (and its own earlier ones), with injections."""
    from cudnn_hostbench.reports.history import check, noise, sampling
    starts = sorted({noise.start_of(r) for r in full})
    res = Result([], {c: [] for c in CLASSES}, {c: [] for c in CLASSES}, {n: [0, 0] for n, _, _ in INJECT}, [])
    for s in starts:
        mine = [r for r in full if noise.start_of(r) == s]
        others = [r for r in full if noise.start_of(r) != s]
        false_fleet = false_same = picks = 0
        for i, t in enumerate(mine):
            rounds = f"{sampling.rounds_of(t) or '?'} rounds a worker"
            for setting, before in (("fleet", others), ("same GPU", others + mine[:i]) if i else (None, None)):
                if setting is None:
                    continue
                target, vs = check.judge_run(dict(t), before, [], figs)
                bad = [v for v in vs if v.verdict in CHANGED]
                picks += sum(v.verdict == "PICK CHANGED" for v in vs)
                res.false_rows += [(s, t["id"], setting, f"{v.verdict} {'/'.join(v.row)} {v.change * 100:+.1f}% "
                                    f"(mdc {v.mdc * 100:.1f}%, {v.scale})") for v in bad]
                if setting == "fleet":
                    false_fleet += len(bad)
                else:
                    false_same += len(bad)
                into = res.mdc_fleet if setting == "fleet" else res.mdc_same
                per = f"{EAGER}, {rounds}"   # eager rounds split out
                for v in vs:
                    c = check.mode_class(v)
                    if c in into and v.mdc is not None and v.scale == setting:
                        into[c].append(v.mdc)
                        if c == EAGER:
                            into.setdefault(per, []).append(v.mdc)
                if setting != "fleet":
                    continue
                for name, row, factor in INJECT:
                    got = _inject(figs, t["id"], row, factor)
                    if got is None:
                        continue
                    base = next((v for v in vs if v.row == row), None)
                    if base is None or base.verdict != "SAME" or (row[3] == "eager" and base.host_state != "fast"):
                        continue    # judged only where the row is measured, quiet, and (eager) fast
                    _, vi = check.judge_run(dict(t), before, [], got)
                    called = [(v.row, v.verdict) for v in vi if v.verdict in CHANGED]
                    for n in (name, f"{name}, {rounds}") if row[3] == "eager" else (name,):
                        got_n = res.caught.setdefault(n, [0, 0])
                        got_n[1] += 1
                        got_n[0] += called == [(row, "SLOWER")]
        res.starts.append((s, len(mine), false_fleet, false_same, picks))
    return res


def table(res: Result) -> str:
    """Markdown: false verdicts per start, MDC medians per class, injections caught alone."""
    lines = ["| start | runs | false SLOWER/FASTER/KERNEL CHANGED vs the fleet | vs the same GPU "
             "| autotune pick changed (information) |",
             "|---|---|---|---|---|"]
    lines += [f"| {s} | {n} | {a} | {b} | {p} |" for s, n, a, b, p in res.starts]
    lines += ["", "MDC per row judged: median (p10-p90), rows; issue 26's targets: fleet graph/device <= 3 %,",
              "eager ratios <= 6 %; same GPU graph/device <= 1.5 %", "",
              "| class | MDC, fleet | MDC, same GPU |", "|---|---|---|"]
    for c in [*CLASSES, *sorted(set(res.mdc_fleet) - set(CLASSES))]:
        f, g = res.mdc_fleet[c], res.mdc_same.get(c, [])
        lines.append(f"| {c} | {_pct(f)} ({len(f)} rows) | {_pct(g)} ({len(g)} rows) |")
    lines += ["", "| injected | caught alone |", "|---|---|"]
    lines += [f"| {n} | {c} of {t} runs |" for n, (c, t) in res.caught.items()]
    return "\n".join(lines)


def _pct(xs: list) -> str:
    """Median and the p10-p90 range of a class's MDCs, in %."""
    if not xs:
        return "-"
    s = sorted(xs)
    q = lambda p: s[round(p * (len(s) - 1))] * 100  # noqa: E731
    return f"{statistics.median(s) * 100:.2f} % ({q(0.1):.2f}-{q(0.9):.2f})"


def medians(res: Result) -> tuple[dict, dict]:
    return ({c: statistics.median(x) for c, x in res.mdc_fleet.items() if x},
            {c: statistics.median(x) for c, x in res.mdc_same.items() if x})


def fleet_noise(export: Path = EXPORT) -> dict:
    """The committed fleet's (within, between) sd per class (mode and size class; eager ratios and
    µs; host), from all its full runs of measurement 1: what noise.FLEET holds."""
    import math

    from cudnn_hostbench.reports.history import check, noise
    st, full = load(export)
    figs = st.figures([r["id"] for r in full])
    st.close()
    h = check.History(dict(full[-1]), full, figs, 1)
    by: dict = {}
    for row, p in h.parts.items():
        f = figs[full[-1]["id"]][row]
        cls = noise.row_class(f)
        if cls[-1] == "race":
            continue
        by.setdefault(cls[:2] if cls[0] != "host" else ("host", "*"), []).append(p)
    out = {}
    for cls, ps in sorted(by.items()):
        pool = noise.pool(ps)
        out[cls] = (round(math.sqrt(pool.sw2), 4), round(math.sqrt(pool.sb2), 4))
    return out


def add_parser(command) -> None:
    p = command("loso-check", run_cmd, description=(__doc__ or "").split("\n")[0])
    p.add_argument("export", nargs="?", default=str(EXPORT), help="a history export (default: the committed one)")


def run_cmd(a) -> int:
    export = Path(a.export)
    if not export.is_file():
        print(f"{a.prog}: {export}: no such history export", file=sys.stderr)
        return 2
    try:   # the export read once, every version judged from it
        st = _scratch(export)
        runs = st.runs()
        fulls = [(v, _full(runs, v)) for v in _versions(runs) or [1]]
        if not any(full for _, full in fulls):
            raise _nothing(export, 1)
        figs = st.figures([r["id"] for _, full in fulls for r in full])
        st.close()
    except ValueError as e:   # a corrupt or empty export: one line, nothing else
        print(f"{a.prog}: {e}", file=sys.stderr)
        return 2
    got = [(v, _judge(full, figs)) for v, full in fulls]
    for v, res in got:
        print(f"\nmeasurement version {v}:\n")
        print(table(res))
        for s, rid, setting, text in res.false_rows:
            print(f"false: {s} run {rid} ({setting}): {text}")
    return 0


main = alias("loso-check")   # python -m cudnn_hostbench.scripts.loso_check: `hostbench loso-check`

if __name__ == "__main__":
    sys.exit(main())
