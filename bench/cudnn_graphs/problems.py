"""The problems the cuDNN probes share: a (batched) bf16 matmul, the tutorial's conv-bias-ReLU and
the causal SDPA's operands.

Each holds its torch operands, an fp32 reference, `check`/`poison`/`case` for the runner, the
graph description and build, and the call forms probes combine into variants.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudnn_hostbench.bench.cudnn_graphs.build import Built, as_output, build_graph, new_graph, plan_name, tensor_of, torch_dtype
from cudnn_hostbench.bench.cudnn_graphs.cache_keys import GraphCache, problem_key
from cudnn_hostbench.bench.cudnn_graphs.plans import pin_plan
from cudnn_hostbench.bench.measure.probe import Case, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

_DIM = re.compile(r"([a-z]+)(\d+)")


def parse_dims(label: str) -> dict:
    """'b16m512k1024n512' -> {'b': 16, 'm': 512, 'k': 1024, 'n': 512}; 'hw56' gives h and w."""
    out = {}
    for k, v in _DIM.findall(label):
        if k == "hw":
            out["h"] = out["w"] = int(v)
        else:
            out[k] = int(v)
    return out


def mnk(size: str) -> tuple[int, int, int]:
    parts = [int(x) for x in size.split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


def cube_sizes(options) -> list[str]:
    return list(options.sizes)


def nan_fill(*ts):
    """A poison() that overwrites every given output."""
    def poison():
        for t in ts:
            t.fill_(float("nan"))
    return poison


@dataclass
class SdpaOperands:
    """A causal SDPA problem `b4h32s2048d128`: Q, K, V and an output O, bf16 [B, H, S, D] views of
    [B, S, H, D] memory (the layout frameworks hand cuDNN), its softmax scale and an fp32 reference."""
    q: object
    k: object
    v: object
    o: object
    scale: float
    ref: object


def sdpa_operands(ctx, size: str) -> SdpaOperands:
    import math
    torch = ctx.torch
    dims = parse_dims(size)
    b, h, s, d = dims["b"], dims["h"], dims["s"], dims["d"]
    q, k, v = (ctx.randn(b, s, h, d).transpose(1, 2) for _ in range(3))
    o = torch.empty(b, s, h, d, dtype=torch.bfloat16, device=ctx.device).transpose(1, 2)
    scale = 1.0 / math.sqrt(d)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True,
                                                           scale=scale)
    return SdpaOperands(q, k, v, o, scale, ref)


class Checked:
    """A problem's cases: each is checked against the torch reference `ref` (through the call's
    returned tensor, else the output buffer), and the buffer is poisoned before each check."""

    def output(self):
        raise NotImplementedError

    def check(self, out) -> float:
        return rel_err(out if isinstance(out, self.ctx.torch.Tensor) else self.output(), self.ref)

    def poison(self) -> None:
        self.output().fill_(float("nan"))

    def case(self, call, note: str = "", plan: str | None = None) -> Case:
        """plan: the plan the call runs; by default the pinned one where it was pinned by a rule
        (not by a timing race: a race's rows name theirs)."""
        b = getattr(self, "built", None)
        if plan is None:
            plan = self.plan_label() if b is not None and b.pinned_by == "heuristic" else ""
        return Case(fn=call, check=self.check, poison=self.poison, note=note, plan=plan)

    def plan_label(self, index: int | None = None) -> str:
        """'<index>:<engine and knobs>' of plan index (default: the pinned one), or '' without one."""
        b = getattr(self, "built", None)
        index = getattr(b, "pinned", None) if index is None else index
        if b is None or index is None:
            return ""
        try:
            return f"{index}:{plan_name(b.graph, index)}"
        except Exception:  # noqa: BLE001 - a frontend without plan names: the index alone
            return str(index)


class Matmul(Checked):
    """C[b,M,N] = A[b,M,K] @ B[b,K,N] (bf16 in/out, fp32 compute), B with any strides.

    With fixed UIDs (A=1001, B=1002, C=1003) packs can be keyed by int, and a serialized plan
    executed by them."""
    UIDS = (1001, 1002, 1003)

    def __init__(self, ctx, a, b, c, ref=None):
        self.ctx, self.a, self.b, self.c, self.ref = ctx, a, b, c, ref
        self.built: Built | None = None
        self.vp: dict = {}

    def output(self):
        return self.c

    @classmethod
    def random(cls, ctx, batch: int, m: int, k: int, n: int, b_view=None) -> "Matmul":
        """Random operands; b_view: a torch tensor to bind as B instead (e.g. W.t().unsqueeze(0))."""
        torch = ctx.torch
        a = ctx.randn(batch, m, k, scale=k ** -0.5)
        b = b_view if b_view is not None else ctx.randn(batch, k, n)
        c = torch.empty(batch, m, n, dtype=torch.bfloat16, device=ctx.device)
        return cls(ctx, a, b, c, torch.matmul(a.float(), b.float()))

    @classmethod
    def cube(cls, ctx, size: str) -> "Matmul":
        m, n, k = mnk(size)
        return cls.random(ctx, 1, m, k, n)

    def problem(self, kind: str = "matmul", modes: str | None = "A+FALLBACK") -> str:
        """Key for persisted plans (modes: the heuristic modes that made the plan list)."""
        return problem_key(kind, self.a, self.b, self.c, **({"modes": modes} if modes else {}))

    # -- graphs -------------------------------------------------------------------------------------
    def describe(self, fixed_uids: bool = False, name: str = "mm"):
        """A fresh graph with its tensors and the matmul node; nothing validated yet."""
        ctx = self.ctx
        g = new_graph(ctx, io_type=torch_dtype(ctx.cudnn, self.a.dtype))
        A, B = tensor_of(ctx, g, self.a, "A"), tensor_of(ctx, g, self.b, "B")
        C = g.matmul(A=A, B=B, compute_data_type=ctx.cudnn.data_type.FLOAT, name=name)
        as_output(ctx, C, self.c)
        if fixed_uids:
            for t, uid in zip((A, B, C), self.UIDS):
                t.set_uid(uid)
        return g, (A, B, C)

    def graph(self):
        return self.describe()

    def build(self, all_plans: bool = False, what: str = "matmul graph", pinning: bool = False) -> Built:
        """The five timed steps; all_plans builds every plan (policy ALL). pinning (implied by
        all_plans): fixed UIDs, and a refused graph is Unsupported."""
        pinning = pinning or all_plans
        g, ts = self.describe(fixed_uids=pinning)
        policy = self.ctx.cudnn.build_plan_policy.ALL if all_plans else None
        self.built = build_graph(self.ctx, g, list(ts), policy=policy, rejected_is_unsupported=pinning, what=what)
        self.vp = dict(zip(ts, (self.a, self.b, self.c)))
        return self.built

    def pin_heuristic(self) -> int:
        """Builds the heuristic's plan alone (the walk's first plan that builds) and pins it. Building
        every plan would also build engines no row runs, in every worker: seconds per graph where the
        one plan takes a fraction of a second (log 2026-12-01-1550). A frontend that does
        not expose the selected index (before 1.27) builds every plan and takes the first that
        built, as heuristic_plan says."""
        b = self.build(pinning=True)
        if b.index is None:
            b = self.build(all_plans=True)
        else:
            b.plans = [b.index]
        b.pinned, b.pinned_by = self.heuristic_plan(), "heuristic"
        return b.pinned

    def pin(self, cache: bool = True, rule: str = "autotuned") -> int:
        """Pins one plan. rule 'heuristic': the heuristic's pick, built alone (the plan generic
        execute runs), the same plan on every GPU of one model and software stack, for rows that
        measure the call path; 'autotuned': the fastest by GPU time, a race whose winner may
        differ between two GPUs of one model (a plan pinned before on this context is reused)."""
        if rule == "heuristic":
            return self.pin_heuristic()
        if rule != "autotuned":
            raise ValueError(f"plan rule {rule!r}: 'heuristic' or 'autotuned'")
        b = self.build(all_plans=True)
        key = GraphCache.key(*self.buffers())
        pinned = self.ctx.pinned_plans.get(key) if cache else None
        if pinned is None or pinned not in b.plans:
            pinned = pin_plan(b, self.vp, self.ctx.stream)
            if cache:
                self.ctx.pinned_plans[key] = pinned
        b.pinned = pinned
        return pinned

    def buffers(self):
        return (self.a, self.b, self.c)


    def heuristic_plan(self) -> int:
        """The plan generic `execute` runs: the graph's selected plan (private `_plan_index`, 1.27+),
        else the first plan that built (rank order: the heuristic's pick)."""
        b = self.built
        if b.index is not None and b.index in b.plans:
            return b.index
        if not b.plans:
            raise Unsupported("no plan built")
        return min(b.plans)

    def generic_plan(self) -> int:
        """heuristic_plan, for a row that must run generic execute's own plan (to isolate the call
        form). Refused where the frontend does not expose that plan: before 1.27 the first built
        plan was only an assumption, and on 1.20/1.26 generic ran another kernel (the plan check
        in device mode caught it)."""
        if self.built.index is None:
            raise Unsupported("needs the selected plan index (frontend >= 1.27): the plan generic execute "
                              "runs is not exposed, so this row cannot share it")
        return self.heuristic_plan()

    def plan_id(self, index: int) -> str:
        """Plan identity for a record's note: index, engine name, and how it was chosen."""
        b = self.built
        how = []
        if index == self.heuristic_plan():
            src = " (g._plan_index)" if b.index is not None else " (assumed: first built)"
            how.append("the plan generic execute runs" + src)
        if index == b.pinned and b.pinned_by != "heuristic":
            us = b.plan_us.get(index)
            by = {"graph": "GPU time", "eager": "eager us/call"}.get(b.pinned_by, b.pinned_by)
            how.append(f"autotuned by {by}" + (f" ({us:.2f} us)" if us else ""))
        return f"plan {index} '{plan_name(b.graph, index)}' of {len(b.plans)} built" + (f": {', '.join(how)}" if how else "")

    def plan_note(self) -> str:
        return self.plan_id(self.built.pinned)

    def heuristic_note(self) -> str:
        i = self.built.index  # private _plan_index; absent before 1.27
        return "execute runs the heuristic's pick" + (f": {self.plan_id(i)}" if i is not None else "")

    # -- call forms ----------------------------------------------------------------------------------
    def torch_mm_call(self):
        a2, b2 = self.a[0], self.b[0]
        mm = self.ctx.torch.mm
        return lambda: mm(a2, b2)

    def generic_call(self):
        g, vp, ws, h = self.built.graph, self.vp, self.built.workspace, self.ctx.handle
        return lambda: g.execute(vp, ws, handle=h)

    def pinned_call(self, index: int | None = None):
        """execute_plan_at_index with the dict pack; index defaults to the autotuned plan."""
        i = self.built.pinned if index is None else index
        g, vp, ws, h = self.built.graph, self.vp, self.built.workspace, self.ctx.handle
        return lambda: g.execute_plan_at_index(vp, ws, i, handle=h)

    def ordered_call(self, pinned: bool = False, index: int | None = None):
        """The ordered tensor_uids form: generic (the selected plan) unless pinned, then on `index`
        (default: the autotuned plan)."""
        if not self.ctx.caps.ordered:
            raise Unsupported("needs the ordered tensor_uids execute (frontend >= 1.31)")
        i = (self.built.pinned if index is None else index) if pinned else None
        return self.built.call(self.buffers(), index=i)

    def naive_call(self):
        """What a first integration writes: per call a torch stream query + set_stream, a new pack
        dict, a torch.empty output, then generic execute (the plan generic execute runs)."""
        ctx = self.ctx
        torch, cudnn, h = ctx.torch, ctx.cudnn, ctx.handle
        g, ws = self.built.graph, self.built.workspace
        tA, tB, tC = self.built.tensors
        a, b = self.a, self.b
        shape = tuple(self.c.shape)

        def naive():
            cudnn.set_stream(handle=h, stream=torch.cuda.current_stream().cuda_stream)
            out = torch.empty(shape, dtype=a.dtype, device=a.device)
            g.execute({tA: a, tB: b, tC: out}, ws, handle=h)
            return out
        return naive

    def fastest_call(self, index: int | None = None):
        """A pinned plan (default: the autotuned one) in the fastest public form this frontend has,
        and that form's name."""
        i = self.built.pinned if index is None else index
        return self.built.call(self.buffers(), index=i), Built.call_form(self.ctx)

    def raw_floor_call(self, index: int | None = None):
        """PRIVATE frontend API (1.32 IR): the backend execute with a pre-normalised pointer pack."""
        g = self.built.graph
        i = self.built.pinned if index is None else index
        try:
            pack = g._normalize(g._uid_to_data(self.vp), self.built.workspace)
            cpp_idx = g._materialize_backend_plan(i).cpp_index
            lowered = g._lowered_graph
            fn = lowered._execute_with_raw_ptrs
            hb = self.ctx.handle.backend_handle
        except AttributeError as e:
            raise Unsupported(f"needs the private raw-pointer execute of frontend 1.32 ({e})") from e
        addr, n, ws = pack.address, len(pack), pack.workspace
        self._keep = getattr(self, "_keep", []) + [pack]  # each pointer array must outlive its calls
        return lambda: fn(addr, n, ws, hb, cpp_idx)


@dataclass
class ConvShape:
    """Size labels look like 'n32c128hw56k256' (3x3 filter, padding 1, stride 1 unless 'r'/'p' say otherwise)."""
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int = 3
    pad: int = 1

    @classmethod
    def parse(cls, label: str) -> "ConvShape":
        d = parse_dims(label)
        missing = {"n", "c", "h", "w", "k"} - d.keys()
        if missing:
            raise ValueError(f"conv size {label!r} lacks {sorted(missing)}")
        return cls(d["n"], d["c"], d["h"], d["w"], d["k"], d.get("r", 3), d.get("p", d.get("r", 3) // 2))

    @property
    def out_hw(self) -> tuple[int, int]:
        return self.h + 2 * self.pad - self.r + 1, self.w + 2 * self.pad - self.r + 1

    def label(self) -> str:
        return f"n{self.n}c{self.c}hw{self.h}k{self.k}" if self.h == self.w else \
            f"n{self.n}c{self.c}h{self.h}w{self.w}k{self.k}"

    def with_batch(self, batch: int) -> "ConvShape":
        return ConvShape(batch, self.c, self.h, self.w, self.k, self.r, self.pad)


def require_conv(ctx) -> None:
    if not hasattr(ctx.cudnn.pygraph, "conv_fprop"):
        raise Unsupported("needs pygraph.conv_fprop")


class ConvProblem(Checked):
    """Y = ReLU(conv2d(X, W, pad) + b), bf16, channels_last (NHWC strides): operands, an fp32
    reference and graph builders for one shape."""

    def __init__(self, ctx, shape: ConvShape, weight=None, bias=None):
        torch = ctx.torch
        cl = torch.channels_last
        s = self.shape = shape
        self.ctx = ctx
        self.x = ctx.randn(s.n, s.c, s.h, s.w).contiguous(memory_format=cl)
        self.wt = weight if weight is not None else \
            ctx.randn(s.k, s.c, s.r, s.r, scale=(s.c * s.r * s.r) ** -0.5).contiguous(memory_format=cl)
        self.b = bias if bias is not None else ctx.randn(1, s.k, 1, 1, scale=0.5).contiguous(memory_format=cl)
        ho, wo = s.out_hw
        self.y = torch.empty(s.n, s.k, ho, wo, dtype=torch.bfloat16, device=ctx.device).contiguous(memory_format=cl)
        self.b_vec = self.b.reshape(s.k)
        self.b_nhwc = self.b.as_strided((1, s.k, 1, 1), (s.k, 1, s.k, s.k))   # bound with the declared strides
        F = torch.nn.functional
        self.ref = F.relu(F.conv2d(self.x.float(), self.wt.float(), self.b_vec.float(), padding=s.pad))

    def output(self):
        return self.y


    def problem(self, modes: str = "A+FALLBACK") -> str:
        """Key for persisted plans: operands, conv attributes, and the heuristic modes that made
        the plan list (a plan index means nothing across lists made with other modes)."""
        return problem_key("conv_bias_relu", self.x, self.wt, self.b_nhwc, pad=self.shape.pad, stride=1,
                           modes=modes)

    # -- torch ---------------------------------------------------------------------------------
    def torch_unfused(self):
        """conv2d, then bias add, then ReLU: three kernels' worth of epilogue traffic."""
        F, torch = self.ctx.torch.nn.functional, self.ctx.torch
        x, w, b, p = self.x, self.wt, self.b, self.shape.pad
        return lambda: torch.relu(F.conv2d(x, w, padding=p) + b)

    def torch_bias_in_conv(self):
        """conv2d with its bias argument (torch hands it to cuDNN), then ReLU."""
        F, torch = self.ctx.torch.nn.functional, self.ctx.torch
        x, w, bv, p = self.x, self.wt, self.b_vec, self.shape.pad
        return lambda: torch.relu(F.conv2d(x, w, bv, padding=p))

    # -- cuDNN -----------------------------------------------------------------------------------
    def graph(self, kernel_cache=None, dynamic: bool = False):
        """The fused conv-bias-ReLU graph (unbuilt) and its operands in binding order."""
        ctx, s, cudnn = self.ctx, self.shape, self.ctx.cudnn
        kw = {}
        if kernel_cache is not None:
            kw["kernel_cache"] = kernel_cache
        if dynamic:
            kw["is_dynamic_shape_enabled"] = True
        g = new_graph(ctx, **kw)
        X = tensor_of(ctx, g, self.x, "X")
        W = tensor_of(ctx, g, self.wt, "W")
        # [1, K, 1, 1] in NHWC strides, as cuDNN's samples declare it (torch leaves size-1 dims' strides
        # at 1, which addresses the same K contiguous values)
        B = g.tensor(name="B", dim=[1, s.k, 1, 1], stride=[s.k, 1, s.k, s.k], data_type=cudnn.data_type.BFLOAT16)
        conv = g.conv_fprop(image=X, weight=W, padding=[s.pad, s.pad], stride=[1, 1], dilation=[1, 1],
                            compute_data_type=cudnn.data_type.FLOAT, name="conv")
        Y = g.relu(input=g.bias(input=conv, bias=B, name="bias"), name="relu")
        as_output(ctx, Y, self.y)
        return g, [X, W, B, Y]

    def build(self, modes=None, policy=None, kernel_cache=None, dynamic: bool = False) -> Built:
        g, ts = self.graph(kernel_cache, dynamic)
        return build_graph(self.ctx, g, ts, modes=modes, policy=policy, what="conv-bias-relu graph")

    def buffers(self):
        return (self.x, self.wt, self.b_nhwc, self.y)
