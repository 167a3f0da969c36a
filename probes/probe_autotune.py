"""Autotuning: every plan the heuristics offer (modes A, B and FALLBACK), built one index at a time,
checked, and timed with execute_plan_at_index by graph replay and eagerly, for the 256^3 and
4096^3 bf16 matmuls and the tutorial's conv-bias-ReLU. Rows: the heuristic's pick (baseline), the
best and the worst plan in all three modes, so their ratios are the heuristic-vs-best gain and the
spread, and the winner by eager µs/call beside the one by GPU time (the note says when they
differ); host rows: the whole sweep, the startup cost of reusing the persisted winner (read from the
winners file, build that one plan) and of a plain heuristic build. A winner per mode is persisted per
(GPU, cuDNN backend, frontend, problem) in results/autotune_winners.json ($HOSTBENCH_WINNERS)."""
from cudnn_hostbench.bench.cudnn_graphs import autotune
from cudnn_hostbench.bench.cudnn_graphs.build import Built, build_steps, plan_name
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.host import host_placeholders, host_record, safe_measure, time_ms
from cudnn_hostbench.bench.cudnn_graphs.load import last_error
from cudnn_hostbench.bench.cudnn_graphs.problems import ConvProblem, ConvShape, Matmul, require_conv
from cudnn_hostbench.bench.cudnn_graphs.winners import WinnerStore, default_path, env_of
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

ONE_PLAN = (("any", 1),)  # one plan runs one kernel: the GEMM or the fused conv
EAGER_SUFFIX = "|by=eager"   # the eager-mode winner's key: the problem key + this
MODES = "A+B+FALLBACK"  # part of every winner key: plan indices belong to the list these modes made


def _sizes(options):
    sizes = ["256", "4096", "n32c128hw56k256"]
    if options.heavy:
        sizes += ["1024", "n8c64hw56k64"]
    return sizes


def _limits(ctx, is_conv: bool):
    if ctx.options.heavy:
        return None, 900.0
    return (5, 30.0) if is_conv else (12, 20.0)


def _problem(ctx, size):
    """(problem, its winners-file key, its torch call)."""
    if size.startswith("n"):
        require_conv(ctx)
        p = ConvProblem(ctx, ConvShape.parse(size))
        return p, p.problem(modes=MODES), p.torch_unfused()
    p = Matmul.cube(ctx, size)
    return p, p.problem(modes=MODES), p.torch_mm_call()


def _plan(ctx, graph):
    cudnn = ctx.cudnn
    modes = [cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK]
    try:
        build_steps(cudnn, graph, modes=modes, upto="check_support")
    except Unsupported as e:
        raise Unsupported(f"planning: {e}{last_error(cudnn)}") from e


def _state(ctx, size) -> dict:
    """What build() found for this size on this context, for the host rows."""
    return ctx.attached((PROBE.name, size), dict)


def build(ctx, size):
    prob, key, torch_call = _problem(ctx, size)
    is_conv = isinstance(prob, ConvProblem)
    store = WinnerStore(default_path(ctx.options.root))
    env = env_of(ctx)
    g, ts = prob.graph()
    _, plan_ms = time_ms(lambda: _plan(ctx, g))
    prior = store.lookup(env, key, g.get_execution_plan_count(), lambda i: plan_name(g, i))
    max_plans, box = _limits(ctx, is_conv)

    def run_at(i, ws):
        return Built(ctx, g, tuple(ts), ws).call(prob.buffers(), index=i)
    sw = autotune.sweep(ctx, g, run_at, prob.check, prob.poison, max_plans=max_plans, time_box_s=box)
    sw.wall_ms += plan_ms
    best, worst, heur, best_e = sw.best, sw.worst, sw.heuristic, sw.best_eager
    if best is None:
        raise Unsupported(f"no plan built and ran: {sw.listing()}")
    prior_note = ("no stored winner before this run" if prior is None else
                  f"stored winner before this run: plan {prior.plan_index} "
                  f"'{prior.plan_name}' {prior.us:.2f} us ({'confirmed' if prior.plan_index == best.index else 'changed'})")
    # one winner per mode: GPU time under the problem's own key (what pinning by events always
    # kept), eager µs/call under key + EAGER_SUFFIX; each entry's extra says which it is
    try:
        store.record(env, key, best.index, best.name, best.graph_us, {**sw.to_extra(), "by": "graph"}, save=False)
        if best_e is not None:
            store.record(env, key + EAGER_SUFFIX, best_e.index, best_e.name, best_e.eager_us,
                         {**sw.to_extra(), "by": "eager"}, save=False)
        store.save()
        saved = f"winners (by GPU time, by eager us/call) saved to {store.path}"
    except OSError as e:
        saved = f"winners NOT saved ({e})"
    _state(ctx, size).update(prob=prob, key=key, sweep=sw, env=env, note=f"{prior_note}; {saved}",
                             store_path=store.path)
    built = Built(ctx, g, tuple(ts), sw.workspace)

    def case(p, what):
        fn = built.call(prob.buffers(), index=p.index)
        return Case(lambda: fn() or prob.buffers()[-1], prob.check, prob.poison,
                    note=f"{what}: plan {p.index}{p.mode} '{p.name}', workspace {p.workspace} B, "
                         f"{p.graph_us:.2f} us by replay in the sweep; {sw.summary()}")
    return {
        "torch": Case(torch_call, prob.check, prob.poison, note="torch.mm" if not is_conv else "F.conv2d + bias + ReLU"),
        "heuristic": case(heur, "heuristic's pick (first plan in rank order that runs)"),
        "best": case(best, "fastest plan by GPU time (graph replay)"),
        "best_eager": case(best_e or best, "fastest plan by eager us/call (host + GPU)"
                           + (f"; {sw.winners_differ()}" if sw.winners_differ() else "; same plan as by GPU time")),
        "worst": case(worst, "slowest plan by graph replay"),
        **host_placeholders(PROBE),
    }


def measure(ctx, size, opt):
    st = _state(ctx, size)
    if not st:
        build(ctx, size)
    prob, key, sw, env = st["prob"], st["key"], st["sweep"], st["env"]
    reps = (2 if isinstance(prob, ConvProblem) else 5) * (2 if ctx.options.heavy else 1)
    recs = [host_record(PROBE, size, "tune_sweep", [sw.wall_ms],
                        note=f"plan + build + check + time {len(sw.plans)} plan(s): {sw.summary()}; "
                             f"{st['note']}; plans: {sw.listing()}")]

    def reuse():
        store = WinnerStore(st["store_path"])          # what the next run does: read the file
        g, ts = prob.graph()
        _plan(ctx, g)
        w = store.lookup(env, key, g.get_execution_plan_count(), lambda i: plan_name(g, i))
        if w is None:
            raise RuntimeError("the winner just saved was not found or refused")
        g.build_plan_at_index(w.plan_index)
        return w
    ms, w = [], None
    for _ in range(reps):
        w, t = time_ms(reuse)
        ms.append(t)
    recs.append(host_record(PROBE, size, "tune_reuse", ms,
                            note=f"winners file -> plan {w.plan_index} '{w.plan_name}' built alone, no sweep"))

    def heuristic_build():
        g, ts = prob.graph()
        build_steps(ctx.cudnn, g)
    ms2 = [time_ms(heuristic_build)[1] for _ in range(reps)]
    recs.append(host_record(PROBE, size, "build_heuristic", ms2,
                            note="fresh graph, five steps, HEURISTICS_CHOICE over modes A + FALLBACK"))
    return recs


PROBE = Probe(
    name="autotune",
    doc=__doc__,
    variants=[
        # matmul sizes: one GEMM; the conv size: conv + bias add + ReLU
        Variant("torch", "info", "torch reference op", kernels=(("any", (1, 3)),)),
        Variant("heuristic", "baseline", "heuristic's pick (plan index order)", kernels=ONE_PLAN),
        Variant("best", "fixed", "autotuned winner by GPU time", kernels=ONE_PLAN),
        Variant("best_eager", "fixed", "autotuned winner by eager us/call", kernels=ONE_PLAN),
        Variant("worst", "trap", "slowest plan that runs", kernels=ONE_PLAN),
        Variant("tune_sweep", "trap", "build + time every plan (startup)", modes=("host",)),
        Variant("tune_reuse", "fixed", "load persisted winner, build that plan", modes=("host",)),
        Variant("build_heuristic", "info", "plain heuristic build", modes=("host",)),
    ],
    build=build,
    sizes=_sizes,
    baseline="heuristic",
    prepare=prepare,
    extra={"measure": safe_measure(lambda: PROBE, measure),
           "plans": {"heuristic": "heuristic", "best": "autotuned", "best_eager": "autotuned by eager", "worst": "slowest"},
           "pairs": [("worst", "best", False, "the engine is what this probe measures")]},
)


def test_autotune(hb_run):
    hb_run()
