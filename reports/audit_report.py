"""`hostbench audit`'s report as text (the terminal) and Markdown (audit.md), and both files."""
from __future__ import annotations

import json
from pathlib import Path

from cudnn_hostbench.bench.audit.auditor import AuditReport
from cudnn_hostbench.bench.measure.runfile import trust
from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic
from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES as MODES
from cudnn_hostbench.reports import audit_lines, flame
from cudnn_hostbench.reports.fmt import md_table, median_iqr, num


def _marks(report: AuditReport) -> str:
    """The legend of the trust marks its cited figures carry ('' when none lowers trust)."""
    kinds = set()
    for f in report.findings:
        kinds |= trust.kinds_in(" ".join(f.cost_from))
    return "; ".join(f"{trust.MARKS[k].letter}: {trust.MARKS[k].meaning}" for k in trust.SHOWN if k in kinds)


def _counts_line(counts: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in counts.items() if k != "steps" and isinstance(v, (int, float)) and v)


def _state_note(mode: dict) -> str:
    """The host state an eager figure was timed in ('' for audits from before it was recorded)."""
    if "host_state" not in mode:
        return ""
    st = mode["host_state"]
    if st == "fast":
        return "host in its fast state"
    if st == "slow":
        return "host in its slow state: not comparable with fast-state figures"
    return "host state unknown (rounds of both states kept)"


def _modes(report: AuditReport) -> tuple:
    """The timing modes shown: eager, graph, device, and the plain loop where the audit ran one."""
    return (*MODES, "loop") if "loop" in report.modes else MODES


def _mode_note(mode: str, figure: dict) -> str:
    if mode == "loop":
        return f"plain loop: {figure.get('calls', '?')} steps between two syncs" + (
            f"; {_state_note(figure)}" if _state_note(figure) else "")
    return _state_note(figure)


def render_text(report: AuditReport) -> str:
    e = report.env
    state = _state_note(report.modes.get("eager", {}))
    lines = [f"hostbench audit: {report.target}",
             f"{e.get('gpu_name', '?')} · cuDNN {e.get('cudnn_backend', '?')} · frontend {e.get('cudnn_frontend', '?')} "
             f"· torch {e.get('torch', '?')}",
             "µs per step: " + " · ".join(f"{m} {median_iqr(report.modes.get(m, {}))}" for m in _modes(report)),
             *(f"{m}: {report.modes[m]['error']}" for m in MODES if report.modes.get(m, {}).get("error")),
             *([f"eager: {state}"] if state else []),
             f"kernels per step: {num(report.kernels_per_step)}",
             f"host overhead (eager − device): {num(report.host_overhead_us)} µs/step; "
             f"avoidable (sum of findings): {report.avoidable_us:.2f} µs/step",
             f"costs from: {report.run_file or 'no run file'}{' (' + report.run_note + ')' if report.run_note else ''}", ""]
    lines.append("findings, biggest cost first:" if report.findings else "no traps found.")
    for i, f in enumerate(report.findings, 1):
        lines.append(f"{i:2d}. [{f.label}] {f.title}: {num(f.cost_us)} µs/step{_share(f)}")
        lines.append(f"    seen: {f.evidence}")
        if audit_lines.finding_lines(f):
            lines.append(f"    at:   {audit_lines.finding_lines(f)}")
        lines += [f"    cost: {c}" for c in f.cost_from]
        lines.append(f"    fix:  {f.fix}")
    if _marks(report):
        lines.append(f"trust marks (⚑ on a cited figure): {_marks(report)}")
    lines += audit_lines.text(report.lines, report.projection, _remainder(report))
    lines += ["", f"counts per step (steady state, {report.counts.get('steps', 0)} steps): " + _counts_line(report.counts)]
    lines += [f"note: {n}" for n in report.notes]
    if report.phases_s:
        lines.append(f"the audit's own time: {_phases(report)}")
    return "\n".join(lines) + "\n"


def _phases(report: AuditReport) -> str:
    """'eager rounds 3.1 s · plain loops 9.8 s · … (42.0 s in all)': where the audit's wall time went."""
    return " · ".join(f"{k} {v:.1f} s" for k, v in report.phases_s.items()) + f" ({sum(report.phases_s.values()):.1f} s in all)"


def render_markdown(report: AuditReport) -> str:
    md = _md_head(report) + _md_findings(report)
    md += audit_lines.markdown(report.lines, report.projection, _remainder(report))
    md += _md_tail(report)
    return "\n".join(md) + "\n"


def _md_head(report: AuditReport) -> list[str]:
    """The title, the environment, the modes' table, the host overhead and where the costs came from."""
    env = report.env
    modes = [[m, num(d.get("median")), num(d.get("iqr")), d.get("error", "") or _mode_note(m, d)]
             for m in _modes(report) for d in [report.modes.get(m, {})]]
    return [f"# hostbench audit: `{report.target}`", "",
            f"{env.get('gpu_name', '?')} · cuDNN {env.get('cudnn_backend', '?')} · frontend "
            f"{env.get('cudnn_frontend', '?')} · torch {env.get('torch', '?')} (CUDA {env.get('cuda', '?')})", "",
            md_table(["mode", "µs/step (median)", "IQR", "note"], modes),
            "", f"Kernels per step: {num(report.kernels_per_step)}. Host overhead (eager − device): "
            f"**{num(report.host_overhead_us)} µs/step**; avoidable (sum of findings): "
            f"**{report.avoidable_us:.2f} µs/step**.",
            "", f"Costs from `{report.run_file or 'no run file'}`"
            f"{' — ' + report.run_note if report.run_note else ''}.", "",
            "## Findings, biggest cost first", ""]


def _md_findings(report: AuditReport) -> list[str]:
    """The findings' table and the trust marks it cites."""
    if not report.findings:
        return ["No traps found."]
    md = [md_table(["#", "trap", "finding", "seen per step", "at lines", "µs/step", "cost from", "fix"],
                   [[i, f.label, f.title, f.evidence, audit_lines.finding_lines(f) or "–", num(f.cost_us) + _share(f),
                     "; ".join(f.cost_from) or "–", f.fix] for i, f in enumerate(report.findings, 1)])]
    if _marks(report):
        md += ["", f"Trust marks (⚑ on a cited figure): {_marks(report)}."]
    return md


def _md_tail(report: AuditReport) -> list[str]:
    """The flame chart's link, the counts, the kernels, the notes and the audit's own time."""
    md: list[str] = []
    if (report.sampling or {}).get("stacks"):
        md += ["", f"The sampled stacks as an icicle chart: [{FLAME}]({FLAME}) (open it in a browser; click a box to zoom)."]
    md += ["", f"## Counts per step (steady state, {report.counts.get('steps', 0)} steps)", "",
           md_table(["count", "per step"], [[k, f"{v:g}"] for k, v in report.counts.items()
                                            if k != "steps" and isinstance(v, (int, float))])]
    if report.kernels:
        md += ["", "## Kernels (device mode)", "",
               md_table(["kernel", "per step", "µs/step"], [[f"`{n[:100]}`", f"{c:g}", f"{u:.2f}"]
                                                          for n, c, u in report.kernels[:12]])]
    if report.notes:
        md += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    if report.phases_s:
        md += ["", f"The audit's own time: {_phases(report)}."]
    return md

FLAME = "flame.html"


def _remainder(report: AuditReport) -> list:
    names = set((report.lines or {}).get("remainder") or ())
    return [x for x in (report.lines or {}).get("rows") or () if x["line"] in names]


def write_outputs(report: AuditReport, out_dir) -> list[Path]:
    """audit.md, audit.json and (when the step was sampled) flame.html, all rendered before any
    is written, each written whole."""
    texts = {"audit.md": render_markdown(report), "audit.json": json.dumps(report.to_dict(), indent=1, default=str)}
    if (report.sampling or {}).get("stacks"):
        texts[FLAME] = flame.render_html(flame.tree(report.sampling), f"hostbench audit: {report.target}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [write_text_atomic(out / name, text) for name, text in texts.items()]


def _share(finding) -> str:
    """' (12 % of the step)' when the audit knows the user's own step time."""
    share = getattr(finding, "share", None)
    return "" if share is None else f" ({share * 100:.0f} % of the step)"
