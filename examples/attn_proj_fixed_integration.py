"""attn_proj_integration.py with its cuDNN integration traps fixed by hand, same work:

    qkv = x @ W_qkv.t()            cuDNN matmul, [1, M, D] x [1, D, 3D], W bound as the strided W.t() view
    qkv = silu(qkv)                torch, in place
    o   = qkv @ W_o.t()            cuDNN matmul, [1, M, 3D] x [1, 3D, D]
    o  += x                        torch residual add
    loss = o.float().mean().item() host sync, the user's own: it stays

examples/fixed_integration.py's FixedLinear does the fixing: each graph is built once per
(shape, stride, dtype) at set-up (make_step's first call), its plan autotuned once and pinned
with execute_plan_at_index, the stream set only when the cheaply read raw stream changes, the
variant pack, workspace and output built once (the same input object skips the key), and the
weight bound as its strided W.t() view with no copy kernel.

The layers' outputs are reused buffers: read `o` before the next call (or copy it) if you keep it.
"""
import torch
import torch.nn.functional as F
from attn_proj_integration import reference, weights  # this file's folder is on sys.path
from fixed_integration import FixedLinear  # examples/ is on sys.path


def make_step():
    x, w_qkv, w_o = weights()
    qkv_proj = FixedLinear(w_qkv)                    # binds w_qkv.t() as a view, no copy
    out_proj = FixedLinear(w_o)

    def step():
        h = qkv_proj(x)                              # cuDNN, into the layer's own buffer
        F.silu(h, inplace=True)                      # torch; h stays the same object every call
        o = out_proj(h)                              # cuDNN; same input object -> cached pack
        o.add_(x)                                    # torch residual
        loss = o.float().mean().item()               # host sync every step: the user's own, kept
        return o, loss

    out, loss = step()                               # builds, autotunes and pins both graphs
    torch.testing.assert_close(out[0].float(), reference(x, w_qkv, w_o), rtol=3e-2, atol=3e-2)
    if loss != loss:
        raise FloatingPointError("non-finite loss")
    return step
