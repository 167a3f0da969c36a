"""A two-layer step that checks its output for non-finite values every step, with a host sync
(`.item()`), the way training and serving loops guard against NaNs: the fixed cuDNN linear layer
(examples/fixed_integration.py), a torch.mm into the second weight, ReLU, then the check. 2048 ×
4096 × 4096 bf16 per layer, so the GPU has work queued when the host reaches the sync.
    hostbench audit examples/sync_check_integration.py:make_step

Traps, one per marked line: the second weight copied from its transposed view every step
(`W.t().contiguous()`), an index view per step, a new output per step. The sync is the user's
own and stays in the fixed version (examples/sync_check_fixed_integration.py): fixed, the host
reaches it sooner and waits the longer, which the audit's projection prices from its timeline.
"""
import torch
from fixed_integration import FixedLinear  # the audit puts this file's folder on sys.path

M, K, N = 2048, 4096, 4096


def weights():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16)
    w1 = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    w2 = torch.randn(N, N, device="cuda", generator=gen).mul_(N ** -0.5).to(torch.bfloat16)   # nn.Linear's [out, in]
    return x, w1, w2


def reference(x, w1, w2):
    h = (x[0].float() @ w1.float().t()).to(torch.bfloat16).float()
    return torch.relu(h @ w2.float().t())


def check(y):
    if not torch.isfinite(y).all().item():                   # host sync every step: kept when fixed
        raise FloatingPointError("non-finite output")


def make_step():
    x, w1, w2 = weights()
    layer = FixedLinear(w1)

    def step():
        w2_t = w2.t().contiguous()                           # a transposed copy of the weight, every step
        h = layer(x)[0]                                      # cuDNN; an index view per step
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)   # a new output per step
        torch.clamp(torch.mm(h, w2_t), min=0, out=y)         # cuBLAS, then ReLU into y
        check(y)
        return y

    torch.testing.assert_close(step().float(), reference(x, w1, w2), rtol=3e-2, atol=3e-2)
    return step
