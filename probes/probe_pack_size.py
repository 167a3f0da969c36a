"""Host cost against the size of the variant pack: Y = ReLU(A·B + X1 + … + Xk), a 256³ bf16
matmul followed by k pointwise adds, each add with its own input (bench/cudnn_graphs/chain.py),
so the pack holds 3 + k tensors; the size label `pN` is that count. Three call forms on the one
plan the heuristics selected (the same plan index for every form): `generic`
(`execute(dict)`, which runs the selected plan), `pinned` (`execute_plan_at_index(dict, i)`) and
`ordered` (`execute_plan_at_index(tuple, i, tensor_uids=...)`, frontend 1.31+). torch.mm on A·B
alone is the baseline at every size. The cost per extra tensor of each form is the least-squares
slope of µs/call against N (bench/audit/packs.py; reports compute it from the measured rows)."""
from cudnn_hostbench.bench.cudnn_graphs.build import guard, guard_each, plan_name
from cudnn_hostbench.bench.cudnn_graphs.chain import MatmulAddChain
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

FUSED = (("any", 1),)       # one fused matmul-pointwise kernel; its name depends on the engine
LIGHT = (3, 5, 7, 11, 15)
HEAVY = (3, 4, 5, 7, 9, 11, 13, 15, 16)


def _sizes(options):
    return [f"p{n}" for n in (HEAVY if options.heavy else LIGHT)]


def build(ctx, size):
    torch = ctx.torch
    ch = MatmulAddChain(ctx, int(size.removeprefix("p")))
    a2, b2 = ch.a[0], ch.b[0]
    mm_ref = ch.a.float() @ ch.b.float()
    cases = {"torch_mm": Case(lambda: torch.mm(a2, b2), lambda out: rel_err(out, mm_ref), note="A·B only")}

    def cudnn_cases():
        bl = ch.build()
        i = bl.index
        g, ws, h = bl.graph, bl.workspace, ctx.handle
        vp = ch.dict_pack()
        if i is None:   # classic frontends: the heuristic's candidate runs, its index is not exposed
            return {"generic": ch.case(lambda: g.execute(vp, ws, handle=h), note=f"{len(vp)} tensors; heuristic's "
                                       "candidate plan"),
                    "pinned": Unsupported("needs the selected plan index (frontend >= 1.27), so all forms run one plan"),
                    "ordered": Unsupported("needs the ordered tensor_uids execute (frontend >= 1.31)")}
        note = f"{len(vp)} tensors; plan {i} '{plan_name(g, i)}' ({bl.engine}) for every form"
        out = {"generic": ch.case(lambda: g.execute(vp, ws, handle=h), note=note),
               "pinned": ch.case(lambda: g.execute_plan_at_index(vp, ws, i, handle=h), note=note)}

        def ordered():
            if not ctx.caps.ordered:
                raise Unsupported("needs the ordered tensor_uids execute (frontend >= 1.31)")
            return ch.case(bl.call(ch.buffers(), index=i), note=note)
        out["ordered"] = guard(ordered)
        return out
    cases.update(guard_each(cudnn_cases, ("generic", "pinned", "ordered")))
    return cases


PROBE = Probe(
    name="pack_size",
    doc=__doc__,
    variants=[
        Variant("torch_mm", "baseline", "torch.mm on A·B alone (cuBLAS)", kernels=(("gemm", 1),)),
        Variant("generic", "trap", "execute(dict) on the selected plan", kernels=FUSED),
        Variant("pinned", "info", "execute_plan_at_index(dict), same plan", kernels=FUSED),
        Variant("ordered", "fixed", "execute_plan_at_index(tuple, tensor_uids=...), same plan", kernels=FUSED),
    ],
    build=build,
    sizes=_sizes,
    prepare=prepare,
    # every cuDNN form runs the graph's selected plan: the slope is the call form's, not an engine's
    extra={"plans": {"generic": "selected", "pinned": "selected", "ordered": "selected"},
           "pairs": [("generic", "ordered", True)]},
)


def test_pack_size(hb_run):
    hb_run()
