"""The frontend's Python-side (open-source) engines against the cuDNN backend plan on the same
graph: the causal SDPA of the `sdpa` probe (bf16, [B, S, H, D] memory viewed as [B, H, S, D]).

Since 1.27 a pygraph's `create_execution_plans` returns ONE ranked list of python-engine plans
(FROST / CuTe DSL kernels, e.g. sdpa_fwd_prefill_sm90) and backend plans (`graph.plans`;
`cudnn.engines.engine_ids.is_python_engine(plan.engine_id)` tells them apart; cudnn/_pygraph.py,
cudnn/engines/heuristics.py). The probe builds the first python-engine plan and the first backend
plan that build, then executes each by index on the same graph, buffers and workspace
(`execute_plan_at_index`, ordered tensor_uids form where the frontend has it): `python_engine`
against `backend_plan`; `torch_sdpa` (F.scaled_dot_product_attention) is the baseline. The notes
name each plan and which one the graph's own heuristics put first. Where no python engine proposes
a plan (the FROST families need nvidia-cutlass-dsl; a --no-deps install has none) the python row
says so."""
import importlib.util

from cudnn_hostbench.bench.cudnn_graphs import calls
from cudnn_hostbench.bench.cudnn_graphs.build import (
    Built,
    as_output,
    build_steps,
    guard_each,
    new_graph,
    plan_name,
    sdpa_inference,
    tensor_of,
    workspace_for,
)
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.problems import nan_fill, sdpa_operands
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant, rel_err
from cudnn_hostbench.bench.measure.runfile.status import Unsupported

ROWS = ("python_engine", "backend_plan")


def _sizes(options):
    """The `sdpa` probe's sizes."""
    sizes = ["b4h32s2048d128", "b32h32s128d128"]
    if options.heavy:
        sizes += ["b1h32s8192d128", "b8h32s1024d64"]
    return sizes


def split_plans(plans, is_python) -> tuple[list, list]:
    """Indices of the ranked list's python-engine plans and backend plans, in rank order."""
    py = [i for i, p in enumerate(plans) if is_python(p.engine_id)]
    return py, [i for i in range(len(plans)) if i not in py]


def first_built(graph, indices) -> tuple[int | None, list]:
    """The first index of `indices` that builds (build_plan_at_index), and why the others did not."""
    failures = []
    for i in indices:
        try:
            graph.build_plan_at_index(i)
            return i, failures
        except Exception as e:  # noqa: BLE001 - a decline moves on, as the frontend's own walk does
            failures.append(f"[{i}] {plan_name(graph, i)}: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}")
    return None, failures


def _no_python_reason(found: list) -> str:
    why = "no python engine proposed a plan for this graph on this GPU"
    if importlib.util.find_spec("cutlass") is None:
        why += " (the FROST engines need nvidia-cutlass-dsl, which is not installed)"
    return why + (f"; declined: {'; '.join(found)}" if found else "")


def build(ctx, size):
    torch = ctx.torch
    F = torch.nn.functional
    ops = sdpa_operands(ctx, size)
    q, k, v, o, scale, ref = ops.q, ops.k, ops.v, ops.o, ops.scale, ops.ref
    poison = nan_fill(o)

    def check(out):
        return rel_err(out if isinstance(out, torch.Tensor) else o, ref)
    cases = {"torch_sdpa": Case(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale),
                                check, poison)}

    def engines():
        cudnn = ctx.cudnn
        if not calls.has_python_engines(cudnn):
            raise calls.needs("python_engines")
        from cudnn.engines.engine_ids import is_python_engine
        g = new_graph(ctx)
        Q, K, V = (tensor_of(ctx, g, t, nm) for t, nm in ((q, "Q"), (k, "K"), (v, "V")))
        Out = sdpa_inference(ctx, g, Q, K, V, use_causal_mask=True, attn_scale=scale)
        as_output(ctx, Out, o)
        build_steps(cudnn, g, upto="check_support")
        first = g.plans[0] if g.plans else None
        lead = "python engine" if first is not None and is_python_engine(first.engine_id) else "backend"
        py, be = split_plans(g.plans, is_python_engine)
        i_py, py_fail = first_built(g, py)
        i_be, be_fail = first_built(g, be)
        ws = workspace_for(ctx, max(g.get_workspace_size_plan_at_index(i) for i in (i_py, i_be) if i is not None)
                           if (i_py, i_be) != (None, None) else 1)
        built = Built(ctx, g, (Q, K, V, Out), ws)

        def row(i, side, failures):
            if i is None:
                return Unsupported(_no_python_reason(failures) if side == "python engine" else
                                   "no backend plan built: " + "; ".join(failures))
            run = built.call((q, k, v, o), index=i)
            return Case(lambda: run() or o, check, poison, plan=f"{i}:{plan_name(g, i)}",
                        note=f"{side} plan {i} '{plan_name(g, i)}' of {len(g.plans)} ({len(py)} python); the "
                             f"heuristics rank a {lead} plan first; {Built.call_form(ctx)}")
        return {"python_engine": row(i_py, "python engine", py_fail),
                "backend_plan": row(i_be, "backend", be_fail)}
    cases.update(guard_each(engines, ROWS))
    return cases


PROBE = Probe(
    name="py_engines",
    doc=__doc__,
    variants=[
        Variant("torch_sdpa", "baseline", "F.scaled_dot_product_attention(is_causal=True)", kernels=(("sdpa", 1),)),
        Variant("python_engine", "trap", "python-engine plan of the SDPA graph, executed by index"),
        Variant("backend_plan", "fixed", "backend plan of the same graph, executed by index", kernels=(("sdpa", 1),)),
    ],
    build=build,
    sizes=_sizes,
    baseline="torch_sdpa",
    prepare=prepare,
    extra={"plans": {"python_engine": "first python-engine plan that builds", "backend_plan": "first backend plan "
                     "that builds"},
           "pairs": [("python_engine", "backend_plan", False,
                      "the two rows ARE the engine choice: a python engine and a backend engine never share a plan")],
           "engine_rows": [("backend_plan", "python_engine")],
           "kernels_not_declared": {"python_engine": "a python engine's kernels are CuTe DSL kernels named by the "
                                                     "engine, which no kernel family rule is known to match yet"}},
)


def test_py_engines(hb_run):
    hb_run()
