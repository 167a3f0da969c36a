"""The audit's trap rules, as data.

A rule fires on the steady-state counts per step of the counting pass (plus the kernel counts of
the device mode). Its cost per step is a sum of parts; each part is the first of its figure
sources that has a value:

- Figure: (median eager µs of probe/trap − the cheapest of probe/fixed...) at a size, read from a
  run file, times a per-step count (times `scale`, for figures per op);
- Measured: a per-step µs figure this audit measured itself (build time, copy kernels), put first
  where the cost depends on the user's own problem rather than on the call.
Figures of later sources are still cited, for reference.

Thresholds are counts, not timings, so the verdict does not move with machine noise. To follow
a frontend change, edit or add rows here.

Also here, as plain functions: how the copy kernels' device time is shared over the kinds of
copy counted (`split_copy_time`), and a failed CUDA-graph capture in one line (`capture_summary`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from cudnn_hostbench.bench.audit.packs import Slope


@dataclass(frozen=True)
class Figure:
    """A figure of the probes in a run file (not bench.measure.probe.Probe, a probe itself)."""
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
class Unpriced:
    """A part with no probe row to price it: the finding says why (a count, never a cost of 0)."""
    count: str
    why: str

    def cite(self) -> str:
        return f"unpriced: {self.why}"

    def price(self, run, here: float | None = None) -> tuple[float | None, str, bool]:
        return None, f"unpriced ({self.count}): {self.why}", False


@dataclass(frozen=True)
class Net:
    """A Figure whose trap row also times something the step does not do per call: (trap −
    `deduct`) − the cheapest fix (the sdpa_provider probe registers and removes its override once per
    16 calls; `install_remove` times that alone, per call)."""
    figure: Figure
    deduct: str

    @property
    def count(self) -> str:
        return self.figure.count

    def cite(self) -> str:
        return f"{self.figure.cite()} − {self.figure.probe}/{self.deduct}"   # priced by cost.net_price



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
    detail: Callable[[dict], str] | None = None   # more evidence from the counts' named entries
    cost_note: Callable[[dict], str] | None = None  # what the cost leaves out, from the counts

    def label(self) -> str:
        return f"trap {self.trap}" if self.trap is not None else (self.guide or "extra")


# kernel names (case-insensitive substrings) counted as copy/transpose kernels in the device mode;
# "elementwise" is left out: torch's arithmetic kernels carry it too, a copy's name also says "copy"
COPY_KERNELS = ("copy", "transpose")
COPY_KERNELS_EXCLUDE = ("memcpy htod", "memcpy dtoh", "memset")


def is_copy_kernel(name: str) -> bool:
    n = name.lower()
    return any(p in n for p in COPY_KERNELS) and not any(x in n for x in COPY_KERNELS_EXCLUDE)


def _n(counts: dict, *keys) -> float:
    return sum(counts.get(k, 0) or 0 for k in keys)


def _times(named: dict | None) -> str:
    """{'torch.empty': 2.0} -> 'torch.empty ×2'."""
    return ", ".join(f"{k} ×{v:g}" for k, v in (named or {}).items())


def alloc_detail(counts: dict) -> str:
    """'(2 explicit: torch.empty ×2; the rest inside ops)' and what the count rests on."""
    total, explicit = _n(counts, "cuda_allocs"), _n(counts, "cuda_allocs_explicit")
    named = {k: v for k, v in (counts.get("alloc_calls") or {}).items() if not k.endswith("(0 bytes)")}
    zero = {k: v for k, v in (counts.get("alloc_calls") or {}).items() if k.endswith("(0 bytes)")}
    if counts.get("alloc_counted_by") == "factory calls":
        text = (f" (factory calls only: {_times(named) or 'none'}; the allocator kept no statistics, "
                "so allocations inside ops are not seen)")
    elif explicit <= 0:
        text = " (all inside ops: copies, op outputs)" if total > 0 else ""
    elif explicit >= total:
        text = f" ({explicit:g} explicit: {_times(named)})"
    else:
        text = f" ({explicit:g} explicit: {_times(named)}; the rest inside ops)"
    if zero:
        text += f"; also {_times(zero)}: no allocation, still a tensor made per step"
    return text


def alloc_cost_note(counts: dict) -> str:
    inside = _n(counts, "cuda_allocs") - _n(counts, "cuda_allocs_explicit")
    return (f"allocations inside ops ({inside:g} per step) not priced: their cost is part of the op that "
            f"makes them (the churn probe times an explicit torch.empty)") if inside > 0 else ""


def copy_detail(kind: str) -> Callable[[dict], str]:
    """Which tensor each copy of this kind copied, and by which call."""
    def detail(c: dict) -> str:
        items = [x for x in c.get("copy_list") or () if x.get("kind") == kind]
        out = []
        for x in items:
            view = ", a transposed view" if x.get("transposed_view") else ""
            out.append(f"{x['per_step']:g} × {x['call']} at {x['where']} of {x['dtype']} {list(x['shape'])} "
                       f"strides {tuple(x['stride'])}{view}")
        return (": " + "; ".join(out)) if out else ""
    return detail


def unexplained_detail(counts: dict) -> str:
    n = _n(counts, "copy_kernels_unexplained")
    return (f"; {n:g} copy kernels per step from no counted call (a dtype cast, a copy inside an op, "
            f"or a call bound before the audit)") if n > 0 else ""


def op_detail(counts: dict) -> str:
    return f" ({_times(counts.get('op_calls'))})" if counts.get("op_calls") else ""


def pack_detail(counts: dict) -> str:
    return f"; packs per step: {_times(counts.get('pack_sizes'))}" if counts.get("pack_sizes") else ""


def sync_detail(counts: dict) -> str:
    return f" ({_times(counts.get('sync_calls'))})" if counts.get("sync_calls") else ""


# the interleave probe runs 4 cuDNN + 4 torch.mm GEMMs per call, back to back (figures per op):
# counted across call boundaries, alternating has 8 library switches and phased 2, so one extra
# switch costs (alternating − phased) × 8 / 6. Two switches per step is the floor of any step
# that uses both libraries.
_PER_SWITCH = 8 / 6
MIN_SWITCHES = 2
# inside one step the floor is 1 (all of one library, then the other): one library's call between two
# of the other's (cuDNN, torch.mm, cuDNN) makes 2 inside and 2 cyclically, which the cyclic count alone
# takes for the floor (the trap 7 planted in a training step's backward went unseen: issue 67)
MIN_WITHIN = 1
OVERRIDE_SIZE = "m64_128_256_512k1024n1024"     # the override probe's one default size (4 M values per call)
SDPA_SIZE = "b4h32s2048d128"                    # the sdpa_provider probe's first size (the sdpa probe's)
ALIGN = 16

_COPY_COST = "device time of this step's copy kernels, this kind's share by bytes"

RULES = (
    Rule(
        id="rebuild", trap=1, title="graph built or planned inside the step",
        fires=lambda counts: _n(counts, "graph_builds", "validate", "build_operation_graph", "create_execution_plans",
                           "check_support", "build_plans", "build_plan_at_index", "build", "deserialize") > 0,
        evidence=("{graph_builds:g} graph builds per step (pygraph() {graphs_created:g}, validate {validate:g}, "
                  "create_execution_plans {create_execution_plans:g}, build_plans {build_plans:g}, "
                  "build() {build:g}, deserialize {deserialize:g})"),
        # this step's own build time first: build cost depends on the user's graph, the probe's is a 256³ matmul
        parts=((Measured("build_us", "host time inside build calls, counting pass"),
                Figure("rebuild", "rebuild", ("cache_hit", "prebuilt"), "graph_builds")),),
        fix=("build and plan once per (shape, stride, dtype) and keep the built graph, its workspace and "
             "pinned plan in a cache; per step only bind pointers and execute"),
    ),
    Rule(
        id="generic_execute", trap=2, title="generic graph.execute with a variant-pack dict",
        fires=lambda counts: _n(counts, "execute") > 0,
        evidence=("{execute:g} execute(dict) per step (execute_plan_at_index {execute_plan_at_index:g}, "
                  "ordered {execute_ordered:g})"),
        # the execute probe runs trap and fixes on one plan (issue 20), except autotuned_ordered: the
        # fix as trap 2 names it and as a hand-fixed step writes it (a plan autotuned once, pinned,
        # ordered pack). Without it a step the audit had not seen had its executes projected above
        # its fixed step (log 2026-12-02-2249); the engines' host cost per plan is still the audit's
        # plan-choice note
        parts=((Figure("execute", "generic", ("ordered_pinned", "ordered", "pinned", "autotuned_ordered"), "execute"),),),
        fix=("on frontend 1.31+ call execute_plan_at_index(buffers_tuple, ws, plan, handle=h, tensor_uids=uids), "
             "the cheapest public call; choose the plan by what the step pays (see the plan-choice note: "
             "engines differ in host µs per execute, not only in GPU time)"),
    ),
    Rule(
        id="set_stream", trap=3, title="cudnn.set_stream on every step",
        fires=lambda counts: _n(counts, "set_stream", "set_stream_backend") > 0,
        evidence=("{set_stream:g} set_stream per step ({set_stream_backend:g} reached cudnnSetStream, "
                  "{set_stream_cached:g} returned from the frontend cache)"),
        parts=((Figure("set_stream", "raw_set_stream", ("set_once",), "set_stream_backend"),),
               (Figure("set_stream", "set_stream_same", ("set_once",), "set_stream_cached"),)),
        fix=("set the handle's stream once; per step compare the current stream (torch._C._cuda_getCurrentRawStream) "
             "with the last one set and call set_stream only when it changed"),
    ),
    Rule(
        id="stream_query", trap=3, title="torch.cuda.current_stream() queried every step",
        fires=lambda counts: _n(counts, "stream_queries_other") > 0,
        evidence="{stream_queries_other:g} torch.cuda.current_stream() per step (its pointer not read at once: "
                 "those are raw_stream)",
        parts=((Figure("set_stream", "query_stream", ("set_once",), "stream_queries_other"),),),
        fix=("cache the stream pointer, or read it with torch._C._cuda_getCurrentRawStream(device) "
             "instead of building a Stream object"),
    ),
    Rule(
        id="raw_stream", trap=3, title="stream pointer read through torch.cuda.current_stream() every step",
        fires=lambda counts: _n(counts, "stream_ptr_queries") > 0,
        evidence="{stream_ptr_queries:g} torch.cuda.current_stream().cuda_stream per step (a Stream object built "
                 "to read its pointer)",
        parts=((Figure("set_stream", "query_stream", ("query_raw_stream",), "stream_ptr_queries"),),),
        fix=("read the pointer with torch._C._cuda_getCurrentRawStream(device) (private torch API, no Stream "
             "object), and call set_stream only when it changed"),
    ),
    Rule(
        id="new_pack", trap=4, title="new variant pack built every step",
        fires=lambda counts: _n(counts, "new_packs") > 0,
        evidence="{new_packs:g} new pack objects (dict/tuple) passed to execute per step",
        parts=((Figure("churn", "new_dict", ("reuse",), "new_packs"),),),
        fix="build the pack (dict, or tuple for tensor_uids) once and reuse the same object every step",
    ),
    Rule(
        id="new_output", trap=4, title="CUDA tensors allocated every step",
        fires=lambda counts: _n(counts, "cuda_allocs", "cuda_factory_calls") > 0,
        evidence="{cuda_allocs:g} CUDA allocations per step",
        detail=alloc_detail,
        # priced per explicit factory call: that is what the churn probe's trap variant does
        parts=((Figure("churn", "new_output", ("reuse",), "cuda_factory_calls"),),),
        cost_note=alloc_cost_note,
        fix=("allocate outputs and workspaces once and reuse them where lifetimes allow; "
             "for allocations inside ops, pass out= or reuse a preallocated buffer"),
    ),
    Rule(
        id="views", trap=4, title="tensor views made every step",
        fires=lambda counts: _n(counts, "tensor_views") > 0,
        evidence="{tensor_views:g} views, reshapes or index expressions per step made by the step's own code",
        parts=((Figure("churn", "new_view", ("reuse",), "tensor_views"),),),
        fix=("make views once at set-up (bind W.t().unsqueeze(0), x[0], x.view(...) once and keep them) and reuse "
             "them while the input is the same tensor"),
    ),
    Rule(
        id="metadata", trap=4, title="cache key or graph description rebuilt from shapes and strides every step",
        fires=lambda counts: _n(counts, "stride_reads") > 0,
        evidence=("{stride_reads:g} stride() and {shape_reads:g} shape/size reads per step by the step's own code "
                  "(a (shape, stride, dtype) key, or a graph described again)"),
        # the churn probe's key reads shape and stride of 2 tensors: half its cost per stride read
        parts=((Figure("churn", "cache_key", ("reuse",), "stride_reads", scale=0.5),),),
        fix=("key the cache on the tensor object (`x is self._last_x`) and build the (shape, stride, dtype) key "
             "only for an input not seen before"),
    ),
    Rule(
        id="transpose", trap=5, title="transposed view materialized every step (a W.t() weight made contiguous)",
        fires=lambda counts: _n(counts, "copies_transposed") > 0,
        evidence="{copies_transposed:g} copies of a transposed view into a contiguous tensor per step",
        detail=copy_detail("transposed"),
        parts=((Measured("copy_us_transposed", _COPY_COST),
                Figure("transpose", "contiguous_copy", ("strided_view",), "copies_transposed", size="t256")),),
        fix=("declare the weight tensor with the strides of W.t() and bind the view "
             "(W.t().unsqueeze(0)): no copy kernel; any other transposed view, declare with its own strides"),
    ),
    Rule(
        id="layout_copy", trap=None, guide="extra", title="tensor converted to or from channels_last every step",
        fires=lambda counts: _n(counts, "copies_channels_last") > 0,
        evidence="{copies_channels_last:g} layout conversions (NCHW ↔ NHWC) per step",
        detail=copy_detail("channels_last"),
        parts=((Measured("copy_us_channels_last", _COPY_COST),),),
        fix=("keep activations in channels_last end to end, and declare the graph tensor with NHWC strides "
             "(dims N, C, H, W; strides H·W·C, 1, W·C, C) so cuDNN reads the tensor as it is"),
    ),
    Rule(
        id="copy", trap=None, guide="extra", title="tensor copied every step",
        fires=lambda counts: _n(counts, "copies_other", "copy_kernels_unexplained") > 0,
        evidence="{copies_other:g} other copies per step (.contiguous/.to/.clone/.copy_)",
        detail=lambda counts: copy_detail("other")(counts) + unexplained_detail(counts),
        parts=((Measured("copy_us_other", _COPY_COST),),),
        fix=("allocate the output in the layout its consumer wants, or have the producer write into the "
             "buffer directly (out=, or bind that buffer in the graph: cuDNN takes strided tensors), so nothing is copied"),
    ),
    Rule(
        id="interleave", trap=7, title="cuDNN and cuBLAS calls alternate within the step",
        fires=lambda counts: _n(counts, "extra_switches") > 0,
        evidence=("{lib_switches:g} cuDNN↔cuBLAS switches per step, the switch into the next step included "
                  "({lib_switches_within:g} inside the step; {executes:g} cuDNN executes, {cublas_calls:g} cuBLAS "
                  "calls; 2 is the floor, 1 inside the step)"),
        parts=((Figure("interleave", "alternating", ("phased",), "extra_switches", scale=_PER_SWITCH),),),
        fix="group independent GEMMs by library (all cuDNN, then all torch.mm), or capture the step in a CUDA graph",
    ),
    Rule(
        id="custom_op", trap=None, guide="framework", title="cuDNN call registered with @torch.library.custom_op",
        fires=lambda counts: _n(counts, "custom_op_calls", "custom_op_autograd_calls") > 0,
        evidence=("{custom_op_calls:g} calls per step of ops made by @torch.library.custom_op "
                  "({custom_op_autograd_calls:g} more with register_autograd)"),
        detail=op_detail,
        parts=((Figure("registration", "custom_op_autograd", ("library",), "custom_op_autograd_calls"),),
               (Figure("registration", "custom_op", ("library",), "custom_op_calls"),)),
        fix=("register the op with torch.library.Library(ns, \"FRAGMENT\"): define(schema) + impl(name, fn, \"CUDA\") "
             "(and a Meta/fake impl for torch.compile), or call the implementation directly in eager code; "
             "capturing the step in a CUDA graph removes the per-call cost altogether"),
    ),
    Rule(
        id="dispatcher", trap=None, guide="framework", title="cuDNN call reached through the torch.ops dispatcher",
        fires=lambda counts: _n(counts, "dispatcher_calls") > 0,
        evidence="{dispatcher_calls:g} calls per step of user-registered ops through torch.ops",
        detail=op_detail,
        parts=((Figure("registration", "library", ("python_fn",), "dispatcher_calls"),),),
        fix=("keep the registered op for torch.compile/export, but call the implementation directly where the "
             "step runs eagerly; or capture the step in a CUDA graph"),
    ),
    Rule(
        id="pack_size", trap=None, guide="extra", title="large variant packs passed as dicts",
        fires=lambda counts: _n(counts, "pack_extra_tensors_dict") > 0,
        evidence=("{pack_tensors:g} tensors bound per step ({pack_tensors_dict:g} in dict packs, "
                  "{pack_extra_tensors_dict:g} beyond the execute probe's 3-tensor pack)"),
        detail=pack_detail,
        parts=((Slope("pinned", ("ordered",), "pack_extra_tensors_dict"),),),
        fix=("pass the pack as a tuple in a fixed UID order with tensor_uids= (frontend 1.31+), built once and "
             "reused: layout lookups are cached by value, so each extra tensor costs less"),
    ),
    # issue 67: the calls integrations make today, each priced from its probe's trap and fix rows
    Rule(
        id="override", trap=None, guide="extra", title="execute-time shape override on every call",
        fires=lambda counts: _n(counts, "override_executes") > 0,
        evidence=("{override_executes:g} executes per step with override_uids/override_shapes (one graph run at "
                  "shapes it was not built at)"),
        parts=((Figure("override", "override", ("per_shape",), "override_executes", size=OVERRIDE_SIZE),),),
        fix=("for the few shapes a step really runs, build a graph per shape once (keyed by shape, stride, dtype, "
             "looked up per call) and execute it without overrides; keep the override graph for shapes too many "
             "to build ahead"),
    ),
    Rule(
        id="cuda_graph_update", trap=None, guide="CUDA-graph ceiling",
        title="cuDNN's native CUDA graph populated or updated every step",
        fires=lambda counts: _n(counts, "cuda_graph_populates", "cuda_graph_updates") > 0,
        evidence=("{cuda_graph_populates:g} populate_cuda_graph and {cuda_graph_updates:g} update_cuda_graph with "
                  "unchanged pointers per step ({cuda_graph_updates_moved:g} updates for new pointers: those are "
                  "the fix, not counted)"),
        parts=((Figure("cuda_graph_api", "native_update_same", ("native_launch",), "cuda_graph_updates"),),
               (Figure("cuda_graph_api", "native_update_same", ("native_launch",), "cuda_graph_populates"),)),
        cost_note=lambda counts: ("a populate per step is priced at the update row, a floor: no row times "
                             "populate_cuda_graph per call (it also instantiates a new executable graph)")
        if _n(counts, "cuda_graph_populates") > 0 else "",
        fix=("populate and instantiate the graph once; per step only launch it, and call update_cuda_graph "
             "(+ cudaGraphExecUpdate) only when a pointer changed"),
    ),
    Rule(
        id="fe_wrapper", trap=None, guide="extra", title="cuDNN called through the frontend's cudnn.Graph wrapper",
        fires=lambda counts: _n(counts, "fe_wrapper_calls") > 0,
        evidence=("{fe_wrapper_calls:g} cudnn.Graph calls per step ({fe_wrapper_positional:g} positional, "
                  "{fe_wrapper_named:g} with a {{name: tensor}} dict, {fe_wrapper_auto_handle:g} on handle='auto'); "
                  "the pack, output, execute and stream calls inside are the wrapper's, priced here"),
        parts=((Figure("fe_wrapper", "wrapper_positional", ("pygraph_pinned",), "fe_wrapper_positional"),),
               (Figure("fe_wrapper", "wrapper_named", ("pygraph_pinned",), "fe_wrapper_named"),),
               (Figure("fe_wrapper", "wrapper_auto_handle", ("pygraph_pinned",), "fe_wrapper_auto_handle"),)),
        fix=("on the hot path, build a pygraph yourself (or keep the wrapper for set-up only), pin its plan, "
             "prebuild the pack and output, set the stream on change, and call execute_plan_at_index with "
             "tensor_uids"),
    ),
    Rule(
        id="sdpa_provider", trap=None, guide="framework",
        title="SDPA routed through cudnn.torch.sdpa_provider (aten → Python → custom op)",
        fires=lambda counts: _n(counts, "sdpa_provider_calls", "sdpa_provider_bwd_calls") > 0,
        evidence=("{sdpa_provider_calls:g} forward and {sdpa_provider_bwd_calls:g} backward calls per step of "
                  "torch.ops.cudnn.sdpa_fwd/bwd made by the provider's override of aten's cuDNN attention"),
        parts=((Net(Figure("sdpa_provider", "provider", ("provider_op",), "sdpa_provider_calls",
                           size=SDPA_SIZE), "install_remove"),),
               (Unpriced("sdpa_provider_bwd_calls", "the sdpa_provider probe times the forward only"),)),
        fix=("call torch.ops.cudnn.sdpa_fwd (the provider's op) directly where the step runs eagerly, or leave "
             "F.scaled_dot_product_attention on torch's native cuDNN backend"),
    ),
    Rule(
        id="alignment", trap=None, guide="extra",
        title="a plan run on misaligned pointers (a cache key without alignment)",
        fires=lambda counts: _n(counts, "misaligned_executes") > 0,
        evidence=(f"{{misaligned_executes:g}} executes per step bind a tensor not {ALIGN}-byte aligned (an offset "
                  f"view), on a plan the frontend built for {ALIGN}-byte aligned pointers"),
        parts=((Figure("alignment", "offset_reuse", ("aligned",), "misaligned_executes"),),),
        cost_note=lambda counts: ("whether cuDNN runs such a plan right is the alignment probe's verdict (its "
                             "offset_reuse note, or the row's status where it was rejected, faulted or ran wrong)"),
        fix=(f"key the plan cache with each pointer's alignment (data_ptr() % {ALIGN}) as PyTorch's own cuDNN key "
             f"does, and start views on a {ALIGN}-byte boundary (pad the slice) or copy a misaligned view into an "
             "aligned buffer before executing"),
    ),
    Rule(
        id="sync", trap=None, guide="extra", title="device synchronization inside the step",
        fires=lambda counts: _n(counts, "syncs") > 0,
        evidence="{syncs:g} host waits for the device per step",
        detail=sync_detail,
        fix="keep results on the device; a sync stalls the host every step and cannot be captured in a CUDA graph",
    ),
)

# not a count rule: raised by the audit when capture fails
CAPTURE = Rule(
    id="capture", trap=None, guide="CUDA-graph ceiling", title="step cannot be captured in a CUDA graph",
    fires=lambda counts: False, evidence="{capture_error}",
    fix=("move building, planning and allocation out of the step, put the handle on the capture stream, "
         "and avoid host syncs; then capture the steady-state step once and replay it"),
)


def derived(counts: dict) -> dict:
    """Counts the rules read that are computed from others."""
    c = dict(counts)
    c.setdefault("copy_kernels", 0.0)
    c["extra_switches"] = max(0.0, (c.get("lib_switches") or 0) - MIN_SWITCHES,
                              (c.get("lib_switches_within") or 0) - MIN_WITHIN)
    c["stream_queries_other"] = max(0.0, (c.get("stream_queries") or 0) - (c.get("stream_ptr_queries") or 0))
    c["copy_kernels_unexplained"] = max(0.0, (c.get("copy_kernels") or 0) - (c.get("copies") or 0))
    return c


def split_copy_time(total_us, counts: dict) -> dict:
    """The device time of a step's copy kernels split over the kinds of copy counted.

    Kernel names do not say which tensor they copied, so: kernels beyond the counted copies go to
    "other" (one kernel per copy), the rest is shared by bytes copied (by count without bytes).
    Returns {"copy_us_<kind>": µs per step} for kinds with a share."""
    if not total_us or total_us <= 0:
        return {}
    c = derived(counts)
    kinds = ("transposed", "channels_last", "other")
    share = dict.fromkeys(kinds, 0.0)
    kernels, extra = c.get("copy_kernels") or 0, c["copy_kernels_unexplained"]
    if kernels > 0 and extra > 0:
        share["other"] = total_us * extra / kernels
    weights = {k: _n(c, f"copy_bytes_{k}") for k in kinds}
    if not sum(weights.values()):
        weights = {k: _n(c, f"copies_{k}") for k in kinds}
    rest, w = total_us - share["other"], sum(weights.values())
    if w > 0:
        for k in kinds:
            share[k] += rest * weights[k] / w
    else:
        share["other"] = total_us
    return {f"copy_us_{k}": v for k, v in share.items() if v > 0}


# -- a failed CUDA-graph capture, in one line ------------------------------------------------------

# (lowercase text of the CUDA/torch message, what the step did); the first match names the cause
CAPTURE_CAUSES = (
    ("legacy stream depend on a capturing", "the step runs work on the legacy default stream (a cuDNN handle "
                                            "or op not on the capture stream)"),
    ("unjoined", "the step forks work onto another stream and does not join it back"),
    ("event last recorded in a capturing stream", "the step waits on or queries an event recorded during capture"),
    ("dependency created on uncaptured work", "the step waits on work outside the capture"),
    ("wrong thread", "capture was touched from another thread"),
    ("cudnn_status", "a cuDNN call failed"),
)
FORBIDDEN = "operation not permitted when stream is capturing"
SECONDARY = ("operation failed due to a previous error during capture", "capture invalidated",
             "streamcaptureinvalidated")
_BOILERPLATE = ("cuda kernel errors might be asynchronously reported", "for debugging consider passing",
                "compile with `torch_use_cuda_dsa`", "search for `cuda", "device-side assertions")
_PREFIX = re.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)\s*:\s*|CUDA error\s*:\s*)+")


def error_messages(exc) -> list[str]:
    """Messages of an exception and the ones it was raised from or while handling, earliest first."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return out[::-1]


def error_line(message: str) -> str:
    """The one line of a CUDA/torch error message that says what went wrong."""
    for line in str(message).splitlines():
        text = _PREFIX.sub("", line).strip()
        if text and not any(b in text.lower() for b in _BOILERPLATE):
            return text[:200]
    return ""


def capture_summary(messages, counts: dict | None = None) -> str:
    """'not capturable — <what the step did> during capture: <CUDA's own words>' from the error
    messages of a failed capture (earliest first) and the step's counts."""
    lines = [x for x in (error_line(m) for m in messages) if x]
    if not lines:
        return "not capturable — the capture failed without a message"
    primary = next((x for x in lines if not any(s in x.lower() for s in SECONDARY)), lines[0])
    why = _capture_cause(primary.lower(), counts or {})
    return f"not capturable — {why} during capture: {primary}" if why else f"not capturable — {primary}"


def _capture_cause(low: str, counts: dict) -> str | None:
    """What the step did that the capture failed on, from CUDA's words (lower case) and the counts."""
    why = next((text for key, text in CAPTURE_CAUSES if key in low), None)
    if why is not None:
        return why
    generic = FORBIDDEN in low or any(s in low for s in SECONDARY)
    if _n(counts, "syncs") > 0:    # a host sync can never be captured, whatever CUDA said
        names = " / ".join((counts.get("sync_calls") or {}).keys()) or "torch.cuda.synchronize / .item() / .cpu()"
        return f"the step synchronizes ({names})"
    if generic and _n(counts, "graph_builds") > 0:
        return "the step builds or plans a cuDNN graph"
    if generic:
        return "the step calls something capture forbids (a host sync, a blocking copy, cudaMalloc outside torch)"
    return None
