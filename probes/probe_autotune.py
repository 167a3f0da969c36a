"""Autotuning: every plan the heuristics offer (modes A, B and FALLBACK), built one index at a time,
checked, and timed with execute_plan_at_index by graph replay and eagerly, for the 256^3 and
4096^3 bf16 matmuls and the tutorial's conv-bias-ReLU. Rows: the heuristic's pick (baseline), the
best and the worst plan in all three modes, so their ratios are the heuristic-vs-best gain and the
spread; host rows: the whole sweep, the startup cost of reusing the persisted winner (read from the
winners file, build that one plan) and of a plain heuristic build. The winner is persisted per
(GPU, cuDNN backend, frontend, problem) in results/autotune_winners.json ($HOSTBENCH_WINNERS)."""
from bench.cudnn_graphs import autotune
from bench.cudnn_graphs import graphs
from bench.cudnn_graphs import support as cs
from bench.cudnn_graphs.cache_keys import problem_key
from bench.cudnn_graphs.conv import ConvProblem, ConvShape, require_conv
from bench.measure.probe import Probe, Variant
from bench.cudnn_graphs.winners import WinnerStore, env_of

_STATE: dict = {}      # (id(ctx), size) -> what build() found, for the host rows
MODES = "A+B+FALLBACK"  # part of every winner key: plan indices belong to the list these modes made


def _sizes(config):
    _HEAVY[0] = graphs.heavy(config)
    sizes = ["256", "4096", "n32c128hw56k256"]
    if _HEAVY[0]:
        sizes += ["1024", "n8c64hw56k64"]
    return sizes


_HEAVY = [False]


def _limits(is_conv: bool):
    if _HEAVY[0]:
        return None, 900.0
    return (5, 30.0) if is_conv else (12, 20.0)


class _Matmul:
    def __init__(self, ctx, size):
        torch = ctx.torch
        m = n = k = int(size)
        self.ctx = ctx
        self.a = ctx.randn(1, m, k, scale=k ** -0.5)
        self.b = ctx.randn(1, k, n)
        self.c = torch.empty(1, m, n, dtype=torch.bfloat16, device=ctx.device)
        self.ref = torch.matmul(self.a.float(), self.b.float())
        self.problem = problem_key("matmul", self.a, self.b, self.c, modes=MODES)

    def graph(self):
        ctx = self.ctx
        g = graphs.new_graph(ctx)
        A, B = graphs.tensor_of(ctx, g, self.a, "A"), graphs.tensor_of(ctx, g, self.b, "B")
        C = g.matmul(A=A, B=B, compute_data_type=ctx.cudnn.data_type.FLOAT, name="mm")
        graphs.as_output(ctx, C, self.c)
        return g, [A, B, C]

    def buffers(self):
        return (self.a, self.b, self.c)

    def check(self, out):
        return graphs.rel_err(out if isinstance(out, self.ctx.torch.Tensor) else self.c, self.ref)

    def poison(self):
        self.c.fill_(float("nan"))

    def torch_call(self):
        mm, a2, b2 = self.ctx.torch.mm, self.a[0], self.b[0]
        return lambda: mm(a2, b2)


class _Conv:
    def __init__(self, ctx, size):
        require_conv(ctx)
        self.p = ConvProblem(ctx, ConvShape.parse(size))
        self.problem = self.p.problem(modes=MODES)

    def graph(self):
        return self.p.graph()

    def buffers(self):
        return self.p.buffers()

    def check(self, out):
        return self.p.check(out)

    def poison(self):
        self.p.poison()

    def torch_call(self):
        return self.p.torch_unfused()


def _problem(ctx, size):
    return _Conv(ctx, size) if size.startswith("n") else _Matmul(ctx, size)


def _plan(ctx, g):
    cudnn = ctx.cudnn
    modes = [cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK]
    try:
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans(modes)
        g.check_support()
    except Exception as e:  # noqa: BLE001
        if graphs.is_not_supported(e):
            raise cs.Unsupported(f"planning: {e}{graphs.last_error(cudnn)}") from e
        raise


def build(ctx, size):
    prob = _problem(ctx, size)
    is_conv = isinstance(prob, _Conv)
    store = WinnerStore()
    env = env_of(ctx)
    g, ts = prob.graph()
    _, plan_ms = graphs.time_ms(lambda: _plan(ctx, g))
    uids = tuple(t.get_uid() for t in ts)
    prior = store.lookup(env, prob.problem, g.get_execution_plan_count(), lambda i: graphs.plan_name(g, i))
    max_plans, box = _limits(is_conv)

    def run_at(i, ws):
        return graphs.Built(ctx, g, uids, ws).call(prob.buffers(), index=i)
    sw = autotune.sweep(ctx, g, run_at, prob.check, prob.poison, max_plans=max_plans, time_box_s=box)
    sw.wall_ms += plan_ms
    best, worst, heur = sw.best, sw.worst, sw.heuristic
    if best is None:
        raise cs.Unsupported(f"no plan built and ran: {sw.listing()}")
    prior_note = ("no stored winner before this run" if prior is None else
                  f"stored winner before this run: plan {prior.plan_index} "
                  f"'{prior.plan_name}' {prior.us:.2f} us ({'confirmed' if prior.plan_index == best.index else 'changed'})")
    try:
        store.record(env, prob.problem, best.index, best.name, best.graph_us, sw.to_extra())
        saved = f"winner saved to {store.path}"
    except OSError as e:
        saved = f"winner NOT saved ({e})"
    _STATE[(id(ctx), size)] = {"prob": prob, "sweep": sw, "env": env, "note": f"{prior_note}; {saved}",
                               "store_path": store.path}
    built = graphs.Built(ctx, g, uids, sw.workspace)

    def case(p, what):
        fn = built.call(prob.buffers(), index=p.index)
        return graphs.checked_case(lambda: fn() or prob.buffers()[-1], prob.check, prob.poison,
                                   note=f"{what}: plan {p.index}{p.mode} '{p.name}', workspace {p.workspace} B, "
                                        f"{p.graph_us:.2f} us by replay in the sweep; {sw.summary()}")
    return {
        "torch": graphs.checked_case(prob.torch_call(), prob.check, prob.poison,
                                     note="torch.mm" if not is_conv else "F.conv2d + bias + ReLU"),
        "heuristic": case(heur, "heuristic's pick (first plan in rank order that runs)"),
        "best": case(best, "fastest plan by graph replay"),
        "worst": case(worst, "slowest plan by graph replay"),
        **graphs.host_placeholders(PROBE),
    }


def measure(ctx, size, opt):
    key = (id(ctx), size)
    if key not in _STATE:
        build(ctx, size)
    st = _STATE[key]
    prob, sw, env = st["prob"], st["sweep"], st["env"]
    reps = (2 if isinstance(prob, _Conv) else 5) * (2 if _HEAVY[0] else 1)
    recs = [graphs.host_record(PROBE, size, "tune_sweep", [sw.wall_ms],
                               note=f"plan + build + check + time {len(sw.plans)} plan(s): {sw.summary()}; "
                                    f"{st['note']}; plans: {sw.listing()}")]

    def reuse():
        store = WinnerStore(st["store_path"])          # what the next run does: read the file
        g, ts = prob.graph()
        _plan(ctx, g)
        w = store.lookup(env, prob.problem, g.get_execution_plan_count(), lambda i: graphs.plan_name(g, i))
        if w is None:
            raise RuntimeError("the winner just saved was not found or refused")
        g.build_plan_at_index(w.plan_index)
        return w
    ms, w = [], None
    for _ in range(reps):
        w, t = graphs.time_ms(reuse)
        ms.append(t)
    recs.append(graphs.host_record(PROBE, size, "tune_reuse", ms,
                                   note=f"winners file -> plan {w.plan_index} '{w.plan_name}' built alone, no sweep"))

    def heuristic_build():
        g, ts = prob.graph()
        graphs.five_steps(ctx.cudnn, g)
    ms2 = [graphs.time_ms(heuristic_build)[1] for _ in range(reps)]
    recs.append(graphs.host_record(PROBE, size, "build_heuristic", ms2,
                                   note="fresh graph, five steps, HEURISTICS_CHOICE over modes A + FALLBACK"))
    return recs


PROBE = Probe(
    name="autotune",
    doc=__doc__,
    variants=[
        Variant("torch", "info", "torch reference op"),
        Variant("heuristic", "baseline", "heuristic's pick (plan index order)"),
        Variant("best", "fixed", "autotuned winner"),
        Variant("worst", "trap", "slowest plan that runs"),
        Variant("tune_sweep", "trap", "build + time every plan (startup)", modes=("host",)),
        Variant("tune_reuse", "fixed", "load persisted winner, build that plan", modes=("host",)),
        Variant("build_heuristic", "info", "plain heuristic build", modes=("host",)),
    ],
    build=build,
    sizes=_sizes,
    baseline="heuristic",
    extra={"measure": graphs.safe_measure(lambda: PROBE, measure)},
)


def test_autotune(hb_run):
    hb_run()
