"""The CUDA-graph ceiling: a GEMM-heavy layer step (Llama-like, hidden 4096, MLP 11008, bf16,
nn.Linear weights): Q, K, V projections, O projection (V stands in for attention), gate and up
projections, SiLU * up in torch, down projection: 7 GEMMs + 2 pointwise kernels per step. Run as
torch only, through a naive cuDNN wrapper (per GEMM: stream query + set_stream, new pack dict,
torch.empty output, generic execute), through a fixed one (stream set once, prebuilt packs and
outputs, pinned plans, ordered execute), and as the fixed step captured once in one CUDA graph and
replayed. One call = one step, so µs/call is µs per step."""
from cudnn_hostbench.bench.cudnn_graphs.build import Built, guard, guard_each, plan_name
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, nan_fill, parse_dims
from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err

STEP = (("gemm", 7), ("reduce", (0, 7)), ("pointwise", 2))   # 7 GEMMs (split-K adds a reduce) + SiLU, mul


def _sizes(options):
    sizes = ["t256h4096i11008"]
    if options.heavy:
        sizes += ["t32h4096i11008", "t2048h4096i11008"]
    return sizes


class _Gemm:
    """One cuDNN matmul graph for an (activation, weight view) shape; reused by every GEMM of that shape."""

    def __init__(self, ctx, a, w_view, out):
        self.ctx = ctx
        mm = Matmul(ctx, a, w_view, out)
        # the heuristic's pick, the plan generic execute runs: the same plan on every GPU of one
        # model, so naive and fixed differ only by the call path (a timing race would not be)
        self.index = mm.pin_heuristic()
        self.b = mm.built
        self.name = plan_name(self.b.graph, self.index)

    def fixed(self, a, w_view, out):
        return self.b.call((a, w_view, out), index=self.index)

    def naive(self, a, w_view, shape):
        """What a first integration writes: everything per call."""
        torch, cudnn, h = self.ctx.torch, self.ctx.cudnn, self.ctx.handle
        g, ws = self.b.graph, self.b.workspace
        tA, tB, tC = self.b.tensors

        def run():
            cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)
            out = torch.empty(shape, dtype=a.dtype, device=a.device)
            g.execute({tA: a, tB: w_view, tC: out}, ws, handle=h)
            return out
        return run


def build(ctx, size):
    torch = ctx.torch
    F = torch.nn.functional
    d = parse_dims(size)
    t, hd, inter = d["t"], d["h"], d["i"]
    x = ctx.randn(1, t, hd, scale=1.0)

    def linear(out_f, in_f):                                   # nn.Linear layout [out, in]
        return ctx.randn(out_f, in_f, scale=in_f ** -0.5)
    wq, wk, wv, wo = (linear(hd, hd) for _ in range(4))
    wg, wu, wd = linear(inter, hd), linear(inter, hd), linear(hd, inter)
    view = {n: w.t().unsqueeze(0) for n, w in (("q", wq), ("k", wk), ("v", wv), ("o", wo),
                                                ("g", wg), ("u", wu), ("d", wd))}
    bf = dict(dtype=torch.bfloat16, device=ctx.device)
    q, k, v, o = (torch.empty(1, t, hd, **bf) for _ in range(4))
    gt, up, hh = (torch.empty(1, t, inter, **bf) for _ in range(3))
    y = torch.empty(1, t, hd, **bf)

    # reference: the same chain in fp32 with the step's bf16 rounding points
    def r(z):
        return z.to(torch.bfloat16).float()
    xf = x.float()
    vf = r(xf @ wv.float().t())
    of = r(vf @ wo.float().t())
    hf = r(F.silu(r(of @ wg.float().t())) * r(of @ wu.float().t()))
    ref = hf @ wd.float().t()
    del xf, vf, of, hf

    def check(out):
        return rel_err(out if isinstance(out, torch.Tensor) else y, ref)
    poison = nan_fill(y)

    x2 = x[0]

    def torch_step():
        torch.mm(x2, wq.t())
        torch.mm(x2, wk.t())
        vv = torch.mm(x2, wv.t())
        oo = torch.mm(vv, wo.t())
        hh_ = F.silu(torch.mm(oo, wg.t())) * torch.mm(oo, wu.t())
        return torch.mm(hh_, wd.t())
    cases = {"torch_only": Case(torch_step, check, poison, note="7 x torch.mm + SiLU + mul")}

    def cudnn_cases():
        g_hh = _Gemm(ctx, x, view["q"], q)           # [T,H] x [H,H]: q, k, v, o
        g_hi = _Gemm(ctx, x, view["g"], gt)          # [T,H] x [H,I]: gate, up
        g_ih = _Gemm(ctx, hh, view["d"], y)          # [T,I] x [I,H]: down
        fx = [g_hh.fixed(x, view["q"], q), g_hh.fixed(x, view["k"], k), g_hh.fixed(x, view["v"], v),
              g_hh.fixed(v, view["o"], o), g_hi.fixed(o, view["g"], gt), g_hi.fixed(o, view["u"], up)]
        fd = g_ih.fixed(hh, view["d"], y)
        silu, mul = F.silu, torch.mul

        def fixed():
            for f in fx:
                f()
            mul(silu(gt), up, out=hh)
            fd()
            return y

        shp_h, shp_i = (1, t, hd), (1, t, inter)
        nq, nk, nv = (g_hh.naive(x, view[n], shp_h) for n in ("q", "k", "v"))

        def naive():
            nq()
            nk()
            vv = nv()
            oo = g_hh.naive(vv, view["o"], shp_h)()
            hh_ = silu(g_hi.naive(oo, view["g"], shp_i)()) * g_hi.naive(oo, view["u"], shp_i)()
            return g_ih.naive(hh_, view["d"], shp_h)()

        plans = f"the heuristic's plans {g_hh.index}/{g_hi.index}/{g_ih.index}"
        out = {"naive": Case(naive, check, poison, note="per GEMM: current_stream + set_stream, "
                                                                       "dict pack, torch.empty, generic execute"),
               "fixed": Case(fixed, check, poison, note=f"pinned, {Built.call_form(ctx)}; {plans}")}

        def graphed():
            cap = timing.capture(fixed, 1, ctx.stream)
            cg = cap.graph

            def replay():
                cg.replay()
                return y
            return Case(replay, check, poison,
                                       note="the fixed step captured once (torch.cuda.graph), replayed per call")
        out["graphed"] = guard(graphed)
        return out
    cases.update(guard_each(cudnn_cases, ("naive", "fixed", "graphed")))
    return cases


PROBE = Probe(
    name="ceiling",
    doc=__doc__,
    variants=[
        Variant("torch_only", "baseline", "torch only: 7 x torch.mm + SiLU*up", kernels=STEP),
        Variant("naive", "trap", "naive cuDNN wrapper, per GEMM", kernels=STEP),
        Variant("fixed", "fixed", "fixed cuDNN wrapper", kernels=STEP),
        # replaying a graph inside another capture is not what this row is about: eager + device only
        Variant("graphed", "floor", "whole step in one CUDA graph, replayed", modes=("eager", "device"),
                kernels=STEP),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_only",
    prepare=prepare,
    extra={"plans": dict.fromkeys(("naive", "fixed", "graphed"), "heuristic"),
           "pairs": [("naive", "fixed", True)]},
)


def test_ceiling(hb_run):
    hb_run()
