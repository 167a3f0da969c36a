"""Renders the figure sections of README.md and of each GPU's results page (docs/results/<gpu>.md)
from the committed runs (reports/reference/<gpu>/), so no figure is typed in by hand.

    hostbench readme-figures              # rewrite the sections between the markers in every file
    hostbench readme-figures --gpu h100   # only that GPU's results page
    hostbench readme-figures --check      # exit 1 if a file is out of date; write nothing

A section is the text between `<!-- BEGIN:name -->` and `<!-- END:name -->`; each file gets the
sections whose markers it has, with links relative to its own folder. The README has the GPUs side
by side (`gpus`: the headline calls with the guide's B200 figures; `traps`: each trap against its
fix), as ratios to each run's own baseline; a results page has one GPU's figures (headline,
clocks, engines, framework, versions, audit).
"""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from cudnn_hostbench.bench.measure.runfile import records, trust
from cudnn_hostbench.bench.measure.runfile.environment import known
from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES
from cudnn_hostbench.reports import pack_cost, run_summary, store
from cudnn_hostbench.scripts.cli import alias, exit_with

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REFERENCES = ROOT / "reports" / "reference"   # one folder per GPU: run.json(.gz), matrix/, audit-*/ …
PAGES = ROOT / "docs" / "results"             # one results page per GPU: <gpu>.md


class Reference:
    """One GPU's committed runs (reports/reference/<gpu>/) and its results page."""

    def __init__(self, gpu: str):
        self.gpu = gpu
        self.folder = REFERENCES / gpu
        self.page = PAGES / f"{gpu}.md"
        self.run_file = records.run_file_in(self.folder) or self.folder / "run.json"
        self.matrix = self.folder / "matrix"
        self.audits = {k: self.folder / f"audit-{k}" / "audit.md" for k in ("naive", "fixed")}
        self.waterfall = self.folder / "waterfall"
        self.crossover = self.folder / "crossover" / "crossover.json"

    def load(self):
        return records.load_run(self.run_file)


def references() -> list[Reference]:
    """Every GPU with a committed reference run, by folder name."""
    if not REFERENCES.is_dir():
        return []
    return [Reference(p.name) for p in sorted(REFERENCES.iterdir()) if records.run_file_in(p)]


VERSION_ROWS = [("set_stream", "set_stream_same"), ("set_stream", "raw_set_stream"), ("set_stream", "set_once"),
                ("execute", "generic"), ("execute", "pinned"), ("execute", "ordered"), ("execute", "autotuned"),
                ("execute", "torch_mm")]

# The guide's B200 figures (cuDNN 9.26, 256^3 bf16): quoted from the guide for comparison, not ours.
# Its "pinned plan" is execute_plan_at_index on the autotuned plan: our execute/autotuned row.
GUIDE_B200 = {("execute", "torch_mm"): 7.6, ("execute", "autotuned"): 8.4, ("execute", "generic"): 13.2,
              ("wrapper", "naive"): 21.0}
CORE_PROBES = {"noop", "execute", "set_stream", "churn", "transpose", "interleave", "wrapper"}
HEADLINE = [  # (row label, probe, variant): the call path on one plan first, then the engine apart
    ("torch.mm", "execute", "torch_mm"),
    ("generic execute, the heuristic's plan", "execute", "generic"),
    ("execute_plan_at_index(dict), same plan", "execute", "pinned"),
    ("ordered tensor_uids form, same plan", "execute", "ordered_pinned"),
    ("private raw-pointer floor, same plan", "execute", "raw_floor"),
    ("execute_plan_at_index(dict), autotuned plan", "execute", "autotuned"),
    ("ordered form, autotuned plan", "execute", "autotuned_ordered"),
    ("naive wrapper", "wrapper", "naive"),
    ("fixed wrapper, same plan", "wrapper", "fixed"),
    ("fixed wrapper, autotuned plan", "wrapper", "fixed_autotuned"),
]
# The README's table: one trap against its fix per probe, at the probe's first size
# (trap number in the guide or "–", probe, trap variant, fix variant).
TRAPS = [
    ("1", "rebuild", "rebuild", "cache_hit"),
    ("2", "execute", "generic", "ordered"),
    ("3", "set_stream", "query_and_set", "set_once"),
    ("4", "churn", "all_three", "reuse"),
    ("5", "transpose", "contiguous_copy", "strided_view"),
    ("6", "fusion", "torch_unfused", "cudnn_fused"),
    ("6", "conv", "torch_unfused", "cudnn_fused"),
    ("7", "interleave", "alternating", "phased"),
    ("–", "wrapper", "naive", "fixed"),
    ("–", "registration", "custom_op", "library"),
]
def _link(path: Path, base: Path) -> str:
    """`path` as a Markdown link target from a document in folder `base`."""
    return Path(os.path.relpath(path, base)).as_posix()


def _wrap(text: str, width: int = 100) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)


def _first_size(run, probe: str) -> str | None:
    for r in run.records:
        if r.probe == probe:
            return r.size
    return None


def _ratio_fig(rec, used: set) -> str:
    """A trap or fix's eager ratio to its baseline with its marks ('1.00×' for the baseline itself,
    '–' when not measured); notes the marks in `used`."""
    if rec is None or not rec.ok:
        return "–"
    used.update(trust.shown_flags(rec))
    return f"{rec.ratio.median:.2f}×{trust.badge(rec)}" if rec.ratio else "1.00×"


def _measured_on(ref: Reference, run, base: Path) -> str:
    fp = run.fingerprint
    return (f"{ref.gpu.upper()}: {known(fp.gpu_name)}, cuDNN {known(fp.cudnn_backend)}, frontend "
            f"{known(fp.cudnn_frontend)}, torch {known(fp.torch)}, {run.datetime[:10]}, "
            f"[{_link(ref.run_file, ROOT)}]({_link(ref.run_file, base)})")


def _marks_line(used: set) -> list[str]:
    if not used:
        return []
    marks = "; ".join(f"⚑{trust.MARKS[k].letter}: {trust.MARKS[k].short}" for k in trust.SHOWN if k in used)
    return _wrap(f"Marks on these figures: {marks}.")


def traps(gpus: list, base: Path = ROOT) -> str:
    """The README's trap table: each trap against its fix at the probe's first size, eager, as the
    ratio to the probe's baseline in each GPU's own run. `gpus`: (Reference, run) pairs."""
    rows: list[str] = []
    used: set = set()
    for num, probe, trap, fix in TRAPS:
        cells = []
        for _, run in gpus:
            size = _first_size(run, probe)
            eager = [run.find(probe, v, size, "eager") for v in (trap, fix)]
            ok = size is not None and all(r is not None and r.ok for r in eager)
            cells.append(f"{_ratio_fig(eager[0], used)} → {_ratio_fig(eager[1], used)}" if ok else "–")
        if all(c == "–" for c in cells):
            continue
        size = _first_size(gpus[0][1], probe) or _first_size(gpus[-1][1], probe)
        rows.append(f"| {num} | {probe} {size} | {trap} → {fix} | " + " | ".join(cells) + " |")
    if not rows:
        return ""
    head = " | ".join(f"{ref.gpu.upper()} × baseline" for ref, _ in gpus)
    runs = ", ".join(f"[{ref.gpu.upper()}]({_link(ref.run_file, base)}) ({known(run.fingerprint.gpu_name)}, "
                     f"frontend {known(run.fingerprint.cudnn_frontend)}, {run.datetime[:10]})" for ref, run in gpus)
    lines = [f"| trap | probe, size | trap → fix | {head} |", "|---|---|---|" + "---|" * len(gpus), *rows, "",
             *_wrap("Eager; × baseline: the median round-by-round ratio to the probe's baseline in the same run "
                    "(torch.mm; for fusion and conv torch's unfused ops). Trap: its number in the guide (– for "
                    f"composite rows). Runs: {runs}."), *_marks_line(used)]
    return "\n".join(lines)


def gpus_headline(gpus: list, base: Path = ROOT) -> str:
    """The README's headline: the guide's four call paths at 256³ bf16 on each GPU of ours, eager
    µs/call with the ratio to the same run's torch.mm, beside the guide's own B200 figures."""
    used: set = set()
    guide_mm = GUIDE_B200[("execute", "torch_mm")]
    head = " | ".join(f"{ref.gpu.upper()}" for ref, _ in gpus)
    lines = [f"| 256³ bf16, eager µs/call (× torch.mm) | {head} | guide's B200 figures |",
             "|---|" + "---|" * len(gpus) + "---|"]
    for (probe, variant), guide in GUIDE_B200.items():
        cells = []
        for _, run in gpus:
            r = run.find(probe, variant, "256", "eager")
            cells.append("–" if r is None or not r.ok else f"{r.summary().median:.2f} ({_ratio_fig(r, used)})")
        label = next((lab for lab, p, v in HEADLINE if (p, v) == (probe, variant)), variant)
        lines.append(f"| {label} (`{probe}/{variant}`) | " + " | ".join(cells)
                     + f" | {guide} ({guide / guide_mm:.2f}×) |")
    lines += ["", *_wrap("Ours: one reference run per GPU, median over its worker processes; × is the median "
                         "round-by-round ratio to torch.mm. The last column quotes the guide (B200, cuDNN 9.26), "
                         "not measured here; its × is to the guide's torch.mm. Compare GPUs by ×, not µs."),
              *_marks_line(used)]
    return "\n".join(lines)


def _cell(run, probe, variant, size, mode) -> str:
    r = run.find(probe, variant, size, mode)
    if r is None:
        return "–"
    if not r.ok:
        return r.status.split(":")[0]
    return f"{r.summary().median:.2f}{_ratio(r)}{trust.badge(r)}"


def _ratio(rec) -> str:
    """' (1.16×)', or with workers ' (1.16×, 1.14–1.18)': the min–max of the workers' ratios
    (brackets are kept for the rounds' q1–q3, as `hostbench table` prints them)."""
    if not rec.ratio:
        return ""
    ws = sorted(w["ratio"] for w in rec.workers if w.get("ratio") is not None)
    span = f", {ws[0]:.2f}–{ws[-1]:.2f}" if len(ws) > 1 else ""
    return f" ({rec.ratio.median:.2f}×{span})"


def headline(ref: Reference, run, base: Path) -> str:
    lines = [
        "### Headline: 256³ bf16 matmul, µs/call (× the same round's torch.mm, workers min–max)",
        "",
        f"Measured: {run_summary.caption(run)}. Reference column: the guide's B200 figures (cuDNN 9.26).",
        "",
        f"Run: {run_summary.summary_line(run)}. Marks (⚑): [glossary](../glossary.md#marks).",
        "",
        "| path | eager | graph | device | guide, B200 eager |",
        "|---|---|---|---|---|",
    ]
    for label, probe, variant in HEADLINE:
        cells = [_cell(run, probe, variant, "256", m) for m in CALL_MODES]
        lines.append(f"| {label} (`{probe}/{variant}`) | " + " | ".join(cells)
                     + f" | {GUIDE_B200.get((probe, variant), '–')} |")
    table_md = ref.folder / "table.md"
    lines += ["", f"Every probe's rows (each size and mode, kernels per call, host overhead): "
                  f"[table.md]({_link(table_md, base)}), or `hostbench table --gpu {ref.gpu}`."]
    cal = run.fingerprint.calibration_us
    floor = run.find("noop", "noop", "-", "eager")
    wall = run.fingerprint.wall_s
    core = sum(v for k, v in wall.items() if k.split("/")[0] in CORE_PROBES)
    lines += ["", "Budgets, measured in this run: "
              f"suite wall time {known(run.fingerprint.suite_wall_s, float('nan')):.0f} s "
              f"(the core trap probes {core:.0f} s of it); "
              f"eager no-op floor {floor.summary().median if floor and floor.ok else float('nan'):.3f} µs/call"
              f"{f' ({floor.host_state} host state)' if floor and floor.host_state else ''}; "
              f"CPU-only calibration {cal.get('before', float('nan')):.2f} µs before the profiler phase, "
              f"{cal.get('after', float('nan')):.2f} µs after it."]
    return "\n".join(lines)


HEAVY_US = 100.0   # a heavy row: graph or device µs/call at least this (the verdict's heavy classes)


def clocks(run) -> str:
    """At what SM clock the heavy graph and device rows ran: over each row's kept rounds (NVML, read
    only; clocks are never set), the lowest and highest reading, against the GPU's top clock."""
    lines = []
    for mode in ("graph", "device"):
        rs = [r for r in run.records if r.mode == mode and r.ok and r.clock_mhz and r.summary().median >= HEAVY_US]
        if not rs:
            continue
        lo, hi = sorted(r.clock_mhz.get("sm_min", 0) for r in rs), [r.clock_mhz.get("sm_max", 0) for r in rs]
        top = max(r.clock_mhz.get("top", 0) for r in rs)
        dropped = sum("clock_drop" in (r.flags or []) for r in rs)
        lines.append(f"| {mode} | {len(rs)} | {dropped} | {top} | {lo[len(lo) // 2]} ({lo[0]}–{lo[-1]}) | {max(hi)} |")
    if not lines:
        return ""
    return "\n".join([
        f"### Clocks of the heavy rows (graph and device, ≥ {HEAVY_US:.0f} µs/call)", "",
        "| mode | rows | ⚑c rows | top SM clock, MHz | lowest kept reading, MHz: median (min–max) | highest |",
        "|---|---|---|---|---|---|", *lines, "",
        *_wrap("SM clock readings over each row's kept rounds (NVML, read only: the harness never sets, locks or "
               "resets a clock). ⚑c: a kept round ran below 95 % of the usual clock. A heavy row's µs/call moves "
               "with the clock, and its baseline moves with it, so read the × columns: ratios taken round by "
               "round against torch.mm at the same clock.")])


def framework(run) -> str:
    """The registration trap and the per-tensor pack cost (issue 21), when the run has them."""
    from cudnn_hostbench.probes.probe_registration import PROBE as REG
    from cudnn_hostbench.reports import pack_cost
    if run.find("registration", "custom_op", "256", "eager") is None:
        return ""
    lines = ["### The framework side: how the op is registered, and the size of the variant pack", "",
             "One pinned cuDNN matmul (256³ bf16) reached through each registration path, µs/call "
             "(× torch.mm in the same rounds):", "",
             "| path | eager | graph | device |", "|---|---|---|---|"]
    for v in REG.variants:
        lines.append(f"| {v.label} (`registration/{v.name}`) | "
                     + " | ".join(_cell(run, "registration", v.name, "256", m) for m in CALL_MODES) + " |")
    lines += ["", "Host µs per extra tensor in the variant pack (least-squares slope over the "
              "`pack_size` probe's packs of 3 to 15 tensors):", "", pack_cost.markdown(run)]
    return "\n".join(lines)


def engines(ref: Reference, run, base: Path = ROOT) -> str:
    """Where the microseconds go (issue 20): the engine apart from the call form, the per-call
    waterfall, and the size from which each trap stops mattering."""
    from cudnn_hostbench.reports import crossover_report as crossover
    from cudnn_hostbench.reports import engines as eng
    from cudnn_hostbench.reports import waterfall_report as waterfall
    if run.find("engine", "plan_0", "256", "eager") is None:
        return ""
    lines = ["### Where the microseconds go: the engine, the call form, and when a trap stops mattering", "",
             "**The engine.** Every plan the 256³ matmul graph builds, called the same way (µs/call):", "",
             eng.markdown(run).split("\n", 2)[-1].split("\n### ", 1)[0].strip(), "",
             f"Every size's plans: `hostbench engines {_link(ref.run_file, ROOT)} --out results/engines`.", ""]
    rs = waterfall.rows([run])
    if rs:
        png = ref.waterfall / "waterfall.png"
        lines += ["**The waterfall.** One eager call split into measured parts, all from the same interleaved "
                  "rounds (`probes/probe_waterfall.py`); the parts add up to within 10 % of the eager figure:", "",
                  waterfall.markdown(rs).split("\n", 2)[-1].strip(), ""]
        if png.exists():
            lines += [f"![waterfall]({_link(png, base)})", ""]
    if ref.crossover.exists():
        doc = crossover.load(ref.crossover)
        png = ref.crossover.parent / f"crossover-{crossover.gpu(doc).replace(' ', '-')}.png"
        lines += ["**Where each trap stops mattering** (`hostbench crossover`): ",
                  crossover.summary(doc).strip(), ""]
        if png.exists():
            lines += [f"![crossover]({_link(png, base)})"]
    return "\n".join(lines).rstrip()


def versions(ref: Reference, base: Path = ROOT) -> str:
    runs = sorted((records.load_run(p) for p in ref.matrix.glob("run-fe*.json")),
                  key=lambda r: store.version_key(store.frontend_version(r)))
    if not runs:
        return ""
    head = [known(r.fingerprint.cudnn_frontend) for r in runs]
    workers = max((r.fingerprint.workers for r in runs), default=1)
    fp = runs[-1].fingerprint
    lines = [f"### Frontend versions at 256³ ({ref.gpu.upper()}, cuDNN {known(fp.cudnn_backend)})", "",
             f"Eager µs/call (× torch.mm in the same rounds, min–max over {workers} worker processes) / "
             "device µs. Each version ran in its own processes: compare ratios across columns only where "
             "their ranges do not overlap (`hostbench ab` judges versions on pairs).", "",
             "| probe/variant | " + " | ".join(f"fe {v}" for v in head) + " |",
             "|---|" + "---|" * len(runs)]
    for probe, variant in VERSION_ROWS + [("wrapper", "naive"), ("wrapper", "fixed"), ("wrapper", "fixed_autotuned")]:
        cells = []
        for run in runs:
            e, d = run.find(probe, variant, "256", "eager"), run.find(probe, variant, "256", "device")
            if e is None or not e.ok:
                cells.append(e.status.split(":")[0] if e else "–")
                continue
            dev = f" / {d.summary().median:.2f}" if d is not None and d.ok else ""
            cells.append(f"{e.summary().median:.1f}{_ratio(e)}{trust.badge(e)}{dev}")
        lines.append(f"| {probe}/{variant} | " + " | ".join(cells) + " |")
    pack = pack_cost.matrix_section(runs, [f"fe {v}" for v in head])
    if pack:   # the per-tensor cost of each call form, per version (issue 21)
        lines += ["", "#### " + pack[0].lstrip("# "), *pack[1:]]
    return "\n".join(lines).rstrip()


def audit_example(ref: Reference, base: Path = ROOT) -> str:
    path = ref.audits["naive"]
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    head = text.split("## Findings", 1)[0].strip().splitlines()
    body = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    return "\n".join([f"#### `hostbench audit examples/naive_integration.py:make_step` on the {ref.gpu.upper()}", "",
                      *head[2:], "", *_top_findings(body), "",
                      *_projection(text), *_projection_against_fixed(ref),
                      "", f"Full reports: [{path.parent.name}]({_link(path, base)}), "
                      f"[audit-fixed]({_link(ref.audits['fixed'], base)})."])


FINDINGS_SHOWN = 4   # the costliest findings a results page quotes; the full report has every one


def _top_findings(body: str) -> list[str]:
    """The findings' first FINDINGS_SHOWN rows (biggest cost first) as # / trap / finding / µs per
    step, and how many more; every column of every finding is in the full report."""
    rows = [x.split(" | ") for x in body.splitlines() if x.startswith("| ") and x[2:3].isdigit()]
    out = ["| # | trap | finding | µs/step |", "|---|---|---|---|"]
    out += [f"{r[0]} | {r[1]} | {r[2]} | {r[5]} |" for r in rows[:FINDINGS_SHOWN] if len(r) > 5]
    more = len(rows) - FINDINGS_SHOWN
    return ["Findings, biggest cost first:", "", *out] + (["", f"{more} more finding(s) in the full report."]
                                                         if more > 0 else [])


def _projection(text: str) -> list[str]:
    """The naive audit's projection with every finding fixed, from audit.md (its line table is in
    the full report)."""
    if "\n## Projected with every finding fixed" not in text:
        return []
    proj = _section(text, "Projected with every finding fixed")
    return ["Projected with every finding fixed: " + proj.split("\n\n", 1)[0]]


def _section(document: str, title: str) -> str:
    """The body of a `## title` section of a Markdown document, up to the next `## `."""
    return document.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0].strip()


def _projection_against_fixed(ref: Reference) -> list[str]:
    """The naive projection against the fixed example's measured step (both from audit.json)."""
    import json
    try:
        naive = json.loads(ref.audits["naive"].with_name("audit.json").read_text(encoding="utf-8"))
        fixed = json.loads(ref.audits["fixed"].with_name("audit.json").read_text(encoding="utf-8"))
        # the fixed step as a user's loop pays it (audits from before the plain loop: its eager median)
        p, m = naive["projection"]["projected_us"], (fixed["modes"].get("loop") or {}).get("median") or \
            fixed["modes"]["eager"]["median"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return ["", f"The naive example's projection, {p:.2f} µs/step, against the fixed example's measured "
                f"{m:.2f}: {(p / m - 1) * 100:+.0f} %."]


# The issue-67 probes' designed comparisons: (probe, trap or costlier path, its fix). Eager, at the
# sizes where the host cost matters; a pair that a GPU's cuDNN cannot run is left out with its reason.
NEW_CALLS = [("fe_wrapper", "wrapper_positional", "pygraph_pinned"), ("fe_wrapper", "wrapper_named", "pygraph_pinned"),
             ("fe_wrapper", "wrapper_auto_handle", "pygraph_pinned"), ("set_stream", "query_stream", "query_raw_stream"),
             ("set_stream", "query_and_set", "query_raw_and_set"),
             ("cuda_graph_api", "native_update_same", "native_launch"),
             ("cuda_graph_api", "torch_recapture", "native_update"), ("cuda_graph_api", "torch_recapture", "torch_copy_in"),
             ("sdpa_provider", "provider", "provider_op"), ("alignment", "offset_copied", "aligned"),
             ("override", "override", "per_shape"), ("py_engines", "python_engine", "backend_plan")]
GPU_BOUND = ("4096",)   # matmul sizes whose kernel time (about 170 µs on an H100) dwarfs the call path
AGREE = 0.05   # issue 67's bar: two machine starts agree on a trap/fix ratio within 5 %


def _to_baseline(run, probe, variant, size) -> float | None:
    """A variant's eager figure as the median of its round-by-round ratios to the probe's baseline."""
    rec = run.find(probe, variant, size, "eager")
    if rec is None or not rec.ok:
        return None
    return rec.ratio.median if rec.ratio else 1.0


def _trap_over_fix(run, probe, trap, fix, size) -> float | None:
    """trap ÷ fix, eager, as the ratio of their round-by-round ratios to the same baseline."""
    t, f = _to_baseline(run, probe, trap, size), _to_baseline(run, probe, fix, size)
    return None if t is None or f is None else t / f


def _spread(vals: list) -> float | None:
    got = [v for v in vals if v is not None and v > 0]
    return max(got) / min(got) - 1 if len(got) >= 2 else None


def _pct(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction * 100:.1f} %"


def starts(ref: Reference, run, base: Path) -> str:
    """The issue-67 probes' trap/fix ratios in the reference run and in each run of another machine
    start (reports/reference/<gpu>/starts/<start>/run.json.gz), with their spread."""
    others = [(p.parent.name, records.load_run(p)) for p in sorted(ref.folder.glob("starts/*/run.json*"))]
    if not others:
        return ""
    runs = [("reference", run), *others]
    rows, agree, pairs, missing = [], 0, 0, {}
    for probe, trap, fix in NEW_CALLS:
        sizes = [s for s in dict.fromkeys(r.size for r in run.records if r.probe == probe) if s not in GPU_BOUND]
        for size in sizes:
            vals = [_trap_over_fix(r, probe, trap, fix, size) for _, r in runs]
            got = [v for v in vals if v is not None]
            if len(got) < 2:
                if vals[0] is None:
                    missing.setdefault((probe, trap), _status(run, probe, trap, size))
                continue
            spread = max(got) / min(got) - 1
            pairs += 1
            agree += spread <= AGREE
            cells = " | ".join("–" if v is None else f"{v:.3f}" for v in vals)
            sides = [_pct(_spread([_to_baseline(r, probe, v, size) for _, r in runs])) for v in (trap, fix)]
            rows.append(f"| {probe} {size} | {trap} / {fix} | {cells} | {spread * 100:.1f} %"
                        f"{'' if spread <= AGREE else ' ✗'} | {' | '.join(sides)} |")
    head = " | ".join(name for name, _ in runs)
    lines = [f"| probe, size | trap / fix | {head} | spread | trap ÷ baseline | fix ÷ baseline |",
             "|---|---|" + "---|" * (len(runs) + 3), *rows, "",
             *_wrap(f"Eager trap ÷ fix, each the ratio of two round-by-round ratios to the probe's baseline in "
                    f"one run; spread: largest ÷ smallest − 1 over the runs of different machine starts. "
                    f"{agree} of {pairs} pairs agree within {AGREE * 100:.0f} % (✗: not). Last two columns: each "
                    f"side's ratio to the host-bound baseline, its spread; where the pair's is past "
                    f"{AGREE * 100:.0f} % and one side's is not, the pair follows the host's speed.")]
    for (probe, trap), why in missing.items():
        lines += _wrap(f"{probe}/{trap}: not on this GPU: {why}.")
    return "\n".join(lines)


def _status(run, probe, variant, size) -> str:
    r = run.find(probe, variant, size, "eager")
    return "not measured" if r is None else r.status.split(":", 1)[-1].strip()


MDC_CLASSES = ("eager light ratio", "graph light ratio", "device light ratio")   # the A/B classes the page names
OLD_CLASSES = {"eager light ratio": "eager ratio"}   # a job judged before eager rows had size classes
MOVED_SHOWN = 3   # moved rows listed per version job, the largest changes first


def ab_jobs(ref: Reference, base: Path) -> str:
    """The GPU's committed A/B jobs (reports/reference/<gpu>/ab/*/ab.json): per comparison its pairs,
    verdicts and median MDCs, then the eager rows that moved most."""
    import json
    rows, moved = [], []
    for path in sorted(ref.folder.glob("ab/*/ab.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for c in doc["comparisons"]:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(c["counts"].items(), key=lambda kv: -kv[1]))
            mdc = {k["class"]: k["median_mdc"] for k in c["classes"]}
            mdc.update({new: mdc[old] for new, old in OLD_CLASSES.items() if new not in mdc and old in mdc})
            shown = " / ".join(f"{mdc[k] * 100:.1f} %" if k in mdc else "–" for k in MDC_CLASSES)
            specs = {side.get("spec") for side in doc.get("sides", [])}
            sides = "A/A" if len(specs) == 1 else f"{c['reference']} → {c['side']}"
            rows.append(f"| {path.parent.name} | {sides} | {c['pairs']} | {counts} | {shown} |")
            moved += [(path.parent.name, r) for r in c["rows"] if r["verdict"] in ("FASTER", "SLOWER")
                      and r["mode"] == "eager"]
    if not rows:
        return ""
    folder = _link(ref.folder / "ab", base)
    lines = [f"Each job's report: `ab.md` in its folder under [`ab/`]({folder}/). A/A: one environment on both sides.",
             "", "| job | sides | pairs | verdicts | median MDC of the light rows: eager / graph / device ratio |",
             "|---|---|---|---|---|", *rows]
    if moved:
        moved.sort(key=lambda jr: jr[1]["change"])
        lines += ["", "The eager rows that moved most (change of the ratio to the block's baseline, 95 % interval):",
                  "", "| job | row | change | interval |", "|---|---|---|---|"]
        for job, r in moved[:MOVED_SHOWN]:
            lo, hi = r["interval"]
            what = "" if r.get("on_ratio") else " (µs, not a ratio)"
            lines.append(f"| {job} | {r['probe']} {r['size']}, {r['variant']}{what} | {r['change'] * 100:+.1f} % | "
                         f"{lo * 100:+.1f} .. {hi * 100:+.1f} % |")
    return "\n".join(lines)


def sections(ref: Reference) -> dict:
    """Every section of one GPU's results page, its links relative to the page's folder."""
    base = ref.page.parent
    out = {}
    if ref.run_file.exists():
        run = ref.load()   # read once: every section below renders from it
        out["headline"] = headline(ref, run, base)
        out["clocks"] = clocks(run)
        out["starts"] = starts(ref, run, base)
        out["framework"] = framework(run)
        out["engines"] = engines(ref, run, base)
    out["versions"] = versions(ref, base)
    out["ab"] = ab_jobs(ref, base)
    out["audit"] = audit_example(ref, base)
    return {k: v for k, v in out.items() if v}


def readme_sections(refs: list[Reference]) -> dict:
    """The README's sections: every GPU side by side."""
    gpus = [(ref, ref.load()) for ref in refs]
    if not gpus:
        return {}
    return {"gpus": gpus_headline(gpus, README.parent), "traps": traps(gpus, README.parent)}


def documents(gpu: str | None = None) -> list[Path]:
    """The files whose figure sections this renders: the README and each GPU's results page (only
    `gpu`'s page when it is given)."""
    pages = [ref.page for ref in references() if gpu in (None, ref.gpu)]
    return pages if gpu else [README, *pages]


def rendered(doc: Path) -> tuple[str, str]:
    """(the file's text, the text with its sections rendered from the committed runs)."""
    old = doc.read_text(encoding="utf-8")
    if doc == README:
        return old, render(old, readme_sections(references()))
    return old, render(old, sections(Reference(doc.stem)))


def render(text: str, secs: dict) -> str:
    for name, body in secs.items():
        begin, end = f"<!-- BEGIN:{name} -->", f"<!-- END:{name} -->"
        if begin not in text:
            continue
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    return text


def add_parser(command) -> None:
    p = command("readme-figures", run, description=__doc__)
    p.add_argument("--gpu", metavar="NAME", help="only this GPU's results page (docs/results/NAME.md, from "
                                                 "reports/reference/NAME/)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 if README.md or a results page is out of date; write nothing")


def run(args) -> int:
    if not README.is_file():   # an installed copy: the README, the results pages and their sources live in a checkout
        print(f"{args.prog}: no {README} here: a maintainer's command, run it in a checkout", file=sys.stderr)
        return 2
    docs = documents(args.gpu)
    missing = [d for d in docs if not d.is_file()]
    if args.gpu and not docs:
        from cudnn_hostbench.scripts.run import reference_problem
        print(f"{args.prog}: {reference_problem(args.gpu)}", file=sys.stderr)
        return 2
    if missing:
        print(f"{args.prog}: no {missing[0]}: a results page needs its file (with its BEGIN/END markers)",
              file=sys.stderr)
        return 2
    stale = []
    for doc in docs:
        old, new = rendered(doc)
        if new != old:
            stale.append(doc)
            if not args.check:
                doc.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"{args.prog}: out of date: {', '.join(str(d.relative_to(ROOT)) for d in stale)}", file=sys.stderr)
        return 1
    return 0


main = alias("readme-figures")   # python -m cudnn_hostbench.scripts.maint.readme_figures

if __name__ == "__main__":
    exit_with(main())
