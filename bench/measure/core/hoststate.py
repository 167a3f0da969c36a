"""Host-state sentinel: tells a VM host's fast vCPU state from its slow one, so rounds timed in
the slow state can be thrown away instead of averaged in.

Seen on the H200 host (a 2.1 GHz Xeon VM): a CPU-only torch.empty costs about 1.0 µs in the fast
state and about 2.0 µs in the slow one; states last ~0.35 s (up to seconds) and the slow one can
hold most of the time for minutes after a start. Python-heavy paths slow more than torch.mm, so
even round-by-round ratios move with the state: only discarding slow rounds keeps them steady.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import statistics
import time
from typing import Callable

from cudnn_hostbench.bench.measure.core import progress

CHUNK = 32          # torch.empty calls per chunk; three chunks a reading, ~0.1-0.3 ms in all
TOL = 0.10          # a reading within this of the floor is the fast state
SLOW_AT = 1.40      # a reading at least this times the floor is the slow state (in between: a switch)
REST_S = 5.0       # after a fruitless wait for the fast state, cycles run without waiting this long
FOCUS_BLOCK_S = 4.0  # a focus block's cycles wait at most this long in all for the fast state
CLUSTER = 1.5       # readings within this factor of the lowest dense one: the fast state
FLOOR_Q = 0.25      # the floor is this quantile of them, not the lowest reading
ANCHOR_N, ANCHOR_SPAN = 5, 1.05   # the fast state's lowest dense point: 5 readings within 5 %
RARE_STATE_AT = 1.7  # readings this far under the dense point are a rare fast state, not strays
#                      (strays reach about 1.4x under the fast peak, the slow state sits ~2x over it)
FLOOR_ENV = "HB_HOST_FLOOR_US"   # a floor learned by an earlier worker of the same run
SLOW_SHARE = 0.10   # fast under this share of readings: the host is in a long slow stretch
RESUME_SHARE = 2 * SLOW_SHARE   # and back once this share is: a gap, so a host hovering near
#   SLOW_SHARE does not switch the waits back on and off: without the gap, a worker hovering at
#   the threshold gave up and came back a block later (log 2026-12-04-1814)
RECENT_N = 256      # readings the give-up rule judges (one per eager cycle: a few seconds)
GIVE_UP_S = FOCUS_BLOCK_S   # a bench worker's waits that found no fast state, this long in all
#   while under SLOW_SHARE of its recent readings were fast: it stops waiting until they are again.
#   A worker on a host that is almost never fast otherwise spends its waits for nothing, tens of
#   seconds of a run's budget (log 2026-12-04-1814)


def _cpu_empty():
    import torch
    return lambda: torch.empty(16)


def robust_floor(sorted_us: list[float]) -> float | None:
    """The fast state's floor from sorted sentinel readings: the lower quartile of the readings
    within CLUSTER of the fast state's lowest dense point (the lowest reading with ANCHOR_N
    readings within ANCHOR_SPAN above it). Not the lowest reading: a fresh host's few lowest
    readings are strays well under its fast state, and a run whose floor was one of them saw
    almost nothing as fast (log 2026-11-29-2341). Slow readings (about twice the fast ones) stay outside CLUSTER, so
    a host that is fast 1 % of the time still gets its fast floor; and when the dense point is
    itself a slow-state level (RARE_STATE_AT over the lowest reading), the lowest readings anchor it."""
    if not sorted_us:
        return None
    lo = 0
    for i, x in enumerate(sorted_us):   # stops at the first dense point: past a few stray readings
        if bisect.bisect_right(sorted_us, x * ANCHOR_SPAN) - i >= ANCHOR_N:
            lo = i
            break
    if sorted_us[lo] >= sorted_us[0] * RARE_STATE_AT:
        lo = 0   # the readings under the dense point are a rarely seen fast state, not strays:
        #          calling the slow state fast would be the worse mistake
    k = bisect.bisect_right(sorted_us, sorted_us[lo] * CLUSTER)
    return sorted_us[lo + int((k - 1 - lo) * FLOOR_Q)]


def sentinel_us(call: Callable | None = None, chunks: int = 3, clock=time.perf_counter) -> float:
    """Median over `chunks` of the per-call µs of CHUNK CPU-only calls plus a short Python loop."""
    call = call or _cpu_empty()
    xs = []
    for _ in range(chunks):
        t0 = clock()
        for _ in range(CHUNK):
            call()
        sum(range(64))  # a little pure Python too: the slow state hurts it most
        xs.append((clock() - t0) * 1e6 / CHUNK)
    return statistics.median(xs)


def process_floor(own: float | None, prior: float | None) -> float | None:
    """The floor a process judges its host by: its own, from its own readings; an earlier
    worker's (`prior`) only while it has none, or when its own sits SLOW_AT over it (learned in
    the slow state). The sentinel's fast level is a property of the process as much as of the
    host: from worker to worker of one run it sits several per cent under or over the run's
    median, steady within each worker, while the workers' eager rows do not follow it. Judged by
    the lowest floor of the run, a worker whose fast level sits higher reads its own fast state as
    a switch and keeps few of its cycles as fast (log 2026-12-04-2213)."""
    if own is None:
        return prior
    return own if prior is None or own < prior * SLOW_AT else prior


class HostState:
    """Learns the host's fast-state floor from sentinel readings and judges rounds by it."""

    def __init__(self, read: Callable[[], float] | None = None, tol: float = TOL,
                 floor: float | None = None, clock=time.perf_counter, sleep=time.sleep):
        self._read = read or sentinel_us
        self.tol = tol
        self.given = floor     # a floor the caller knows (a scripted host): judged by, never relearned
        self.prior = None if floor is not None else _env_floor()   # an earlier worker's (process_floor)
        self.floor = floor if floor is not None else self.prior
        self.clock, self.sleep = clock, sleep
        self.readings: list[float] = []   # kept sorted: the floor is a quantile of them
        self.held: bool | None = None   # whether warm() saw the host hold its fast floor
        self.unstable = False   # set by the runner: floor never held and no steady state kept
        self.waited_s = 0.0
        self.gate_s = 0.0       # seconds spent waiting for the fast state before eager cycles
        self.gate_budget_s: float | None = None   # at most this much in all (None: no gate)
        self.gate_timeouts = 0
        self._gate_note = 10.0
        self._gate_rest_until = float("-inf")
        # focus blocks (a probe's headline size): their own budget, no rest, FOCUS_BLOCK_S each
        self.focus_budget_s = 0.0
        self.focus_s = 0.0
        self.focus_blocks = 0
        self.focus_timeouts = 0
        self._focus_left: float | None = None   # seconds the current focus block may still wait (None: not in one)
        # the give-up rule (None: off; bench workers set GIVE_UP_S, audits keep waiting)
        self.give_up_s: float | None = None
        self.vain_s = 0.0        # seconds of waits that ended without a fast reading, since the waits last came back
        self.gave_up = 0         # times it stopped waiting
        self.given_up = False
        self.tell: Callable[[str], None] = progress.say
        # every reading in order, (clock, µs): how long the host's states last (a worker's host_trace.json)
        self.trace: list[tuple[float, float]] = []

    def read(self) -> float:
        us = self._read()
        self.trace.append((self.clock(), us))
        bisect.insort(self.readings, us)
        if self.given is None:
            self.floor = process_floor(robust_floor(self.readings), self.prior)
        return us

    def fast(self, reading_us: float) -> bool:
        return self.floor is not None and reading_us <= self.floor * (1 + self.tol)

    def state(self, reading_us: float) -> str:
        """'fast', 'slow', or 'mixed' (between the two: the reading straddled a switch)."""
        if self.fast(reading_us):
            return "fast"
        return "slow" if self.floor is not None and reading_us >= self.floor * SLOW_AT else "mixed"

    def level(self, reading_us: float) -> str:
        """'fast', 'mid' or 'slow': state() with a reading between the two taken as a level of its
        own. Judged by a floor another process learned, a worker's own fast state reads as one for
        half its cycles, by its own floor (process_floor) almost none (log 2026-12-04-2213); a
        cycle that begins and ends there is still kept apart, never pooled as fast or slow."""
        s = self.state(reading_us)
        return "mid" if s == "mixed" else s

    def warm(self, learn_s: float = 2.0, hold_s: float = 0.25, max_s: float = 60.0,
             every_s: float = 0.01, say: Callable[[str], None] | None = None) -> bool:
        """Learns the floor for `learn_s`, then waits until the host holds it for `hold_s`
        (every reading fast), printing progress; gives up after `max_s`, says so and marks the
        host unstable (its eager rounds will then mostly be timed in the slow state, which the
        records say). Returns whether the floor was held. With a floor already known (an earlier
        worker's) it learns only briefly: the rest of the learning would be waiting."""
        say = say or progress.say
        if self.floor is not None:
            learn_s = min(learn_s, 0.25)
        t0 = self.clock()
        while self.clock() - t0 < learn_s:
            self.read()
            self.sleep(every_s)
        held_since, next_note = None, t0 + 5.0
        while True:
            now = self.clock()
            us = self.read()
            if self.fast(us):
                held_since = held_since if held_since is not None else now
                if now - held_since >= hold_s:
                    self.waited_s, self.held = now - t0, True
                    return True
            else:
                held_since = None
            if now - t0 > max_s:
                self.held, self.waited_s = False, now - t0
                say(f"host: never held its fast-state floor ({self.floor:.2f} µs) for {hold_s:g} s in "
                    f"{max_s:.0f} s (last reading {us:.2f} µs): eager rounds are kept per host state "
                    "and each record says which")
                return False
            if now >= next_note:
                say(f"host: waiting for the fast state: floor {self.floor:.2f} µs, now {us:.2f} µs "
                    f"({now - t0:.0f} s of at most {max_s:.0f} s)")
                next_note = now + 5.0
            self.sleep(every_s)

    def allow_focus_blocks(self, blocks: int) -> None:
        """Lets `blocks` more focus blocks wait their full FOCUS_BLOCK_S each from now on, whatever the
        focus blocks before them spent (an audit's loop tries, its timeline tries)."""
        self.focus_budget_s = self.focus_s + blocks * FOCUS_BLOCK_S

    @contextlib.contextmanager
    def focused(self):
        """A focus block (a probe's headline size, whose trap/fix ratios the suite is read by):
        its eager cycles wait for the fast state from a budget of their own, up to FOCUS_BLOCK_S
        in all and without the rest, so a long slow stretch met just before it does not leave it
        timed in the slow state. Other blocks share the plain gate budget."""
        self.focus_blocks += 1
        self._focus_left = max(0.0, min(FOCUS_BLOCK_S, self.focus_budget_s - self.focus_s))
        try:
            yield
        finally:
            self._focus_left = None

    def gating(self) -> bool:
        """Whether eager cycles wait for the fast state now (a budget is set, not spent, the gate
        is not resting after a fruitless wait, and the give-up rule has not stopped the waits)."""
        if self._giving_up():
            return False
        if self._focus_left is not None:
            return self._focus_left > 0
        return (self.gate_budget_s is not None and self.gate_s < self.gate_budget_s
                and self.clock() >= self._gate_rest_until)

    def recent_fast_share(self) -> float:
        xs = self.trace[-RECENT_N:]
        return sum(1 for _, x in xs if self.fast(x)) / len(xs) if xs else 1.0

    def _giving_up(self) -> bool:
        """The give-up rule: once waits have found no fast state for give_up_s in all, and under
        SLOW_SHARE of the last RECENT_N readings are fast, cycles stop waiting; they wait again
        once RESUME_SHARE of them are (the waits found nothing in a long slow stretch, and each
        one cost a worker the time a top-up needs)."""
        if self.give_up_s is None or self.vain_s < self.give_up_s:
            return False
        share = self.recent_fast_share()
        if share >= (RESUME_SHARE if self.given_up else SLOW_SHARE):
            if self.given_up:
                self.tell("host: the fast state is back: eager cycles wait for it again")
            self.given_up, self.vain_s = False, 0.0
            return False
        if not self.given_up:
            self.given_up, self.gave_up = True, self.gave_up + 1
            self.tell(f"host: {self.vain_s:.0f} s of waits found no fast state and {share:.0%} of the "
                      f"last {min(len(self.trace), RECENT_N)} readings were fast: eager cycles stop waiting for it "
                      "until it is back")
        return True

    def await_fast(self, max_s: float = 1.0, every_s: float = 0.002,
                   say: Callable[[str], None] | None = None) -> float:
        """Reads the sentinel until a reading is fast (at most `max_s`, and within what is left of
        the gate budget); returns the last reading. A cycle started right after a fast reading
        usually ends in the same state (cycles take milliseconds, fast spells ~0.35 s), so the
        run's eager figures come from one host state instead of whichever state dominated."""
        us = self.read()
        gate = self.gating()   # asked first: a fast reading may be what ends a give-up
        if self.fast(us) or not gate:
            return us
        if self._focus_left is not None:   # a focus block: its own allowance, no rest
            us, spent, timed_out = self._wait_fast(us, self._focus_left, every_s)
            self.focus_timeouts += timed_out
            self.vain_s += spent if timed_out else 0.0
            self.focus_s += spent
            self._focus_left = max(0.0, self._focus_left - spent)
            return us
        left = (self.gate_budget_s or 0.0) - self.gate_s   # gating(): a budget is set
        us, spent, timed_out = self._wait_fast(us, min(max_s, left), every_s)
        if timed_out:
            # no fast spell in max_s: the host is in a long slow stretch; waiting on every
            # cycle would spend the budget for nothing, so rest the gate for a while
            self.gate_timeouts += 1
            self._gate_rest_until = self.clock() + REST_S
            self.vain_s += spent
        self.gate_s += spent
        if self.gate_s >= self._gate_note:
            (say or progress.say)(f"host: {self.gate_s:.0f} s spent waiting for the fast state before eager "
                                  f"rounds (at most {self.gate_budget_s:.0f} s, then rounds are kept per host state)")
            self._gate_note += 10.0
        return us

    def _wait_fast(self, reading_us: float, limit: float, every_s: float) -> tuple[float, float, bool]:
        """Reads the sentinel until a reading is fast or `limit` seconds pass: (last reading,
        seconds waited, whether it gave up)."""
        t0 = self.clock()
        while not self.fast(reading_us):
            if self.clock() - t0 >= limit:
                return reading_us, self.clock() - t0, True
            self.sleep(every_s)
            reading_us = self.read()
        return reading_us, self.clock() - t0, False

    def summary(self) -> dict:
        xs = self.readings
        fast = sum(1 for x in xs if self.fast(x))
        return {"floor_us": self.floor, "tol": self.tol, "held_floor": self.held, "unstable": self.unstable,
                "waited_s": round(self.waited_s, 2), "readings": len(xs),
                "gate_s": round(self.gate_s, 2), "gate_budget_s": self.gate_budget_s,
                "gate_timeouts": self.gate_timeouts,
                "focus_s": round(self.focus_s, 2), "focus_budget_s": self.focus_budget_s,
                "focus_blocks": self.focus_blocks, "focus_timeouts": self.focus_timeouts,
                "give_up_s": self.give_up_s, "gave_up": self.gave_up,
                "fast_fraction": round(fast / len(xs), 3) if xs else None,
                "median_us": statistics.median(xs) if xs else None,
                "lowest_us": xs[0] if xs else None,
                "histogram": histogram(xs)}


HIST_BIN_US = 0.02


def histogram(readings: list[float], bin_us: float = HIST_BIN_US) -> dict:
    """Readings per bin (key: the bin's lower edge in µs): a few hundred numbers that let a run's
    floor be judged again offline, as the committed sentinel trace was."""
    out: dict = {}
    for x in readings:
        k = f"{int(x / bin_us) * bin_us:.2f}"
        out[k] = out.get(k, 0) + 1
    return out


def _env_floor() -> float | None:
    try:
        return float(os.environ[FLOOR_ENV])
    except (KeyError, ValueError):
        return None


