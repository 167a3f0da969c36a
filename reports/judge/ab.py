"""The judgement of an A/B job (`hostbench ab`): its processes' records into pairs per row
(verdict/paired.py judges them), and the report: a table led by the rows that moved, the SAME rows
counted by class with their MDCs, Markdown, CSV, JSON and a chart in the job folder.

What a process's figure is, per row (the log of it is paired):
- an eager row with a baseline in its block: the median of its round-by-round ratios to that
  baseline, in the same process (the table's × baseline), since eager µs move with the host;
- a graph or device row: its median µs; with `on_ratio` (the sides differ in cuDNN or the frontend
  alone, so torch's kernels are the same on both), its ratio to the block's torch baseline in the
  same process, which removes what moves a whole block (a clock that drops for the 4096 blocks);
- a baseline row and a build (host) row: its median.
An eager or build pair whose two processes timed the row in different host states is left out.
"""
from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import stats
from cudnn_hostbench.bench.measure.runfile.records import Record, Run, load_run
from cudnn_hostbench.reports.fmt import DASH
from cudnn_hostbench.reports.verdict import paired, structure

HOST_TIMED = ("eager", "host")     # modes whose pairs must share a host state


@dataclass
class Comparison:
    """One side judged against the reference."""
    reference: str
    side: str
    judgement: paired.Judgement
    pairs: int = 0                  # sets in which both finished
    dropped: int = 0                # row pairs left out for differing host states
    on_ratio: bool = False
    kernels_changed: list = field(default_factory=list)
    rows: list = field(default_factory=list)        # the paired.PairedRow the judgement read


def figure(rec: Record, run: Run, on_ratio: bool, ratio: bool = True) -> tuple[float | None, bool]:
    """(log of the process's judged figure, whether it is a ratio) for one row of one process;
    ratio=False: its µs, whatever it is judged on."""
    if not rec.ok or not rec.samples:
        return None, False
    med = stats.median(rec.samples)
    ratio_mode = ratio and (rec.mode == "eager" or (on_ratio and rec.mode in ("graph", "device"))
                  or (rec.mode == "host" and bool(rec.baseline)))   # a host-bound row with a declared baseline
    base = run.baseline_of(rec) if ratio_mode and rec.role != "baseline" else None
    if base is not None and base.variant != rec.variant and base.samples:
        if len(base.samples) == len(rec.samples):
            r = stats.median(stats.paired_ratios(rec.samples, base.samples))
        else:
            r = med / stats.median(base.samples)
        return (math.log(r), True) if r > 0 else (None, True)
    return (math.log(med), False) if med > 0 else (None, False)


def row_class(rec: Record, level_us: float | None, on_ratio: bool) -> str:
    """The noise class whose rows share a variance prior: the mode and, for the call modes, the
    per-call level, since a GPU-bound call spreads about a tenth of a host-bound one's in every
    mode, and one prior over both fits neither (log 2026-12-06-0800)."""
    if rec.mode in ("eager", "graph", "device"):
        return f"{rec.mode} {structure.size_of(level_us or 0.0)}{' ratio' if on_ratio else ''}"
    return f"{rec.mode}{' ratio' if on_ratio else ''}"


def _kernels(recs: list[Record]) -> tuple:
    names = Counter(tuple(r.kernel_names) for r in recs if r.kernel_names)
    return names.most_common(1)[0][0] if names else ()


def pair_rows(pairs: list[tuple[Run, Run]], keys: list[tuple], on_ratio: bool) -> list[paired.PairedRow]:
    """Per row key (probe, variant, size, mode), its pair differences over `pairs` of (A, B) runs."""
    index = {id(run): {r.key: r for r in run.records} for pair in pairs for run in pair}
    floors = [floor_diff(a, b) for a, b in pairs]
    out = []
    for key in keys:
        row = _RowPairs()
        for a, b in pairs:
            row.add(index[id(a)].get(key), index[id(b)].get(key), a, b, on_ratio)
        if row.proto is not None:
            out.append(row.paired(key))
            out[-1].floors = floors
    _spread_kernel_change(out)
    return out


def floor_diff(run_a: Run, run_b: Run) -> float | None:
    """log(B's host floor / A's): the pair's covariate (verdict/covariate.py); None without both."""
    fa, fb = run_a.fingerprint.host_state.floor_us, run_b.fingerprint.host_state.floor_us
    return math.log(fb / fa) if fa and fb and fa > 0 and fb > 0 else None


class _RowPairs:
    """One row's pairs as they are read: the difference of each (None where unusable), why not."""

    def __init__(self) -> None:
        self.aligned: list = []
        self.dropped = self.missing = 0
        self.level: list = []
        self.ratio = False
        self.a_recs: list = []
        self.b_recs: list = []
        self.proto: Record | None = None
        self.us_diffs: list = []

    def add(self, rec_a: Record | None, rec_b: Record | None, run_a: Run, run_b: Run, on_ratio: bool) -> None:
        self.aligned.append(None)
        if rec_a is None or rec_b is None:
            return
        self.proto = self.proto or rec_a
        self.a_recs.append(rec_a)
        self.b_recs.append(rec_b)
        if rec_a.mode in HOST_TIMED and rec_a.host_state and rec_b.host_state and rec_a.host_state != rec_b.host_state:
            self.dropped += 1
            return
        fa, ratio_a = figure(rec_a, run_a, on_ratio)
        fb, _ = figure(rec_b, run_b, on_ratio)
        if fa is None or fb is None:
            self.missing += 1
            return
        self.ratio = self.ratio or ratio_a
        self.aligned[-1] = fb - fa
        if ratio_a:     # its µs too: evidence for the prior of the block baselines judged on µs
            ua, _ = figure(rec_a, run_a, False, ratio=False)
            ub, _ = figure(rec_b, run_b, False, ratio=False)
            if ua is not None and ub is not None:
                self.us_diffs.append(ub - ua)
        if rec_a.samples and rec_a.unit.startswith("us"):
            self.level.append(stats.median(rec_a.samples))

    def paired(self, key: tuple) -> paired.PairedRow:
        assert self.proto is not None
        lvl = stats.median(self.level) if self.level else None
        return paired.PairedRow(key, row_class(self.proto, lvl, self.ratio), [d for d in self.aligned if d is not None],
                                lvl, self.ratio, self.dropped, (_kernels(self.a_recs), _kernels(self.b_recs)),
                                self.proto.race, self.aligned, self.missing, self.us_diffs)


def _spread_kernel_change(rows: list[paired.PairedRow]) -> None:
    """A variant whose device row ran other kernels on the two sides ran them in every mode: its
    graph and eager rows of that size carry the same kernels, so they are KERNEL CHANGED too."""
    changed = {(r.key[0], r.key[1], r.key[2]): r.kernels for r in rows
               if r.kernels[0] and r.kernels[1] and r.kernels[0] != r.kernels[1] and not r.race}
    for r in rows:
        got = changed.get((r.key[0], r.key[1], r.key[2]))
        if got and not (r.kernels[0] and r.kernels[1]):
            r.kernels = got


def row_keys(cases: list) -> list[tuple]:
    """(probe, variant, size, mode) of the job's cases, in its order."""
    return list(dict.fromkeys((c[1], c[3], c[2], c[4]) for c in cases))


# ---- rendering ---------------------------------------------------------------------------------

def pct(fraction: float | None, digits: int = 1, sign: bool = True) -> str:
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return DASH
    return f"{fraction * 100:+.{digits}f} %" if sign else f"{fraction * 100:.{digits}f} %"


def _name(verdict: paired.RowVerdict) -> str:
    probe, variant, size, mode = verdict.key
    return f"{probe}/{size} {variant} {mode}"


def moved_first(rows: list) -> list:
    moved = [r for r in rows if r.moved]
    return sorted(moved, key=lambda verdict: -abs(verdict.change or 0.0))


def class_table(judgement: paired.Judgement) -> list[dict]:
    """Per class: rows, SAME, UNSURE, moved, the median and 75th-percentile MDC, its threshold."""
    out = []
    for cls in sorted({r.cls for r in judgement.rows}):
        rows = [r for r in judgement.rows if r.cls == cls]
        mdcs = sorted(r.mdc for r in rows if r.mdc is not None)
        prior = judgement.priors.get(cls)
        out.append({"class": cls, "rows": len(rows), "same": sum(r.verdict == "SAME" for r in rows),
                    "unsure": sum(r.verdict == "UNSURE" for r in rows), "moved": sum(r.moved for r in rows),
                    "median_mdc": _quantile(mdcs, 0.5), "p75_mdc": _quantile(mdcs, 0.75),
                    "threshold": paired.practical(cls), "prior_df": prior.df if prior else 0.0})
    return out


def _quantile(values: list, q: float) -> float | None:
    if not values:
        return None
    i = q * (len(values) - 1)
    lo = int(math.floor(i))
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (i - lo)


def text(comparison: Comparison, limit: int | None = 40) -> str:
    """The terminal report of one comparison."""
    j = comparison.judgement
    n = j.counts()
    lines = [f"{comparison.side} against {comparison.reference}: {comparison.pairs} pair(s), "
             f"{comparison.dropped} row pair(s) left out (host states differed); GPU rows judged on "
             + ("their ratio to the block baseline (the sides differ in cuDNN or the frontend alone)"
                if comparison.on_ratio else "µs"),
             "verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(n.items()))]
    if floor_line(j):
        lines.append(floor_line(j))
    moved = moved_first(j.rows)
    if moved:
        lines.append("")
        lines.append(f"{'verdict':<15} {'row':<48} {'change':>9} {'interval':>19} {'pairs':>5}")
        for r in moved[:limit] if limit else moved:
            lines.append(f"{r.verdict:<15} {_name(r)[:48]:<48} {change_text(r):>9} "
                         f"{pct(r.low) + '..' + pct(r.high):>19} {r.pairs:>5}" + (f"  {r.note}" if r.note else ""))
        if limit and len(moved) > limit:
            lines.append(f"… {len(moved) - limit} more moved rows in ab.md")
    unsure = j.undecided()
    if unsure:
        more = sorted(r.more_pairs or 0 for r in unsure)
        lines.append("")
        lines.append(f"UNSURE {len(unsure)}: MDC past the class threshold; median {more[len(more) // 2]} more pair(s) "
                     f"would decide them (ab.md lists each with its MDC)")
    lines.append("")
    lines.append(f"{'class':<24} {'rows':>5} {'SAME':>5} {'UNSURE':>6} {'moved':>5} {'median MDC':>10} "
                 f"{'75th MDC':>9} {'threshold':>9}")
    for row in class_table(j):
        lines.append(f"{row['class']:<24} {row['rows']:>5} {row['same']:>5} {row['unsure']:>6} {row['moved']:>5} "
                     f"{pct(row['median_mdc'], 2, False):>10} {pct(row['p75_mdc'], 2, False):>9} "
                     f"{pct(row['threshold'], 0, False):>9}")
    return "\n".join(lines)


def change_text(verdict: paired.RowVerdict) -> str:
    """The change the verdict judged, `*` where it is at equal host floors (verdict/covariate.py)."""
    return pct(verdict.change) + ("*" if verdict.floor_adjusted and verdict.change is not None else "")


def floor_line(judgement: paired.Judgement) -> str:
    """What the host floor took out of the eager rows (verdict/covariate.py), or why nothing."""
    floor = judgement.floor or {}
    if floor.get("rows"):
        slopes = ", ".join(f"{cls} {beta:+.2f}" for cls, beta in sorted(floor["slopes"].items()))
        return (f"eager rows judged at equal host floors (* in the change column): {floor['rows']} row(s); "
                f"slope per class {slopes}")
    if floor.get("note"):
        return f"eager rows not adjusted for the host floor: {floor['note']}"
    return ""


def markdown(comparisons: list[Comparison], header: str) -> str:
    out = [f"# A/B job\n\n{header}\n"]
    for c in comparisons:
        j = c.judgement
        out.append(f"## {c.side} against {c.reference}\n")
        out.append(f"{c.pairs} pair(s); {c.dropped} row pair(s) left out because the two processes ran in different "
                   f"host states. GPU rows are judged on "
                   + ("their ratio to the block's torch baseline in the same process (the sides differ in cuDNN or "
                      "the frontend alone)." if c.on_ratio else "their µs.")
                   + " Change: B over A, the 20 % trimmed mean of the pairs; interval "
                   f"{paired.INTERVAL:.0%}; MDC: the change caught with 80 % probability.\n")
        out.append("Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(j.counts().items())) + "\n")
        if floor_line(j):
            out.append(floor_line(j)[0].upper() + floor_line(j)[1:] + ".\n")
        rows = moved_first(j.rows) + sorted(j.undecided(), key=lambda verdict: -(verdict.mdc or math.inf))
        if rows:
            out.append("| verdict | probe | size | variant | mode | change | interval | MDC | pairs | note |")
            out.append("|---|---|---|---|---|---|---|---|---|---|")
            for r in rows:
                probe, variant, size, mode = r.key
                note = r.note or (f"{r.more_pairs} more pair(s) would decide it" if r.more_pairs else "")
                out.append(f"| {r.verdict} | {probe} | {size} | {variant} | {mode} | {change_text(r)} | "
                           f"{pct(r.low)} .. {pct(r.high)} | {pct(r.mdc, 2, False)} | {r.pairs} | {note} |")
            out.append("")
        out.append("| class | rows | SAME | UNSURE | moved | median MDC | 75th-percentile MDC | threshold | prior df |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for row in class_table(j):
            df = row["prior_df"]
            out.append(f"| {row['class']} | {row['rows']} | {row['same']} | {row['unsure']} | {row['moved']} | "
                       f"{pct(row['median_mdc'], 2, False)} | {pct(row['p75_mdc'], 2, False)} | "
                       f"{pct(row['threshold'], 0, False)} | {'∞' if df >= paired.MAX_DF else f'{df:.1f}'} |")
        out.append("")
    return "\n".join(out)


def csv_text(comparisons: list[Comparison]) -> str:
    buf = io.StringIO()
    cols = ["side", "reference", "probe", "variant", "size", "mode", "class", "verdict", "change", "low", "high",
            "mdc", "pairs", "pairs_dropped", "p", "q", "more_pairs", "on_ratio", "level_us", "note", "floor_adjusted"]
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for c in comparisons:
        for r in c.judgement.rows:
            d = r.to_dict()
            d.update(side=c.side, reference=c.reference, low=r.low, high=r.high, note=r.note)
            w.writerow(["" if d.get(k) is None else d.get(k) for k in cols])
    return buf.getvalue()


def json_doc(comparisons: list[Comparison], meta: dict) -> dict:
    regress = any(r.verdict == "SLOWER" for c in comparisons for r in c.judgement.rows)
    return {"kind": "hostbench ab", **meta, "pass": not regress,
            "comparisons": [{"side": c.side, "reference": c.reference, "pairs": c.pairs, "pairs_dropped": c.dropped,
                             "judged_on": "ratio to the block baseline" if c.on_ratio else "us",
                             "counts": c.judgement.counts(), "classes": class_table(c.judgement),
                             "floor": c.judgement.floor,
                             "rows": [r.to_dict() for r in c.judgement.rows]} for c in comparisons]}


def chart(comparisons: list[Comparison], path: Path) -> Path | None:
    """Every row's change with its interval, a panel per class (seaborn), rows sorted by change."""
    rows = [(c.side, r) for c in comparisons for r in c.judgement.rows if r.change is not None]
    if not rows:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns
    df = pd.DataFrame([{"side": s, "class": r.cls, "change %": r.change * 100, "low": r.low * 100,
                        "high": r.high * 100, "verdict": r.verdict} for s, r in rows])
    df = df.sort_values(["class", "change %"]).reset_index(drop=True)
    df["rank"] = df.groupby(["side", "class"]).cumcount()
    classes = list(dict.fromkeys(df["class"]))
    g = sns.FacetGrid(df, col="class", col_wrap=min(4, len(classes)), sharex=False, sharey=False, height=2.6,
                      aspect=1.3, col_order=classes)

    def panel(data, **kw):
        ax = plt.gca()
        ax.vlines(data["rank"], data["low"], data["high"], color="0.7", linewidth=0.6)
        sns.scatterplot(data=data, x="rank", y="change %", hue="verdict", ax=ax, s=8, linewidth=0,
                        hue_order=["SAME", "UNSURE", "SLOWER", "FASTER", "KERNEL CHANGED"],
                        palette={"SAME": "0.4", "UNSURE": "#d9a400", "SLOWER": "#c0392b", "FASTER": "#2471a3",
                                 "KERNEL CHANGED": "#7d3c98"}, legend=False)
        ax.axhline(0, color="black", linewidth=0.5)
    g.map_dataframe(panel)
    g.set_titles("{col_name}")
    g.set_axis_labels("rows, by change", "B over A, %")
    g.figure.suptitle(", ".join(f"{c.side} vs {c.reference}" for c in comparisons), y=1.02, fontsize=9)
    g.figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(g.figure)
    return path


_LOADED: dict = {}     # (path, size, mtime) -> Run: a job judges after every set, over the same files


def load_proc(path: Path) -> Run | None:
    """A finished process's records, or None when they cannot be read (the job says so)."""
    try:
        st = path.stat()
        stamp = (str(path), st.st_size, st.st_mtime_ns)
        if stamp not in _LOADED:
            _LOADED[stamp] = load_run(path)
        return _LOADED[stamp]
    except Exception:  # noqa: BLE001 - RunFileError, a truncated line, a missing file: not used
        return None


def judge_job(job_dir: Path, spec, procs, q: float = paired.Q, gpu_figure: str = "auto") -> list[Comparison]:
    """Every side against the reference, from the job's finished processes."""
    from cudnn_hostbench.bench.measure.workers import interleave
    k = len(spec.sides)
    on_ratio = gpu_figure == "ratio" or (gpu_figure == "auto" and all(s.cudnn_only for s in spec.sides))
    keys = row_keys(spec.cases)
    cache: dict = {}

    def run_of(proc):
        if proc.index not in cache:
            cache[proc.index] = load_proc(proc.records)
        return cache[proc.index]
    out = []
    for side, plist in interleave.pairs(procs, k, spec.reference).items():
        runs = [(run_of(a), run_of(b)) for a, b in plist]
        runs = [(a, b) for a, b in runs if a is not None and b is not None]
        rows = pair_rows(runs, keys, on_ratio)
        j = paired.judge(rows, q)
        c = Comparison(spec.sides[spec.reference].label, spec.sides[side].label, j, len(runs),
                       sum(r.dropped for r in rows), on_ratio, rows=rows)
        c.kernels_changed = [r.key for r in j.rows if r.verdict == "KERNEL CHANGED"]
        out.append(c)
    return out


def write_reports(job_dir: Path, comparisons: list[Comparison], meta: dict, header: str) -> list[Path]:
    import gzip

    from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
    from cudnn_hostbench.reports.judge.validate_ab import pairs_doc
    tmp = job_dir / "pairs.json.gz.tmp"
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:     # the pairs, for `hostbench ab-check`
        json.dump(pairs_doc(comparisons), fh)
    tmp.replace(job_dir / "pairs.json.gz")
    paths = [job_dir / "pairs.json.gz", write_text_atomic(job_dir / "ab.md", markdown(comparisons, header)),
             write_text_atomic(job_dir / "ab.csv", csv_text(comparisons)),
             write_text_atomic(job_dir / "ab.json", json.dumps(json_doc(comparisons, meta), indent=1))]
    try:
        png = chart(comparisons, job_dir / "ab.png")
    except Exception as e:  # noqa: BLE001 - a chart that cannot be drawn costs the chart, not the verdicts
        print(f"hostbench ab: no chart ({type(e).__name__}: {e})", file=sys.stderr)
        png = None
    return paths + ([png] if png else [])
