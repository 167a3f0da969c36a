"""A cache key without alignment: a bf16 matmul plan built on aligned buffers (what a (shape,
stride, dtype) cache holds) executed on offset views of the same shape, stride and dtype, one
element (2 bytes) past a 16-byte boundary. PyTorch's own cuDNN cache key holds the pointers'
alignment; this probe says what happens without it.

A child process makes the first execute on offset views (a kernel fault would end this process's
CUDA context); its verdict (fine, wrong, rejected, faulted) is in `offset_reuse`'s note, or its
status where the row cannot run. `offset_reuse` (trap) executes the aligned plan on the offset
views; its numerics check against torch says whether it runs right. `aligned` executes the same
plan on the aligned buffers (the figure the trap is timed against), `offset_copied` (fix) copies
the offset inputs into aligned buffers, executes, and copies the output back: the frontend's
Python API declares every tensor 16-byte aligned and has no setter for it, so a key with
alignment sends a misaligned view through a copy (or to torch). `torch_mm_offset` is torch.mm on
the offset views."""
from cudnn_hostbench.bench.cudnn_graphs import alignment
from cudnn_hostbench.bench.cudnn_graphs.build import guard
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import Matmul, cube_sizes, mnk
from cudnn_hostbench.bench.measure.core.kernels import GEMM
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

COPIED = (*GEMM, ("copy", (0, 3)))   # same-dtype contiguous copies are memcpys (no kernel) in torch today


def build(ctx, size):
    m, n, k = mnk(size)
    torch = ctx.torch
    mm = Matmul.random(ctx, 1, m, k, n)
    mm.pin(rule="heuristic")
    plan = mm.plan_label()
    keep, views = [], []
    for t in mm.buffers():
        base, view = alignment.offset_view(torch, t)
        keep.append(base)
        views.append(view)
    ao, bo, co = views
    offset_bytes = alignment.OFFSET_ELEMS * mm.a.element_size()
    at = ", ".join(f"{nm} {v.data_ptr() % 256}" for nm, v in zip("ABC", views))
    # the offset rows write co: their check reads co (through a Matmul over the offset buffers)
    off = Matmul(ctx, ao, bo, co, mm.ref)
    off.built, off._keep = mm.built, keep
    aligned_call = mm.fastest_call(mm.built.pinned)[0]
    cases = {"torch_mm": mm.case(mm.torch_mm_call()),
             "aligned": mm.case(aligned_call, note=f"aligned buffers; {mm.plan_id(mm.built.pinned)}", plan=plan)}
    a2, b2 = ao[0], bo[0]
    cases["torch_mm_offset"] = off.case(lambda: torch.mm(a2, b2), note=f"offset views (ptr % 256: {at})")

    def reuse():
        others = [mnk(s) for s in ctx.options.sizes]     # one child tries every size of the run
        got = alignment.trial(m, n, k, ctx.device.index or 0, also=others)
        finding = got.describe(offset_bytes)
        if got.verdict in ("rejected", "faulted", "no trial"):
            raise Unsupported(finding)
        run = mm.built.call((ao, bo, co), index=mm.built.pinned)
        return off.case(lambda: run() or co, plan=plan, note=f"{finding}; ptr % 256: {at}")
    cases["offset_reuse"] = guard(reuse)

    def copied():
        a_s, b_s, c_s = mm.a, mm.b, mm.c

        def call():
            a_s.copy_(ao)
            b_s.copy_(bo)
            aligned_call()
            co.copy_(c_s)
            return co
        return off.case(call, plan=plan, note="offset inputs copied into the aligned buffers, aligned plan, "
                                              "output copied back")
    cases["offset_copied"] = guard(copied)
    return cases


PROBE = Probe(
    name="alignment",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm on aligned buffers", kernels=GEMM),
        Variant("aligned", "fixed", "the plan on the aligned buffers it was built on", kernels=GEMM),
        Variant("offset_reuse", "trap", "the aligned plan on offset views (a key without alignment)", kernels=GEMM),
        Variant("offset_copied", "fixed", "offset views copied to aligned buffers, aligned plan, copied back",
                kernels=COPIED),
        Variant("torch_mm_offset", "info", "torch.mm on the offset views", kernels=GEMM),
    ],
    build=build,
    sizes=cube_sizes,
    prepare=prepare,
    # one plan, the heuristic's pick on the aligned buffers, under every cuDNN row
    extra={"plans": dict.fromkeys(("aligned", "offset_reuse", "offset_copied"), "heuristic"),
           "pairs": [("offset_reuse", "aligned", True), ("offset_reuse", "offset_copied", True)]},
)


def test_alignment(hb_run):
    hb_run()
