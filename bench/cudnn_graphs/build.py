"""Building cuDNN graphs: declaring tensors from torch buffers, the five timed build steps, the
built graph and its executors, and the one guard that turns frontend refusals into Unsupported.

Graphs are declared with explicit data types (the IR frontend otherwise defaults compute to the
I/O type) and their tensors from the torch buffers they will be bound to (shape, strides, dtype).

Failure convention: a refusal (`cudnnGraphNotSupportedError`, or for *fusion attempts*
(`rejected_is_unsupported=True`) a ValueError or RuntimeError from the backend) becomes
`Unsupported`, recorded "unsupported: ..."; anything else stays an error of that variant only.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from cudnn_hostbench.bench.cudnn_graphs.load import last_error
from cudnn_hostbench.bench.measure.core import plan_clock
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

STEPS = ("validate", "build_operation_graph", "create_execution_plans", "check_support", "build_plans")


# -- failures -------------------------------------------------------------------------------------------
def as_unsupported(error: BaseException) -> BaseException:
    """Unsupported for a refusal (the frontend's cudnnGraphNotSupportedError is not a RuntimeError), else error."""
    if isinstance(error, Unsupported):
        return error
    if "NotSupported" in type(error).__name__:
        return Unsupported(str(error))
    return error


def guard(make: Callable[[], Any]) -> Any:
    """Runs a case factory; any exception becomes the variant's value (its recorded status)."""
    try:
        return make()
    except Exception as e:  # noqa: BLE001 - one variant's failure must not take the others down
        return as_unsupported(e)


def guard_each(make: Callable[[], dict], names) -> dict:
    """Runs a factory of several cases ({name: case}); when it fails as a whole (no graph, an old
    frontend), each of `names` gets that failure as its status."""
    got = guard(make)
    return got if isinstance(got, dict) else dict.fromkeys(names, got)


# -- declaring --------------------------------------------------------------------------------------------
def torch_dtype(cudnn, dtype):
    import torch
    return {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF,
            torch.float32: cudnn.data_type.FLOAT}[dtype]


def new_graph(ctx, io_type=None, **kw):
    """A pygraph with all three data types set (bf16 I/O unless io_type says, fp32 intermediate and compute)."""
    cudnn = ctx.cudnn
    return cudnn.pygraph(io_data_type=io_type or cudnn.data_type.BFLOAT16,
                         intermediate_data_type=cudnn.data_type.FLOAT,
                         compute_data_type=cudnn.data_type.FLOAT, handle=ctx.handle, **kw)


def tensor_of(ctx, graph, buffer, name: str, **kw):
    """A graph tensor declared with the torch buffer's own shape, strides and dtype."""
    return graph.tensor(name=name, dim=list(buffer.shape), stride=list(buffer.stride()),
                        data_type=torch_dtype(ctx.cudnn, buffer.dtype), **kw)


def as_output(ctx, tensor, buffer):
    """Marks tensor as an output laid out like torch buffer `buffer`."""
    return tensor.set_output(True).set_data_type(torch_dtype(ctx.cudnn, buffer.dtype)).set_dim(list(buffer.shape)) \
        .set_stride(list(buffer.stride()))


def sdpa_inference(ctx, graph, query, key, value, **kw):
    """An inference SDPA node (no softmax stats) in the spelling this frontend takes: generate_stats
    where it has it, else is_inference. Returns the output tensor."""
    kw.setdefault("name", "sdpa")
    if ctx.caps.gen_stats:
        kw["generate_stats"] = False
    else:
        kw["is_inference"] = True
    res = graph.sdpa(q=query, k=key, v=value, **kw)
    return res[0] if isinstance(res, (list, tuple)) else res


def default_modes(cudnn):
    return [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK]


# -- the build steps ----------------------------------------------------------------------------------------
def build_steps(cudnn, graph, modes=None, policy=None, upto: str = "build_plans") -> dict:
    """The build steps up to and including `upto`, timed one by one (ms). A refusal raises Unsupported."""
    modes = modes or default_modes(cudnn)
    policy = policy if policy is not None else cudnn.build_plan_policy.HEURISTICS_CHOICE
    run = {"validate": graph.validate, "build_operation_graph": graph.build_operation_graph,
           "create_execution_plans": lambda: graph.create_execution_plans(modes),
           "check_support": graph.check_support, "build_plans": lambda: graph.build_plans(policy)}
    ms = {}
    for name in STEPS[:STEPS.index(upto) + 1]:
        t0 = time.perf_counter()
        try:
            run[name]()
        except cudnn.cudnnGraphNotSupportedError as e:
            raise Unsupported(f"{name}: {e}") from e
        finally:
            plan_clock.add(time.perf_counter() - t0)
        ms[name] = (time.perf_counter() - t0) * 1e3
    return ms


def selected_index(graph):
    """The plan the walk selected (private `_plan_index` in the 1.27+ IR; None before)."""
    i = getattr(graph, "_plan_index", None)
    return i if isinstance(i, int) else None


def engine_of(graph) -> str:
    """'backend' when the cuDNN backend serves the selected plan, else the python engine's name."""
    try:
        eng = graph.selected_engine
    except AttributeError:   # classic frontend: no python engines
        return "backend"
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__})"
    return "backend" if eng is None else f"python engine {getattr(eng, 'name', eng)}"


def plan_name(graph, index) -> str:
    if index is None:
        return "heuristic choice"
    try:
        return graph.get_plan_name_at_index(index)
    except Exception:  # noqa: BLE001
        return f"plan{index}"


def workspace_for(ctx, nbytes: int):
    return ctx.torch.empty(max(int(nbytes), 1), dtype=ctx.torch.uint8, device=ctx.device)


@dataclass
class Built:
    ctx: Any
    graph: Any
    tensors: tuple                   # graph tensors, in the order `call` binds buffers
    workspace: Any
    build_ms: dict = field(default_factory=dict)
    index: int | None = None         # the plan the heuristics selected, when known
    engine: str = "backend"
    plans: list = field(default_factory=list)   # indices that built (policy ALL builds)
    pinned: int | None = None        # the plan pinned by timing (pin_plan) or a stored winner
    plan_us: dict = field(default_factory=dict)
    pinned_by: str = "graph"         # what pin_plan minimised: "graph" (GPU time) or "eager" (µs/call)

    @property
    def uids(self) -> tuple:
        return tuple(t.get_uid() for t in self.tensors)

    @property
    def plan(self) -> str:
        return plan_name(self.graph, self.index)

    def describe(self) -> str:
        return f"{self.engine}, plan {self.index} '{self.plan}'"

    def call(self, buffers, index: int | None = None) -> Callable[[], None]:
        """A zero-argument executor for these buffers, in the fastest public form this frontend has:
        ordered tensor_uids where it exists, else a prebuilt {uid: buffer} pack. index pins a plan."""
        g, ws, h = self.graph, self.workspace, self.ctx.handle
        bufs = tuple(buffers)
        uids = self.uids
        if len(bufs) != len(uids):
            raise ValueError(f"{len(bufs)} buffers for {len(uids)} uids")
        if self.ctx.caps.ordered:
            if index is None:
                return lambda: g.execute(bufs, ws, handle=h, tensor_uids=uids)
            return lambda: g.execute_plan_at_index(bufs, ws, index, handle=h, tensor_uids=uids)
        pack = dict(zip(uids, bufs))
        if index is None:
            return lambda: g.execute(pack, ws, handle=h)
        return lambda: g.execute_plan_at_index(pack, ws, index, handle=h)

    @staticmethod
    def call_form(ctx) -> str:
        return "execute_plan_at_index(tuple, tensor_uids=...)" if ctx.caps.ordered else "execute_plan_at_index(dict)"


def build_graph(ctx, graph, tensors: list, modes=None, policy=None, rejected_is_unsupported: bool = False,
          what: str = "graph") -> Built:
    """Runs the five timed steps on graph and sizes its workspace (for every plan that built, when
    policy is ALL). tensors: graph tensors in the order buffers will be bound."""
    cudnn = ctx.cudnn
    try:
        ms = build_steps(cudnn, graph, modes=modes, policy=policy)
    except Unsupported as e:
        raise Unsupported(f"{what}: {e}{last_error(cudnn)}") from e
    except (ValueError, RuntimeError) as e:
        if rejected_is_unsupported:
            raise Unsupported(f"{what} rejected: {type(e).__name__}: {e}{last_error(cudnn)}") from e
        raise
    nbytes, plans = graph.get_workspace_size(), []
    if policy is not None and policy == cudnn.build_plan_policy.ALL:
        for i in range(graph.get_execution_plan_count()):
            try:
                nbytes = max(nbytes, graph.get_workspace_size_plan_at_index(i))
                plans.append(i)
            except Exception:  # noqa: BLE001 - a plan that did not build
                continue
    return Built(ctx, graph, tuple(tensors), workspace_for(ctx, nbytes), ms, selected_index(graph), engine_of(graph), plans)
