"""Execute-time shape overrides: one bf16 matmul C[1,M,N] = A[1,M,K] @ B[1,K,N] run at four M values
per call (dynamic batch), two ways. `per_shape` keeps a graph per M, built ahead, and looks each
up per execute by its operands' (shape, stride, dtype) key; `override` has ONE graph, built at the
largest M with is_override_shape_enabled=True, and names each M at execute time
(override_uids / override_shapes / override_strides). Both call `execute(dict of int UIDs)`; one
call is four executes, one per M (µs per op). `override_ws_query` adds the workspace query with
the same overrides to every execute (cuDNN >= 9.23). The notes give what each way spent building.
A shape the override graph cannot run is the row's one-line error naming the shape."""
from cudnn_hostbench.bench.cudnn_graphs import override
from cudnn_hostbench.bench.cudnn_graphs.build import as_output, build_graph, guard, new_graph, tensor_of
from cudnn_hostbench.bench.cudnn_graphs.cache_keys import GraphCache
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.override import UIDS, Dynamic
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

SHAPES = 4      # M values per size label: one call runs each once
GEMMS = (("gemm", SHAPES), ("reduce", (0, SHAPES)))


def _sizes(options):
    sizes = ["m64_128_256_512k1024n1024"]
    if options.heavy:
        sizes.append("m512_1024_2048_4096k4096n4096")
    return sizes


def build(ctx, size):
    dyn = Dynamic.parse(size)
    if len(dyn.ms) != SHAPES:
        raise ValueError(f"override size {size!r}: {len(dyn.ms)} M values, the probe's rows run {SHAPES} per call")
    torch = ctx.torch
    b = ctx.randn(1, dyn.k, dyn.n)
    probs = [Matmul.random(ctx, 1, m, dyn.k, dyn.n, b_view=b) for m in dyn.ms]

    def check(out):
        outs = out if isinstance(out, list) else [p.c for p in probs]
        return max(rel_err(o, p.ref) for o, p in zip(outs, probs))

    def poison():
        for p in probs:
            p.poison()
    mm = torch.mm
    pairs = [(p.a[0], b[0]) for p in probs]
    cases = {"torch_mm": Case(lambda: [mm(x, y) for x, y in pairs], check, poison, note=f"M in {list(dyn.ms)}")}
    cases["per_shape"] = guard(lambda: _per_shape(ctx, probs, check, poison))
    got = guard(lambda: _override_graph(ctx, dyn, probs))
    if isinstance(got, Exception):
        cases["override"] = cases["override_ws_query"] = got
        return cases
    cases["override"] = guard(lambda: _override_case(ctx, dyn, probs, got, check, poison, query=False))
    cases["override_ws_query"] = guard(lambda: _override_case(ctx, dyn, probs, got, check, poison, query=True))
    return cases


def _per_shape(ctx, probs, check, poison) -> Case:
    """A graph per M, looked up per execute by the operands' (shape, stride, dtype) key."""
    h, key = ctx.handle, GraphCache.key
    table, ms, plans = {}, 0.0, []
    for p in probs:
        built = p.build(pinning=True, what=f"matmul graph at M={p.a.shape[1]}")
        ms += sum(built.build_ms.values())
        plans.append(f"M={p.a.shape[1]}: {built.index} '{built.plan}'")
        table[key(p.a, p.b, p.c)] = (built.graph, dict(zip(UIDS, p.buffers())), built.workspace)
    bufs = [p.buffers() for p in probs]

    def call():
        for a, b, c in bufs:
            g, pack, ws = table[key(a, b, c)]
            g.execute(pack, ws, handle=h)
    return Case(call, check, poison, note=f"{len(probs)} graphs built in {ms:.1f} ms (five steps); plans "
                                          + "; ".join(plans))


def _override_graph(ctx, dyn: Dynamic, probs):
    """The one graph, built at the largest M, and the workspace every M needs."""
    override.require(ctx)
    big = max(probs, key=lambda p: p.a.shape[1])
    g = new_graph(ctx, is_override_shape_enabled=True)
    A, B = tensor_of(ctx, g, big.a, "A"), tensor_of(ctx, g, big.b, "B")
    C = g.matmul(A=A, B=B, compute_data_type=ctx.cudnn.data_type.FLOAT, name="mm")
    as_output(ctx, C, big.c)
    for t, uid in zip((A, B, C), UIDS):
        t.set_uid(uid)
    built = build_graph(ctx, g, [A, B, C], rejected_is_unsupported=True, what="override matmul graph")
    need = [g.get_workspace_size()]
    if ctx.caps.backend >= override.NEEDS_BACKEND_WS_QUERY:
        h = ctx.handle
        need += [g.get_workspace_size(h, list(UIDS), dyn.shapes(m), dyn.strides(m, big.b.stride())) for m in dyn.ms]
    built.workspace = ctx.torch.empty(max(max(need), 1), dtype=ctx.torch.uint8, device=ctx.device)
    return built


def _reached(ctx, dyn, built, declared, p, args) -> None:
    """Runs one override execute at p's M; raises Unreachable (one line, naming the shape) if it
    cannot run it or runs it wrong."""
    uids, shapes, strides = args
    why = override.reach_problem(declared, shapes)
    if why is None:
        torch = ctx.torch
        try:
            with torch.cuda.stream(ctx.stream):
                p.poison()
                built.graph.execute(dict(zip(UIDS, p.buffers())), built.workspace, handle=ctx.handle,
                                    override_uids=uids, override_shapes=shapes, override_strides=strides)
            ctx.sync()
        except Exception as e:  # noqa: BLE001 - the backend's refusal is this row's one-line status
            why = override.one_line(e)
        else:
            err = rel_err(p.c, p.ref)
            why = None if err <= 2e-2 else f"it ran, but wrong: rel_err={err:.3g} against torch"
    if why is not None:
        raise override.unreachable(shapes, dyn.m_max, why)


def _override_case(ctx, dyn, probs, built, check, poison, query: bool) -> Case:
    g, ws, h = built.graph, built.workspace, ctx.handle
    if query and ctx.caps.backend < override.NEEDS_BACKEND_WS_QUERY:
        raise Unsupported(f"the workspace query with overrides needs cuDNN >= 9.23.0 (the frontend: 'Runtime "
                          f"workspace query with override shapes requires cuDNN v9.23.0'); this backend is "
                          f"{ctx.caps.backend}")
    big = max(probs, key=lambda p: p.a.shape[1])
    declared = [list(t.shape) for t in big.buffers()]
    work = []
    for p in probs:
        m = p.a.shape[1]
        args = (list(UIDS), dyn.shapes(m), dyn.strides(m, p.b.stride()))
        if not query:
            _reached(ctx, dyn, built, declared, p, args)
        work.append((dict(zip(UIDS, p.buffers())), args))

    if query:
        def call():
            for pack, (u, s, st) in work:
                g.get_workspace_size(h, u, s, st)
                g.execute(pack, ws, handle=h, override_uids=u, override_shapes=s, override_strides=st)
    else:
        def call():
            for pack, (u, s, st) in work:
                g.execute(pack, ws, handle=h, override_uids=u, override_shapes=s, override_strides=st)
    ms = sum(built.build_ms.values())
    return Case(call, check, poison, plan=f"{built.index}:{built.plan}",
                note=f"1 graph built at M={dyn.m_max} in {ms:.1f} ms (five steps); plan {built.index} "
                     f"'{built.plan}'; {'workspace query + ' if query else ''}execute with overrides per M")


PROBE = Probe(
    name="override",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm per M", ops_per_call=SHAPES, kernels=GEMMS),
        Variant("per_shape", "fixed", "a graph per M, looked up by shape key per execute", ops_per_call=SHAPES,
                kernels=GEMMS),
        Variant("override", "trap", "one graph, execute-time shape overrides per M", ops_per_call=SHAPES,
                kernels=GEMMS),
        Variant("override_ws_query", "info", "one graph, workspace query + execute with overrides per M",
                ops_per_call=SHAPES, kernels=GEMMS),
    ],
    build=build,
    sizes=_sizes,
    prepare=prepare,
    extra={"plans": {"per_shape": "heuristic per M", "override": "heuristic at the largest M",
                     "override_ws_query": "heuristic at the largest M"},
           "pairs": [("override", "per_shape", False,
                      "one graph for every M runs the plan picked at the largest M; a graph per M runs each "
                      "M's own pick")]},
)


def test_override(hb_run):
    hb_run()
