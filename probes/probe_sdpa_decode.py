"""Decode-shaped SDPA, host-bound: one query token per sequence against a few thousand keys, bf16,
sequences of different lengths in one batch (lengths fall evenly from S to S/2). Label
`b4h8s4096d128`: batch, heads, the longest key sequence, head dim; the KV data is small enough
(tens of MB) that the kernel takes microseconds and the host's glue shows.
- `torch_sdpa` (baseline): F.scaled_dot_product_attention on the padded [B, S, H, D] cache with a
  boolean key mask (the note names the backend torch's dispatcher picks);
- `cudnn_padded`: a cuDNN SDPA graph on the same padded cache with the padding mask
  (seq_len_q, seq_len_kv tensors): a pack of 6 tensors;
- `cudnn_ragged`: the keys and values packed back to back (THD) with ragged offsets on Q, K, V
  and O plus the padding mask, as the frontend's own tests declare them: a pack of 10 tensors.
Both cuDNN graphs run their selected plan in the fastest public call form; notes say whether the
cuDNN backend or a python engine served them. Every variant is checked against a float reference
of the masked attention first."""
import math

from cudnn_hostbench.bench.cudnn_graphs.build import as_output, build_graph, guard, new_graph, sdpa_inference, tensor_of
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import nan_fill, parse_dims
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported


def _sizes(options):
    sizes = ["b4h8s4096d128", "b16h8s1024d128"]
    if options.heavy:
        sizes += ["b8h32s4096d128", "b64h8s2048d128"]
    return sizes


def lengths(batch: int, seq_len: int) -> list[int]:
    """Key lengths falling evenly from seq_len (the first sequence) to seq_len/2."""
    return [seq_len - (seq_len // 2) * j // max(batch - 1, 1) for j in range(batch)]


def offsets(lens, per_token: int) -> list[int]:
    """Exclusive prefix sum of lens times elements per token: B + 1 ragged offsets."""
    out = [0]
    for n in lens:
        out.append(out[-1] + n * per_token)
    return out


def torch_backend(torch, query, key, value, mask, scale) -> str:
    try:
        from torch.nn.attention import SDPBackend
        choice = int(torch._fused_sdp_choice(query, key, value, mask, 0.0, False, scale=scale))
        for name, member in SDPBackend.__members__.items():
            if int(member.value) == choice:
                return name
        return f"backend #{choice}"
    except Exception as e:  # noqa: BLE001 - private API: device-mode kernel names still show it
        return f"unknown ({type(e).__name__}; see device-mode kernel names)"


class Decode:
    """Operands, the reference and the cuDNN graphs of one decode shape."""

    def __init__(self, ctx, size):
        torch = self.torch = ctx.torch
        d = parse_dims(size)
        self.ctx, b, h, s, hd = ctx, d["b"], d["h"], d["s"], d["d"]
        self.b, self.h, self.s, self.d = b, h, s, hd
        self.scale = 1.0 / math.sqrt(hd)
        self.lens = lengths(b, s)
        dev = ctx.device
        self.q = ctx.randn(b, 1, h, hd).transpose(1, 2)              # [B, H, 1, D] of [B, 1, H, D]
        kmem, vmem = ctx.randn(b, s, h, hd), ctx.randn(b, s, h, hd)
        self.k, self.v = kmem.transpose(1, 2), vmem.transpose(1, 2)  # padded cache, [B, H, S, D] views
        self.mask = (torch.arange(s, device=dev)[None, :] < torch.tensor(self.lens, device=dev)[:, None])
        self.mask = self.mask.view(b, 1, 1, s)
        self.ref = torch.nn.functional.scaled_dot_product_attention(
            self.q.float(), self.k.float(), self.v.float(), attn_mask=self.mask, scale=self.scale)
        i32 = dict(dtype=torch.int32, device=dev)
        self.seq_q = torch.ones(b, 1, 1, 1, **i32)
        self.seq_kv = torch.tensor(self.lens, **i32).view(b, 1, 1, 1)
        # ragged: tokens back to back in a buffer of the padded size (as the frontend's tests allocate)
        self.k_rag = self._packed(kmem)
        self.v_rag = self._packed(vmem)

    def _packed(self, mem):
        b, h, s, hd = self.b, self.h, self.s, self.d
        buf = self.torch.empty(b * s * h * hd, dtype=mem.dtype, device=mem.device)
        flat = self.torch.cat([mem[j, :n] for j, n in enumerate(self.lens)]).reshape(-1)
        buf[:flat.numel()].copy_(flat)
        return buf.as_strided((b, h, s, hd), (s * h * hd, hd, h * hd, 1))

    def out(self):
        return self.torch.empty(self.b, 1, self.h, self.d, dtype=self.torch.bfloat16, device=self.ctx.device) \
            .transpose(1, 2)

    def check_of(self, output):
        def check(out):
            return rel_err(out if isinstance(out, self.torch.Tensor) else output, self.ref)
        return check

    def _int_tensor(self, graph, buffer, name, dtype):
        return graph.tensor(name=name, dim=list(buffer.shape), stride=list(buffer.stride()), data_type=dtype)

    def graph(self, ragged: bool):
        """(Built, buffers in binding order, output) of the padding-mask SDPA graph."""
        ctx, cudnn, torch = self.ctx, self.ctx.cudnn, self.torch
        g = new_graph(ctx)
        o = self.out()
        q, k, v = self.q, (self.k_rag if ragged else self.k), (self.v_rag if ragged else self.v)
        extra_t, extra_b, offs = [], [], {}
        if ragged:
            wide = ctx.cudnn.backend_version() >= 90600          # int64 offsets from cuDNN 9.6
            odt = torch.int64 if wide else torch.int32
            cdt = cudnn.data_type.INT64 if wide else cudnn.data_type.INT32
            hd = self.h * self.d
            for name, lens in (("q", [1] * self.b), ("k", self.lens), ("v", self.lens), ("o", [1] * self.b)):
                buf = torch.tensor(offsets(lens, hd), dtype=odt, device=ctx.device).view(self.b + 1, 1, 1, 1)
                offs[name] = self._int_tensor(g, buf, f"{name}_ragged_offset", cdt)
                extra_t.append(offs[name])
                extra_b.append(buf)
        def kw(name):
            return {"ragged_offset": offs[name]} if ragged else {}
        Q, K, V = (tensor_of(ctx, g, t, n.upper(), **kw(n)) for t, n in ((q, "q"), (k, "k"), (v, "v")))
        SQ = self._int_tensor(g, self.seq_q, "seq_len_q", cudnn.data_type.INT32)
        SKV = self._int_tensor(g, self.seq_kv, "seq_len_kv", cudnn.data_type.INT32)
        Out = sdpa_inference(ctx, g, Q, K, V, attn_scale=self.scale, use_padding_mask=True, seq_len_q=SQ,
                             seq_len_kv=SKV)
        as_output(ctx, Out, o)
        if ragged:
            Out.set_ragged_offset(offs["o"])
        what = f"decode SDPA graph ({'ragged' if ragged else 'padded'}, padding mask)"
        bl = build_graph(ctx, g, [Q, K, V, SQ, SKV, Out, *extra_t], rejected_is_unsupported=True, what=what)
        return bl, (q, k, v, self.seq_q, self.seq_kv, o, *extra_b), o


def build(ctx, size):
    torch = ctx.torch
    F = torch.nn.functional
    p = Decode(ctx, size)
    q, k, v, mask, scale = p.q, p.k, p.v, p.mask, p.scale
    picked = torch_backend(torch, q, k, v, mask, scale)
    cases = {"torch_sdpa": Case(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale),
                                p.check_of(None), note=f"torch dispatched to {picked} (torch._fused_sdp_choice)")}

    def cudnn_case(ragged):
        if not hasattr(ctx.cudnn.pygraph, "sdpa"):
            raise Unsupported("needs pygraph.sdpa")
        bl, bufs, o = p.graph(ragged)
        run = bl.call(bufs, index=None)
        return Case(lambda: run() or o, p.check_of(o), nan_fill(o),
                    note=f"{len(bufs)} tensors in the pack; cuDNN ran the {bl.engine}; plan {bl.index} '{bl.plan}'")
    cases["cudnn_padded"] = guard(lambda: cudnn_case(False))
    cases["cudnn_ragged"] = guard(lambda: cudnn_case(True))
    return cases


PROBE = Probe(
    name="sdpa_decode",
    doc=__doc__,
    variants=[
        Variant("torch_sdpa", "baseline", "F.scaled_dot_product_attention, padded cache + key mask"),
        Variant("cudnn_padded", "fixed", "cuDNN SDPA graph, padded cache + padding mask"),
        Variant("cudnn_ragged", "fixed", "cuDNN SDPA graph, ragged (packed) K/V + padding mask"),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_sdpa",
    prepare=prepare,
    extra={"kernels_not_declared": {
        "torch_sdpa": "torch picks its attention backend by mask and shape; with a boolean key mask it may take "
                      "the math path, several kernels",
        "cudnn_padded": "a decode engine may split the keys over several kernels (split-KV, then a combine)",
        "cudnn_ragged": "a decode engine may split the keys over several kernels (split-KV, then a combine)"}},
)


def test_sdpa_decode(hb_run):
    hb_run()
