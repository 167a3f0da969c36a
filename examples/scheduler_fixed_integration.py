"""scheduler_integration.py with the guide's fixes: each layer is fixed_integration's FixedLinear
(graph built once per key, plan autotuned and pinned, stream set only when it changes, pack and
output made once); ReLU runs in place on the first layer's output buffer. The logged max (float(),
a host sync) stays: it is the user's own.
"""
import torch
from fixed_integration import FixedLinear
from scheduler_integration import reference, weights


def make_step():
    x, w1, w2 = weights()
    l1, l2 = FixedLinear(w1), FixedLinear(w2)
    peaks = []

    def step():
        h = torch.relu_(l1(x))
        y = l2(h)
        peaks.append(float(y.abs().amax()))
        del peaks[:-1]
        return y

    torch.testing.assert_close(step()[0], reference(x, w1, w2), rtol=3e-2, atol=3e-2)
    return step
