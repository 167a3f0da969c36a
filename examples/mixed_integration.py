"""A step that mixes the fixed cuDNN linear layer with torch ops, and hits the audit's findings that
are not about the frontend calls themselves, one per marked line:
    hostbench audit examples/mixed_integration.py:make_step

- allocations made inside ops (torch.mm outputs, `+`, a layout conversion), none explicit;
- cuDNN and cuBLAS alternating: 4 switches per step, the one into the next step included;
- a layout conversion into channels_last and a same-layout copy into a buffer;
- a host sync (`.item()`), which also keeps the step out of a CUDA graph.
"""
import torch
from fixed_integration import FixedLinear  # the audit puts this file's folder on sys.path

M = N = K = 256


def make_step():
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1, M, K, device="cuda", generator=gen).mul_(K ** -0.5).to(torch.bfloat16)
    w1 = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    w2 = torch.randn(N, N, device="cuda", generator=gen).mul_(N ** -0.5).to(torch.bfloat16)
    img = torch.randn(8, 64, 14, 14, device="cuda", generator=gen).to(torch.bfloat16)   # NCHW
    buf = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    layer = FixedLinear(w1)

    def step():
        z = torch.mm(layer(x)[0], w2)                            # cuDNN, then cuBLAS (new output)
        z = z + torch.mm(layer(x)[0], w2)                        # cuDNN, cuBLAS again: alternation
        img_cl = img.contiguous(memory_format=torch.channels_last)   # NCHW → NHWC every step
        buf.copy_(z)                                             # a copy the producer could have avoided
        if not torch.isfinite(z).all().item():                   # host sync: no CUDA graph
            raise FloatingPointError("non-finite output")
        return buf, img_cl

    ref = (x[0].float() @ w1.float().t()).to(torch.bfloat16).float() @ w2.float()
    step()
    torch.testing.assert_close(buf.float(), 2 * ref, rtol=3e-2, atol=3e-2)
    return step
