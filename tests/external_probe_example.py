"""A probe of ones own, outside the harness repository: the installed plugin runs it (test_packaging copies
this file into a temporary folder; docs/probes.md shows it)."""
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant


def build(ctx, size):
    n = int(size)
    a, b = ctx.randn(n, n), ctx.randn(n, n)
    torch = ctx.torch
    ref = (a.double() @ b.double())
    return {"torch_mm": Case(lambda: torch.mm(a, b), check=lambda out: float((out.double() - ref).norm() / ref.norm()))}


PROBE = Probe(name="mine", doc=__doc__, variants=[Variant("torch_mm", "baseline", "torch.mm")], build=build,
              sizes=lambda options: list(options.sizes))


def test_mine(hb_run):
    hb_run()
