"""What each finding costs: rules (bench.audit.rules) fired on the counts, priced with figures of
a run file of the probes, or with figures the audit measured itself."""
from __future__ import annotations

import math
import string
from dataclasses import dataclass, field
from pathlib import Path

from cudnn_hostbench.bench.audit import rules as audit_rules
from cudnn_hostbench.bench.audit.pace import host_pace
from cudnn_hostbench.bench.measure.runfile import records as rec_mod
from cudnn_hostbench.bench.measure.runfile import trust

# -- run file ------------------------------------------------------------------------------------

def find_run_file(gpu_name: str | None, root: str | Path = ".") -> Path | None:
    """The newest `root`/results/*/run.json measured on this GPU, else the committed reference run."""
    from cudnn_hostbench.bench.measure.runfile.fingerprint import gpu_slug
    root = Path(root)
    runs = sorted(root.glob("results/*/run.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in runs:
        try:
            if rec_mod.load_run(p).fingerprint.gpu_name == gpu_name:
                return p
        except rec_mod.RunFileError:
            continue
    return rec_mod.run_file_in(root / "reports" / "reference" / gpu_slug({"gpu_name": gpu_name}))


def _size_value(size: str) -> float:
    digits = "".join(c if c.isdigit() else " " for c in size).split()
    return float(digits[0]) if digits else float("nan")


def _median(run, probe, variant, size, mode):
    r = run.find(probe, variant, size, mode)
    if r is None or not r.ok:
        return None
    return r.summary().median


def _closest_size(run, probe, variant, want, mode) -> str | None:
    sizes = {r.size for r in run.records if (r.probe, r.variant, r.mode) == (probe, variant, mode) and r.ok}
    if want in sizes:
        return want
    w = _size_value(want)
    scored = [(abs(math.log(_size_value(s) / w)), s) for s in sizes if _size_value(s) > 0 and w > 0]
    return min(scored)[1] if scored else None


def probe_figure(run, src: audit_rules.Figure, here: float | None = None) -> tuple[float | None, str, bool]:
    """(µs per occurrence, citation, whether a cited record is flagged) of a probe figure, or
    (None, why not, False), at this host's pace (`here`: the audit's sentinel µs; host_pace).
    Each cited figure carries its record's trust badge (bench.measure.runfile.trust)."""
    if run is None:
        return None, f"no run file ({src.probe}/{src.trap})", False
    size = _closest_size(run, src.probe, src.trap, src.size, src.mode)
    trap = _median(run, src.probe, src.trap, size, src.mode) if size else None
    fixes = [(m, v) for v in src.fixed if (m := _median(run, src.probe, v, size, src.mode)) is not None] if size else []
    if trap is None or not fixes:
        why = f"no figure in {_rel(run.path)} ({src.probe}/{src.trap} vs {'|'.join(src.fixed)}, {src.mode})"
        return None, why + _row_status(run, src), False
    fix_us, fix = min(fixes)
    r_trap, r_fix = run.find(src.probe, src.trap, size, src.mode), run.find(src.probe, fix, size, src.mode)
    k, pace = host_pace(here, (r_trap, r_fix))
    us = (trap - fix_us) * src.scale * k
    scale = f" × {src.scale:.3g}" if src.scale != 1 else ""
    b_trap, b_fix = trust.badge(r_trap), trust.badge(r_fix)
    return us, (f"{src.probe}/{src.trap} {trap:.2f}{b_trap} − {src.probe}/{fix} {fix_us:.2f}{b_fix} µs "
                f"@{size} {src.mode}{scale}{pace}"), bool(b_trap or b_fix)


def net_price(run, net: audit_rules.Net, here: float | None = None) -> tuple[float | None, str, bool]:
    """A Net's price: its figure less the per-call share of what its trap row also times."""
    from cudnn_hostbench.bench.audit.pace import host_pace
    us, cite, flagged = probe_figure(run, net.figure, here)
    if us is None:
        return us, cite, flagged
    f = net.figure
    size = _closest_size(run, f.probe, f.trap, f.size, f.mode)
    d = _median(run, f.probe, net.deduct, size, f.mode) if size else None
    if d is None:
        return None, f"no figure in {_rel(run.path)} ({f.probe}/{net.deduct}, {f.mode}): {cite}", flagged
    k, pace = host_pace(here, (run.find(f.probe, net.deduct, size, f.mode),))
    return us - d * f.scale * k, f"{cite} − {f.probe}/{net.deduct} {d:.2f} µs{pace}", flagged


def _row_status(run, src) -> str:
    """': probe/variant <status>' for rows the run has but could not time (an unsupported call, a
    rejected or wrong plan: the alignment probe's verdict lands here), else ''."""
    out = []
    for v in (src.trap, *src.fixed):
        got = [r for r in run.records if (r.probe, r.variant, r.mode) == (src.probe, v, src.mode) and not r.ok]
        if got:
            out.append(f"{src.probe}/{v} {str(got[0].status).splitlines()[0][:160]}")
    return (": " + "; ".join(out)) if out else ""


# the execute probe's variant for each counted call form, warm (a plan built once, run many times)
WARM_FORMS = {"execute": "generic", "execute_plan_at_index": "pinned", "execute_ordered": "ordered"}


def warm_execute(run, counts: dict, size: str = "256", here: float | None = None) -> tuple[float | None, str]:
    """(µs of one warm execute in the step's call forms, citation) from the execute probe, or
    (None, why not): what an execute costs once its graph is kept, where the step runs each execute
    right after building its plan, cold: a cold execute costs several times a warm one
    (log 2026-12-01-1250)."""
    forms = {k: counts.get(k) or 0 for k in WARM_FORMS if counts.get(k)}
    if run is None or not forms:
        return None, "no run file" if run is None else "no execute counted"
    parts, total, n = [], 0.0, sum(forms.values())
    for form, k in forms.items():
        v = WARM_FORMS[form]
        at = _closest_size(run, "execute", v, size, "eager")
        us = _median(run, "execute", v, at, "eager") if at else None
        if us is None:
            return None, f"no figure in {_rel(run.path)} (execute/{v}, eager)"
        rec = run.find("execute", v, at, "eager")
        pace, cite = host_pace(here, (rec,))
        parts.append(f"execute/{v} {us:.2f}{trust.badge(rec)} µs @{at} eager" + (f" × {k:g}/{n:g}" if len(forms) > 1 else "")
                     + cite)
        total += us * pace * k / n
    return total, "; ".join(parts)


class _Zero(dict):
    def __missing__(self, key):
        return 0


def _fill(text: str, counts: dict) -> str:
    try:
        return string.Formatter().vformat(text, (), _Zero(counts))
    except (ValueError, TypeError, KeyError):
        return text


@dataclass
class Finding:
    rule: str
    trap: int | None
    label: str
    title: str
    evidence: str
    cost_us: float | None          # avoidable µs per step; None: no figure
    cost_from: list = field(default_factory=list)
    fix: str = ""
    flagged: bool = False          # a cited probe figure carries a trust flag
    share: float | None = None     # cost_us as a share of the user's own eager step
    lines: list = field(default_factory=list)   # [{"line", "per_step", "us"}]: where its calls were counted


def _part_cost(part, counts, run, measured, here=None) -> tuple[float | None, str, bool]:
    """First source of a part that has a figure: (µs per step, citation, flagged)."""
    misses, zero = [], False
    for k, src in enumerate(part):
        if isinstance(src, audit_rules.Measured):
            v = measured.get(src.key)
            if v is not None and v > 0:
                ref, flagged = _reference(part[k + 1:], run, here)
                return v, f"{v:.2f} µs/step: {src.cite()}" + ref, flagged
            misses.append(f"not measured: {src.label}")
            continue
        n = counts.get(src.count) or 0
        if n == 0:  # this source does not apply; a later one may
            zero = True
            continue
        # a source with its own pricing (bench.audit.packs.Slope), else a probe figure
        us, cite, flagged = (net_price(run, src, here) if isinstance(src, audit_rules.Net) else
                             src.price(run, here) if hasattr(src, "price") else probe_figure(run, src, here))
        if us is None:
            misses.append(cite)
            continue
        if us <= 0:
            return 0.0, f"{n:g} × 0 (no cost measured here: {cite})", flagged
        return n * us, f"{n:g} × {us:.2f} µs ({cite})", flagged
    return (0.0, "", False) if zero else (None, "; ".join(misses), False)


def _reference(sources, run, here=None) -> tuple[str, bool]:
    """Probe figures not used for the cost, cited so the reader can compare."""
    refs, flagged = [], False
    for src in sources:
        if isinstance(src, audit_rules.Figure):
            us, cite, f = probe_figure(run, src, here)
            if us is not None:
                refs.append(f"{us:.2f} µs per occurrence ({cite})")
                flagged |= f
    return ("; probe for reference: " + "; ".join(refs) if refs else ""), flagged


def evaluate(counts: dict, run=None, measured: dict | None = None, capture_error: str | None = None,
             rules=audit_rules.RULES, here: float | None = None) -> list[Finding]:
    """Findings for the counts per step, biggest cost first (no figure last); the run's figures at
    this host's pace (`here`: the audit's host sentinel, µs; host_pace).

    measured: µs per step this audit measured itself ("copy_kernel_us": the step's copy kernels,
    split here over the kinds of copy counted; "build_us" defaults to the counted build time).
    capture_error: the one-line capture summary, when capture failed."""
    c = audit_rules.derived(counts)
    measured = dict(measured or {})
    measured.setdefault("build_us", c.get("build_us"))
    measured.update(audit_rules.split_copy_time(measured.get("copy_kernel_us"), c))
    out = []
    for rule in rules:
        if not rule.fires(c):
            continue
        total, cites, any_fig, missing, flagged = 0.0, [], False, False, False
        for part in rule.parts:
            us, cite, f = _part_cost(part, c, run, measured, here)
            flagged |= f
            if cite:
                cites.append(cite)
            if us is not None:
                total += us
                any_fig = True
            else:
                missing = True
        if missing and total == 0:  # a part that does not apply must not read as "costs nothing"
            any_fig = False
        if rule.cost_note and (note := rule.cost_note(c)):
            cites.append(note)
        evidence = _fill(rule.evidence, c) + (rule.detail(c) if rule.detail else "")
        out.append(Finding(rule.id, rule.trap, rule.label(), rule.title, evidence,
                           total if any_fig else None, cites, rule.fix, flagged))
    if capture_error:
        r = audit_rules.CAPTURE
        out.append(Finding(r.id, r.trap, r.label(), r.title, capture_error, None, [], r.fix))
    out.sort(key=lambda f: (f.cost_us is None, -(f.cost_us or 0)))
    return out


def load_costs(run_file, gpu_name, root: str | Path = ".") -> tuple[object, str | None, str]:
    """(run, its path as shown, where it came from) for the costs; run None when there is none."""
    if run_file is not None:
        run = rec_mod.load_run(run_file)  # RunFileError: the caller's bad input
        return run, _rel(Path(run_file)), "given"
    path = find_run_file(gpu_name, root)
    if path is None:
        return None, None, f"no run of the probes on {gpu_name} and no reference run: costs show as no figure"
    return rec_mod.load_run(path), _rel(path), "latest run on this GPU" if "results" in path.parts else "reference run"


def _rel(path: Path) -> str:
    """The file's path from the working folder when it is inside, else its absolute path."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(Path(path).resolve())
