"""Renders the README's figure sections from committed runs, so no figure is typed in by hand.

    hostbench readme-figures          # rewrite the sections between the markers
    hostbench readme-figures --check  # exit 1 if README is out of date
"""
from __future__ import annotations

import sys
from pathlib import Path

from cudnn_hostbench.bench.measure import records, trust
from cudnn_hostbench.bench.measure.records import CALL_MODES
from cudnn_hostbench.reports import pack_cost, store, table
from cudnn_hostbench.scripts.cli import alias

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REFERENCE = ROOT / "reports" / "reference" / "h200" / "run.json"
MATRIX = REFERENCE.parent / "matrix"
AUDITS = {"naive": REFERENCE.parent / "audit-naive" / "audit.md", "fixed": REFERENCE.parent / "audit-fixed" / "audit.md"}
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
WATERFALL = REFERENCE.parent / "waterfall"
CROSSOVER = REFERENCE.parent / "crossover" / "crossover.json"


def _cell(run, probe, variant, size, mode) -> str:
    r = run.find(probe, variant, size, mode)
    if r is None:
        return "–"
    if not r.ok:
        return r.status.split(":")[0]
    return f"{r.summary().median:.2f}{_ratio(r)}{trust.badge(r)}"


def _ratio(r) -> str:
    """' (1.16×)', or with workers ' (1.16× [1.14–1.18])': the min–max of the workers' ratios."""
    if not r.ratio:
        return ""
    ws = sorted(w["ratio"] for w in r.workers if w.get("ratio") is not None)
    span = f" [{ws[0]:.2f}–{ws[-1]:.2f}]" if len(ws) > 1 else ""
    return f" ({r.ratio.median:.2f}×{span})"


def headline(run) -> str:
    lines = [
        "### Headline: 256³ bf16 matmul, µs/call (× the same round's torch.mm [min–max over workers])",
        "",
        f"Measured: {table.caption(run)}. Reference column: the guide's B200 figures (cuDNN 9.26).",
        "",
        f"Run: {trust.summary_line(run)}. Marks: {trust.LEGEND}.",
        "",
        "| path | eager | graph | device | guide, B200 eager |",
        "|---|---|---|---|---|",
    ]
    for label, probe, variant in HEADLINE:
        cells = [_cell(run, probe, variant, "256", m) for m in CALL_MODES]
        lines.append(f"| {label} (`{probe}/{variant}`) | " + " | ".join(cells)
                     + f" | {GUIDE_B200.get((probe, variant), '–')} |")
    lines += ["", "Each probe's trap against its fix, first size, eager mode (median µs, × baseline):", ""]
    lines += probe_headlines(run)
    cal = run.fingerprint.get("calibration_us", {})
    floor = run.find("noop", "noop", "-", "eager")
    wall = run.fingerprint.get("wall_s", {})
    core = sum(v for k, v in wall.items() if k.split("/")[0] in CORE_PROBES)
    lines += ["", "Budgets, measured in this run: "
              f"suite wall time {run.fingerprint.get('suite_wall_s', float('nan')):.0f} s "
              f"(the core trap probes {core:.0f} s of it); "
              f"eager no-op floor {floor.summary().median if floor and floor.ok else float('nan'):.3f} µs/call"
              f"{f' ({floor.host_state} host state)' if floor and floor.host_state else ''}; "
              f"CPU-only calibration {cal.get('before', float('nan')):.2f} µs before the profiler phase, "
              f"{cal.get('after', float('nan')):.2f} µs after it."]
    return "\n".join(lines)


def probe_headlines(run) -> list[str]:
    df = table.build_table(run)
    out = ["| probe | size | variant (role) | eager | graph | device | kern/call |", "|---|---|---|---|---|---|---|"]
    for probe, g in df.groupby("probe", sort=False):
        size = g["size"].iloc[0]
        for _, row in g[g["size"] == size].iterrows():
            if row["role"] not in ("trap", "fixed", "baseline", "floor", "private"):
                continue
            def c(m, row=row):
                v = row.get(m)
                if v != v or v is None:
                    return row["status"].split(":")[1].strip() if ":" in row["status"] else "–"
                r = row.get(f"{m}_ratio")
                return f"{v:.2f}" + (f" ({r:.2f}×)" if r == r and r is not None else "")
            host = row.get("host")
            unit = "ms" if row["unit"] == "ms" else row["unit"]
            eager = f"{host:.2f} {unit}" if host == host and host is not None else c("eager")
            kpc = row.get("kernels_per_call")
            out.append(f"| {probe} | {size} | {row['variant']} ({row['role']}) | {eager} | {c('graph')} | "
                       f"{c('device')} | {'' if kpc != kpc or kpc is None else f'{kpc:g}'} |")
    return out


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


def engines(run) -> str:
    """Where the microseconds go (issue 20): the engine apart from the call form, the per-call
    waterfall, and the size from which each trap stops mattering."""
    from cudnn_hostbench.reports import crossover, waterfall
    from cudnn_hostbench.reports import engines as eng
    if run.find("engine", "plan_0", "256", "eager") is None:
        return ""
    lines = ["### Where the microseconds go: the engine, the call form, and when a trap stops mattering", "",
             "**The engine.** Every plan the 256³ matmul graph builds, called the same way (µs/call):", "",
             eng.markdown(run).split("\n", 2)[-1].strip(), ""]
    rs = waterfall.rows([run])
    if rs:
        png = WATERFALL / "waterfall.png"
        lines += ["**The waterfall.** One eager call split into measured parts, all from the same interleaved "
                  "rounds (`probes/probe_waterfall.py`); the parts add up to within 10 % of the eager figure:", "",
                  waterfall.markdown(rs).split("\n", 2)[-1].strip(), ""]
        if png.exists():
            lines += [f"![waterfall]({png.relative_to(ROOT)})", ""]
    if CROSSOVER.exists():
        doc = crossover.load(CROSSOVER)
        png = CROSSOVER.parent / f"crossover-{crossover.gpu(doc).replace(' ', '-')}.png"
        lines += ["**Where each trap stops mattering** (`hostbench crossover`): ",
                  crossover.summary(doc).strip(), ""]
        if png.exists():
            lines += [f"![crossover]({png.relative_to(ROOT)})"]
    return "\n".join(lines).rstrip()


def versions() -> str:
    runs = sorted((records.load_run(p) for p in MATRIX.glob("run-fe*.json")),
                  key=lambda r: store.version_key(store.frontend_version(r)))
    if not runs:
        return ""
    head = [r.fingerprint.get("cudnn_frontend", "?") for r in runs]
    workers = max((r.fingerprint.get("workers", 1) for r in runs), default=1)
    lines = ["### Frontend versions at 256³ (H200, cuDNN 9.19)", "",
             f"Eager µs/call (× torch.mm in the same rounds [min–max over {workers} worker processes]) / "
             "device µs. Each version ran in its own worker processes, so compare the ratios across "
             "columns, and only where their worker ranges do not overlap "
             "(see [docs/measurements.md](docs/measurements.md)).", "",
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


def audit_example() -> str:
    path = AUDITS["naive"]
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    head = text.split("## Findings", 1)[0].strip().splitlines()
    body = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    fixed = AUDITS["fixed"].read_text(encoding="utf-8").split("\n## ", 1)[0].strip().splitlines() \
        if AUDITS["fixed"].exists() else []
    return "\n".join(["#### `hostbench audit examples/naive_integration.py:make_step` on the H200", "",
                      *head[2:], "", "Findings" + body.rstrip(), "",
                      *_lines_and_projection(text),
                      "The fixed example (`examples/fixed_integration.py`), same run file:", "",
                      *fixed[2:], *_projection_against_fixed(),
                      "", f"Full reports: [{path.parent.name}]({path.relative_to(ROOT)}), "
                      f"[audit-fixed]({AUDITS['fixed'].relative_to(ROOT)})."])


def _lines_and_projection(text: str, top: int = 5) -> list[str]:
    """The naive audit's line table (its `top` costliest lines) and its projection, from audit.md."""
    if "\n## Host time by source line" not in text:
        return []
    sec = _section(text, "Host time by source line").splitlines()
    table = [x for x in sec if x.startswith("|")]
    intro = [x for x in sec[:sec.index(table[0])] if x.strip()] if table else []
    out = ["Host time by source line: " + "; ".join(intro), "", *table[:2 + top]]
    if "\n## Projected with every finding fixed" in text:
        proj = _section(text, "Projected with every finding fixed")
        out += ["", "Projected with every finding fixed: " + proj.split("\n\n", 1)[0]]
    return out + [""]


def _section(md: str, title: str) -> str:
    """The body of a `## title` section of a Markdown document, up to the next `## `."""
    return md.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0].strip()


def _projection_against_fixed() -> list[str]:
    """The naive projection against the fixed example's measured eager step (both from audit.json)."""
    import json
    try:
        naive = json.loads(AUDITS["naive"].with_name("audit.json").read_text(encoding="utf-8"))
        fixed = json.loads(AUDITS["fixed"].with_name("audit.json").read_text(encoding="utf-8"))
        p, m = naive["projection"]["projected_us"], fixed["modes"]["eager"]["median"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return ["", f"The naive example's projection, {p:.2f} µs/step, against the fixed example's measured "
                f"{m:.2f}: {(p / m - 1) * 100:+.0f} %."]


def sections() -> dict:
    out = {}
    if REFERENCE.exists():
        run = records.load_run(REFERENCE)   # read once: every section below renders from it
        out["headline"] = headline(run)
        out["framework"] = framework(run)
        out["engines"] = engines(run)
    out["versions"] = versions()
    out["audit"] = audit_example()
    return {k: v for k, v in out.items() if v}


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
    p.add_argument("--check", action="store_true", help="exit 1 if README is out of date; write nothing")


def run(a) -> int:
    if not README.is_file():   # an installed copy: the README and its sources live in a checkout
        print(f"{a.prog}: no {README} here: a maintainer's command, run it in a checkout", file=sys.stderr)
        return 2
    old = README.read_text(encoding="utf-8")
    new = render(old, sections())
    if a.check:
        return 0 if new == old else 1
    README.write_text(new, encoding="utf-8")
    return 0


main = alias("readme-figures")   # python -m cudnn_hostbench.scripts.readme_figures

if __name__ == "__main__":
    sys.exit(main())
