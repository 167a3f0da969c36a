"""`hostbench audit`: which integration traps a user's own step hits, and what each costs here.

    hostbench audit path/to/file.py:make_step [--run-file RUN.json] [--out DIR] [--rounds N]
    from cudnn_hostbench.bench.audit import audit; report = audit(step)

Order of the passes (one process, one step): a first plain call; eager timing; CUDA-graph capture
and replay; the counting pass (bench.audit.count, wrappers only inside it); the line sampler
(bench.audit.sampler: host time by source line); the sync timeline (bench.audit.timeline); the
profiled passes last, because a profiler session slows later host timing in the same process: the
device mode (torch.profiler), then the kernel launches of each sync's segment (bench.audit.launches).
Trap costs come from a run file of the probes (bench.audit.cost, bench.audit.rules). A failed
capture is summarised in one line after the counting pass, whose counts name the cause.
Needs a CUDA GPU and nvidia-cudnn-frontend. The report is rendered by reports.audit_report.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import statistics
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cudnn_hostbench.bench.audit import count as audit_count
from cudnn_hostbench.bench.audit import launches as audit_launches
from cudnn_hostbench.bench.audit import lines as audit_lines
from cudnn_hostbench.bench.audit import packs as audit_packs
from cudnn_hostbench.bench.audit import rules as audit_rules
from cudnn_hostbench.bench.audit import sampler as audit_sampler
from cudnn_hostbench.bench.audit import timeline as audit_timeline
from cudnn_hostbench.bench.audit.cost import Finding, evaluate, load_costs, warm_execute
from cudnn_hostbench.bench.audit.plan_choice import PREFIX as PLAN_NOTE
from cudnn_hostbench.bench.audit.plan_choice import recommend as recommend_plan
from cudnn_hostbench.bench.audit.target import AuditInputError, first_call
from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.runfile import stats

COUNT_STEPS = 10


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
    sampling: dict = field(default_factory=dict)      # the line sampler's stacks (bench.audit.sampler), or {"error"}
    lines: dict = field(default_factory=dict)         # derived: host time by line (bench.audit.lines)
    projection: dict = field(default_factory=dict)    # derived: the step with every finding fixed
    timeline: dict = field(default_factory=dict)      # the syncs' host segments, own and fixed µs (bench.audit.timeline)
    phases_s: dict = field(default_factory=dict)      # where the audit's own wall time went, phase -> s

    @property
    def capture_error(self) -> str | None:
        return self.modes.get("graph", {}).get("error")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "AuditReport":
        """An audit.json read back (ValueError/KeyError/TypeError on a file that is not one)."""
        names = {f.name for f in dataclasses.fields(cls)}
        missing = names - set(data) - {"notes", "sampling", "lines", "projection", "timeline", "phases_s"}
        if missing:
            raise ValueError(f"missing {', '.join(sorted(missing))}")
        kw = {k: data[k] for k in names if k in data}
        kw["findings"] = [Finding(**f) for f in data["findings"]]
        return cls(**kw)


NOTES = (
    "counting wraps attributes of the cudnn and torch modules (cudnn.set_stream, torch.empty, ...) and methods "
    "of cudnn.pygraph and torch.Tensor; names bound before the audit (`from cudnn import set_stream`, "
    "`from torch import empty`) are not seen",
    "a variant pack is counted as new when execute gets a dict/tuple object not seen before in the counting pass",
)


def _summary(samples) -> dict:
    s = stats.summarize(samples)
    return {k: getattr(s, k) for k in ("median", "q1", "q3", "iqr", "n")} if s else {"error": "no samples"}


HOST_WARM_S = 10.0    # at most this long learning the host's fast-state floor before the eager rounds
HOST_GATE_S = 20.0    # the eager rounds wait for the fast state at most this long in all


def _host_watch():
    """A host-state watch for the eager rounds, as the probes' workers have: on a VM whose vCPU flips
    between a fast and a slow state, an audit timed in the slow one is not comparable with the
    probes' figures or with another audit: a step's µs/step nearly doubles in the slow state
    (log 2026-12-01-1402)."""
    from cudnn_hostbench.bench.measure.core import progress
    from cudnn_hostbench.bench.measure.core.hoststate import HostState
    host = HostState()
    host.warm(learn_s=1.0, max_s=HOST_WARM_S, say=lambda message: progress.say(f"hostbench audit: {message}"))
    host.gate_budget_s = HOST_GATE_S
    return timing.Watch(host=host)


class _Phases:
    """Where the audit's wall time goes, a progress line per phase: a slow step on a slow host can take
    minutes (a step that rebuilds its graph each call has been cut by the device's time limit with no
    line after the host's warm-up: log 2026-12-04-1508), and a cut audit then says which phase it was in."""

    def __init__(self) -> None:
        self.t0 = self.last = time.perf_counter()
        self.s: dict[str, float] = {}

    def done(self, phase: str) -> None:
        from cudnn_hostbench.bench.measure.core import progress
        now = time.perf_counter()
        self.s[phase] = round(now - self.last, 2)
        self.last = now
        progress.say(f"hostbench audit: {phase} done in {self.s[phase]:.1f} s ({now - self.t0:.1f} s so far)")


def _host_of(watch) -> dict:
    """What the eager figure says of its host state: 'fast', 'slow', or '' (rounds of both kept)."""
    h = watch.host
    return {"host_state": watch.state, "host": {"floor_us": h.floor, "held_floor": h.held,
                                                "fast_fraction": h.summary()["fast_fraction"],
                                                "discarded": dict(watch.discarded), "fell_back": watch.fell_back}}


def _env(ctx) -> dict:
    from cudnn_hostbench.bench.cudnn_graphs.context import Cudnn
    from cudnn_hostbench.bench.measure.runfile import fingerprint
    fp = fingerprint.gpu_fingerprint()
    fp.update(Cudnn.of(ctx).fingerprint())   # frontend/backend versions and capabilities
    return fp


def _device_mode(step, sync, opt) -> tuple[dict, float | None, list]:
    """(device summary, kernels per step, [[kernel, per step, µs per step], ...] most time first),
    the breakdown summed over the device rounds."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Profiler clears events")  # torch's own notice
            dev = timing.measure_device({"step": step}, sync, opt)["step"]
    except Exception as e:  # noqa: BLE001 - report the other modes anyway
        return {"error": f"device mode failed: {audit_rules.error_line(f'{type(e).__name__}: {e}')}"}, None, []
    kpc = sorted(d.kernels_per_call for d in dev)[len(dev) // 2]
    calls = len(dev) * opt.device_calls
    names, times = sum((d.names for d in dev), Counter()), sum((d.times for d in dev), Counter())
    kernels = sorted(([n, c / calls, times[n] / calls] for n, c in names.items()), key=lambda k: -k[2])
    return _summary([d.per_call_us for d in dev]), kpc, kernels


def audit(step, *, run_file=None, rounds: int | None = None, count_steps: int = COUNT_STEPS, ctx=None,
          target: str = "", checked: bool = False, root: str | Path = ".", fixed=None,
          fixed_target: str = "") -> AuditReport:
    """Audits one step (a zero-argument callable) on this GPU. See the module docstring.

    `fixed`, the same step with its findings fixed by hand, is timed in a plain loop of its own right
    after the step's, in this process and the same host state: modes["fixed_loop"], what the
    projection is checked against. In another process it would read another host floor (processes
    differ by several per cent: log 2026-12-02-0641); interleaved with the step's rounds, the step's
    own work slowed it.

    Make the step with its set-up done; it runs on `ctx.stream` (a harness GpuContext made here if
    not given), so a step whose handle is bound to another stream at set-up will not capture.
    Without `run_file`, costs come from the newest `root`/results/*/run.json of this GPU, else
    `root`/reports/reference/<gpu>/run.json.
    """
    import torch

    from cudnn_hostbench.bench.measure.core.gpu_context import GpuContext
    _can_audit()
    ctx = ctx or GpuContext()
    env = _env(ctx)
    run, run_path, run_note = _costs(run_file, env, root)
    opt = timing.Options(rounds=rounds or timing.Options.rounds)
    sync = torch.cuda.synchronize   # device-wide: the step may use streams of its own
    modes, notes = {}, list(NOTES)
    ph = _Phases()
    with torch.cuda.stream(ctx.stream):
        if not checked:
            first_call(step)
        watch = _host_watch()
        ph.done("first call and the host's warm-up")
        res = timing.measure_eager({"step": step}, sync, opt, watch=watch)
        samples, calls = res["step"]
        modes["eager"] = dict(_summary(samples), calls=calls, **_host_of(watch), **_sentinel(watch))
        ph.done("eager rounds")
        modes.update(_loops(step, fixed, fixed_target, sync, watch, modes["eager"].get("host_state") or ""))
        ph.done("plain loops")
        capture_failed = _graph_mode(modes, step, calls, ctx.stream, opt)
        sync()
        ph.done("graph replay")
        counts = audit_count.count_step(step, count_steps, memory_stats=torch.cuda.memory_stats)
        sync()
        ph.done("counting pass")
        step_us = _step_us(modes)     # the sampler's rounds are plain loops: held to the loop's figure
        state = _held_state(modes)
        sampling = _sample(step, sync, step_us, watch.host, state)
        sync()
        ph.done("line sampling")
        timeline = _timeline(step, step_us, watch.host, state)
        sync()
        ph.done("sync timeline")
        device, kpc, kernels = _device_mode(step, sync, opt)
        sync()
        ph.done("device mode")
        timeline = _with_launches(step, timeline)
        ph.done("kernel launches")
    if capture_failed is not None:  # summarised after counting: the counts name the cause
        modes["graph"] = {"error": audit_rules.capture_summary(capture_failed, counts),
                          "raw": "\n".join(capture_failed)}
    modes["device"] = device
    counts["copy_kernels"] = sum(c for n, c, _ in kernels if audit_rules.is_copy_kernel(n))
    eager, device = modes["eager"].get("median"), modes.get("device", {}).get("median")
    report = AuditReport(
        target=target or getattr(step, "__qualname__", repr(step)), env=env, modes=modes, kernels_per_step=kpc,
        kernels=kernels, host_overhead_us=(eager - device) if eager is not None and device is not None else None,
        counts=counts, findings=[], avoidable_us=0.0, run_file=run_path, run_note=run_note, notes=notes,
        sampling=sampling, timeline=timeline, phases_s=ph.s)
    return price(report, run)


def _can_audit() -> None:
    """Raises before anything is measured (so nothing measured is lost) where the audit cannot run."""
    if timing.profiler_has_run():
        raise timing.ContaminatedError("a torch.profiler session already ran in this process: audit in a fresh process")
    why = audit_sampler.cannot_start()
    if why:
        raise AuditInputError(why)


def _costs(run_file, env: dict, root) -> tuple:
    """(the run file's figures, its path, a note on it): load_costs, saying where its frontend differs."""
    run, run_path, run_note = load_costs(run_file, env.get("gpu_name"), root)
    fe = (run.fingerprint.cudnn_frontend if run else None)
    if run is not None and fe and fe != env.get("cudnn_frontend"):
        run_note += f"; measured with frontend {fe}, this process runs {env.get('cudnn_frontend')}"
    return run, run_path, run_note


def _loops(step, fixed, fixed_target: str, sync, watch, want: str) -> dict:
    """modes["loop"], and with `fixed` modes["fixed_loop"] timed in blocks alternating with it."""
    if fixed is None:
        return {"loop": _plain_loop({"step": step}, sync, watch, want)["step"]}
    loops = _paired_loops({"step": step, "fixed": fixed}, sync, watch, want)
    return {"loop": loops["step"], "fixed_loop": dict(loops["fixed"], target=fixed_target, timed=PAIRED)}


def _graph_mode(modes: dict, step, calls: int, stream, opt) -> list | None:
    """modes["graph"] from the captured step's replays; the capture's error messages where it failed."""
    try:
        cap = timing.capture(step, calls, stream)
        modes["graph"] = _summary(timing.measure_graph({"step": cap}, stream, opt)["step"])
        del cap
    except Exception as e:  # noqa: BLE001 - CaptureError, or a failure cleaning up after one
        return audit_rules.error_messages(e)
    return None


def _held_state(modes: dict) -> str:
    """The host state the figure the projection is held to ran in: the loop's, else the eager rounds'."""
    return (modes["loop"].get("host_state") if modes["loop"].get("median") else None) \
        or modes["eager"].get("host_state") or ""


def _step_us(modes: dict) -> float | None:
    """The step's µs as a user's loop pays it: the plain loop's median, else the eager one."""
    return (modes.get("loop") or {}).get("median") or (modes.get("eager") or {}).get("median")


# a plain loop round is 0.1 s and the VM's host states last 0.35 s to seconds, so rounds come in runs of
# one state: 5 rounds can all fall in one state (log 2026-12-03-1824); 9 span twice the flips
LOOP_ROUNDS = 9
# a loop's first rounds after the eager rounds' short ones run slow, by a tenth or more of the step
# (log 2026-12-04-0205): 0.3 s of warm-up, not 0.1
LOOP_WARMUP = 3
LOOP_ROUND_S = 0.1        # a plain loop round: this long, at least LOOP_MIN_STEPS steps between two syncs
LOOP_MIN_STEPS = 200
LOOP_GAP = 0.05           # eager and loop further apart than this: the report says why
LOOP_TRIES = 3            # loops measured until one lands in the eager rounds' host state
PACE_GAP = 0.03           # the host's sentinel this far apart between eager and loop: the host's pace says why
DEVICE_BOUND = 0.8        # device µs/step this near the loop's: back to back, steps queue behind the GPU


def _loop_options(rounds: int, warmup: int) -> timing.Options:
    """A plain loop's rounds: LOOP_ROUND_S each, at least LOOP_MIN_STEPS steps between two syncs."""
    return timing.Options(rounds=rounds, warmup_rounds=warmup, target_round_s=LOOP_ROUND_S,
                          min_calls=LOOP_MIN_STEPS, max_calls=1_000_000)


def _loop_failed(steps: dict, error: Exception) -> dict:
    return dict.fromkeys(steps, {"error": f"plain loop failed: {audit_rules.error_line(f'{type(error).__name__}: {error}')}"})


def _plain_loop(steps: dict, sync, watch, want: str = "") -> dict:
    """{name: the µs/step a user's own loop pays}: rounds of many steps (LOOP_ROUND_S, at least
    LOOP_MIN_STEPS) between two device syncs, in the eager rounds' host-state watch, the steps'
    rounds interleaved. The eager rounds are short (2 ms, 16+ steps) with a device sync at each
    end, so a step whose GPU work queues behind its host pays a drain per round there; the
    projection is held to this figure. Measured again (LOOP_TRIES in all) while it lands in another
    host state than `want`, the eager rounds': a loop of the slow state against a fast eager figure
    compares two hosts."""
    opt = _loop_options(LOOP_ROUNDS, LOOP_WARMUP)
    host = watch.host if watch is not None else None
    # each try is a focus block: its rounds wait for the fast state on an allowance of their own,
    # not on what the eager rounds left of the gate (spent, or resting after a slow stretch)
    if host is not None:
        host.allow_focus_blocks(LOOP_TRIES)
    tries = 0
    while tries < LOOP_TRIES:
        tries += 1
        try:
            with host.focused() if host is not None else contextlib.nullcontext():
                got = timing.measure_eager(steps, sync, opt, watch=watch)
        except Exception as e:  # noqa: BLE001 - the eager figure stands without it
            return _loop_failed(steps, e)
        if not want or watch.state == want:
            break
    # the rounds themselves are kept: a median of a few rounds on a flipping host needs them to be read again
    return {n: dict(_summary(samples), calls=calls, host_state=watch.state, tries=tries, **_sentinel(watch),
                    rounds_us=[round(x, 3) for x in samples])
            for n, (samples, calls) in got.items()}


# The fixed step's loop against the trap's: blocks of LOOP_ROUNDS // LOOP_BLOCKS rounds, alternating,
# each after a warm-up round and a gc pass. One block each, one after the other, put a stretch of the
# host's pace on one side only: the projection's error against the fixed loop spread ±10 % between
# starts (log 2026-12-04-0205). Interleaved round by round, a Python-heavy trap slowed the fixed step
# by up to a quarter (log 2026-12-02-0745): a block's warm-up round takes that.
LOOP_BLOCKS = 3
PAIRED = f"alternating with the step's loop, {LOOP_BLOCKS} blocks of {LOOP_ROUNDS // LOOP_BLOCKS} rounds each"


def _paired_loops(steps: dict, sync, watch, want: str = "") -> dict:
    """{name: the µs/step a user's own loop pays} for a trap step and its fixed version: their
    plain loops in alternating blocks (one block of each is a pair), in the host state `want`
    where a pair's two blocks both ran in it: a pair in another state is left out and one more is
    run, up to twice LOOP_BLOCKS pairs; with no pair in `want`, every pair is kept and the figures
    say their states."""
    host = watch.host if watch is not None else None
    per: dict = {name: [] for name in steps}   # name -> [(samples, calls, state, sentinel µs)] per block
    kept = 0
    if host is not None:
        host.allow_focus_blocks(2 * LOOP_BLOCKS * len(steps))
    for block in range(2 * LOOP_BLOCKS):
        for name, fn in steps.items():
            opt = _loop_options(LOOP_ROUNDS // LOOP_BLOCKS, LOOP_WARMUP if block == 0 else 1)
            gc.collect()
            try:
                with host.focused() if host is not None else contextlib.nullcontext():
                    samples, calls = timing.measure_eager({name: fn}, sync, opt, watch=watch)[name]
            except Exception as e:  # noqa: BLE001 - the eager figure stands without it
                return _loop_failed(steps, e)
            per[name].append((samples, calls, getattr(watch, "state", ""), _sentinel(watch).get("sentinel_us")))
        kept += not want or all(blocks[-1][2] == want for blocks in per.values())
        if kept >= LOOP_BLOCKS:
            break
    pairs = range(len(next(iter(per.values()))))
    good = [i for i in pairs if not want or all(per[name][i][2] == want for name in steps)] or list(pairs)
    return {name: _loop_figure(blocks, good) for name, blocks in per.items()}


def _loop_figure(blocks: list, good: list) -> dict:
    """A loop's figure over its blocks in the kept pairs `good`."""
    mine = [blocks[i] for i in good]
    samples = [x for b in mine for x in b[0]]
    states = {b[2] for b in mine}
    sent = [b[3] for b in mine if b[3] is not None]
    return dict(_summary(samples), calls=round(statistics.median(b[1] for b in mine)),
                host_state=states.pop() if len(states) == 1 else "mixed", tries=len(blocks),
                blocks=len(mine), **({"sentinel_us": statistics.median(sent)} if sent else {}),
                rounds_us=[round(x, 3) for x in samples])

def _sentinel(watch) -> dict:
    """The host sentinel's median next to the kept rounds (µs): the host's pace while they ran."""
    got = [x for x in (getattr(watch, "sentinel", None) or ()) if isinstance(x, (int, float))]
    return {"sentinel_us": statistics.median(got)} if got else {}


def _with_launches(step, timeline: dict) -> dict:
    """The timeline with each sync's segment's kernel launches (bench.audit.launches), profiled
    after every host timing; a failure is kept as `launches_error` and the waits are projected
    from the segment's device time as before."""
    if not timeline.get("segments"):
        return timeline
    try:
        got = audit_launches.measure(step, timeline["syncs_per_step"])
    except Exception as e:  # noqa: BLE001 - the projection keeps the busy-tail model without it
        got = {"error": f"launch pass failed: {audit_rules.error_line(f'{type(e).__name__}: {e}')}"}
    if got.get("error"):
        return dict(timeline, launches_error=got["error"])
    segs = [dict(s, launch=dict(placed, lat_us=got["lat_us"])) for s, placed in zip(timeline["segments"], got["segments"])]
    return dict(timeline, segments=segs, launch_steps=got["steps"])


TIMELINE_TRIES = 3        # timeline passes measured until one lands in the loop's host state


def _timeline(step, step_us, host=None, want: str = "") -> dict:
    """The timeline pass (bench.audit.timeline) in the host state of the figure the projection is
    held to: its drained syncs' fixed cost is host-paced, so one measured in the other state moves
    the projection off the fixed step by about as much as the states differ (log 2026-12-03-1824).
    Measured again (TIMELINE_TRIES in all), each try after waiting for the fast state where that is
    the state wanted, while the sentinel read before or after it is in another state, unless its
    drained syncs were held to the wanted state chunk by chunk (`held`): a pass in a mixed state
    reads a sync's fixed cost up to twice its fast figure (log 2026-12-04-1248)."""
    got: dict = {}
    if host is not None and want == "fast":
        host.allow_focus_blocks(TIMELINE_TRIES)

    def held(wait: bool) -> bool:
        """The host in the wanted state, between the drained pass's chunks (before one: waiting
        for the fast state, from the timeline's allowance, when it is not in it)."""
        us = host.read()
        if wait and want == "fast" and not host.fast(us):
            with host.focused():
                us = host.await_fast()
        return host.state(us) == want
    for tries in range(1, TIMELINE_TRIES + 1):
        try:
            if host is not None and want == "fast":
                with host.focused():
                    before = host.await_fast()
            else:
                before = host.read() if host is not None else None
            got = audit_timeline.measure(step, step_us, **({"held": held} if host is not None and want else {}))
            after = host.read() if host is not None else None
        except Exception as e:  # noqa: BLE001 - the projection keeps the syncs as sampled without it
            return {"error": f"timeline pass failed: {audit_rules.error_line(f'{type(e).__name__}: {e}')}"}
        if host is None or not got.get("segments"):
            return got
        states = {host.state(before), host.state(after)}
        got.update(host_state=states.pop() if len(states) == 1 else "mixed", tries=tries, want_state=want)
        if not want or got["host_state"] == want or got.get("fixed_held"):
            break
    return got


LOOP_NOTE = "the plain loop "


def loop_note(modes: dict) -> str:
    """Why the audit's eager figure and the plain loop's differ by more than LOOP_GAP ('' when not)."""
    e, lp = modes.get("eager") or {}, modes.get("loop") or {}
    eager, loop = e.get("median"), lp.get("median")
    if not eager or not loop or abs(eager / loop - 1) <= LOOP_GAP:
        return ""
    head = (f"{LOOP_NOTE}({lp.get('calls', '?')} steps between two syncs) ran {loop:.1f} µs/step, the eager "
            f"rounds ({e.get('calls', '?')} steps each) {eager:.1f} ({eager / loop - 1:+.0%}); the projection "
            "is held to the loop's figure")
    if "host_state" in e and lp.get("host_state") != e.get("host_state"):
        return head + (f": the loop ran in the host's {lp.get('host_state') or 'mixed'} state, the eager rounds "
                       f"in its {e.get('host_state') or 'mixed'} state")
    return head + _loop_why(e, lp, (modes.get("device") or {}).get("median"))


def _loop_why(eager_mode: dict, loop_mode: dict, dev: float | None) -> str:
    """Why the plain loop and the eager rounds differ in the same host state: the host's pace, the
    eager rounds' syncs and cold steps, the GPU, or nothing found."""
    eager, loop = eager_mode["median"], loop_mode["median"]
    se, sl = eager_mode.get("sentinel_us"), loop_mode.get("sentinel_us")
    pace = sl / se - 1 if se and sl else None
    if pace is not None and abs(pace) >= PACE_GAP and (pace > 0) == (loop > eager):
        return (f": the host ran {abs(pace):.0%} {'slower' if pace > 0 else 'faster'} during the loop by "
                f"its sentinel ({sl:.3f} against {se:.3f} µs), in the same "
                f"{eager_mode.get('host_state') or 'mixed'} state")
    if eager > loop:
        return (f": each eager round ({eager_mode.get('calls') or '?'} steps between two syncs and two host readings) "
                f"pays its sync and a cold first step, {(eager - loop) * (eager_mode.get('calls') or 0):.0f} µs per "
                "round that a long loop spreads thin" + (f" (device {dev:.1f} µs/step)" if dev is not None else ""))
    if dev is not None and dev >= DEVICE_BOUND * loop:
        return f": back to back, the steps queue behind the GPU (device {dev:.1f} µs/step)"
    return (": not explained by the host state" + (f" (sentinel {pace:+.0%})" if pace is not None else "")
            + (f" or the GPU (device {dev:.1f} µs/step)" if dev is not None else "")
            + ": the loop ran after the eager rounds, and the host's pace drifts within a state")

def _sample(step, sync, eager_us, host=None, state: str = "") -> dict:
    """The line sampler's result, or {"error": why} (the rest of the audit stands without it)."""
    try:
        return audit_sampler.sample_step(step, sync, eager_us, host=host, host_state=state)
    except audit_sampler.SamplerError as e:
        return {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - the step failing while sampled: say so, keep the rest
        return {"error": f"the step raised while sampled: {audit_rules.error_line(f'{type(e).__name__}: {e}')}"}


OVER_NOTE = ("the avoidable sum exceeds the measured host overhead: run-file figures come from another "
             "process (host µs drift 10-40 % between processes) and from the probes' own problem")


def host_sentinel(modes: dict) -> float | None:
    """The host's sentinel (µs) beside the figure the step is priced in: the plain loop's where it
    has one, else the eager rounds'. None for an audit from before the sentinel was kept."""
    loop = modes.get("loop") or {}
    return (loop.get("sentinel_us") if loop.get("median") else None) or (modes.get("eager") or {}).get("sentinel_us")


def _priced_notes(report: AuditReport, run, avoidable: float) -> list:
    """The report's notes with those pricing writes replaced: the loop's, the packs', the
    avoidable sum over the host overhead, the plan choice."""
    notes = [n for n in report.notes if n != OVER_NOTE and not n.startswith(audit_packs.NOTE_PREFIX)
             and not n.startswith(PLAN_NOTE) and not n.startswith(LOOP_NOTE)]
    if loop_note(report.modes):
        notes.append(loop_note(report.modes))
    pack = audit_packs.pack_note(report.counts, run)    # each pack's size and what its tensors cost
    if pack:
        notes.append(pack)
    if report.host_overhead_us is not None and avoidable > report.host_overhead_us:
        notes.append(OVER_NOTE)
    plan = recommend_plan(run, report.counts)
    if plan:
        notes.append(plan)
    return notes


def _run_note(report: AuditReport, run) -> str:
    """The report's run note, saying where the run's frontend differs from the audit's."""
    run_note = report.run_note
    fe_run, fe_audit = (run.fingerprint.cudnn_frontend if run else None), report.env.get("cudnn_frontend")
    if fe_run and fe_audit and fe_run != fe_audit and "measured with frontend" not in run_note:
        run_note += f"; the run measured frontend {fe_run}, the audit ran {fe_audit}: figures may not carry over"
    return run_note


def price(report: AuditReport, run) -> AuditReport:
    """The report's findings priced with `run`'s figures (and the copy-kernel time the audit
    measured itself): a pure function of what the audit measured, so an audit can be priced
    again from a newer run of the probes without a GPU (`hostbench reprice`)."""
    measured = {"copy_kernel_us": sum(u for n, _, u in report.kernels if audit_rules.is_copy_kernel(n))}
    here = host_sentinel(report.modes)
    findings = evaluate(report.counts, run, measured, report.modes.get("graph", {}).get("error"), here=here)
    step = _step_us(report.modes)
    if step:   # what share of the user's own step (its plain loop's µs) each finding is
        findings = [dataclasses.replace(f, share=f.cost_us / step if f.cost_us is not None else None)
                    for f in findings]
    table = audit_lines.table(report.sampling, step, "plain loop" if (report.modes.get("loop") or {}).get("median") else "")
    tied = audit_lines.tie(findings, report.counts, table)
    findings = [dataclasses.replace(f, lines=tied.get(f.rule, [])) for f in findings]
    if table.get("rows") is not None:
        table["remainder"] = [r["line"] for r in audit_lines.remainder(table, tied)]
    projection = audit_lines.project(findings, report.counts, table, tied, report.modes,
                                     warm_execute(run, report.counts, here=here), report.timeline)
    avoidable = sum(f.cost_us for f in findings if f.cost_us is not None)
    notes = _priced_notes(report, run, avoidable)
    run_note = _run_note(report, run)
    return dataclasses.replace(report, findings=findings, avoidable_us=avoidable, notes=notes, lines=table,
                               projection=projection, run_note=run_note)
