"""The audit's trap rules, as data.

A rule fires on the steady-state counts per step of the counting pass (plus the kernel counts of
the device mode). Its cost per step is a sum of parts; each part is the first of its figure
sources that has a value:

- Probe: (median eager µs of probe/trap − the cheapest of probe/fixed...) at a size, read from a
  run file, times a per-step count (times `scale`, for figures per op);
- Measured: a per-step µs figure this audit measured itself (build time, copy kernels), put first
  where the cost depends on the user's own problem rather than on the call.
Probe figures of later sources are still cited, for reference.

Thresholds are counts, not timings, so the verdict does not move with machine noise. To follow
a frontend change, edit or add rows here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Probe:
    probe: str
    trap: str
    fixed: tuple            # the cheapest of these is the fix's figure
    count: str              # per-step count the figure is multiplied by
    size: str = "256"       # else the closest size the run has
    mode: str = "eager"
    scale: float = 1.0

    def cite(self) -> str:
        fixed = "|".join(self.fixed)
        s = f" ×{self.scale:.3g}" if self.scale != 1 else ""
        return f"{self.probe}/{self.trap} − {self.probe}/{fixed} @{self.size} {self.mode}{s} × {self.count}"


@dataclass(frozen=True)
class Measured:
    key: str                # µs per step, measured by this audit
    label: str

    def cite(self) -> str:
        return f"{self.label} (this audit)"


@dataclass(frozen=True)
class Rule:
    id: str
    trap: int | None        # number in the integration guide; None: not one of its 8 traps
    title: str
    fires: Callable[[dict], bool]
    evidence: str           # str.format over the counts
    parts: tuple = ()       # each part: a tuple of sources, first with a figure wins
    fix: str = ""
    guide: str = ""         # guide section when trap is None

    def label(self) -> str:
        return f"trap {self.trap}" if self.trap is not None else (self.guide or "extra")


# kernel names (case-insensitive substrings) counted as copy/transpose kernels in the device mode;
# "elementwise" is left out: torch's arithmetic kernels carry it too, a copy's name also says "copy"
COPY_KERNELS = ("copy", "transpose")
COPY_KERNELS_EXCLUDE = ("memcpy htod", "memcpy dtoh", "memset")


def is_copy_kernel(name: str) -> bool:
    n = name.lower()
    return any(p in n for p in COPY_KERNELS) and not any(x in n for x in COPY_KERNELS_EXCLUDE)


def _n(c: dict, *keys) -> float:
    return sum(c.get(k, 0) or 0 for k in keys)


# the interleave probe runs 4 cuDNN + 4 torch.mm GEMMs per call (figures per op): alternating has
# 7 library switches, phased 1, so one extra switch costs (alternating − phased) × 8 / 6
_PER_SWITCH = 8 / 6

RULES = (
    Rule(
        id="rebuild", trap=1, title="graph built or planned inside the step",
        fires=lambda c: _n(c, "graph_builds", "validate", "build_operation_graph", "create_execution_plans",
                           "check_support", "build_plans", "build_plan_at_index", "build", "deserialize") > 0,
        evidence=("{graph_builds:g} graph builds per step (pygraph() {graphs_created:g}, validate {validate:g}, "
                  "create_execution_plans {create_execution_plans:g}, build_plans {build_plans:g}, "
                  "build() {build:g}, deserialize {deserialize:g})"),
        # this step's own build time first: build cost depends on the user's graph, the probe's is a 256³ matmul
        parts=((Measured("build_us", "host time inside build calls, counting pass"),
                Probe("rebuild", "rebuild", ("cache_hit", "prebuilt"), "graph_builds")),),
        fix=("build and plan once per (shape, stride, dtype) and keep the built graph, its workspace and "
             "pinned plan in a cache; per step only bind pointers and execute"),
    ),
    Rule(
        id="generic_execute", trap=2, title="generic graph.execute with a variant-pack dict",
        fires=lambda c: _n(c, "execute") > 0,
        evidence="{execute:g} execute(dict) per step (execute_plan_at_index {execute_plan_at_index:g}, ordered {execute_ordered:g})",
        parts=((Probe("execute", "generic", ("pinned", "ordered_pinned", "ordered"), "execute"),),),
        fix=("autotune once, then call execute_plan_at_index(pack, ws, best, handle=h); on frontend 1.31+ "
             "the ordered form execute_plan_at_index(buffers_tuple, ws, best, handle=h, tensor_uids=uids) "
             "is the cheapest public call"),
    ),
    Rule(
        id="set_stream", trap=3, title="cudnn.set_stream on every step",
        fires=lambda c: _n(c, "set_stream", "set_stream_backend") > 0,
        evidence="{set_stream:g} set_stream per step ({set_stream_backend:g} reached cudnnSetStream, {set_stream_cached:g} returned from the frontend cache)",
        parts=((Probe("set_stream", "raw_set_stream", ("set_once",), "set_stream_backend"),),
               (Probe("set_stream", "set_stream_same", ("set_once",), "set_stream_cached"),)),
        fix=("set the handle's stream once; per step compare the current stream (torch._C._cuda_getCurrentRawStream) "
             "with the last one set and call set_stream only when it changed"),
    ),
    Rule(
        id="stream_query", trap=3, title="torch.cuda.current_stream() queried every step",
        fires=lambda c: _n(c, "stream_queries") > 0,
        evidence="{stream_queries:g} torch.cuda.current_stream() per step",
        parts=((Probe("set_stream", "query_stream", ("set_once",), "stream_queries"),),),
        fix=("cache the stream pointer, or read it with torch._C._cuda_getCurrentRawStream(device) "
             "instead of building a Stream object"),
    ),
    Rule(
        id="new_pack", trap=4, title="new variant pack built every step",
        fires=lambda c: _n(c, "new_packs") > 0,
        evidence="{new_packs:g} new pack objects (dict/tuple) passed to execute per step",
        parts=((Probe("churn", "new_dict", ("reuse",), "new_packs"),),),
        fix="build the pack (dict, or tuple for tensor_uids) once and reuse the same object every step",
    ),
    Rule(
        id="new_output", trap=4, title="CUDA tensors allocated every step",
        fires=lambda c: _n(c, "cuda_allocs") > 0,
        evidence="{cuda_allocs:g} torch.empty/zeros/...(device='cuda') per step",
        parts=((Probe("churn", "new_output", ("reuse",), "cuda_allocs"),),),
        fix="allocate outputs and workspaces once and reuse them where lifetimes allow",
    ),
    Rule(
        id="transpose", trap=5, title="transposed weight materialized every step",
        fires=lambda c: _n(c, "contiguous_copies", "copy_kernels") > 0,
        evidence="{contiguous_copies:g} .contiguous() copies of non-contiguous CUDA tensors, {copy_kernels:g} copy/transpose kernels per step",
        parts=((Measured("copy_kernel_us", "device time of copy/transpose kernels per step"),
                Probe("transpose", "contiguous_copy", ("strided_view",), "contiguous_copies", size="t256")),),
        fix=("declare the weight tensor with the strides of W.t() and bind the view "
             "(W.t().unsqueeze(0)): no copy kernel"),
    ),
    Rule(
        id="interleave", trap=7, title="cuDNN and cuBLAS calls alternate within the step",
        fires=lambda c: _n(c, "lib_switches") > 1,
        evidence="{lib_switches:g} cuDNN↔cuBLAS switches per step ({executes:g} cuDNN executes, {cublas_calls:g} cuBLAS calls)",
        parts=((Probe("interleave", "alternating", ("phased",), "extra_switches", scale=_PER_SWITCH),),),
        fix="group independent GEMMs by library (all cuDNN, then all torch.mm), or capture the step in a CUDA graph",
    ),
    Rule(
        id="sync", trap=None, guide="extra", title="device synchronization inside the step",
        fires=lambda c: _n(c, "syncs") > 0,
        evidence="{syncs:g} synchronize()/.item()/.cpu()/.tolist() on CUDA per step",
        fix="keep results on the device; a sync stalls the host every step and cannot be captured in a CUDA graph",
    ),
)

# not a count rule: raised by the audit when capture fails
CAPTURE = Rule(
    id="capture", trap=None, guide="CUDA-graph ceiling", title="step cannot be captured in a CUDA graph",
    fires=lambda c: False, evidence="{capture_error}",
    fix=("move building, planning and allocation out of the step, put the handle on the capture stream, "
         "and avoid host syncs; then capture the steady-state step once and replay it"),
)


def derived(counts: dict) -> dict:
    """Counts the rules read that are computed from others."""
    c = dict(counts)
    c.setdefault("copy_kernels", 0.0)
    c["extra_switches"] = max(0.0, (c.get("lib_switches") or 0) - 1)
    return c

