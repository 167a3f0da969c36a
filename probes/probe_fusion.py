"""Trap 6: not fusing what the graph will fuse. Three GEMM epilogues, each as one cuDNN graph vs
torch running the same math as separate kernels (device mode shows kernels per call):

- biasgelu: Y = GELU(A @ B + bias);
- epilogue (the tutorial's): Y = GELU(alpha * A @ B + bias) with alpha passed by value from the
  host, plus AMAX(|Y|) reduced in the same graph, vs torch.baddbmm + GELU + amax (ReLU where this
  GPU/frontend rejects GELU);
- swiglu (the guide's MLP forward): H = SiLU(X @ Wg^T) * (X @ Wu^T) with nn.Linear weights bound
  as .t() views. Where no engine fuses both GEMMs (the frontend's fused kernel is an SM100 one) the
  fused variant records why, and `cudnn_split` runs the best graphs that do build.

`cudnn_split` is the largest cuDNN graph that builds with the rest in torch (biasgelu: the GEMM
alone; epilogue: everything but AMAX; swiglu: GEMM+SiLU, then GEMM+mul).
"""
from cudnn_hostbench.bench.cudnn_graphs.build import as_output, build_graph, guard, new_graph, tensor_of
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import nan_fill, parse_dims
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported


def _sizes(options):
    sizes = ["biasgelu-m4096k4096n4096", "epilogue-b16m512k1024n512", "swiglu-t2048h4096i11008"]
    if options.heavy:
        sizes += ["biasgelu-m256k4096n4096", "swiglu-t256h4096i11008", "swiglu-t8192h4096i11008"]
    return sizes


ACTS = ("gelu", "relu")


def _torch_act(torch, act):
    return torch.nn.functional.gelu if act == "gelu" else torch.relu


def _graph_act(g, act, x):
    return g.gelu(input=x, name=act) if act == "gelu" else g.relu(input=x, name=act)


# -- biasgelu ---------------------------------------------------------------------------------------------
def _biasgelu(ctx, d):
    torch = ctx.torch
    m, k, n = d["m"], d["k"], d["n"]
    a = ctx.randn(1, m, k, scale=k ** -0.5)
    b = ctx.randn(1, k, n)
    bias = ctx.randn(1, 1, n, scale=0.5)
    y = torch.empty(1, m, n, dtype=torch.bfloat16, device=ctx.device)
    mm_out = torch.empty_like(y)
    poison = nan_fill(y, mm_out)
    notes = []

    def fused_graph(act):
        g = new_graph(ctx)
        A, B, BIAS = (tensor_of(ctx, g, t, nm) for t, nm in ((a, "A"), (b, "B"), (bias, "bias")))
        mm = g.matmul(A=A, B=B, compute_data_type=ctx.cudnn.data_type.FLOAT, name="mm")
        Y = _graph_act(g, act, g.bias(input=mm, bias=BIAS, name="bias"))
        as_output(ctx, Y, y)
        return build_graph(ctx, g, [A, B, BIAS, Y], rejected_is_unsupported=True, what=f"matmul+bias+{act}")

    act, fused = "gelu", None
    for act in ACTS:
        fused = guard(lambda: fused_graph(act))  # noqa: B023 - called at once
        if not isinstance(fused, BaseException):
            break
        notes.append(f"{act}: {fused}")
    if isinstance(fused, BaseException):
        act = "gelu"
    F_act = _torch_act(torch, act)
    ref = F_act(a.float() @ b.float() + bias.float())

    def check(out):
        return rel_err(out, ref)
    a2, b2, bias2, bias1 = a[0], b[0], bias[0], bias.reshape(n)
    cases = {"torch_unfused": Case(lambda: F_act(torch.mm(a2, b2) + bias2), check, poison)}

    def torch_fused():
        if act != "gelu" or not hasattr(torch, "_addmm_activation"):
            raise Unsupported("needs torch._addmm_activation with GELU")
        fn = torch._addmm_activation
        return Case(lambda: fn(bias1, a2, b2, use_gelu=True), check, poison,
                                   note="cuBLASLt GELU epilogue (tanh approximation) via torch._addmm_activation")
    cases["torch_fused"] = guard(torch_fused)
    if isinstance(fused, BaseException):
        cases["cudnn_fused"] = fused
    else:
        run = fused.call((a, b, bias, y))
        cases["cudnn_fused"] = Case(lambda: run() or y, check, poison,
                                                   note=f"act={act}; {fused.describe()}" + _why(notes))

    def split():
        g = new_graph(ctx)
        A, B = tensor_of(ctx, g, a, "A"), tensor_of(ctx, g, b, "B")
        C = g.matmul(A=A, B=B, compute_data_type=ctx.cudnn.data_type.FLOAT, name="mm")
        as_output(ctx, C, mm_out)
        bl = build_graph(ctx, g, [A, B, C], what="matmul")
        run = bl.call((a, b, mm_out))

        def fn():
            run()
            return F_act(mm_out + bias)
        return Case(fn, check, poison, note=f"cuDNN GEMM ({bl.describe()}) + torch bias + {act}")
    cases["cudnn_split"] = guard(split)
    return cases


# -- the tutorial's epilogue ---------------------------------------------------------------------------------
ALPHA = 0.5


def _epilogue(ctx, d):
    torch, cudnn = ctx.torch, ctx.cudnn
    bsz, m, k, n = d["b"], d["m"], d["k"], d["n"]
    a = ctx.randn(bsz, m, k, scale=k ** -0.5)
    b = ctx.randn(bsz, k, n)
    bias = ctx.randn(1, 1, n, scale=0.5)
    alpha = torch.full((1, 1, 1), ALPHA, dtype=torch.float32)          # host scalar, bound by value
    y = torch.empty(bsz, m, n, dtype=torch.bfloat16, device=ctx.device)
    amax = torch.empty(1, 1, 1, dtype=torch.float32, device=ctx.device)
    poison = nan_fill(y, amax)
    notes = []

    def graph(act, with_amax):
        g = new_graph(ctx)
        A, B, BIAS = (tensor_of(ctx, g, t, nm) for t, nm in ((a, "A"), (b, "B"), (bias, "bias")))
        S = g.tensor(name="alpha", dim=[1, 1, 1], stride=[1, 1, 1], data_type=cudnn.data_type.FLOAT,
                     is_pass_by_value=True)
        mm = g.matmul(A=A, B=B, compute_data_type=cudnn.data_type.FLOAT, name="mm")
        Y = _graph_act(g, act, g.bias(input=g.scale(input=mm, scale=S, name="alpha"), bias=BIAS, name="bias"))
        as_output(ctx, Y, y)
        ts = [A, B, BIAS, S, Y]
        if with_amax:
            AM = g.reduction(input=Y, mode=cudnn.reduction_mode.AMAX, compute_data_type=cudnn.data_type.FLOAT,
                             name="amax")
            AM.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim([1, 1, 1]).set_stride([1, 1, 1])
            ts.append(AM)
        what = f"matmul+alpha+bias+{act}" + ("+amax" if with_amax else "")
        return build_graph(ctx, g, ts, rejected_is_unsupported=True, what=what)

    act, full, part = "gelu", None, None
    for act in ACTS:
        full = guard(lambda: graph(act, True))  # noqa: B023 - called at once
        part = guard(lambda: graph(act, False))  # noqa: B023 - called at once
        if isinstance(full, BaseException):
            notes.append(f"{act}+amax: {full}")
        if isinstance(part, BaseException):
            notes.append(f"{act}: {part}")
        if not (isinstance(full, BaseException) and isinstance(part, BaseException)):
            break
    else:
        act = "gelu"
    F_act = _torch_act(torch, act)
    ref_y = F_act(ALPHA * (a.float() @ b.float()) + bias.float())
    ref_amax = ref_y.abs().amax().reshape(1, 1, 1)

    def check(out):
        oy, oa = out if isinstance(out, tuple) else (y, amax)
        return max(rel_err(oy, ref_y), rel_err(oa.reshape(1, 1, 1), ref_amax))

    def torch_unfused():
        yy = F_act(torch.baddbmm(bias, a, b, alpha=ALPHA))
        return yy, yy.abs().amax()
    cases = {
        "torch_unfused": Case(torch_unfused, check, poison, note=f"baddbmm + {act} + abs + amax"),
        "torch_fused": Unsupported("torch has no single op for this epilogue (baddbmm already folds alpha "
                                      "and bias into the GEMM; activation and amax stay separate)"),
    }
    why = _why(notes)
    # pass-by-value operand: bound through a {uid: tensor} pack (the tutorial's form), host tensor for alpha
    if isinstance(full, BaseException):
        cases["cudnn_fused"] = full
    else:
        pack = dict(zip(full.uids, (a, b, bias, alpha, y, amax)))
        g, ws, h = full.graph, full.workspace, ctx.handle

        def fused():
            g.execute(pack, ws, handle=h)
            return y, amax
        cases["cudnn_fused"] = Case(fused, check, poison, note=f"act={act}; {full.describe()}" + why)
    if isinstance(part, BaseException):
        cases["cudnn_split"] = part
    else:
        pack2 = dict(zip(part.uids, (a, b, bias, alpha, y)))
        g2, ws2, h = part.graph, part.workspace, ctx.handle

        def split():
            g2.execute(pack2, ws2, handle=h)
            return y, y.abs().amax()
        cases["cudnn_split"] = Case(split, check, poison,
                                                   note=f"act={act}; graph without AMAX ({part.describe()}) + torch amax" + why)
    return cases


# -- SwiGLU MLP forward ------------------------------------------------------------------------------------------
def _swiglu(ctx, d):
    torch, cudnn = ctx.torch, ctx.cudnn
    F = torch.nn.functional
    t, hd, inter = d["t"], d["h"], d["i"]
    x = ctx.randn(1, t, hd, scale=hd ** -0.5)
    wg = ctx.randn(inter, hd, scale=hd ** -0.5)                      # nn.Linear layout [out, in]
    wu = ctx.randn(inter, hd, scale=hd ** -0.5)
    wg_v, wu_v = wg.t().unsqueeze(0), wu.t().unsqueeze(0)            # [1, H, I] views, no copy
    h = torch.empty(1, t, inter, dtype=torch.bfloat16, device=ctx.device)
    hg = torch.empty_like(h)
    up_buf = torch.empty_like(h)
    poison = nan_fill(h, hg, up_buf)
    FLOAT, BF16 = cudnn.data_type.FLOAT, cudnn.data_type.BFLOAT16
    gate_ref = x.float() @ wg.float().t()
    ref = F.silu(gate_ref) * (x.float() @ wu.float().t())
    del gate_ref

    def check(out):
        return rel_err(out, ref)
    x2 = x[0]
    cases = {
        "torch_unfused": Case(lambda: F.silu(torch.mm(x2, wg.t())) * torch.mm(x2, wu.t()),
                                             check, poison, note="2 GEMMs + SiLU + mul"),
        "torch_fused": Unsupported("torch has no single-kernel SwiGLU"),
    }

    def fused():
        g = new_graph(ctx)
        X, WG, WU = (tensor_of(ctx, g, tt, nm) for tt, nm in ((x, "X"), (wg_v, "Wg_t"), (wu_v, "Wu_t")))
        gate = g.matmul(A=X, B=WG, compute_data_type=FLOAT, name="gate")
        up = g.matmul(A=X, B=WU, compute_data_type=FLOAT, name="up")
        gate.set_data_type(BF16)
        up.set_data_type(BF16)
        H = g.mul(a=g.mul(a=gate, b=g.sigmoid(input=gate, name="sig"), name="silu"), b=up, name="swiglu")
        as_output(ctx, H, h)
        bl = build_graph(ctx, g, [X, WG, WU, H], rejected_is_unsupported=True,
                          what="gate GEMM + up GEMM + SiLU + mul in one graph")
        run = bl.call((x, wg_v, wu_v, h))
        return Case(lambda: run() or h, check, poison, note=f"one graph: {bl.describe()}")
    cases["cudnn_fused"] = guard(fused)

    def gate_graph(form):
        g = new_graph(ctx)
        X, WG = tensor_of(ctx, g, x, "X"), tensor_of(ctx, g, wg_v, "Wg_t")
        gate = g.matmul(A=X, B=WG, compute_data_type=FLOAT, name="gate")
        if form == "swish":
            act = g.swish(input=gate, name="silu")
        elif form == "x*sigmoid":
            act = g.mul(a=gate, b=g.sigmoid(input=gate, name="sig"), name="silu")
        else:
            act = gate
        as_output(ctx, act, hg)
        return build_graph(ctx, g, [X, WG, act], rejected_is_unsupported=form != "none",
                            what=f"gate GEMM + {form}")

    def up_graph(fused_mul):
        g = new_graph(ctx)
        X, WU = tensor_of(ctx, g, x, "X"), tensor_of(ctx, g, wu_v, "Wu_t")
        up = g.matmul(A=X, B=WU, compute_data_type=FLOAT, name="up")
        if fused_mul:
            HG = tensor_of(ctx, g, hg, "silu_gate")
            out = g.mul(a=up, b=HG, name="mul")
            as_output(ctx, out, h)
            return build_graph(ctx, g, [X, WU, HG, out], rejected_is_unsupported=True, what="up GEMM + mul")
        as_output(ctx, up, up_buf)
        return build_graph(ctx, g, [X, WU, up], what="up GEMM")

    def split():
        notes, gate_b, form = [], None, "none"
        for form in ("swish", "x*sigmoid", "none"):
            gate_b = guard(lambda: gate_graph(form))  # noqa: B023 - called at once
            if not isinstance(gate_b, BaseException):
                break
            notes.append(str(gate_b))
        if isinstance(gate_b, BaseException):
            raise gate_b
        up_b = guard(lambda: up_graph(True))
        if isinstance(up_b, BaseException):
            notes.append(str(up_b))
            up_b = up_graph(False)
            mul_fused = False
        else:
            mul_fused = True
        run_g = gate_b.call((x, wg_v, hg))
        if mul_fused:
            run_u = up_b.call((x, wu_v, hg, h))
        else:
            run_u = up_b.call((x, wu_v, up_buf))
        silu_fused = form != "none"

        def fn():
            run_g()
            if not silu_fused:
                torch.nn.functional.silu(hg, inplace=True)
            run_u()
            if not mul_fused:
                torch.mul(hg, up_buf, out=h)
            return h
        desc = (f"[gate GEMM{' + SiLU (' + form + ')' if silu_fused else ''}] + "
                f"[up GEMM{' + mul' if mul_fused else ''}]"
                + ("" if silu_fused else " + torch SiLU") + ("" if mul_fused else " + torch mul"))
        return Case(fn, check, poison, note=desc + f"; gate {gate_b.describe()}, up {up_b.describe()}"
                                   + _why(notes))
    cases["cudnn_split"] = guard(split)
    return cases


def _why(notes) -> str:
    return ("; rejected: " + " | ".join(n[:240] for n in notes)) if notes else ""


KINDS = {"biasgelu": _biasgelu, "epilogue": _epilogue, "swiglu": _swiglu}


def build(ctx, size):
    kind = size.split("-", 1)[0]
    if kind not in KINDS:
        raise ValueError(f"unknown fusion size {size!r}; kinds: {sorted(KINDS)}")
    return KINDS[kind](ctx, parse_dims(size.split("-", 1)[1]))


PROBE = Probe(
    name="fusion",
    doc=__doc__,
    variants=[
        Variant("torch_unfused", "baseline", "torch, one kernel per op", kernels=(("gemm", (1, 2)), ("any", (1, 4)))),
        Variant("torch_fused", "info", "torch's own fused form, where one exists", kernels=(("gemm", 1),)),
        Variant("cudnn_fused", "fixed", "everything in one cuDNN graph", kernels=(("gemm", 1),)),
        Variant("cudnn_split", "info", "largest cuDNN graph(s) that build + torch for the rest",
                kernels=(("gemm", (1, 2)), ("any", (0, 2)))),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_unfused",
    prepare=prepare,
)


def test_fusion(hb_run):
    hb_run()
