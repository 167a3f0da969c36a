"""Graph builders and helpers shared by the fusion, conv, SDPA, rebuild, serialization, kernel-cache
and autotune probes.

Every builder declares its tensors from the torch buffers it will be bound to (shape, strides,
dtype), runs the five build steps with explicit data types (the IR frontend otherwise defaults
compute to the I/O type), and returns a `Built`: the graph, its operand UIDs in binding order, a
workspace sized for the selected plan, the per-step build times and which engine serves it.
Executors (`Built.call`) are capture-safe: they only run `execute` on prebuilt arguments.

Failure convention: `cudnn.cudnnGraphNotSupportedError` becomes `Unsupported` (recorded as
"unsupported: ..."); for *fusion attempts* (`rejected_is_unsupported=True`) a ValueError or
RuntimeError from the backend is a rejection of the fused pattern and becomes `Unsupported` too;
anything else propagates and is recorded as an error of that variant only (`guard`).
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from bench.cudnn_graphs import support as cs
from bench.measure import stats
from bench.measure import timing
from bench.cudnn_graphs.support import has_kw, is_not_supported, status_of  # noqa: F401 - probes reach the last two via graphs
from bench.measure.probe import Case, rel_err
from bench.measure.records import Record


# -- capability flags this module needs beyond ctx.caps ----------------------------------------------
def extra_caps(cudnn) -> dict:
    g = cudnn.pygraph
    ir = getattr(g, "__module__", "") == "cudnn._pygraph"
    try:
        backend = int(cudnn.backend_version())
    except Exception:  # noqa: BLE001
        backend = 0
    return {
        "ir": ir,
        "backend": backend,
        "dyn_kw": has_kw(g.__init__, "is_dynamic_shape_enabled"),
        "gen_stats": ir or "generate_stats" in (getattr(g.sdpa, "__doc__", "") or ""),
        "diag_band": hasattr(cudnn, "diagonal_alignment"),
        "kernel_cache": hasattr(cudnn, "create_kernel_cache"),
        "serialize_bytes": has_kw(getattr(g, "serialize", None), "as_bytes"),
        "uid_kw": has_kw(g.tensor, "uid"),
    }


# -- failures -------------------------------------------------------------------------------------------
def guard(make: Callable[[], Any]) -> Any:
    """Runs a case factory; any exception becomes the variant's value (its recorded status)."""
    try:
        return make()
    except cs.Unsupported as e:
        return e
    except Exception as e:  # noqa: BLE001 - one variant's failure must not take the others down
        if is_not_supported(e):
            return cs.Unsupported(str(e))
        return e


def last_error(cudnn) -> str:
    try:
        s = cudnn.get_last_error_string()
        return f" [{s.strip()[:300]}]" if s and s.strip() else ""
    except Exception:  # noqa: BLE001
        return ""


# -- building ---------------------------------------------------------------------------------------------
def new_graph(ctx, io=None, **kw):
    """A pygraph with all three data types set (bf16 I/O, fp32 intermediate and compute)."""
    cudnn = ctx.cudnn
    return cudnn.pygraph(io_data_type=io or cudnn.data_type.BFLOAT16,
                         intermediate_data_type=cudnn.data_type.FLOAT,
                         compute_data_type=cudnn.data_type.FLOAT, handle=ctx.handle, **kw)


def dt(ctx, torch_dtype):
    return cs.torch_to_cudnn_dtype(ctx.cudnn, torch_dtype)


def tensor_of(ctx, g, t, name: str, **kw):
    """A graph tensor declared with the torch buffer's own shape, strides and dtype."""
    return g.tensor(name=name, dim=list(t.shape), stride=list(t.stride()), data_type=dt(ctx, t.dtype), **kw)


def as_output(ctx, x, t):
    """Marks x as an output laid out like torch buffer t."""
    return x.set_output(True).set_data_type(dt(ctx, t.dtype)).set_dim(list(t.shape)).set_stride(list(t.stride()))


def default_modes(cudnn):
    return [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK]


def five_steps(cudnn, g, modes=None, policy=None) -> None:
    """validate, build_operation_graph, create_execution_plans, check_support, build_plans (untimed)."""
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans(modes or default_modes(cudnn))
    g.check_support()
    g.build_plans(policy if policy is not None else cudnn.build_plan_policy.HEURISTICS_CHOICE)


def selected_index(g):
    """The plan the walk selected (private `_plan_index` in the 1.27+ IR; None before)."""
    i = getattr(g, "_plan_index", None)
    return i if isinstance(i, int) else None


def engine_of(g) -> str:
    """'backend' when the cuDNN backend serves the selected plan, else the python engine's name."""
    try:
        eng = g.selected_engine
    except AttributeError:   # classic frontend: no python engines
        return "backend"
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__})"
    return "backend" if eng is None else f"python engine {getattr(eng, 'name', eng)}"


def plan_name(g, i) -> str:
    if i is None:
        return "heuristic choice"
    try:
        return g.get_plan_name_at_index(i)
    except Exception:  # noqa: BLE001
        return f"plan{i}"


@dataclass
class Built:
    ctx: Any
    graph: Any
    uids: tuple                      # operand UIDs, in the order `call` binds buffers
    workspace: Any
    build_ms: dict = field(default_factory=dict)
    index: int | None = None         # the selected plan, when known
    engine: str = "backend"

    @property
    def plan(self) -> str:
        return plan_name(self.graph, self.index)

    def describe(self) -> str:
        return f"{self.engine}, plan {self.index} '{self.plan}'"

    def call(self, buffers, index: int | None = None) -> Callable[[], None]:
        """A zero-argument executor for these buffers: ordered tensor_uids form where the frontend
        has it (the cheapest public call), else a prebuilt {uid: buffer} pack. index pins a plan."""
        g, ws, h, ctx = self.graph, self.workspace, self.ctx.handle, self.ctx
        bufs = tuple(buffers)
        if len(bufs) != len(self.uids):
            raise ValueError(f"{len(bufs)} buffers for {len(self.uids)} uids")
        if ctx.caps.get("ordered"):
            uids = self.uids
            if index is None:
                return lambda: g.execute(bufs, ws, handle=h, tensor_uids=uids)
            return lambda: g.execute_plan_at_index(bufs, ws, index, handle=h, tensor_uids=uids)
        pack = dict(zip(self.uids, bufs))
        if index is None:
            return lambda: g.execute(pack, ws, handle=h)
        return lambda: g.execute_plan_at_index(pack, ws, index, handle=h)


def workspace_for(ctx, nbytes: int):
    return ctx.torch.empty(max(int(nbytes), 1), dtype=ctx.torch.uint8, device=ctx.device)


def build(ctx, g, outs_and_ins: list, modes=None, policy=None, rejected_is_unsupported: bool = False,
          what: str = "graph") -> Built:
    """Runs the five timed steps on g and sizes its workspace. outs_and_ins: graph tensors in the
    order buffers will be bound."""
    cudnn = ctx.cudnn
    try:
        ms = cs.build_steps(cudnn, g, modes=modes or default_modes(cudnn), policy=policy)
    except cs.Unsupported as e:
        raise cs.Unsupported(f"{what}: {e}{last_error(cudnn)}") from e
    except (ValueError, RuntimeError) as e:
        if rejected_is_unsupported:
            raise cs.Unsupported(f"{what} rejected: {type(e).__name__}: {e}{last_error(cudnn)}") from e
        raise
    ws = workspace_for(ctx, g.get_workspace_size())
    uids = tuple(t.get_uid() for t in outs_and_ins)
    return Built(ctx, g, uids, ws, ms, selected_index(g), engine_of(g))


# -- checks ------------------------------------------------------------------------------------------------
def check_all(pairs) -> float:
    """Max relative error over (output, reference) pairs."""
    return max(rel_err(o, r) for o, r in pairs)


def nan_fill(*ts) -> Callable[[], None]:
    def poison():
        for t in ts:
            t.fill_(float("nan"))
    return poison


# -- sizes --------------------------------------------------------------------------------------------------
_DIM = re.compile(r"([a-z]+)(\d+)")


def parse_dims(label: str) -> dict:
    """'b16m512k1024n512' -> {'b': 16, 'm': 512, 'k': 1024, 'n': 512}; 'hw56' gives h and w."""
    out = {}
    for k, v in _DIM.findall(label):
        if k == "hw":
            out["h"] = out["w"] = int(v)
        else:
            out[k] = int(v)
    return out


def heavy(config) -> bool:
    try:
        return bool(config.getoption("--hb-heavy"))
    except (ValueError, AttributeError):
        return False


# -- host (build-time) records -----------------------------------------------------------------------------
def ensure_clean_host() -> None:
    """Build-time probes time the host too: refuse after a profiler session (see bench.measure.timing)."""
    if timing.profiler_has_run():
        raise timing.ContaminatedError(
            "host-mode timing after a torch.profiler session in this process would read slow; "
            "host-mode items must run before device-mode ones")


def time_ms(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def host_record(probe, size: str, variant: str, samples=None, status: str = "ok", note: str = "",
                ratio=None, baseline: str = "", unit: str = "ms") -> Record:
    v = probe.variant(variant)
    samples = [float(x) for x in (samples or [])]
    if status == "ok" and not samples:
        status = "error: no samples"
    return Record(probe.name, variant, size, "host", status=status, role=v.role, unit=unit, samples=samples,
                  calls_per_round=1, ratio=ratio, baseline=baseline, label=v.label, note=note)


def host_placeholders(probe) -> dict:
    """Cases for a probe's host-only (build-time) variants, so that building the probe's call
    variants does not stamp them "not built for this size" before measure() runs: the runner
    checks every variant that build() returns, and skips host-only ones when timing."""
    return {v.name: Case(fn=lambda: None, note="build-time row: measured in host mode")
            for v in probe.variants if set(v.modes) <= {"host"}}


def safe_measure(get_probe: Callable[[], Any], measure: Callable) -> Callable:
    """Wraps a build-time measure so that it never raises: a failure becomes the status of the
    probe's host-mode variants only (the runner would otherwise stamp it on every variant,
    overwriting eager/graph figures already recorded)."""
    def wrapped(ctx, size, opt):
        probe = get_probe()
        host = [v.name for v in probe.variants if "host" in v.modes]
        try:
            ensure_clean_host()
            recs = list(measure(ctx, size, opt))
        except Exception as e:  # noqa: BLE001
            return [host_record(probe, size, n, status=status_of(e)) for n in host]
        have = {r.variant for r in recs}
        recs += [host_record(probe, size, n, status="error: not measured") for n in host if n not in have]
        return recs
    return wrapped


def stats_ratio(num, den):
    """Summary of paired ratios num[i]/den[i] (repeat by repeat), or None."""
    n = min(len(num), len(den))
    return stats.ratio_summary(list(num)[:n], list(den)[:n]) if n else None


def median(xs) -> float:
    return stats.summarize(xs).get("median", float("nan"))


def fmt_ms(x: float) -> str:
    return "–" if x is None or math.isnan(x) else (f"{x:.3g} ms" if x < 100 else f"{x:.0f} ms")


# -- per-plan timing (autotune, kernel checks) --------------------------------------------------------------
def graph_us(ctx, fn, calls: int = 10, replays: int = 5) -> float:
    """Median µs per call of fn over `replays` replays of one graph capturing `calls` calls."""
    cap = timing.capture(fn, calls, ctx.stream)
    xs = sorted(timing.replay_us(cap, ctx.stream) for _ in range(replays))
    del cap
    return xs[len(xs) // 2]


def eager_us(ctx, fn, calls: int = 10, rounds: int = 3) -> float:
    torch = ctx.torch
    with torch.cuda.stream(ctx.stream):
        return min(timing.eager_round(fn, calls, ctx.sync) for _ in range(rounds)) * 1e6


def checked_case(fn, check, poison, note: str = "", tol: float = 2e-2) -> Case:
    return Case(fn=fn, check=check, poison=poison, note=note, tol=tol)
