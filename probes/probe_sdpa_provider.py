"""`cudnn.torch.sdpa_provider` against torch's native cuDNN SDPA, at the shapes of the `sdpa` probe
(bf16, causal, Q/K/V/O in [B, S, H, D] memory viewed as [B, H, S, D]).

Both rows call `F.scaled_dot_product_attention(q, k, v, is_causal=True)` under
`sdpa_kernel(SDPBackend.CUDNN_ATTENTION)`. `torch_native` runs torch's own cuDNN kernel (its C++
frontend). `provider` runs it with the provider's override in place: the CUDA kernel of
aten::_scaled_dot_product_cudnn_attention replaced by the provider's forward (`_fwd`, what
`install()` registers), which calls the custom op torch.ops.cudnn.sdpa_fwd (a graph cache and a
pygraph execute). The override is process-wide, so the row registers it, makes 16 calls and
removes it (one call of the row is 16 SDPA: µs per op); `install_remove` times that
registration alone per 16 (subtract it from `provider` for the provider's own cost), and no other
row or probe ever runs with the override in place. `provider_op`, the fix, calls
torch.ops.cudnn.sdpa_fwd directly (the provider's path without the aten hop and its Python
forward). Frontend >= 1.30 (cudnn/torch/)."""

from cudnn_hostbench.bench.cudnn_graphs import calls
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import nan_fill, sdpa_operands
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

PER_INSTALL = 16     # SDPA calls per registration of the override
OP = "_scaled_dot_product_cudnn_attention"
# the provider's forward allocates philox seed/offset with torch.zeros every call (a fill each, or a memset)
ONE = (("sdpa", 1), ("pointwise", (0, 2)))
MANY = (("sdpa", PER_INSTALL), ("pointwise", (0, 2 * PER_INSTALL)))


def _sizes(options):
    """The `sdpa` probe's sizes (a CPU test keeps the two lists equal)."""
    sizes = ["b4h32s2048d128", "b32h32s128d128"]
    if options.heavy:
        sizes += ["b1h32s8192d128", "b8h32s1024d64"]
    return sizes


class Scoped:
    """The provider's forward registered on the aten op for as long as `with` lasts: what
    cudnn.torch.install() registers for the forward, undone on exit so nothing else in this
    process runs with it."""

    def __init__(self, torch, provider):
        self.torch, self.fwd = torch, provider._fwd
        self.lib = None

    def __enter__(self):
        self.lib = self.torch.library.Library("aten", "IMPL")
        self.lib.impl(OP, self.fwd, "CUDA")
        return self

    def __exit__(self, *exc):
        self.lib._destroy()
        self.lib = None


def build(ctx, size):
    torch = ctx.torch
    F = torch.nn.functional
    ops = sdpa_operands(ctx, size)
    q, k, v, out, scale, ref = ops.q, ops.k, ops.v, ops.o, ops.scale, ops.ref
    poison = nan_fill(out)      # the rows return their own outputs: nothing of ours to poison but this

    def check(o):
        return rel_err(o[0] if isinstance(o, tuple) else o, ref)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        raise Unsupported(f"needs torch.nn.attention.sdpa_kernel ({e})") from e
    backend = SDPBackend.CUDNN_ATTENTION

    def one():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)

    def native():
        try:
            with torch.cuda.stream(ctx.stream):
                one()
            ctx.sync()
        except RuntimeError as e:   # no cuDNN attention for this shape/GPU: every row says so
            raise Unsupported(f"torch's cuDNN attention refused: {str(e).splitlines()[0][:200]}") from e
        return Case(one, check, poison, note="F.sdpa under sdpa_kernel(CUDNN_ATTENTION), torch's own cuDNN kernel")
    cases = {"torch_native": guard(native)}
    if isinstance(cases["torch_native"], Exception):
        return dict.fromkeys(("torch_native", "provider", "install_remove", "provider_op"), cases["torch_native"])

    def provided():
        provider = calls.sdpa_provider(ctx.cudnn)
        seen = dict(provider.calls)
        with torch.cuda.stream(ctx.stream), Scoped(torch, provider):
            one()
        ctx.sync()
        served = {key: provider.calls[key] - seen.get(key, 0) for key in provider.calls}
        if not (served.get("fwd") or served.get("fwd_cpp")):
            raise RuntimeError(f"the provider's override did not serve F.sdpa (its counters: {served})")
        how = "served on the cuDNN Python API" if served.get("fwd") else "fell back to torch's C++ worker op"
        scoped = Scoped(torch, provider)

        def call():
            with scoped:
                for _ in range(PER_INSTALL):
                    o = one()
            return o
        names = getattr(provider, "served_plan_names", lambda: [])()[-2:]
        return Case(call, check, poison,
                    note=f"override registered, {PER_INSTALL} calls, removed; {how}; plans {'; '.join(names) or '?'}")
    cases["provider"] = guard(provided)

    def install_remove():
        scoped = Scoped(torch, calls.sdpa_provider(ctx.cudnn))

        def call():
            with scoped:
                pass
        return Case(call, note=f"registration + removal of the override alone, per {PER_INSTALL} calls")
    cases["install_remove"] = guard(install_remove)

    def provider_op():
        calls.sdpa_provider(ctx.cudnn)          # imports cudnn.sdpa.fwd.torch_op: registers torch.ops.cudnn
        op = torch.ops.cudnn.sdpa_fwd
        return Case(lambda: op(q, k, v, scale, is_causal=True, return_lse=False), check, poison,
                    note="torch.ops.cudnn.sdpa_fwd called directly (the provider's custom op)")
    cases["provider_op"] = guard(provider_op)
    return cases


PROBE = Probe(
    name="sdpa_provider",
    doc=__doc__,
    variants=[
        Variant("torch_native", "baseline", "F.sdpa, torch's native cuDNN attention", kernels=ONE),
        Variant("provider", "trap", "F.sdpa through cudnn.torch.sdpa_provider (Python API custom op)",
                ops_per_call=PER_INSTALL, kernels=MANY),
        Variant("install_remove", "info", "registering + removing the override alone", ops_per_call=PER_INSTALL,
                modes=("eager",)),
        Variant("provider_op", "fixed", "torch.ops.cudnn.sdpa_fwd called directly", kernels=ONE),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_native",
    prepare=prepare,
    # both provider rows execute the graph the provider's own cache built for this shape
    extra={"plans": {"provider": "the provider's cached graph", "provider_op": "the provider's cached graph"},
           "pairs": [("provider", "provider_op", True)]},
)


def test_sdpa_provider(hb_run):
    hb_run()
