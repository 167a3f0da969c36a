"""Host time of a steady-state step by source line: an in-process, timer-signal stack sampler.

A wall-clock interval timer (ITIMER_REAL) raises SIGALRM every `interval`; the handler runs in the
main thread at the next point where the interpreter takes signals, reads the stack (code,
instruction, line of each frame down to the loop that runs the step) and charges it the wall time
since the previous sample. A call that holds the interpreter (a nanobind cuDNN call, a builtin) or
releases it (a torch op) is caught when it returns, still on its own line, so its whole time lands
where it was spent; no profile event is needed, so callees that raise none are seen too. Tensor
operators (`a + b`, `x[0]`) are the exception: the interpreter takes no signal right after them, so
their time goes to the next call of the same frame (each line names the operators that can spill
into it). Why this sampler and not pyinstrument, py-spy, sys.monitoring or torch.profiler:
docs/audit.md ("Host time by source line").

Long C calls are timed, not sampled: where a call gives the interpreter no point to take the
signal when it returns (a method descriptor such as a CUDA `.item()`, an operator), the deferred
handler runs at the next call and charged it the wait (a finite check's `.item()` wait showed up
on the `torch.isfinite()` after it). During the sampled rounds the long calls (TIMED: the device syncs, the
frontend's execute) run through a thin wrapper that times each call and charges it to its caller's
stack under its own name; the samples charge only the time outside them (`_Sampler.excluded`), and
a signal taken inside a timed call counts as a sample of it, charging nothing more. The wrappers
exist only for the sampled rounds and, before each, a round with the wrappers and no timer: that
round against the plain one is what the wrappers alone cost the lines that make the timed calls
(`wrap_overhead`), measured rather than inferred from how the overhead moves with the interval:
the overhead can fall with a longer interval by chance, and the inference then reads it as the
signal's and leaves the wrappers' time on the kept execute line (log 2026-12-04-1508).

The sampler's own time (its handler, and a timed call's bookkeeping) is charged to no line and
taken off the sampled rounds' time (`own_us`), so it is not read as the step slowing down; a timed
call site's stack is read on one call in WALK_EVERY (`_Sampler.timed`). Plain, wrapped and sampled rounds alternate; if
sampling still slows the step by more than MAX_OVERHEAD the interval doubles, up to MAX_INTERVAL_S.
A slow step is sampled over at least MIN_STEPS steps, and over enough that one sample weighs at most
SAMPLE_RESOLUTION_US µs of a step (within MAX_RESOLVE_S a try).
What comes back is plain data (audit.json's `sampling`):
stacks with their µs, each named by file:line and the callee at its innermost user frame, so the
line table is recomputed from the file alone (bench.audit.lines)."""
from __future__ import annotations

import math
import signal
import statistics
import sys
import threading
import time
from collections import Counter

from cudnn_hostbench.bench.audit import callsite, usercode
from cudnn_hostbench.bench.audit.count import SYNC_METHODS, Patcher

INTERVAL_S = 1e-3
MAX_INTERVAL_S = 8e-3
MIN_STEPS = 200               # a slow step is sampled over at least this many steps
# a sample is worth interval / steps µs of a step: a slow step is sampled over enough steps that one
# sample moves a line by at most this much (too few steps, and one stray sample is a sizeable part
# of the short step the fix leaves), within MAX_RESOLVE_S a try
SAMPLE_RESOLUTION_US = 1.0
MAX_RESOLVE_S = 12.0
CHUNK_S = 0.125               # one sampled or plain round
ROUNDS = 8                    # sampled rounds per try, each after a plain one
MIN_SAMPLED_S = 1.0           # more rounds (up to twice ROUNDS) until this much was sampled
MAX_OVERHEAD = 0.10
MATCH_TOL = 0.15              # a plain round this far off the eager step ran in another host state
MAX_ROUNDS_MULT = 4           # rounds tried per interval, at most, for `rounds` in the eager's state
MAX_TRY_S = 30.0              # a try stops adding pairs after this long (its fast-state waits aside): a
#                               7 ms step (naive) makes each plain, wrapped and sampled round 0.9 s, so 32
#                               pairs on a host mostly off its state ran past the device's time limit
#                               (log 2026-12-04-1508); a 35 µs step's 32 pairs take 12 s
WAIT_BLOCKS = 3               # a try's pairs wait for the fast state this many focus allowances in all (12 s)
MIN_SAMPLES = 200             # fewer samples in the step: too few to split it by line
MIN_STEP_US = 10.0            # a shorter step gives the sampler too few places to catch it
SIGNAL_FALL = 1.5             # the overhead falls at least this much when the interval doubles, if the signal is its cause
NOT_SIGNAL_CAP = 2.0          # an overhead the interval does not move: lines kept up to this × MAX_OVERHEAD
TIMED_HOW = ("long calls timed, not sampled: each call's own time is charged to its line under its name, "
             "samples charge the time outside them (a deferred signal would charge it to the next call)")


class SamplerError(RuntimeError):
    """The sampler could not start (not the main thread, no interval timer, SIGALRM in use)."""


def _loop(step, steps):
    """Runs the step n times; every sampled stack is cut at this frame."""
    for _ in range(steps):
        step()


LOOP_CODE = _loop.__code__


class _Sampler:
    """SIGALRM handler state: µs charged per stack, per code object its globals."""

    def __init__(self, clock=time.perf_counter):
        self.stacks = Counter()          # stack (leaf first) -> seconds
        self.counts = Counter()          # stack -> samples
        self.globals = {}
        self.local_types = {}            # (code, instruction) of user code -> {local name: its type}, first visit
        self.lines = {}                  # (code, instruction) -> its line, read once (f_lineno walks the table)
        self.pending = {}                # timed call site -> [seconds, samples, calls, Counter(stack key)]
        self.in_loop = self.outside = 0.0
        self.own = 0.0                   # seconds of the sampler's own work (handler, timed-call bookkeeping)
        self.samples = 0
        self.on = False
        self.busy = False                # a signal taken inside the handler itself is dropped
        self.timing = 0                  # inside a timed long call: its samples are dropped
        self.excluded = 0.0              # seconds in timed calls since the last sample (charged by them)
        self.dropped = 0                 # signals taken inside the current timed call
        self.clock = clock
        self.last = clock()

    def take(self) -> tuple:
        """This round's stacks, counts, loop, outside and samples; the next round starts empty."""
        self._fold()
        got = (self.stacks, self.counts, self.in_loop, self.outside, self.samples)
        self.stacks, self.counts, self.in_loop, self.outside, self.samples = Counter(), Counter(), 0.0, 0.0, 0
        self.excluded = self.own = 0.0
        return got

    def keep(self, rounds: list) -> None:
        """The sum of the kept rounds (from take) as this sampler's totals."""
        self.take()   # from empty
        for stacks, counts, in_loop, outside, samples in rounds:
            self.stacks.update(stacks)
            self.counts.update(counts)
            self.in_loop += in_loop
            self.outside += outside
            self.samples += samples

    def handler(self, signum, frame):
        if self.timing:                  # a timed call charges its own time (and this sample) when it returns
            self.dropped += self.on
            return
        if self.busy:
            return
        self.busy = True
        t0 = self.clock()
        try:
            self._sample(frame)
        finally:
            self.last = self.clock()     # the handler's own time is charged to no line
            self.own += self.last - t0
            self.busy = False

    def _sample(self, frame):
        now = self.clock()
        if self.on and frame is not None:
            dt = max(0.0, now - self.last - self.excluded)
            self.excluded = 0.0
            self.samples += 1
            self._charge(frame, dt)

    def _charge(self, frame, seconds: float, n: int = 1, callee: tuple | None = None) -> None:
        """Charges dt seconds to the stack from `frame` up to the step loop (`callee`: a timed
        call's (label, kind), which names the stack's callee instead of its instruction)."""
        self._add(self._key(frame, callee), seconds, n)

    def _add(self, key, seconds: float, n: int) -> None:
        if key is OUTSIDE:
            self.outside += seconds       # the sync after the loop, the round's own code
        elif key is IN_LOOP:
            self.in_loop += seconds
        else:
            self.stacks[key] += seconds
            self.counts[key] += n

    def _key(self, frame, callee: tuple | None = None):
        """The stack from `frame` up to the step loop as a key (OUTSIDE or IN_LOOP when there is none)."""
        f, stack, code = frame, [], LOOP_CODE
        lines = self.lines
        while f is not None and f.f_code is not code:
            c = f.f_code
            site = (c, f.f_lasti)
            line = lines.get(site)
            if line is None:                    # a new call site: its line, globals, what `g` is in `g.matmul()`
                line = lines[site] = f.f_lineno or 0
                self.globals.setdefault(c, f.f_globals)
                self.local_types[site] = _types(f) if usercode.is_user(c.co_filename) else {}
            stack.append((c, site[1], line))
            f = f.f_back
        if f is None and threading.get_ident() != MAIN_THREAD:
            # a call on another thread (torch's autograd engine runs a CUDA backward on its own device
            # thread) while the main thread waits in it (`loss.backward()`): its stack goes on with the
            # main thread's, up to the step loop; before, its timed calls fell outside the step
            f = sys._current_frames().get(MAIN_THREAD)
            while f is not None and f.f_code is not code:
                c = f.f_code
                site = (c, f.f_lasti)
                line = lines.get(site)
                if line is None:
                    line = lines[site] = f.f_lineno or 0
                    self.globals.setdefault(c, f.f_globals)
                    self.local_types[site] = _types(f) if usercode.is_user(c.co_filename) else {}
                stack.append((c, site[1], line))
                f = f.f_back
        if f is None:
            return OUTSIDE
        if not stack:
            return IN_LOOP
        return tuple(stack) if callee is None else (callee, *stack)

    def timed(self, frame, label: str, kind: str, seconds: float) -> None:
        """A timed long call's own time, charged to its caller's stack (`frame`) under its name.
        Its time is summed per call site (the caller's code and instruction); the stack above the
        site is read on the first call and one in WALK_EVERY after, and the site's time is shared
        by the stacks read. Reading the whole stack on every call cost 5 µs of bookkeeping plus
        2-3 µs in the step (each frame read is made an object that its return must then fill)."""
        self.excluded += seconds
        n, self.dropped = self.dropped, 0
        self.samples += n
        site = (frame.f_code, frame.f_lasti, label)
        acc = self.pending.get(site)
        if acc is None:
            acc = self.pending[site] = [0.0, 0, 0, Counter()]
        acc[0] += seconds
        acc[1] += n
        if acc[2] % WALK_EVERY == 0:
            acc[3][self._key(frame, (label, kind))] += 1
        acc[2] += 1

    def _fold(self) -> None:
        """The timed calls' time summed so far, onto their stacks (a site's shared by the stacks read)."""
        for dt, n, _, keys in self.pending.values():
            read = sum(keys.values())
            for key, k in keys.items():
                self._add(key, dt * k / read, round(n * k / read))
        self.pending.clear()


WALK_EVERY = 16          # a timed call site's stack is read on one call in this many
MAIN_THREAD = threading.main_thread().ident


OUTSIDE, IN_LOOP = object(), object()    # a sample outside the step loop, or in the loop between steps


def long_calls() -> list:
    """[(owner, attribute, label, kind)]: the long C calls timed during the sampled rounds (TIMED
    in the module doc): the device syncs (`.item()`, `.cpu()`, `.tolist()`, `bool/int/float(t)`,
    `torch.cuda.synchronize`, `Stream/Event.synchronize`) and the frontend's execute calls."""
    import torch
    out = [(torch.Tensor, name, f"….{name}()", callsite.TORCH) for name in SYNC_METHODS]
    cuda = getattr(torch, "cuda", None)
    out.append((cuda, "synchronize", "torch.cuda.synchronize()", callsite.TORCH))
    out += [(getattr(cuda, c, None), "synchronize", "….synchronize()", callsite.TORCH) for c in ("Stream", "Event")]
    try:
        import cudnn
    except (ImportError, OSError):
        return out
    graph = getattr(cudnn, "pygraph", None)
    return out + [(graph, name, f"….{name}()", callsite.CUDNN) for name in ("execute", "execute_plan_at_index")]


def _timed_wrapper(sampler: "_Sampler", orig, label: str, kind: str):
    clock = sampler.clock

    def wrapper(*args, **kwargs):
        t_in = clock()
        if sampler.timing or not sampler.on:
            return orig(*args, **kwargs)
        sampler.timing += 1
        t0 = clock()
        try:
            return orig(*args, **kwargs)
        finally:
            t1 = clock()
            sampler.timed(sys._getframe(1), label, kind, t1 - t0)
            t2 = clock()
            sampler.own += t2 - t1 + t0 - t_in     # the bookkeeping: charged to no line, off the round's time
            sampler.excluded += t2 - t1 + t0 - t_in
            sampler.timing -= 1
    return wrapper


def _patch_timed(sampler: "_Sampler", calls) -> Patcher:
    p = Patcher()
    for owner, name, label, kind in calls:
        p.patch(owner, name, lambda orig, label=label, kind=kind: _timed_wrapper(sampler, orig, label, kind))
    return p


def _types(frame) -> dict:
    try:
        return {k: type(v) for k, v in frame.f_locals.items()}
    except Exception:  # noqa: BLE001 - a frame whose locals cannot be read names no types
        return {}


def cannot_start() -> str | None:
    """Why the sampler cannot run in this thread and process, or None (checked before measuring)."""
    if not hasattr(signal, "setitimer") or not hasattr(signal, "SIGALRM"):
        return "the line sampler needs signal.setitimer and SIGALRM, which this platform lacks"
    if threading.current_thread() is not threading.main_thread():
        return "the line sampler runs on SIGALRM, so it needs the main thread: audit from the main thread"
    old = signal.getsignal(signal.SIGALRM)
    if old not in (signal.SIG_DFL, signal.SIG_IGN, None):
        return f"SIGALRM already has a handler ({getattr(old, '__qualname__', old)}): the line sampler cannot run"
    return None


def _start(sampler: _Sampler, interval: float):
    why = cannot_start()
    if why:
        raise SamplerError(why)
    old = signal.getsignal(signal.SIGALRM)
    try:
        signal.signal(signal.SIGALRM, sampler.handler)
        signal.siginterrupt(signal.SIGALRM, False)    # restart interrupted system calls
        signal.setitimer(signal.ITIMER_REAL, 0, 0)     # armed only for the sampled rounds
    except (OSError, ValueError) as e:
        signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)
        raise SamplerError(f"the line sampler could not start its timer: {e}") from e
    return old


def _stop(old) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)


def _round(step, steps, sync, clock=time.perf_counter) -> float:
    sync()
    t0 = clock()
    _loop(step, steps)
    sync()
    return clock() - t0


def _try(step, sync, steps: int, interval: float, rounds: int, min_s: float,
         want_us: float | None = None, timed=(), host=None, want_state: str = "") -> tuple[dict, _Sampler]:
    """Plain and sampled rounds alternated. A pair that ran in another host state than the eager
    figure is left out (the slow state slows Python lines more than cuDNN calls, so a scale cannot
    undo it), and rounds go on, up to MAX_ROUNDS_MULT × rounds, until `rounds` matching ones are in:
    - with `host` (the eager rounds' HostState) and `want_state` ('fast' or 'slow', theirs), a pair
      matches when the host's sentinel, read before, between and after its two rounds, reads that
      state every time. The step's own time cannot see the host of a device-bound step: its host
      lines slow while the sync's wait shrinks by as much, and its plain rounds stay near the
      loop's (log 2026-12-03-0530);
    - and with `want_us` (the eager figure), its plain round within MATCH_TOL of it (a round in the
      other state sits tens of per cent off the eager figure)."""
    sampler = _Sampler()
    # (plain s/step, sampled s/step net of own, stacks, host ok, wrappers alone s/step net of own)
    done: list[tuple[float, float, tuple, bool, float]] = []
    own: list[float] = []                                # the sampler's own s/step, per sampled round
    by_host = host is not None and want_state in ("fast", "slow")
    # each pair starts in the fast state when that is the state wanted, waiting for it from an
    # allowance of its own: a pair that merely checks leaves a mostly-slow host with almost no round
    # to keep, and lines from two rounds put the projection far off the fixed step (log 2026-12-04-1018)
    wait = by_host and want_state == "fast"
    if wait:
        host.allow_focus_blocks(WAIT_BLOCKS)
    match = _Match(want_us, host if by_host else None, want_state)
    old = _start(sampler, interval)
    spent, cut = 0.0, False          # the pairs' own time, fast-state waits aside
    try:
        while len(done) < MAX_ROUNDS_MULT * rounds:
            if _enough(done, match, rounds, steps, min_s):
                break
            if spent > MAX_TRY_S:
                cut = True
                break
            if wait:
                with host.focused():
                    host.await_fast()
            started = time.perf_counter()
            ok = match.in_state()
            plain = _round(step, steps, sync) / steps    # no timer: truly unsampled
            ok = match.in_state() and ok
            wrapped, gross = _sampled_pair(sampler, step, sync, steps, interval, timed)
            own.append(sampler.own / steps)
            done.append((plain, gross / steps - own[-1], sampler.take(), match.in_state() and ok, wrapped))
            spent += time.perf_counter() - started
    finally:
        _stop(old)
    good, matched_on, note = _kept_rounds(done, match)
    if cut:
        note = (note + "; " if note else "") + (
            f"stopped after {len(done)} pair{'' if len(done) == 1 else 's'} of rounds ({spent:.0f} s, "
            f"the cap {MAX_TRY_S:.0f} s a try), "
            f"{sum(map(match.matches, done))} of them in the eager step's host state")
    sampler.keep([d[2] for d in good])
    return _try_figures(done, good, own, (interval, steps, sampler.samples), matched_on, note), sampler


class _Match:
    """Which pairs of rounds match the eager figure: by its plain round's time (`want_us`) and, with
    `host`, by the host's sentinel reading `want_state` around it."""

    def __init__(self, want_us: float | None, host, want_state: str):
        self.want_us, self.host, self.want_state = want_us, host, want_state
        self.by_host = host is not None

    def on_time(self, pair) -> bool:          # its plain round within MATCH_TOL of the eager figure
        return not self.want_us or abs(pair[0] * 1e6 / self.want_us - 1) <= MATCH_TOL

    def matches(self, pair) -> bool:
        return pair[3] and self.on_time(pair)

    def in_state(self) -> bool:
        return not self.by_host or self.host.state(self.host.read()) == self.want_state


def _enough(done: list, match: _Match, rounds: int, steps: int, min_s: float) -> bool:
    """Whether enough matching pairs are in: twice `rounds`, or `rounds` of `min_s` sampled."""
    good = [pair for pair in done if match.matches(pair)]
    return len(good) >= 2 * rounds or (len(good) >= rounds and sum(pair[1] for pair in good) * steps >= min_s)


def _sampled_pair(sampler: _Sampler, step, sync, steps: int, interval: float, timed) -> tuple[float, float]:
    """(a round with the timed calls' wrappers alone, s/step net of the sampler's own; a sampled
    round's seconds, gross)."""
    patched = _patch_timed(sampler, timed)     # the long calls timed, for these two rounds only
    try:
        # the wrappers alone (no timer): what they cost the lines that make the timed calls
        sampler.on = True
        try:
            wrapped = _round(step, steps, sync) / steps
        finally:
            sampler.on = False
        wrapped -= sampler.own / steps
        sampler.take()                         # its bookkeeping only: nothing was sampled
        sampler.last = sampler.clock()
        sampler.on = True
        signal.setitimer(signal.ITIMER_REAL, interval, interval)
        try:
            gross = _round(step, steps, sync)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            sampler.on = False
    finally:
        patched.restore()
    return wrapped, gross


def _kept_rounds(done: list, match: _Match) -> tuple[list, str, str]:
    """(the pairs whose lines are kept, what they were matched on, a note where the match fell back)."""
    want_us, want_state, by_host = match.want_us, match.want_state, match.by_host
    good = [pair for pair in done if match.matches(pair)]
    matched_on = (f"host sentinel ({want_state} state)" + (" and plain-round time" if want_us else "") if by_host
                  else "plain-round time" if want_us else "")
    note = ""
    if by_host and (len(good) < 2 or sum(pair[2][4] for pair in good) < MIN_SAMPLES):
        good, matched_on, note = _on_time_only(done, good, match, matched_on)
    if (want_us or by_host) and len(good) < 2:
        off = sum(not pair[3] for pair in done)
        note = (f"no sampled round matched the eager step's host state (plain rounds "
                f"{statistics.median(pair[0] for pair in done) * 1e6:.1f} µs/step against {want_us or 0:.1f}"
                + (f"; the host's sentinel off its {want_state} state around {off} of {len(done)}" if by_host else "")
                + "): lines are from another host state, scaled to the step")
        good, matched_on = done, ""
    return good, matched_on, note


def _on_time_only(done: list, good: list, match: _Match, matched_on: str) -> tuple[list, str, str]:
    """Too few pairs in the wanted state: those whose plain round is on time, where two are."""
    # a slow-host start leaves too few rounds in the fast state to split the step by line, and
    # the projection then falls back to eager − priced findings, far off the fixed step
    # (log 2026-12-03-0530): match on the step's time
    timed_only = [pair for pair in done if match.on_time(pair)]
    if len(timed_only) < 2:
        return good, matched_on, ""
    note = (f"too few sampled rounds in the {match.want_state} state by the host's sentinel "
            f"({len(good)} of {len(done)}): matched on the plain round's time only, so a device-bound "
            "step's host lines may hold the other state")
    return timed_only, "plain-round time" if match.want_us else "", note


def _try_figures(done: list, good: list, own: list, setup: tuple, matched_on: str, note: str) -> dict:
    """A try's figures (see sample_step); `setup`: (the interval, steps a round, samples taken)."""
    interval, steps, samples = setup
    plain, sampled = [pair[0] for pair in good], [pair[1] for pair in good]
    # paired: each sampled round against the plain round just before it, so host drift cancels
    ratios = [b / a for a, b in zip(plain, sampled) if a > 0]
    wraps = [pair[4] / pair[0] - 1 for pair in good if pair[0] > 0]
    return {"interval_us": interval * 1e6, "steps": steps * len(sampled), "wall_s": sum(sampled) * steps,
            "step_us_plain": statistics.median(plain) * 1e6, "step_us_sampled": statistics.median(sampled) * 1e6,
            "own_us": statistics.median(own) * 1e6 if own else 0.0,
            "overhead": statistics.median(ratios) - 1 if ratios else None, "samples": samples,
            "wrap_overhead": statistics.median(wraps) if wraps else None,
            "rounds": len(done), "rounds_other_state": len(done) - len(good),
            "rounds_host_off": sum(not pair[3] for pair in done), "matched_on": matched_on,
            "state_note": note}

def sample_step(step, sync, step_us: float | None, *, interval: float | None = None, chunk_s: float | None = None,
                rounds: int | None = None, max_interval: float | None = None, min_s: float | None = None,
                timed=None, host=None, host_state: str = "") -> dict:
    """Samples `rounds` rounds of about `chunk_s` of steps each (after a plain round each), raising
    the interval while sampling distorts the step by more than MAX_OVERHEAD. `step_us` is the
    step's eager µs (sizes the rounds); `timed` the long calls timed rather than sampled (default
    long_calls()); `host` and `host_state` the eager rounds' HostState and state, which the sampled
    rounds are matched on (`_try`). Left out, interval, chunk_s, rounds, max_interval and min_s are
    this module's INTERVAL_S, CHUNK_S, ROUNDS, MAX_INTERVAL_S and MIN_SAMPLED_S as they are when it
    is called. Returns audit.json's `sampling` (see module doc); raises SamplerError when the
    sampler cannot start, and whatever the step raises."""
    interval = INTERVAL_S if interval is None else interval
    chunk_s = CHUNK_S if chunk_s is None else chunk_s
    rounds = ROUNDS if rounds is None else rounds
    max_interval = MAX_INTERVAL_S if max_interval is None else max_interval
    min_s = MIN_SAMPLED_S if min_s is None else min_s
    timed = long_calls() if timed is None else list(timed)
    per = (step_us or 100.0) * 1e-6
    resolve = min(interval * 1e6 / SAMPLE_RESOLUTION_US, MAX_RESOLVE_S / per)
    steps = max(2, math.ceil(chunk_s / per), math.ceil(MIN_STEPS / rounds), math.ceil(resolve / rounds))
    tries, kept = [], []
    not_signal = False
    while True:
        t, sampler = _try(step, sync, steps, interval, rounds, min_s, step_us, timed, host, host_state)
        tries.append(t)
        kept.append((t, sampler))
        if t["overhead"] is None or t["overhead"] <= MAX_OVERHEAD or interval * 2 > max_interval:
            break
        prev = kept[-2][0]["overhead"] if len(kept) > 1 else None
        if prev is not None and prev > 0 and t["overhead"] > prev / SIGNAL_FALL:
            # doubling the interval halves the signal's cost; this did not fall by a third, so it is
            # the timed calls' wrappers: a longer interval only loses samples (custom-op's overhead
            # stayed put from 1 to 8 ms: log 2026-12-02-0800). The shorter interval's lines stand, its overhead carried
            # into the projection's error
            not_signal = True
            t, sampler = kept[-2]
            break
        interval *= 2
    n = t["steps"]
    out = dict(t, tries=tries, loop_us=sampler.in_loop / n * 1e6, outside_us=sampler.outside / n * 1e6,
               overhead_not_signal=not_signal,
               stacks=named_stacks(sampler.stacks, sampler.counts, sampler.globals, n, sampler.local_types),
               max_overhead=MAX_OVERHEAD, min_samples=MIN_SAMPLES, min_step_us=MIN_STEP_US,
               timed_calls=list(dict.fromkeys(label for _, _, label, _ in timed)), timed_how=TIMED_HOW)
    out["verdict"] = verdict(out, step_us)
    return out


def verdict(sampling: dict, step_us: float | None) -> str:
    """'' when the samples resolve the step by line, else why not."""
    in_step = sum(x["n"] for x in sampling["stacks"])
    if step_us is None:
        return "no eager figure to compare the lines with"
    if step_us is not None and step_us < MIN_STEP_US:
        return (f"too fast to split by line: a {step_us:.1f} µs step gives the sampler too few places to "
                f"catch it (it needs {MIN_STEP_US:g} µs or more)")
    if in_step < MIN_SAMPLES:
        return f"too few samples to split by line: {in_step} in the step (needs {MIN_SAMPLES})"
    cap = sampling.get("max_overhead", MAX_OVERHEAD) * (NOT_SIGNAL_CAP if sampling.get("overhead_not_signal") else 1)
    if sampling.get("overhead") is not None and sampling["overhead"] > cap:
        return (f"sampling slowed the step by {sampling['overhead'] * 100:.0f} % even at a "
                f"{sampling['interval_us'] / 1e3:g} ms interval: per-line figures are distorted")
    return ""


def named_stacks(stacks: Counter, counts: Counter, globals_: dict, steps: int, local_types: dict | None = None) -> list:
    """Stacks as plain data, root first: [{"frames": [[file, line, function, user, instruction]...],
    "callee": what the innermost user frame was doing, "kind": its kind, "spill": operators whose
    time may land here, "us": µs per step, "n": samples (a timed call's: those taken inside it), "timed": True
    for a long call's own time}], most time first."""
    us, n = Counter(), Counter()
    for stack, sec in stacks.items():
        timed = bool(stack) and isinstance(stack[0][0], str)      # (label, kind) of a timed long call
        frames_of = stack[1:] if timed else stack
        frames = tuple((usercode.display(c.co_filename), ln, getattr(c, "co_qualname", c.co_name),
                        usercode.is_user(c.co_filename), lasti) for c, lasti, ln in reversed(frames_of))
        callee, kind = stack[0] if timed else _callee(stack, globals_, local_types or {})
        key = (frames, callee, kind, () if timed else _spill(stack), timed)
        us[key] += sec / steps * 1e6
        n[key] += counts[stack]
    return [{"frames": [list(f) for f in frames], "callee": callee, "kind": kind, "spill": list(spill),
             "us": v, "n": n[(frames, callee, kind, spill, timed)], **({"timed": True} if timed else {})}
            for (frames, callee, kind, spill, timed), v in us.most_common()]


def _spill(stack) -> tuple:
    """Operators on other lines of the innermost user frame whose time the interpreter may have
    charged to this sample (no signal is taken right after an operator)."""
    for code, lasti, line in stack:
        if usercode.is_user(code.co_filename):
            return tuple(f"{sym} at :{ln}" for ln, sym in callsite.operators_before(code, lasti) if ln != line)
    return ()


def _callee(stack, globals_, local_types) -> tuple[str, str]:
    """What the innermost user frame (stack is leaf first) was doing, and its kind."""
    for i, (code, lasti, line) in enumerate(stack):
        if usercode.is_user(code.co_filename):
            label, kind = callsite.decode(code, lasti, line, globals_.get(code), local_types.get((code, lasti)))
            if i > 0:   # it called into library Python code: that code says what it is
                kind = file_kind([c.co_filename for c, _, _ in stack[:i]]) or kind
            return label, kind
    code, lasti, line = stack[0]
    return f"{usercode.display(code.co_filename)}:{line}", file_kind([code.co_filename]) or callsite.PYTHON


def file_kind(files) -> str | None:
    """The kind of callee a stack of library frames (leaf first) belongs to."""
    norm = [f.replace("\\", "/") for f in files]
    if any("/torch/_ops.py" in f or "/torch/_library/" in f or f.endswith("/torch/library.py") for f in norm):
        return callsite.DISPATCHER
    outer = norm[-1]
    if "/cudnn/" in outer:
        return callsite.CUDNN
    if "/torch/" in outer:
        return callsite.TORCH
    if not usercode.is_user(files[-1]):
        return callsite.PYTHON
    return None
