"""Trap 1: rebuilding the graph per call. Per call: describe the bf16 matmul graph and run the five
build steps (validate, build_operation_graph, create_execution_plans, check_support, build_plans)
then execute, vs a shape-keyed cache hit then execute, vs execute alone. The cache key itself is
timed both ways: the (shape, stride, dtype) tuple of the operands, and `graph.key()`, which needs
the graph described (and, in the IR frontend, lowered) first. Host rows split one build by step."""
from cudnn_hostbench.bench.cudnn_graphs.build import build_steps, guard
from cudnn_hostbench.bench.cudnn_graphs.cache_keys import GraphCache
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.host import host_placeholders, host_record, safe_measure, stats_ratio, time_ms
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

STEPS = ("describe", "validate", "build_operation_graph", "create_execution_plans", "check_support", "build_plans")
CALL_MODES = ("eager", "device")      # per-call builds allocate and compile: never CUDA-graph captured


def _sizes(options):
    return ["256"] + (["4096"] if options.heavy else [])


def build(ctx, size):
    p = Matmul.cube(ctx, size)
    torch, cudnn, h = ctx.torch, ctx.cudnn, ctx.handle
    a, b, c = p.a, p.b, p.c
    built = p.build()
    g0, ws = built.graph, built.workspace
    execute = built.call((a, b, c))

    def prebuilt():
        execute()
        return c

    cache = {GraphCache.key(a, b, c): execute}
    key_of = GraphCache.key

    def cache_hit():
        cache[key_of(a, b, c)]()
        return c

    def rebuild():
        g, (A, B, C) = p.describe()
        build_steps(cudnn, g)
        if g.get_workspace_size() > ws.numel():
            raise RuntimeError("rebuilt plan needs more workspace than the first build's")
        g.execute({A: a, B: b, C: c}, ws, handle=h)
        return c

    a2, b2 = a[0], b[0]
    cases = {
        "torch_mm": p.case(lambda: torch.mm(a2, b2)),
        "prebuilt": p.case(prebuilt, note=f"execute only ({built.describe()})"),
        "cache_hit": p.case(cache_hit, note="GraphCache.key(a, b, c) + dict lookup + execute"),
        "rebuild": p.case(rebuild, note="describe + five steps (HEURISTICS_CHOICE, A + FALLBACK) + execute"),
        "key_tuple": Case(fn=lambda: cache.get(key_of(a, b, c)),
                          note="host only: the (shape, stride, dtype) tuple key + lookup; no kernel, no output"),
    }

    def graph_key():
        if not hasattr(g0, "key"):
            raise Unsupported("needs graph.key()")
        k0 = g0.key()
        k1 = p.describe()[0].key()
        if k1 != k0:
            raise Unsupported(f"graph.key() differs between identical descriptions ({k0!r} vs {k1!r})")
        by_key = {k0: execute}

        def hit():
            g, _ = p.describe()
            by_key[g.key()]()
            return c

        def key_only():
            g, _ = p.describe()
            return by_key.get(g.key())
        return p.case(hit, note="describe + graph.key() + lookup + execute"), \
            Case(fn=key_only, note="host only: describe + graph.key() + lookup; no kernel, no output")
    gk = guard(graph_key)
    cases["graph_key_hit"], cases["key_graph"] = gk if isinstance(gk, tuple) else (gk, gk)
    cases.update(host_placeholders(PROBE))
    return cases


def measure(ctx, size, opt):
    """One build split by step, on fresh graphs: host ms per step, per repeat."""
    p = Matmul.cube(ctx, size)
    cudnn = ctx.cudnn
    reps = 10
    per = {s: [] for s in STEPS}
    total = []
    for _ in range(reps + 1):                      # the first build warms up and is dropped
        (g, _ts), t_desc = time_ms(p.describe)
        ms = build_steps(cudnn, g)
        ms["describe"] = t_desc
        if _ == 0:
            continue
        for s in STEPS:
            per[s].append(ms[s])
        total.append(sum(ms[s] for s in STEPS))
    recs = [host_record(PROBE, size, "build_total", total,
                               note="describe + five steps on a fresh graph (median of the per-step rows may not add up)")]
    for s in STEPS:
        recs.append(host_record(PROBE, size, f"step_{s}", per[s], ratio=stats_ratio(per[s], total),
                                       baseline="build_total", note="share of build_total in ratio"))
    return recs


PROBE = Probe(
    name="rebuild",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm (cuBLAS)", modes=CALL_MODES, kernels=GEMM),
        Variant("prebuilt", "floor", "prebuilt graph: execute only", modes=CALL_MODES, kernels=GEMM),
        Variant("cache_hit", "fixed", "shape-keyed cache hit + execute", modes=CALL_MODES, kernels=GEMM),
        Variant("graph_key_hit", "trap", "describe + graph.key() hit + execute", modes=CALL_MODES, kernels=GEMM),
        Variant("rebuild", "trap", "five-step build + execute, every call", modes=CALL_MODES, kernels=GEMM),
        Variant("key_tuple", "info", "tuple cache key alone (host only)", modes=("eager",)),
        Variant("key_graph", "info", "describe + graph.key() alone (host only)", modes=("eager",)),
        Variant("build_total", "info", "one build, all steps", modes=("host",)),
        *[Variant(f"step_{s}", "info", f"build step: {s}", modes=("host",)) for s in STEPS],
    ],
    build=build,
    sizes=_sizes,
    prepare=prepare,
    extra={"measure": safe_measure(lambda: PROBE, measure),
           "plans": dict.fromkeys(("prebuilt", "cache_hit", "graph_key_hit", "rebuild"), "heuristic"),
           "pairs": [("graph_key_hit", "cache_hit", True), ("rebuild", "cache_hit", True)]},
)


def test_rebuild(hb_run):
    hb_run()
