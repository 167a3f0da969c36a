"""The frontend's native CUDA-graph API (`populate_cuda_graph` / `update_cuda_graph`) against torch
stream capture of `execute`, on one bf16 matmul plan (the heuristic's pick among the plans with
behaviour note SUPPORTS_CUDA_GRAPH_NATIVE_API; every cuDNN row runs it).

Pointers fixed between replays: `native_launch` (populated once, one cudaGraphLaunch per call)
against `native_update_same` (update_cuda_graph + cudaGraphExecUpdate every call with unchanged
pointers: an integration that updates every step) and `torch_replay` (execute captured once with
torch.cuda.graph). Pointers changing every call (two buffer sets, alternating): `native_update`
(update + exec update + launch) against `torch_recapture` (a new torch capture of execute per
call) and `torch_copy_in` (the torch idiom: copy the inputs into the captured static buffers,
replay, copy the output out). Graph rows run in eager and device mode: a graph launched inside
another capture is not what they measure."""
from cudnn_hostbench.bench.cudnn_graphs import calls, cudart
from cudnn_hostbench.bench.cudnn_graphs.build import (
    Built,
    build_steps,
    engine_of,
    guard,
    guard_each,
    selected_index,
    workspace_for,
)
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes, mnk
from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

GRAPH_ROWS = ("torch_replay", "native_launch", "native_update_same", "torch_recapture", "torch_copy_in",
              "native_update")
# same-dtype contiguous copies are cudaMemcpyAsync (no kernel) in torch today; a copy kernel is allowed
COPY_IN = (*GEMM, ("copy", (0, 3)))
# a capture per call also runs torch's elementwise kernels around the plan (two on an H100, log
# 2026-12-06-0236); the plan check compares the plan's kernels alone (runner.AROUND)
RECAPTURE = (*GEMM, ("pointwise", (0, 3)))


def build_native_pick(mm: Matmul) -> Built:
    """The matmul built to the first plan that supports the native CUDA-graph API (the note filter
    goes on after planning: classic frontends filter only the plans that exist)."""
    ctx = mm.ctx
    cudnn = ctx.cudnn
    note = getattr(getattr(cudnn, "behavior_note", None), "SUPPORTS_CUDA_GRAPH_NATIVE_API", None)
    if note is None:
        raise Unsupported("needs cudnn.behavior_note.SUPPORTS_CUDA_GRAPH_NATIVE_API")
    if 0 < ctx.caps.backend < 90500:
        raise Unsupported(f"cuDNN {ctx.caps.backend} has no SUPPORTS_CUDA_GRAPH_NATIVE_API note (needs >= 9.5)")
    g, ts = mm.describe(fixed_uids=True)
    build_steps(cudnn, g, upto="create_execution_plans")
    g.select_behavior_notes([note])
    try:
        g.check_support()
        g.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)
    except cudnn.cudnnGraphNotSupportedError as e:
        raise Unsupported(f"no plan of this matmul supports the native CUDA-graph API: {e}") from e
    b = Built(ctx, g, tuple(ts), workspace_for(ctx, g.get_workspace_size()), {}, selected_index(g), engine_of(g))
    b.plans = [b.index] if b.index is not None else []
    b.pinned, b.pinned_by = b.index, "heuristic"
    mm.built, mm.vp = b, dict(zip(ts, mm.buffers()))
    return b


def _alternating(outs, refs, poisons):
    """check and poison for a row whose calls alternate between two buffer sets: the check
    compares the returned output with its own set's reference."""
    def check(out):
        return rel_err(out, refs[0] if out is outs[0] else refs[1])

    def poison():
        for p in poisons:
            p()
    return check, poison


def build(ctx, size):
    m, n, k = mnk(size)
    torch, cudnn = ctx.torch, ctx.cudnn
    mm = Matmul.random(ctx, 1, m, k, n)
    cases = {"torch_mm": mm.case(mm.torch_mm_call())}

    def cudnn_cases():
        if not calls.has_native_cuda_graph(cudnn):
            raise calls.needs("populate_cuda_graph")
        b = build_native_pick(mm)
        other = Matmul.random(ctx, 1, m, k, n)       # the second buffer set (same shapes, new pointers)
        sets = (mm, other)
        execs = [b.call(p.buffers()) for p in sets]
        with torch.cuda.stream(ctx.stream):          # first executes outside any capture
            for e in execs:
                e()
        ctx.sync()
        plan = mm.plan_label()
        note = f"the native-API pick: plan {plan or b.index}"
        out = {"execute": mm.case(lambda: execs[0]() or mm.c, note=note, plan=plan)}
        out.update(_torch_rows(ctx, mm, sets, execs, note, plan))
        out.update(guard_each(lambda: _native_rows(ctx, b, sets, note, plan),
                              ("native_launch", "native_update_same", "native_update")))
        return out
    cases.update(guard_each(cudnn_cases, ("execute", *GRAPH_ROWS)))
    return cases


def _torch_rows(ctx, mm, sets, execs, note, plan) -> dict:
    torch = ctx.torch
    outs = tuple(p.c for p in sets)
    check2, poison2 = _alternating(outs, tuple(p.ref for p in sets), tuple(p.poison for p in sets))
    out = {}

    def replay_once():
        cap = timing.capture(execs[0], 1, ctx.stream)
        return mm.case(lambda: cap.graph.replay() or mm.c, note=note + "; captured once (torch.cuda.graph)",
                       plan=plan)
    out["torch_replay"] = guard(replay_once)

    flip, graphs = [1], [None, None]

    def recapture():
        i = flip[0] = 1 - flip[0]
        cg = torch.cuda.CUDAGraph()
        cg.capture_begin()            # on the current stream: the harness stream, the handle's stream
        try:
            execs[i]()
        finally:
            cg.capture_end()
        graphs[i] = cg                # keeps this set's graph alive until its next capture
        cg.replay()
        return outs[i]
    out["torch_recapture"] = Case(recapture, check2, poison2, plan=plan,
                                   note=note + "; CUDAGraph.capture_begin/end of execute per call, then replay")

    def copy_in():
        static = Matmul.random(ctx, 1, *mm.a.shape[1:], mm.b.shape[2])
        cap = timing.capture(mm.built.call(static.buffers()), 1, ctx.stream)
        a_s, b_s, c_s, sel = static.a, static.b, static.c, [1]

        def call():
            i = sel[0] = 1 - sel[0]
            src = sets[i]
            a_s.copy_(src.a)
            b_s.copy_(src.b)
            cap.graph.replay()
            src.c.copy_(c_s)
            return src.c
        return Case(call, check2, poison2, plan=plan,
                    note=note + "; inputs copied into the captured static buffers, replay, output copied out")
    out["torch_copy_in"] = guard(copy_in)
    return out


def _native_rows(ctx, built, sets, note, plan) -> dict:
    """populate_cuda_graph into a graph of our own, instantiate, launch; update_cuda_graph for new pointers."""
    lib = cudart.runtime()
    g, h = built.graph, ctx.handle
    uids, ws = built.uids, built.workspace.data_ptr()
    packs = [dict(zip(uids, (t.data_ptr() for t in p.buffers()))) for p in sets]

    def populated() -> cudart.NativeGraph:
        ng = cudart.NativeGraph(lib, ctx.stream_ptr)
        g.populate_cuda_graph(h, packs[0], ws, ng.graph_ptr)
        ng.instantiate()
        return ng

    fixed, same, moving = populated(), populated(), populated()
    mm, other = sets
    outs = (mm.c, other.c)
    check2, poison2 = _alternating(outs, (mm.ref, other.ref), (mm.poison, other.poison))

    def launch():
        fixed.launch()
        return mm.c

    def update_same():
        g.update_cuda_graph(h, packs[0], ws, same.graph_ptr)
        same.apply_update()
        same.launch()
        return mm.c

    flip = [1]

    def update():
        i = flip[0] = 1 - flip[0]
        g.update_cuda_graph(h, packs[i], ws, moving.graph_ptr)
        moving.apply_update()
        moving.launch()
        return outs[i]
    via = "populate_cuda_graph once, cudaGraphLaunch (ctypes) per call"
    return {"native_launch": mm.case(launch, note=f"{note}; {via}", plan=plan),
            "native_update_same": mm.case(update_same, plan=plan,
                                          note=f"{note}; update_cuda_graph + cudaGraphExecUpdate + launch, same pointers"),
            "native_update": Case(update, check2, poison2, plan=plan,
                                  note=f"{note}; update_cuda_graph + cudaGraphExecUpdate + launch, pointers alternate")}


GRAPHED = ("eager", "device")
PROBE = Probe(
    name="cuda_graph_api",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", kernels=GEMM),
        Variant("execute", "info", "eager execute, no graph", kernels=GEMM),
        Variant("torch_replay", "info", "execute captured once (torch.cuda.graph), replayed", modes=GRAPHED,
                kernels=GEMM),
        Variant("native_launch", "fixed", "populate_cuda_graph once, cudaGraphLaunch per call", modes=GRAPHED,
                kernels=GEMM),
        Variant("native_update_same", "trap", "update_cuda_graph + exec update every call, same pointers",
                modes=GRAPHED, kernels=GEMM),
        Variant("torch_recapture", "trap", "pointers change: new torch capture of execute per call",
                modes=GRAPHED, kernels=RECAPTURE),
        Variant("torch_copy_in", "fixed", "pointers change: copy into static buffers, replay, copy out",
                modes=GRAPHED, kernels=COPY_IN),
        Variant("native_update", "fixed", "pointers change: update_cuda_graph + exec update + launch",
                modes=GRAPHED, kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    # one graph, one plan (the native-API pick) under every cuDNN row
    extra={"plans": dict.fromkeys(("execute", *GRAPH_ROWS), "heuristic"),
           "pairs": [("native_update_same", "native_launch", True), ("torch_recapture", "native_update", True),
                     ("torch_recapture", "torch_copy_in", True)]},
)


def test_cuda_graph_api(hb_run):
    hb_run()
