"""Each mode's own floor: what the harness adds around a call that does (almost) nothing."""
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant


def _sizes(options):
    return ["-"]


def build(ctx, size):
    x = ctx.torch.ones(1, device=ctx.device)
    return {
        # eager's loop overhead; in graph mode nothing is captured, so only eager applies
        "noop": Case(fn=lambda: None),
        # one 1-element kernel: the floor of graph replay (in-graph launch) and of device time
        "tiny_kernel": Case(fn=lambda: x.add_(1.0)),
    }


PROBE = Probe(
    name="noop",
    doc=__doc__,
    variants=[
        Variant("noop", "floor", "empty Python callable (loop overhead)", modes=("eager",)),
        Variant("tiny_kernel", "floor", "1-element in-place add (one tiny kernel)", kernels=(("pointwise", 1),)),
    ],
    build=build,
    sizes=_sizes,
    baseline=None,
)


def test_noop(hb_run):
    hb_run()
