"""A plan built on aligned pointers, executed on offset (misaligned) views of the same shape,
stride and dtype: what cuDNN does with it, found in a child process first.

The frontend declares every tensor 16-byte aligned (the C++ Tensor_attributes default; the 1.32
Python API has no setter for it), so a cache keyed by (shape, stride, dtype) alone hands a plan
made for 16-byte-aligned pointers to a view that is not. cuDNN may refuse it at execute, run it
right, run it wrong, or fault in the kernel; a fault is sticky and would end the CUDA context of
the worker, so the first execute on an offset view happens in a child process (`trial`), and the
probe runs it in its own process only where the child saw no fault.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

OFFSET_ELEMS = 1           # a bf16 view one element in: 2 bytes past a 16-byte boundary
VERDICTS = ("fine", "wrong", "rejected", "faulted", "no trial")

# The child: the same frontend, GPU and problem, a plan built on aligned buffers, one execute on
# offset views. Prints one JSON line {"verdict", "detail"}.
CHILD = r"""
import json, sys
import torch
from cudnn_hostbench.bench.cudnn_graphs.load import load_cudnn
m, n, k, dev, off = (int(x) for x in sys.argv[1:6])
torch.cuda.set_device(dev)
cudnn = load_cudnn()
s = torch.cuda.Stream()
h = cudnn.create_handle()
cudnn.set_stream(handle=h, stream=s.cuda_stream)
bf, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
g = cudnn.pygraph(io_data_type=bf, intermediate_data_type=f32, compute_data_type=f32, handle=h)
a = (torch.randn(1, m, k, device="cuda") * k ** -0.5).bfloat16()
b = torch.randn(1, k, n, device="cuda").bfloat16()
c = torch.empty(1, m, n, device="cuda", dtype=torch.bfloat16)
A = g.tensor(name="A", dim=list(a.shape), stride=list(a.stride()), data_type=bf)
B = g.tensor(name="B", dim=list(b.shape), stride=list(b.stride()), data_type=bf)
C = g.matmul(A=A, B=B, compute_data_type=f32, name="mm")
C.set_output(True).set_data_type(bf).set_dim(list(c.shape)).set_stride(list(c.stride()))
g.validate(); g.build_operation_graph(); g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
g.check_support(); g.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)
ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
def shifted(t):
    base = torch.empty(t.numel() + off, dtype=t.dtype, device=t.device)
    v = base[off:].view(t.shape)
    v.copy_(t)
    return base, v
(_, ao), (_, bo), (_, co) = shifted(a), shifted(b), shifted(c)
co.fill_(float("nan"))
ref = a.float() @ b.float()
torch.cuda.synchronize()
def say(verdict, detail):
    print(json.dumps({"verdict": verdict, "detail": detail[:400]}), flush=True)
try:
    with torch.cuda.stream(s):
        g.execute({A: ao, B: bo, C: co}, ws, handle=h)
except Exception as e:
    say("rejected", f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    sys.exit(0)
try:
    s.synchronize()
except Exception as e:
    say("faulted", f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    sys.exit(0)
o = co.double(); r = ref.double()
err = float("inf") if not torch.isfinite(o).all() else float((o - r).norm() / r.norm())
say("fine" if err <= 2e-2 else "wrong", f"rel_err={err:.3g} against torch")
"""


@dataclass(frozen=True)
class Trial:
    verdict: str
    detail: str

    def describe(self, offset_bytes: int) -> str:
        what = {"fine": "cuDNN ran it fine", "wrong": "cuDNN ran it WRONG", "rejected": "cuDNN REJECTED it",
                "faulted": "the kernel FAULTED", "no trial": "the trial did not finish"}[self.verdict]
        return (f"plan built on 16-byte-aligned pointers, executed on views {offset_bytes} bytes past them: "
                f"{what} ({self.detail})")


def byte_alignment(ptr: int, cap: int = 256) -> int:
    """The largest power of two (up to cap) that divides ptr."""
    a = 1
    while a < cap and ptr % (a * 2) == 0:
        a *= 2
    return a


def offset_view(torch, t, elems: int = OFFSET_ELEMS):
    """A copy of contiguous t at `elems` elements past an allocation's start: same shape, stride and
    dtype, another alignment. Returns (storage, view); keep the storage alive with the view."""
    base = torch.empty(t.numel() + elems, dtype=t.dtype, device=t.device)
    view = base[elems:].view(t.shape)
    view.copy_(t)
    return base, view


def parse_child(rc: int, out: str, err: str) -> Trial:
    """The child's answer; a child that died or printed nothing is read from its exit and stderr."""
    for line in reversed(out.strip().splitlines()):
        try:
            got = json.loads(line)
        except ValueError:
            continue
        if isinstance(got, dict) and got.get("verdict") in VERDICTS:
            return Trial(got["verdict"], str(got.get("detail", "")))
    tail = " | ".join(err.strip().splitlines()[-3:])[:300]
    if rc < 0 or "misaligned" in err.lower() or "illegal address" in err.lower():
        return Trial("faulted", f"child exit {rc}: {tail}")
    return Trial("no trial", f"child exit {rc}: {tail or 'no output'}")


def _child_env() -> dict:
    """The parent's environment, with its import path first (the matrix runs a frontend from a
    folder on PYTHONPATH; the child must load the same one)."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


_trials: dict = {}


def trial(m: int, n: int, k: int, device: int, timeout_s: float = 180.0) -> Trial:
    """What cuDNN does with the offset views of this matmul, tried in a child process (once per
    process and shape)."""
    key = (m, n, k, device)
    if key not in _trials:
        args = [sys.executable, "-c", CHILD, str(m), str(n), str(k), str(device), str(OFFSET_ELEMS)]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, env=_child_env())
            _trials[key] = parse_child(done.returncode, done.stdout, done.stderr)
        except (OSError, subprocess.TimeoutExpired) as e:
            _trials[key] = Trial("no trial", f"{type(e).__name__}: {e}")
    return _trials[key]
