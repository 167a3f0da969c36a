"""`hostbench audit`: which integration traps a user's own step hits, and what each costs here.

    hostbench audit path/to/file.py:make_step [--run-file RUN.json] [--out DIR] [--rounds N]
    from bench.audit.auditor import audit; report = audit(step)

Order of the passes (one process, one step): a first plain call; eager timing; CUDA-graph capture
and replay; the counting pass (bench.audit.count, wrappers only inside it); the device mode
(torch.profiler) last, because a profiler session slows later host timing in the same process.
Trap costs come from a run file of the probes (bench.audit.rules says which figures). A failed
capture is summarised in one line after the counting pass, whose counts name the cause.
Needs a CUDA GPU and nvidia-cudnn-frontend; the CLI says so in one line (exit 2) without them.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import json
import math
import os
import string
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from bench.audit import count as audit_count
from bench.audit import rules as audit_rules
from bench.measure import stats
from bench.measure import timing
from bench.measure import trust
from bench.measure import records as rec_mod

ROOT = Path(__file__).resolve().parent.parent
COUNT_STEPS = 10
EXIT_BAD_INPUT = 2
EXIT_NO_GPU = 2          # no CUDA GPU or no cuDNN frontend here: also input the audit cannot use


class AuditInputError(ValueError):
    """Bad input from the user: the message says what and where."""


# -- loading the user's step -------------------------------------------------------------------

def parse_target(spec: str) -> tuple[str, str, Path | None]:
    """`path/to/file.py:make_step` -> (where, attribute, path or None for a module name); checks
    the form and that the file exists, imports nothing."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise AuditInputError(f"{spec!r}: expected path/to/file.py:factory (a file, a colon, a function name)")
    if where.endswith(".py") or os.sep in where:
        path = Path(where)
        if not path.is_file():
            raise AuditInputError(f"{spec}: no such file {where}")
        return where, attr, path
    return where, attr, None


def load_factory(spec: str):
    """`path/to/file.py:make_step` (or `package.module:make_step`) -> the factory callable."""
    where, attr, path = parse_target(spec)
    if path is not None:
        name = "hostbench_audit_target_" + "".join(c if c.isalnum() else "_" for c in path.stem)
        sys.path.insert(0, str(path.resolve().parent))  # the user's file may import its neighbours
        try:
            mod_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        except SyntaxError as e:
            raise AuditInputError(f"{spec}: cannot import {where}: SyntaxError at line {e.lineno}: {e.msg}") from e
        except Exception as e:  # noqa: BLE001 - whatever the user's module raises at import
            raise AuditInputError(f"{spec}: importing {where} raised {type(e).__name__}: {e}") from e
    else:
        try:
            module = importlib.import_module(where)
        except Exception as e:  # noqa: BLE001
            raise AuditInputError(f"{spec}: cannot import module {where}: {type(e).__name__}: {e}") from e
    if not hasattr(module, attr):
        raise AuditInputError(f"{spec}: {where} has no attribute {attr!r}")
    factory = getattr(module, attr)
    if not callable(factory):
        raise AuditInputError(f"{spec}: {attr} is a {type(factory).__name__}, not a factory function")
    return factory


def make_step(factory, name: str = "make_step"):
    """Calls the factory; its result must be a zero-argument callable."""
    try:
        step = factory()
    except Exception as e:  # noqa: BLE001
        raise AuditInputError(f"{name}() raised {type(e).__name__}: {e}") from e
    if not callable(step):
        raise AuditInputError(f"{name}() returned a {type(step).__name__}, not a zero-argument callable")
    return step


def first_call(step) -> None:
    try:
        step()
    except Exception as e:  # noqa: BLE001
        raise AuditInputError(f"the step raised on its first call: {type(e).__name__}: {e}") from e


# -- run file ------------------------------------------------------------------------------------

def find_run_file(gpu_name: str | None, root: Path = ROOT) -> Path | None:
    """The newest results/*/run.json measured on this GPU, else the committed reference run."""
    from bench.measure.fingerprint import gpu_slug
    runs = sorted(root.glob("results/*/run.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in runs:
        try:
            if rec_mod.load_run(p).fingerprint.get("gpu_name") == gpu_name:
                return p
        except rec_mod.RunFileError:
            continue
    ref = root / "reports" / "reference" / gpu_slug({"gpu_name": gpu_name}) / "run.json"
    return ref if ref.is_file() else None


def _size_value(size: str) -> float:
    digits = "".join(c if c.isdigit() else " " for c in size).split()
    return float(digits[0]) if digits else float("nan")


def _median(run, probe, variant, size, mode):
    r = run.find(probe, variant, size, mode)
    if r is None or not r.ok:
        return None
    return r.summary().get("median")


def _closest_size(run, probe, variant, want, mode) -> str | None:
    sizes = {r.size for r in run.records if (r.probe, r.variant, r.mode) == (probe, variant, mode) and r.ok}
    if want in sizes:
        return want
    w = _size_value(want)
    scored = [(abs(math.log(_size_value(s) / w)), s) for s in sizes if _size_value(s) > 0 and w > 0]
    return min(scored)[1] if scored else None


def probe_figure(run, src: audit_rules.Probe) -> tuple[float | None, str, bool]:
    """(µs per occurrence, citation, whether a cited record is flagged) of a probe figure, or
    (None, why not, False). Each cited figure carries its record's trust badge (bench.measure.trust)."""
    if run is None:
        return None, f"no run file ({src.probe}/{src.trap})", False
    size = _closest_size(run, src.probe, src.trap, src.size, src.mode)
    trap = _median(run, src.probe, src.trap, size, src.mode) if size else None
    fixes = [(m, v) for v in src.fixed if (m := _median(run, src.probe, v, size, src.mode)) is not None] if size else []
    if trap is None or not fixes:
        why = f"no figure in {_rel(run.path)} ({src.probe}/{src.trap} vs {'|'.join(src.fixed)}, {src.mode})"
        return None, why, False
    fix_us, fix = min(fixes)
    us = (trap - fix_us) * src.scale
    scale = f" × {src.scale:.3g}" if src.scale != 1 else ""
    b_trap = trust.badge(run.find(src.probe, src.trap, size, src.mode))
    b_fix = trust.badge(run.find(src.probe, fix, size, src.mode))
    return us, (f"{src.probe}/{src.trap} {trap:.2f}{b_trap} − {src.probe}/{fix} {fix_us:.2f}{b_fix} µs "
                f"@{size} {src.mode}{scale}"), bool(b_trap or b_fix)


# -- findings ------------------------------------------------------------------------------------

class _Zero(dict):
    def __missing__(self, key):
        return 0


def _fmt(text: str, counts: dict) -> str:
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


def _part_cost(part, counts, run, measured) -> tuple[float | None, str, bool]:
    """First source of a part that has a figure: (µs per step, citation, flagged)."""
    misses, zero = [], False
    for k, src in enumerate(part):
        if isinstance(src, audit_rules.Measured):
            v = measured.get(src.key)
            if v is not None and v > 0:
                ref, flagged = _reference(part[k + 1:], run)
                return v, f"{v:.2f} µs/step: {src.cite()}" + ref, flagged
            misses.append(f"not measured: {src.label}")
            continue
        n = counts.get(src.count) or 0
        if n == 0:  # this source does not apply; a later one may
            zero = True
            continue
        us, cite, flagged = probe_figure(run, src)
        if us is None:
            misses.append(cite)
            continue
        if us <= 0:
            return 0.0, f"{n:g} × 0 (no cost measured here: {cite})", flagged
        return n * us, f"{n:g} × {us:.2f} µs ({cite})", flagged
    return (0.0, "", False) if zero else (None, "; ".join(misses), False)


def _reference(sources, run) -> tuple[str, bool]:
    """Probe figures not used for the cost, cited so the reader can compare."""
    refs, flagged = [], False
    for src in sources:
        if isinstance(src, audit_rules.Probe):
            us, cite, f = probe_figure(run, src)
            if us is not None:
                refs.append(f"{us:.2f} µs per occurrence ({cite})")
                flagged |= f
    return ("; probe for reference: " + "; ".join(refs) if refs else ""), flagged


def evaluate(counts: dict, run=None, measured: dict | None = None, capture_error: str | None = None,
             rules=audit_rules.RULES) -> list[Finding]:
    """Findings for the counts per step, biggest cost first (no figure last).

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
            us, cite, f = _part_cost(part, c, run, measured)
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
        evidence = _fmt(rule.evidence, c) + (rule.detail(c) if rule.detail else "")
        out.append(Finding(rule.id, rule.trap, rule.label(), rule.title, evidence,
                           total if any_fig else None, cites, rule.fix, flagged))
    if capture_error:
        r = audit_rules.CAPTURE
        out.append(Finding(r.id, r.trap, r.label(), r.title, capture_error, None, [], r.fix))
    out.sort(key=lambda f: (f.cost_us is None, -(f.cost_us or 0)))
    return out


# -- the report ----------------------------------------------------------------------------------

@dataclass
class AuditReport:
    target: str
    env: dict
    modes: dict                    # mode -> {median, q1, q3, iqr, n} µs per step, or {"error": ...}
    kernels_per_step: float | None
    kernels: list                  # [name, per step, µs per step], most time first
    host_overhead_us: float | None
    counts: dict
    findings: list                 # [Finding]
    avoidable_us: float
    run_file: str | None
    run_note: str
    notes: list = field(default_factory=list)

    @property
    def capture_error(self) -> str | None:
        return self.modes.get("graph", {}).get("error")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _us(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def _mode_text(m: dict) -> str:
    if not m or "median" not in m:
        return "–"
    return f"{m['median']:.2f} [IQR {m.get('iqr', 0):.2f}]"


def _flagged(r: AuditReport) -> bool:
    return any(getattr(f, "flagged", False) for f in r.findings)


def render_text(r: AuditReport) -> str:
    e = r.env
    lines = [f"hostbench audit: {r.target}",
             f"{e.get('gpu_name', '?')} · cuDNN {e.get('cudnn_backend', '?')} · frontend {e.get('cudnn_frontend', '?')} "
             f"· torch {e.get('torch', '?')}",
             "µs per step: " + " · ".join(f"{m} {_mode_text(r.modes.get(m, {}))}" for m in ("eager", "graph", "device")),
             *(f"{m}: {r.modes[m]['error']}" for m in ("eager", "graph", "device") if r.modes.get(m, {}).get("error")),
             f"kernels per step: {_us(r.kernels_per_step)}",
             f"host overhead (eager − device): {_us(r.host_overhead_us)} µs/step; "
             f"avoidable (sum of findings): {r.avoidable_us:.2f} µs/step",
             f"costs from: {r.run_file or 'no run file'}{' (' + r.run_note + ')' if r.run_note else ''}", ""]
    if not r.findings:
        lines.append("no traps found.")
    else:
        lines.append("findings, biggest cost first:")
    for i, f in enumerate(r.findings, 1):
        lines.append(f"{i:2d}. [{f.label}] {f.title}: {_us(f.cost_us)} µs/step")
        lines.append(f"    seen: {f.evidence}")
        for c in f.cost_from:
            lines.append(f"    cost: {c}")
        lines.append(f"    fix:  {f.fix}")
    if _flagged(r):
        lines.append(f"trust marks (⚑ on a cited figure): {trust.LEGEND}")
    lines += ["", f"counts per step (steady state, {r.counts.get('steps', 0)} steps): " + _counts_line(r.counts)]
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines) + "\n"


def _counts_line(c: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in c.items() if k != "steps" and isinstance(v, (int, float)) and v)


def render_markdown(r: AuditReport) -> str:
    e = r.env
    md = [f"# hostbench audit: `{r.target}`", "",
          f"{e.get('gpu_name', '?')} · cuDNN {e.get('cudnn_backend', '?')} · frontend {e.get('cudnn_frontend', '?')} "
          f"· torch {e.get('torch', '?')} (CUDA {e.get('cuda', '?')})", "",
          "| mode | µs/step (median) | IQR | note |", "|---|---|---|---|"]
    for m in ("eager", "graph", "device"):
        d = r.modes.get(m, {})
        md.append(f"| {m} | {_us(d.get('median'))} | {_us(d.get('iqr'))} | {d.get('error', '').replace('|', '/')} |")
    md += ["", f"Kernels per step: {_us(r.kernels_per_step)}. Host overhead (eager − device): "
           f"**{_us(r.host_overhead_us)} µs/step**; avoidable (sum of findings): **{r.avoidable_us:.2f} µs/step**.",
           "", f"Costs from `{r.run_file or 'no run file'}`{' — ' + r.run_note if r.run_note else ''}.", "",
           "## Findings, biggest cost first", ""]
    if not r.findings:
        md.append("No traps found.")
    else:
        md += ["| # | trap | finding | seen per step | µs/step | cost from | fix |", "|---|---|---|---|---|---|---|"]
        for i, f in enumerate(r.findings, 1):
            cells = [str(i), f.label, f.title, f.evidence, _us(f.cost_us), "; ".join(f.cost_from) or "–", f.fix]
            md.append("| " + " | ".join(x.replace("|", "/").replace("\n", " ") for x in cells) + " |")
        if _flagged(r):
            md += ["", f"Trust marks (⚑ on a cited figure): {trust.LEGEND}."]
    md += ["", f"## Counts per step (steady state, {r.counts.get('steps', 0)} steps)", "",
           "| count | per step |", "|---|---|"]
    md += [f"| {k} | {v:g} |" for k, v in r.counts.items() if k != "steps" and isinstance(v, (int, float))]
    if r.kernels:
        md += ["", "## Kernels (device mode)", "", "| kernel | per step | µs/step |", "|---|---|---|"]
        md += [f"| `{n[:100]}` | {c:g} | {u:.2f} |" for n, c, u in r.kernels[:12]]
    if r.notes:
        md += ["", "## Notes", ""] + [f"- {n}" for n in r.notes]
    return "\n".join(md) + "\n"


def write_outputs(r: AuditReport, out_dir) -> list[Path]:
    """audit.md and audit.json, each written to a temp file and renamed: never half a file."""
    texts = {"audit.md": render_markdown(r), "audit.json": json.dumps(r.to_dict(), indent=1, default=str)}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmps = []
    try:
        for name, text in texts.items():
            tmp = out / (name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmps.append((tmp, out / name))
        for tmp, dst in tmps:
            os.replace(tmp, dst)
    finally:
        for tmp, _ in tmps:
            tmp.unlink(missing_ok=True)
    return [dst for _, dst in tmps]


# -- measuring -------------------------------------------------------------------------------------

NOTES = (
    "counting wraps attributes of the cudnn and torch modules (cudnn.set_stream, torch.empty, ...) and methods "
    "of cudnn.pygraph and torch.Tensor; names bound before the audit (`from cudnn import set_stream`, "
    "`from torch import empty`) are not seen",
    "a variant pack is counted as new when execute gets a dict/tuple object not seen before in the counting pass",
)


def _summary(samples) -> dict:
    s = stats.summarize(samples)
    return {k: s[k] for k in ("median", "q1", "q3", "iqr", "n")} if s.get("n") else {"error": "no samples"}


def kernel_breakdown(step, calls: int, sync) -> dict:
    """{kernel name: [per step, µs per step]} from one profiler session (after the device mode)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        timing.run_calls(step, calls)
        sync()
    out = {}
    for ev in prof.events():
        if getattr(ev, "device_type", None) == DeviceType.CUDA:
            n, us = out.get(ev.name, (0, 0.0))
            out[ev.name] = (n + 1, us + ev.time_range.elapsed_us())
    return {k: [n / calls, us / calls] for k, (n, us) in out.items()}


def _load_run(run_file, gpu_name) -> tuple[object, str | None, str]:
    if run_file is not None:
        run = rec_mod.load_run(run_file)  # RunFileError: the caller's bad input
        return run, _rel(Path(run_file)), "given"
    path = find_run_file(gpu_name)
    if path is None:
        return None, None, f"no run of the probes on {gpu_name} and no reference run: costs show as no figure"
    return rec_mod.load_run(path), _rel(path), "latest run on this GPU" if "results" in path.parts else "reference run"


def _rel(p: Path) -> str:
    """The file's path from the repository root when it is inside, else its absolute path."""
    try:
        return str(Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(Path(p).resolve())


def _env(ctx) -> dict:
    from bench.measure import fingerprint
    fp = fingerprint.gpu_fingerprint(ctx.cudnn)
    fp["capabilities"] = ctx.caps
    return fp


def _device_mode(step, sync, opt) -> tuple[dict, float | None, list]:
    """(device summary, kernels per step, [[kernel, per step, µs per step], ...] most time first)."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Profiler clears events")  # torch's own notice
            dev = timing.measure_device({"step": step}, sync, opt)["step"]
            br = kernel_breakdown(step, opt.device_calls, sync)
    except Exception as e:  # noqa: BLE001 - report the other modes anyway
        return {"error": f"device mode failed: {audit_rules.error_line(f'{type(e).__name__}: {e}')}"}, None, []
    kpc = sorted(d.kernels_per_call for d in dev)[len(dev) // 2]
    kernels = sorted(([n, c, u] for n, (c, u) in br.items()), key=lambda k: -k[2])
    return _summary([d.per_call_us for d in dev]), kpc, kernels


def audit(step, *, run_file=None, rounds: int | None = None, count_steps: int = COUNT_STEPS, ctx=None,
          target: str = "", checked: bool = False) -> AuditReport:
    """Audits one step (a zero-argument callable) on this GPU. See the module docstring.

    Make the step with its set-up done; it runs on `ctx.stream` (a harness GpuContext made here if
    not given), so a step whose handle is bound to another stream at set-up will not capture.
    """
    import torch
    from bench.measure.context import GpuContext
    if timing.profiler_has_run():
        raise timing.ContaminatedError("a torch.profiler session already ran in this process: audit in a fresh process")
    ctx = ctx or GpuContext()
    env = _env(ctx)
    run, run_path, run_note = _load_run(run_file, env.get("gpu_name"))
    fe = (run.fingerprint.get("cudnn_frontend") if run else None)
    if run is not None and fe and fe != env.get("cudnn_frontend"):
        run_note += f"; measured with frontend {fe}, this process runs {env.get('cudnn_frontend')}"
    opt = timing.Options(rounds=rounds or timing.Options.rounds)
    sync = torch.cuda.synchronize   # device-wide: the step may use streams of its own
    modes, notes = {}, list(NOTES)
    with torch.cuda.stream(ctx.stream):
        if not checked:
            first_call(step)
        res = timing.measure_eager({"step": step}, sync, opt)
        samples, calls = res["step"]
        modes["eager"] = _summary(samples)
        capture_failed = None
        try:
            cap = timing.capture(step, calls, ctx.stream)
            modes["graph"] = _summary(timing.measure_graph({"step": cap}, ctx.stream, opt)["step"])
            del cap
        except Exception as e:  # noqa: BLE001 - CaptureError, or a failure cleaning up after one
            capture_failed = audit_rules.error_messages(e)
        sync()
        counts = audit_count.count_step(step, count_steps, memory_stats=torch.cuda.memory_stats)
        sync()
        device, kpc, kernels = _device_mode(step, sync, opt)
    if capture_failed is not None:  # summarised after counting: the counts name the cause
        modes["graph"] = {"error": audit_rules.capture_summary(capture_failed, counts),
                          "raw": "\n".join(capture_failed)}
    modes["device"] = device
    copies = [(c, u) for n, c, u in kernels if audit_rules.is_copy_kernel(n)]
    counts["copy_kernels"] = sum(c for c, _ in copies)
    measured = {"copy_kernel_us": sum(u for _, u in copies)}
    findings = evaluate(counts, run, measured, modes["graph"].get("error"))
    eager, device = modes["eager"].get("median"), modes.get("device", {}).get("median")
    avoidable = sum(f.cost_us for f in findings if f.cost_us is not None)
    if eager is not None and device is not None and avoidable > eager - device:
        notes.append("the avoidable sum exceeds the measured host overhead: run-file figures come from another "
                     "process (host µs drift 10-40 % between processes) and from the probes' own problem")
    return AuditReport(
        target=target or getattr(step, "__qualname__", repr(step)), env=env, modes=modes, kernels_per_step=kpc,
        kernels=kernels, host_overhead_us=(eager - device) if eager is not None and device is not None else None,
        counts=counts, findings=findings, avoidable_us=avoidable,
        run_file=run_path, run_note=run_note, notes=notes)


# -- command line ----------------------------------------------------------------------------------

NEEDS = "needs a CUDA GPU and nvidia-cudnn-frontend (pip install nvidia-cudnn-frontend)"


def _context():
    from bench.measure.context import GpuContext
    return GpuContext()


def _on_stream(ctx):
    import torch
    return torch.cuda.stream(ctx.stream)


def environment_problem() -> str | None:
    """What this machine lacks for an audit (torch with a CUDA GPU, the cuDNN frontend), or None.
    torch comes first, with CUDA up, so `import cudnn` finds torch's libcudnn."""
    problems = []
    try:
        import torch
    except ImportError as e:
        return str(e)
    if not torch.cuda.is_available():
        problems.append(f"no CUDA GPU (torch {torch.__version__} is a CPU build)" if torch.version.cuda is None
                        else "no CUDA GPU visible to torch")
    else:
        with contextlib.suppress(Exception):
            torch.cuda.init()
    try:
        import cudnn  # noqa: F401
    except (ImportError, OSError) as e:
        problems.append(str(e))
    return "; ".join(problems) or None


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, like every hostbench command
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="hostbench audit",
        description=("Which integration traps your own step hits, and what each costs on this GPU: times the "
                     "step eager, replayed in a CUDA graph and on the device, counts what it calls, and prices "
                     f"each trap with the probes' figures. It {NEEDS}."),
        epilog=f"exit codes: 0 done; {EXIT_BAD_INPUT} bad input or no CUDA GPU / cuDNN frontend here; "
               f"1 the audit failed part way (nothing written)")
    ap.add_argument("target", help="path/to/file.py:make_step; make_step() sets up and returns a zero-argument step")
    ap.add_argument("--run-file", help="run file with the probes' figures (default: newest results/*/run.json "
                                       "measured on this GPU, else reports/reference/<gpu>/run.json)")
    ap.add_argument("--out", help="also write audit.md and audit.json into this folder (default: print only)")
    ap.add_argument("--rounds", type=int, default=timing.Options.rounds,
                    help="interleaved timing rounds per mode (default: %(default)s)")
    ap.add_argument("--count-steps", type=int, default=COUNT_STEPS,
                    help=f"steps in the counting pass, at least {audit_count.MIN_STEPS} (default: %(default)s)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    err = lambda msg: print(f"hostbench audit: {msg}", file=sys.stderr)  # noqa: E731
    if a.rounds < 1 or a.count_steps < audit_count.MIN_STEPS:
        err(f"--rounds must be at least 1 and --count-steps at least {audit_count.MIN_STEPS}")
        return EXIT_BAD_INPUT
    if a.out and Path(a.out).exists() and not Path(a.out).is_dir():
        err(f"--out {a.out} exists and is not a folder")
        return EXIT_BAD_INPUT
    try:  # the user's own mistakes first: they hold on any machine
        parse_target(a.target)
        if a.run_file:
            rec_mod.load_run(a.run_file)
    except (AuditInputError, rec_mod.RunFileError) as e:
        err(str(e))
        return EXIT_BAD_INPUT
    problem = environment_problem()
    if problem:
        err(f"{NEEDS}; here: {problem}")
        return EXIT_NO_GPU
    try:
        factory = load_factory(a.target)
    except AuditInputError as e:
        err(str(e))
        return EXIT_BAD_INPUT
    try:
        ctx = _context()
    except Exception as e:  # noqa: BLE001 - NoGpuError, or a CUDA start-up failure
        err(f"{NEEDS}; here: {audit_rules.error_line(f'{type(e).__name__}: {e}')}")
        return EXIT_NO_GPU
    fname = a.target.rpartition(":")[2]
    try:
        with _on_stream(ctx):   # set-up sees the audit's stream as current
            step = make_step(factory, fname)
            first_call(step)
        report = audit(step, run_file=a.run_file, rounds=a.rounds, count_steps=a.count_steps, ctx=ctx,
                       target=a.target, checked=True)
    except AuditInputError as e:
        err(f"{a.target}: {e}")
        return EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 - e.g. the step failing later: say so, write nothing
        err(f"{a.target}: audit failed: {audit_rules.error_line(f'{type(e).__name__}: {e}')}")
        return 1
    print(render_text(report), end="")
    if a.out:
        for p in write_outputs(report, a.out):
            print(f"wrote {p}")
    return 0
