"""Plan sweeps: build every plan of a graph one index at a time, check and time each one.

Each plan is built with `build_plan_at_index`, its workspace read with
`get_workspace_size_plan_at_index`, its output checked against the torch reference, then timed
with `execute_plan_at_index` by CUDA-graph replay (GPU time, host bubbles excluded: the winner for a
CUDA-graph integration) and eagerly (host clock, µs/call: the winner for an op-by-op integration,
which pays each engine's host cost). Both winners are kept; `winners_differ` says when they part.
`max_plans` and `time_box_s` bound the default run;
the heavy option lifts them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from cudnn_hostbench.bench.cudnn_graphs.build import plan_name, workspace_for
from cudnn_hostbench.bench.measure.core import timing

BY = ("graph", "eager")   # what a winner minimises: GPU time by graph replay, or eager µs/call


@dataclass
class PlanResult:
    index: int
    name: str
    mode: str = ""
    build_ms: float = float("nan")
    workspace: int = 0
    graph_us: float = float("nan")
    eager_us: float = float("nan")
    status: str = "ok"

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.graph_us == self.graph_us


@dataclass
class Sweep:
    total: int                                   # plans in the ranked list
    plans: list = field(default_factory=list)    # PlanResult, in index order
    wall_ms: float = 0.0
    truncated: str = ""
    workspace: object = None                     # sized for the largest built plan

    @property
    def timed(self) -> list:
        return [p for p in self.plans if p.ok]

    @property
    def heuristic(self) -> PlanResult | None:
        """What HEURISTICS_CHOICE would run: the first plan in rank order that builds and executes."""
        t = self.timed
        return min(t, key=lambda p: p.index) if t else None

    @property
    def best(self) -> PlanResult | None:
        """The winner by GPU time (graph replay): what a CUDA-graph integration pays."""
        return self.best_by("graph")

    @property
    def best_eager(self) -> PlanResult | None:
        """The winner by eager µs/call (host + GPU): what an op-by-op integration pays."""
        return self.best_by("eager")

    def best_by(self, mode: str) -> PlanResult | None:
        if mode not in BY:
            raise ValueError(f"autotune by {mode!r}: one of {BY}")
        t = [p for p in self.timed if getattr(p, f"{mode}_us") == getattr(p, f"{mode}_us")]
        return min(t, key=lambda p: getattr(p, f"{mode}_us")) if t else None

    def winners_differ(self) -> str:
        """'' when both modes pick the same plan, else a sentence with both figures of both plans."""
        g, e = self.best, self.best_eager
        if not g or not e or g.index == e.index:
            return ""
        return (f"winners differ: by GPU time plan {g.index} '{g.name}' ({g.graph_us:.2f} us GPU, "
                f"{g.eager_us:.2f} us eager), by eager us/call plan {e.index} '{e.name}' "
                f"({e.graph_us:.2f} us GPU, {e.eager_us:.2f} us eager)")

    @property
    def worst(self) -> PlanResult | None:
        t = self.timed
        return max(t, key=lambda p: p.graph_us) if t else None

    def summary(self) -> str:
        h, b, w, e = self.heuristic, self.best, self.worst, self.best_eager
        if not b:
            return f"no plan of {self.total} timed"
        return (f"{len(self.timed)}/{self.total} plans timed{' (' + self.truncated + ')' if self.truncated else ''}; "
                f"best by GPU time [{b.index}] {b.graph_us:.2f} us, worst [{w.index}] {w.graph_us:.2f} us "
                f"(spread x{w.graph_us / b.graph_us:.2f}), heuristic's pick [{h.index}] "
                f"x{h.graph_us / b.graph_us:.2f} of best"
                + (f"; best by eager us/call [{e.index}] {e.eager_us:.2f} us" if e else "")
                + (f"; {self.winners_differ()}" if self.winners_differ() else "; both modes pick the same plan"))

    def listing(self, limit: int = 40) -> str:
        rows = []
        for p in self.plans[:limit]:
            if p.ok:
                rows.append(f"[{p.index}]{p.mode} {p.name} ws={p.workspace}B graph={p.graph_us:.2f}us "
                            f"eager={p.eager_us:.2f}us build={p.build_ms:.0f}ms")
            else:
                rows.append(f"[{p.index}]{p.mode} {p.name}: {p.status[:80]}")
        more = len(self.plans) - limit
        return "; ".join(rows) + (f"; ... {more} more" if more > 0 else "")

    def to_extra(self) -> dict:
        """What the winners file keeps besides the winner itself."""
        h, w, g, e = self.heuristic, self.worst, self.best, self.best_eager
        return {"heuristic_index": h.index if h else None, "heuristic_us": h.graph_us if h else None,
                "heuristic_eager_us": h.eager_us if h else None,
                "best_graph_index": g.index if g else None, "best_eager_index": e.index if e else None,
                "winners_differ": bool(self.winners_differ()),
                "worst_index": w.index if w else None, "worst_us": w.graph_us if w else None,
                "plans_total": self.total, "plans_timed": len(self.timed), "truncated": self.truncated,
                "sweep_ms": round(self.wall_ms, 1)}


def graph_us(ctx, fn, calls: int = 10, replays: int = 5) -> float:
    """Median µs per call of fn over `replays` replays of one graph capturing `calls` calls."""
    cap = timing.capture(fn, calls, ctx.stream)
    xs = sorted(timing.replay_us(cap, ctx.stream) for _ in range(replays))
    del cap
    return xs[len(xs) // 2]


def eager_us(ctx, fn, calls: int = 50, rounds: int = 5) -> float:
    """Best of `rounds` host-clock rounds of `calls` back-to-back calls: µs/call as an eager
    integration pays it (host dispatch + GPU, whichever is longer)."""
    torch = ctx.torch
    with torch.cuda.stream(ctx.stream):
        return min(timing.eager_round(fn, calls, ctx.sync) for _ in range(rounds)) * 1e6


def plan_mode(graph, index) -> str:
    """Heuristic mode that proposed plan `index` (IR frontends record it per entry), e.g. ' A'."""
    try:
        m = graph.plans[index].mode
    except Exception:  # noqa: BLE001 - classic frontends do not say
        return ""
    return "" if m is None else " " + str(m).rsplit(".", 1)[-1]


def sweep(ctx, graph, run_at: Callable[[int, object], Callable[[], object]], check: Callable[[object], float],
          poison: Callable[[], None], max_plans: int | None = None, time_box_s: float | None = None,
          tol: float = 2e-2, graph_calls: int = 10, replays: int = 5) -> Sweep:
    """g: planned (create_execution_plans + check_support done). run_at(i, workspace) -> fn making
    one call with plan i. Workspace is allocated once at the largest size any built plan needs."""
    torch = ctx.torch
    t_start = time.perf_counter()
    total = graph.get_execution_plan_count()
    res = Sweep(total)
    upto = total if max_plans is None else min(total, max_plans)
    if upto < total:
        res.truncated = f"first {upto} of {total} plans; --hb-heavy times all"
    for i in range(upto):
        if time_box_s is not None and time.perf_counter() - t_start > time_box_s:
            res.truncated = f"time box {time_box_s:.0f} s reached after {i} plans; --hb-heavy times all"
            break
        p = PlanResult(i, plan_name(graph, i), plan_mode(graph, i))
        t0 = time.perf_counter()
        try:
            graph.build_plan_at_index(i)
            p.build_ms = (time.perf_counter() - t0) * 1e3
            p.workspace = int(graph.get_workspace_size_plan_at_index(i))
            p.name = plan_name(graph, i)
        except Exception as e:  # noqa: BLE001 - a listed config that does not build: skip it
            p.build_ms = (time.perf_counter() - t0) * 1e3
            p.status = f"build failed: {type(e).__name__}: {e}"
        res.plans.append(p)
    built = [p for p in res.plans if p.status == "ok"]
    ws = workspace_for(ctx, max([p.workspace for p in built] or [0]))
    for p in built:
        try:
            fn = run_at(p.index, ws)
            with torch.cuda.stream(ctx.stream):
                poison()
                out = fn()
            ctx.sync()
            err = check(out)
            if err is not None and not err <= tol:
                p.status = f"wrong result: rel_err {err:.3g}"
                continue
            p.graph_us = graph_us(ctx, fn, graph_calls, replays)
            p.eager_us = eager_us(ctx, fn)
        except Exception as e:  # noqa: BLE001 - builds but does not run (or capture): skip it
            torch.cuda.synchronize()
            p.status = f"execute failed: {type(e).__name__}: {e}"
    res.wall_ms = (time.perf_counter() - t_start) * 1e3
    res.workspace = ws
    return res
