"""examples/library_op_integration.py with its findings fixed: the same two cuDNN matmuls
(examples/direct_op_integration.py's DirectMatmul: graph built once, strided W.t() view, stream
set only when it changes, ordered execute) called directly in eager code instead of through a
torch.library op, each with its output and pack made once, and the torch.mm between them writing
into the second layer's bound input. The audit's projection for library_op_integration.py is
checked against this step's plain loop.
    hostbench audit examples/library_op_fixed_integration.py:make_step

The output buffers are reused: read them before the next call (or copy them) if you keep them.
"""
import torch
from direct_op_integration import DirectMatmul  # the audit puts this file's folder on sys.path
from library_op_integration import M, N, reference, weights


def make_step():
    x, w1, w2, w_mid, b1, b2 = weights()
    mid = torch.empty(1, M, N, device="cuda", dtype=torch.bfloat16)   # layer 2's input, bound once
    layer1 = DirectMatmul(x, w1.t().unsqueeze(0))
    layer2 = DirectMatmul(mid, w2.t().unsqueeze(0))
    h, mid_rows = layer1.out[0], mid[0]                      # views made once

    def step():
        layer1().add_(b1).relu_()                            # cuDNN, bias + ReLU in place
        torch.mm(h, w_mid, out=mid_rows)                     # cuBLAS, into layer 2's input
        return layer2().add_(b2).relu_()

    torch.testing.assert_close(step()[0].float(), reference(x, w1, w2, w_mid, b1, b2).float(), rtol=3e-2, atol=3e-2)
    return step
