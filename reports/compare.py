"""`hostbench compare BASE NEW`: per-benchmark verdicts between two runs, for people and CI.

The verdict rule is reports/gate.judge, one implementation that `compare`, the version matrix
and the history check's fallback (too little history) all call; its floors per mode are
gate.floors_text(), which the README and docs/compare.md quote. In short, per (probe, variant,
size, mode): the change is that of the median over worker processes; it must pass the row's noise
floor (the mode's minimum effect, raised by the workers' spread) AND the workers must agree (their
ranges separate, or a Mann-Whitney U test on the per-worker figures, p < alpha = 0.01; with one
process a side, on the per-round samples). Else the row is SAME (within the floor) or UNSURE.
Rows in one run only are ADDED / REMOVED; rows without samples on a side are UNMEASURED with their
statuses in `note`; a slower row on other kernels is KERNEL CHANGED (a regression under
--fail-on-regression unless --allow-kernel-change). The history check against a row's own past
(reports/history/check.py) keeps KERNEL CHANGED and the host-state rules but judges against the
noise learned from that past, with smaller minimum effects (check.MIN_EFFECT): a row's history
knows its noise better than two runs do.

With `normalize`, every sample is first divided by the same run's baseline variant (usually
torch_mm) of the same probe/size/mode, round by round when the rounds pair up, else by the
baseline's median, so a slower host or clock moves both and cancels out.
"""
from __future__ import annotations

import json
import math
import statistics
import textwrap

from cudnn_hostbench.bench.measure import machine
from cudnn_hostbench.bench.measure.records import MIN_PROCESSES, UNIT_SECONDS, Record, Run

from . import fmt, gate
from .history import noise, plans

# fingerprint fields that describe the run itself (or are measurements), not the environment
NOT_ENV = {"datetime", "commit_info", "argv", "suite_wall_s", "wall_s", "calibration_us"}
# shown first when they differ: the ones most likely to explain a change
KEY_FIELDS = ("gpu_name", "sm_count", "driver", "cuda", "cudnn_backend", "cudnn_torch",
              "cudnn_frontend", "torch", "python", "cpu_model", "clock_source", "cudnn_env", "options")
COLUMNS = ["probe", "variant", "size", "mode", "unit", "base", "new", "change", "p",
           "n_base", "n_new", "verdict", "note", "base_abs", "new_abs"]


def normalized(run: Run, rec: Record) -> list[float] | None:
    """`rec`'s samples over its baseline's, paired by round when the rounds align."""
    b = run.baseline_of(rec)
    if b is None:
        return None
    if len(b.samples) == len(rec.samples):
        return [x / y for x, y in zip(rec.samples, b.samples) if y and y > 0]
    med = statistics.median(b.samples)
    return [x / med for x in rec.samples] if med > 0 else None


def kernels_of(run: Run, rec: Record) -> frozenset:
    """Names of the kernels the same (probe, variant, size) ran in device mode (counts dropped)."""
    d = rec if rec.mode == "device" else run.find(rec.probe, rec.variant, rec.size, "device")
    return frozenset(n.rsplit(" x", 1)[0] for n in (d.kernel_names if d is not None else []))


def _side(run: Run, rec: Record, on_ratio: bool, factor: float = 1.0) -> gate.Side:
    """A record's worker-level values (ratios to its baseline when on_ratio), and its rounds."""
    if on_ratio:
        vals = [w["ratio"] for w in rec.workers if w.get("ratio") is not None]
        if not vals and rec.ratio:
            vals = [rec.ratio.median]
        rounds = normalized(run, rec) or []
        if not vals and rounds:
            vals = [statistics.median(rounds)]
    else:
        vals = [w["median"] for w in rec.workers if w.get("median") is not None]
        rounds = list(rec.samples)
        if not vals and rounds:
            vals = [statistics.median(rounds)]
    hs = (run.fingerprint or {}).get("host_state") or {}
    us = rec.summary().median if rec.ok else 0.0
    per_call_us = us * UNIT_SECONDS.get(rec.unit, 1e-6) / 1e-6 if us else 0.0
    if factor != 1.0:   # another machine start: its GPU-bound rows are seen through its machine factor
        vals, rounds = [v / factor for v in vals], [x / factor for x in rounds]
    rule = plans.rule_of(rec.plan_rule, plans.measurement_version(run.fingerprint or {}), rec.probe, rec.variant)
    return gate.Side(vals, rounds, bool(hs.get("unstable")) or "host_unstable" in (rec.flags or ()),
                     kernels_of(run, rec), rec.host_state, per_call_us, rec.probe, rec.variant,
                     plans.is_race(rule), rec.processes, "clock_drop" in (rec.flags or ()))


def machines(base: Run, new: Run) -> dict:
    """Where the two runs ran: their starts and GPUs, and whether they share them ('' = unknown)."""
    fa, fb = base.fingerprint or {}, new.fingerprint or {}
    sa, sb, ga, gb = machine.start_of(fa), machine.start_of(fb), machine.gpu_of(fa), machine.gpu_of(fb)
    return {"base_start": sa, "new_start": sb, "same_start": bool(sa and sa == sb),
            "same_gpu": bool(ga and ga == gb) or bool(sa and sa == sb),
            "cross_start": bool(sa and sb and sa != sb)}


def _gpu_bound_us(rec: Record) -> float:
    us = rec.summary().median if rec.ok else 0.0
    return us * UNIT_SECONDS.get(rec.unit, 1e-6) / 1e-6 if us else 0.0


def machine_factor(a: dict, b: dict) -> float | None:
    """The new run's machine factor against the base: the median ratio of their GPU-bound rows
    (graph/device, 20 µs or more per call), None with fewer than noise.MIN_FACTOR_ROWS of them."""
    logs = []
    for key, ra in a.items():
        rb = b.get(key)
        if rb is None or ra.mode not in ("graph", "device") or not (ra.ok and rb.ok):
            continue
        ua, ub = _gpu_bound_us(ra), _gpu_bound_us(rb)
        if min(ua, ub) >= noise.GPU_BOUND_US:
            logs.append(math.log(ub / ua))
    return math.exp(statistics.median(logs)) if len(logs) >= noise.MIN_FACTOR_ROWS else None


def cross_floor(mode: str, on_ratio: bool, per_call_us: float, probe: str = "", variant: str = "") -> float:
    """The least change judged between two machine starts: K x the sd of a difference of two runs
    of different starts, from the committed fleet's noise (history.noise.FLEET); for an eager ratio
    that follows each host's speed, its own measured floor (gate.CROSS_START_THRESHOLD) when higher."""
    cls = ("eager", "ratio" if on_ratio else "us") if mode == "eager" else (
        ("host", "*") if mode == "host" else (mode, "heavy" if per_call_us >= noise.HEAVY_US
                                              else "gpu-bound" if per_call_us >= noise.GPU_BOUND_US else "light"))
    w, b = noise.FLEET.get(cls, (0.0, 0.0))
    own = gate.cross_start_threshold(probe, variant, mode) if on_ratio else 0.0
    return max(CROSS_K * math.sqrt(2 * (w * w + b * b)), own)


CROSS_K = 3.0   # as the history check's K


def compare(base: Run, new: Run, threshold: float | None = None, alpha: float = gate.ALPHA,
            normalize: bool = False, min_samples: int = 5, absolute: bool = False):
    """A DataFrame with one row per (probe, variant, size, mode) in either run (see COLUMNS).

    Eager rows with a baseline are judged on their paired ratio to it (`absolute` turns that
    off); `normalize` judges every mode so. `threshold` None takes gate.THRESHOLD per mode.
    """
    import pandas as pd

    a = {r.key: r for r in base.records}
    b = {r.key: r for r in new.records}
    where = machines(base, new)
    factor = machine_factor(a, b) if where["cross_start"] and not normalize else None
    keys = list(a) + [k for k in b if k not in a]
    # keep each probe/size/mode together (unmeasured records come last in a run file)
    first = {}
    for k in keys:
        first.setdefault((k[0], k[2], k[3]), len(first))
    keys.sort(key=lambda k: first[(k[0], k[2], k[3])])
    rows = []
    for key in keys:
        ra, rb = a.get(key), b.get(key)
        row = dict(zip(("probe", "variant", "size", "mode"), key))
        row.update(unit=(ra or rb).unit, base=float("nan"), new=float("nan"), change=float("nan"),
                   p=float("nan"), n_base=len(ra.samples) if ra else 0,
                   n_new=len(rb.samples) if rb else 0, note="", base_abs=float("nan"), new_abs=float("nan"))
        if ra is None or rb is None:
            r = ra or rb
            row["verdict"] = "REMOVED" if rb is None else "ADDED"
            if r.ok:
                row["base" if rb is None else "new"] = r.summary().median
            row["note"] = "" if r.ok else r.status
            rows.append(row)
            continue
        if not (ra.ok and rb.ok):
            row["verdict"] = "UNMEASURED"
            why = lambda r: r.status if r.status != "ok" else "no samples"  # noqa: E731
            row["note"] = f"both: {why(ra)}" if why(ra) == why(rb) else f"base: {why(ra)}; new: {why(rb)}"
            rows.append(row)
            continue
        row.update(base_abs=ra.summary().median, new_abs=rb.summary().median)
        bl = base.baseline_of(ra)
        if list(ra.samples) == list(rb.samples) and ra.workers == rb.workers:
            row.update(verdict="SAME", change=0.0, p=1.0, note="identical samples")
            rows.append(row)
            continue
        if normalize and bl is ra:
            row.update(verdict="SAME", note="the baseline itself")
            rows.append(row)
            continue
        on_ratio = (normalize or (ra.mode == "eager" and not absolute)) and bl is not None and bl is not ra
        gpu_bound = ra.mode in ("graph", "device") and min(_gpu_bound_us(ra), _gpu_bound_us(rb)) >= noise.GPU_BOUND_US
        fac = factor if factor and gpu_bound and not on_ratio else 1.0
        sa, sb = _side(base, ra, on_ratio), _side(new, rb, on_ratio, fac)
        if on_ratio and (not sa.values or not sb.values) and normalize:
            row.update(verdict="UNSURE", note="no baseline to normalize by")
            rows.append(row)
            continue
        if on_ratio and (not sa.values or not sb.values):
            on_ratio = False
            sa, sb = _side(base, ra, False), _side(new, rb, False)
        if on_ratio:
            row["unit"] = f"x {bl.variant}"
        floor_min = cross_floor(ra.mode, on_ratio, min(sa.per_call_us, sb.per_call_us), ra.probe, ra.variant) \
            if where["cross_start"] and threshold is None else 0.0
        v, change, p, note = gate.judge(sa, sb, ra.mode, threshold, alpha, min_samples, floor_min=floor_min)
        if fac != 1.0:
            note = "; ".join(x for x in (f"beyond the machine factor {(fac - 1) * 100:+.1f} %", note) if x)
        if v not in ("UNMEASURED",) and 0 < min(sa.processes, sb.processes) < MIN_PROCESSES:
            note = "; ".join(x for x in (note, f"{min(sa.processes, sb.processes)} process(es) on a side") if x)
        if normalize and bl is None:   # a probe without a baseline (noop, build-time rows)
            note = "; ".join(x for x in ("no baseline: judged on its own figures", note) if x)
        if ra.mode == "eager" and not on_ratio and not absolute and v in ("SLOWER", "FASTER"):
            # a baseline's own eager µs move with the host between processes; its trap and fix
            # rows are judged on ratios to it instead
            v, note = "UNSURE", "absolute eager µs (host-bound between processes; --absolute judges them)"
        row.update(base=statistics.median(sa.values) if sa.values else float("nan"),
                   new=statistics.median(sb.values) if sb.values else float("nan"),
                   change=change, p=p, verdict=v, note=note)
        if ra.unit != rb.unit and not on_ratio:
            row.update(verdict="UNSURE", note=f"units differ ({ra.unit} vs {rb.unit})")
        rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs.update(where, machine_factor=factor)
    return df


def machine_line(df) -> str:
    """The header line on where the two runs ran and which scale judged them."""
    m = df.attrs
    if not m:
        return ""
    if m.get("same_start"):
        return "machines: same GPU, same machine start: judged on the pairwise floors (a twin replicates; it does not confirm)"
    if m.get("cross_start"):
        gpu = "same GPU after a reboot" if m.get("same_gpu") else "different GPUs"
        f = m.get("machine_factor")
        fac = (f"; the new run's GPU runs GPU-bound rows {abs(f - 1) * 100:.1f} % "
               f"{'slower' if f > 1 else 'faster'} than the base's, and they are judged beyond that" if f else "")
        return f"machines: different machine starts ({gpu}): judged with the between-start scale{fac}"
    return ""    # a run of unknown start (before machine identity): judged as before, nothing to say


def _same(x, y) -> bool:
    return json.dumps(x, sort_keys=True, default=str) == json.dumps(y, sort_keys=True, default=str)


def fingerprint_diff(base: Run, new: Run) -> list[tuple[str, object, object]]:
    """(field, base value, new value) for each environment field that differs, key fields first;
    dict fields (capabilities, cudnn_env) are named down to the entry that differs."""
    fa, fb = base.fingerprint or {}, new.fingerprint or {}
    fields = [k for k in KEY_FIELDS if k in fa or k in fb]
    fields += sorted(k for k in set(fa) | set(fb) if k not in KEY_FIELDS and k not in NOT_ENV)
    out = []
    for k in fields:
        a, b = fa.get(k), fb.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [(f"{k}.{s}", _brief(a.get(s)), _brief(b.get(s))) for s in sorted(set(a) | set(b), key=str)
                    if not _same(a.get(s), b.get(s))]
        elif not _same(a, b):
            out.append((k, _brief(a), _brief(b)))
    return out


def _brief(value):
    """Per-worker host summaries carry a histogram of thousands of readings: an environment
    line names each worker's floor and fast fraction instead (the run file keeps the rest)."""
    if isinstance(value, list) and value and all(isinstance(w, dict) and "floor_us" in w for w in value):
        return ", ".join(f"w{i} " + (f"floor {w['floor_us']:.3f} µs" if w.get("floor_us") else "no floor")
                         + f" ({w.get('fast_fraction') or 0:.0%} fast)" for i, w in enumerate(value, 1))
    return value


def rounded(value) -> str:
    """A fingerprint value as text, every float to 3 significant digits (a measured start-up time
    or clock reads 4.13, not 4.130000000000003), dicts as k=v."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={rounded(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(rounded(v) for v in value) + "]"
    return str(value)


# fingerprint fields that name a package or toolkit version (issue 17: named first when they differ)
VERSION_FIELDS = ("torch", "cudnn_frontend", "cudnn_backend", "cudnn_torch", "cuda", "driver", "python",
                  "pytest", "pytest_benchmark", "pytest-benchmark", "numpy", "packages", "versions")


def is_version(field: str) -> bool:
    head = field.split(".", 1)[0]
    return head in VERSION_FIELDS or "version" in head


def version_diff(diff) -> list:
    """The entries of fingerprint_diff() that are package/toolkit versions."""
    return [d for d in diff if is_version(d[0])]


def env_lines(diff, width: int = 120, indent: str = "  ") -> list[str]:
    """One line per differing field, rounded, cut to `width` with '…'."""
    out = []
    for k, x, y in diff:
        line = f"{indent}{k}: {rounded(x)} -> {rounded(y)}"
        out.append(line if len(line) <= width else line[:width - 1] + "…")
    return out


def table_rows(df) -> list[list[str]]:
    out = []
    for r in df.itertuples(index=False):
        digits = 3 if r.unit.startswith("x ") else 2
        out.append([r.probe, str(r.size), r.mode, r.variant, fmt.num(r.base, digits, "-"),
                    fmt.num(r.new, digits, "-"), fmt.unit_text(r.unit),
                    "-" if r.change != r.change else f"{r.change * 100:+.1f}%",
                    "-" if r.p != r.p else f"{r.p:.2g}", r.verdict, r.note])
    return out


HEADER = ["probe", "size", "mode", "variant", "base", "new", "unit", "change", "p", "verdict", "note"]
# what a reader acts on first; the rest after it, as compare() listed them
ROW_ORDER = ["SLOWER", "KERNEL CHANGED", "FASTER", "UNSURE", "ADDED", "REMOVED", "UNMEASURED", "SAME"]


def sorted_rows(df):
    """Rows by verdict (SLOWER, KERNEL CHANGED, FASTER, UNSURE, then the rest), then by probe;
    a probe's rows keep their order."""
    rank = {v: i for i, v in enumerate(ROW_ORDER)}
    key = df["verdict"].map(lambda v: rank.get(v, len(rank)))
    return df.assign(_k=key.values).sort_values(["_k", "probe"], kind="stable").drop(columns="_k")


def unmeasured_in_both(df):
    """Rows neither run measured (unsupported, failed or without samples on both sides)."""
    return (df["verdict"] == "UNMEASURED") & (df["note"].str.startswith("both:")
                                              | ((df["n_base"] == 0) & (df["n_new"] == 0)))


def _lines(rows, left=None) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    left = left or [True] * len(widths)
    lines = ["  ".join(c.ljust(w) if lf else c.rjust(w) for c, w, lf in zip(r, widths, left)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _unit_tag(unit: str) -> str:
    """A figure's unit once the unit column is gone: × for a ratio, nothing for µs/call."""
    return "×" if unit.startswith("x ") else "" if unit == "µs/call" else f" {unit}"


def _fitted(rows: list[list[str]], width: int) -> tuple[list[str], list[str]]:
    """(lines, dropped column names): p, then unit, then probe and size, then the variant move out
    of the columns (the names into heading lines); figures, change and verdict always stay whole."""
    numeric = {"base", "new", "change", "p"}
    drops = [(), ("p",), ("p", "unit"), ("p", "unit", "probe", "size"), ("p", "unit", "probe", "size", "variant")]
    for level, drop in enumerate(drops):
        cols = [i for i, h in enumerate(HEADER) if h not in drop]
        named = [i for i in (0, 1, 3) if HEADER[i] in drop]   # names said in heading lines
        body = [list(r) for r in rows]
        if "unit" in drop:
            for r in body:
                tag = _unit_tag(r[6])
                r[4], r[5] = (x if x == "-" else x + tag for x in (r[4], r[5]))
        lines = _lines([[HEADER[i] for i in cols]] + [[r[i] for i in cols] for r in body],
                       [HEADER[i] not in numeric for i in cols])
        if named:
            out, last = ["  " + x for x in lines[:2]], None
            for r, line in zip(body, lines[2:]):
                if tuple(r[i] for i in named) != last:
                    last = tuple(r[i] for i in named)
                    out += textwrap.wrap(" · ".join(last), width, subsequent_indent="    ", break_long_words=True)
                out.append("  " + line)
            lines = out
        if max(map(len, lines)) <= width or level == len(drops) - 1:
            return lines, [d for d in drop if d not in ("probe", "size", "variant")]
    return lines, []


def text_table(df, width: int | None = None, wide: bool = False) -> str:
    """The rows as text, sorted by verdict then probe (sorted_rows); rows neither run measured are
    a count under the table. Each note is printed once, under the table, numbered. Unless `wide`,
    every line fits `width` (default: the terminal's): see _fitted."""
    width = fmt.term_width() if width is None else width
    both = unmeasured_in_both(df)
    rows = table_rows(sorted_rows(df[~both]))
    tail = textwrap.wrap(f"({int(both.sum())} row(s) unmeasured in both runs, not listed: --markdown FILE lists "
                         "every row)", 10**6 if wide else width) if both.any() else []
    if wide or not rows:
        return "\n".join((_lines([HEADER] + rows) if rows else []) + tail)
    notes: dict[str, int] = {}
    for r in rows:
        if r[-1]:
            r[-1] = f"[{notes.setdefault(r[-1], len(notes) + 1)}]"
    lines, dropped = _fitted(rows, width)
    lines = [x if len(x) <= width else x[:width - 1] + "…" for x in lines]
    for note, k in notes.items():
        lines += textwrap.wrap(f"[{k}] {note}", width, subsequent_indent="    ", break_long_words=True)
    if dropped:
        what = " and ".join(dropped) + (" column" if len(dropped) == 1 else " columns")
        lines += textwrap.wrap(f"({what} left out to fit {width} columns"
                               + ("; × marks a ratio to the probe's baseline, other figures µs/call unless named"
                                  if "unit" in dropped else "") + "; --wide shows every column)", width)
    return "\n".join(lines + tail)


def markdown(df, base: Run, new: Run, diff, threshold: float, alpha: float, normalize: bool) -> str:
    """Everything, every row (SAME too), for a file: verdict counts, versions that differ, rows,
    then the other environment differences."""
    lines = ["# hostbench compare", "", f"- base: `{base.path}` ({base.datetime or 'no date'})",
             f"- new: `{new.path}` ({new.datetime or 'no date'})",
             "- rule: |change of the median over workers| > the row's noise floor (at least "
             + (f"{threshold * 100:g} %" if threshold is not None else gate.floors_text())
             + f", and 1.5x the between-worker spread) and the workers agree (separation or U test p < {alpha:g})"
             + (" on samples normalized by the run's baseline variant" if normalize else ""),
             f"- {summary(df)}", ""]
    vers = version_diff(diff)
    if vers:
        lines += ["## Versions that differ", "", fmt.md_table(["package", "base", "new"],
                                                             [(k, rounded(x), rounded(y)) for k, x, y in vers]), ""]
    lines += ["## Results", "", fmt.md_table(HEADER, table_rows(sorted_rows(df))), ""]
    rest = [d for d in diff if d not in vers]
    if rest:
        lines += ["## Environment differences", "",
                  fmt.md_table(["field", "base", "new"], [(k, rounded(x), rounded(y)) for k, x, y in rest]), ""]
    return "\n".join(lines)


ORDER = ["SLOWER", "KERNEL CHANGED", "FASTER", "UNSURE", "PICK CHANGED", "SAME", "ADDED", "REMOVED", "UNMEASURED"]
JUDGED = ("SLOWER", "FASTER", "KERNEL CHANGED", "PICK CHANGED", "UNSURE", "SAME")   # rows both runs measured


def summary(df) -> str:
    counts = df["verdict"].value_counts()
    order = ORDER + sorted(v for v in counts.index if v not in ORDER)  # a verdict added later still counts
    both = int(unmeasured_in_both(df).sum()) if len(df) else 0
    return ", ".join(f"{counts[v]} {v}" + (f" ({both} in both runs)" if v == "UNMEASURED" and both else "")
                     for v in order if v in counts) or "nothing to compare"


def judged(df) -> int:
    """How many rows both runs measured (the rows a verdict says something about)."""
    return int(df["verdict"].isin(JUDGED).sum())


def regressions(df, kernel_change_fails: bool = True) -> list[str]:
    """One line per row that fails a gate: SLOWER, and (unless told otherwise) KERNEL CHANGED
    with a slower median, naming the kernels."""
    out = []
    for r in df.itertuples(index=False):
        name = f"{r.probe}/{r.variant}/{r.size} {r.mode}"
        if r.verdict == "SLOWER":
            out.append(f"SLOWER {name} {r.change * 100:+.1f}%")
        elif r.verdict == "KERNEL CHANGED" and kernel_change_fails and r.change == r.change and r.change > 0:
            out.append(f"SLOWER on changed kernels {name} {r.change * 100:+.1f}% ({r.note})")
    return out
