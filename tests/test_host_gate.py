"""A bench worker stops waiting for the host's fast state once its waits keep finding none (the
give-up rule), waits again once the state is back, and never gives up on a host that switches
often. Audits keep waiting (the rule is off unless a worker turns it on)."""
from cudnn_hostbench.bench.measure.core.hoststate import FOCUS_BLOCK_S, GIVE_UP_S, RECENT_N, RESUME_SHARE, SLOW_SHARE, HostState

CYCLE_S = 0.005   # an eager cycle between two gate checks


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def _host(us_at, give_up: bool = True):
    clock = _Clock()
    said: list[str] = []
    host = HostState(read=lambda: us_at(clock.t), floor=1.0, clock=clock, sleep=clock.sleep)
    host.gate_budget_s, host.focus_budget_s = 6.0, 12.0   # a worker's defaults
    host.give_up_s = GIVE_UP_S if give_up else None
    host.tell = said.append
    return host, clock, said


def _cycles(host, clock, seconds: float, focus_blocks: int = 3) -> float:
    """Eager cycles for `seconds` of cycle time, a third of them in focus blocks; returns the
    seconds spent waiting for the fast state."""
    waited, end, n = 0.0, clock.t + seconds, 0
    while clock.t < end:
        n += 1
        in_focus = n % 3 == 0 and host.focus_blocks < focus_blocks
        t0 = clock.t
        if in_focus:
            with host.focused():
                host.await_fast()
        else:
            host.await_fast()
        waited += clock.t - t0
        clock.sleep(CYCLE_S)
    return waited


def test_a_host_stuck_in_its_slow_state_costs_a_worker_one_allowance_not_its_whole_budget():
    slow = lambda t: 2.0   # noqa: E731 - the slow state, about twice the floor, as on the H200
    host, clock, said = _host(slow)
    waited = _cycles(host, clock, 60.0)
    before, before_clock, _ = _host(slow, give_up=False)
    old = _cycles(before, before_clock, 60.0)
    assert old >= 6.0 + 4.0      # without the rule: the gate's 6 s and focus allowances
    assert waited <= GIVE_UP_S + FOCUS_BLOCK_S + 1e-6   # the waits stop after the one that passed it
    assert host.gave_up == 1 and host.summary()["gave_up"] == 1
    assert any("stop waiting" in m for m in said)


def test_the_waits_resume_once_the_fast_state_is_back():
    state = {"us": 2.0}
    host, clock, said = _host(lambda t: state["us"])
    _cycles(host, clock, 30.0)
    assert host.given_up and not host.gating()
    state["us"] = 1.0
    for _ in range(int(RECENT_N * RESUME_SHARE) + 1):   # a fifth of the recent readings fast again
        host.await_fast()
        clock.sleep(CYCLE_S)
    assert not host.given_up and host.vain_s == 0.0
    assert any("back" in m for m in said)
    state["us"] = 2.0              # slow again: it waits, from a fresh allowance, before giving up
    clock.sleep(10.0)              # (past the gate's rest)
    t0 = clock.t
    host.await_fast()
    assert clock.t - t0 >= 0.99 and host.gave_up == 1


def test_a_host_that_switches_often_never_gives_up():
    # fast 0.3 s of every second (H200: a host fast 30 % of the time, spells of ~0.35 s)
    host, clock, said = _host(lambda t: 1.0 if t % 1.0 < 0.3 else 2.0)
    waited = _cycles(host, clock, 60.0, focus_blocks=6)
    assert host.gave_up == 0 and not said
    assert waited > 1.0            # it did wait, and every wait found the fast state
    assert host.focus_timeouts == 0 and host.gate_timeouts <= 1   # (the last gate wait: cut by its budget)


def test_without_the_rule_an_audits_host_keeps_waiting():
    host, clock, _ = _host(lambda t: 2.0, give_up=False)
    _cycles(host, clock, 60.0)
    assert host.gave_up == 0 and host.gate_s >= 6.0 - 1e-6


def test_the_run_summary_says_which_workers_stopped_waiting():
    from cudnn_hostbench.bench.measure.runfile.records import Run
    from cudnn_hostbench.reports import run_summary
    slow, _, _ = _host(lambda t: 2.0)
    clock = slow.clock
    _cycles(slow, clock, 30.0)
    fast, fast_clock, _ = _host(lambda t: 1.0)
    _cycles(fast, fast_clock, 30.0)
    fp = {"workers": 2, "host_state": {"floor_us": 1.0, "per_worker": [fast.summary(), slow.summary()]}}
    line = run_summary.summary_line(Run("r", fp, []))
    assert "1 worker(s) stopped waiting: their waits found none" in line
    fp["host_state"]["per_worker"] = [fast.summary()]
    assert "stopped waiting" not in run_summary.summary_line(Run("r", fp, []))


def test_a_host_hovering_near_the_threshold_stays_given_up():
    # fast 12 % of the time in short spells (over SLOW_SHARE, under RESUME_SHARE): once the waits
    # gave up in a long slow stretch, the share alone does not switch them back on
    state = {"stuck": True}
    host, clock, said = _host(lambda t: 2.0 if state["stuck"] or t % 1.0 >= 0.12 else 1.0)
    _cycles(host, clock, 20.0)
    assert host.given_up
    state["stuck"] = False
    assert SLOW_SHARE < 0.12 < RESUME_SHARE
    waited = _cycles(host, clock, 30.0, focus_blocks=6)
    assert host.given_up and host.gave_up == 1 and waited == 0.0
