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

# The child: the same frontend and GPU; per problem (m,n,k), in the order given, a plan built on
# aligned buffers and one execute on offset views. Prints one JSON line {"shape", "verdict",
# "detail"} per problem; a fault is sticky, so it is the child's last line (or its death).
CHILD = r"""
import json, sys
import torch
from cudnn_hostbench.bench.cudnn_graphs.load import load_cudnn
dev, off = int(sys.argv[1]), int(sys.argv[2])
torch.cuda.set_device(dev)
cudnn = load_cudnn()
s = torch.cuda.Stream()
h = cudnn.create_handle()
cudnn.set_stream(handle=h, stream=s.cuda_stream)
bf, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT
def say(shape, verdict, detail):
    print(json.dumps({"shape": shape, "verdict": verdict, "detail": detail[:400]}), flush=True)
def first_line(e):
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
def one(m, n, k):
  shape = [m, n, k]
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
  try:
      with torch.cuda.stream(s):
          g.execute({A: ao, B: bo, C: co}, ws, handle=h)
  except Exception as e:
      say(shape, "rejected", first_line(e))
      try:
          torch.cuda.synchronize()    # a context the refusal left broken ends this child
      except Exception:
          sys.exit(0)
      return
  try:
      s.synchronize()
  except Exception as e:
      say(shape, "faulted", first_line(e))
      sys.exit(0)
  o = co.double(); r = ref.double()
  err = float("inf") if not torch.isfinite(o).all() else float((o - r).norm() / r.norm())
  say(shape, "fine" if err <= 2e-2 else "wrong", f"rel_err={err:.3g} against torch")
for arg in sys.argv[3:]:
    one(*(int(x) for x in arg.split(",")))
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


def offset_view(torch, tensor, elems: int = OFFSET_ELEMS):
    """A copy of contiguous `tensor` at `elems` elements past an allocation's start: same shape, stride and
    dtype, another alignment. Returns (storage, view); keep the storage alive with the view."""
    base = torch.empty(tensor.numel() + elems, dtype=tensor.dtype, device=tensor.device)
    view = base[elems:].view(tensor.shape)
    view.copy_(tensor)
    return base, view


def parse_child(rc: int, out: str, err: str, shapes: list) -> dict:
    """The child's answer per shape, {(m, n, k): Trial}. A child that died on its first shape gives
    that shape the verdict of its exit and stderr; a death later in its list may be an earlier
    shape's aftermath, so the shapes it did not answer get none here (a child of their own tries
    them)."""
    got: dict = {}
    for line in out.strip().splitlines():
        try:
            one = json.loads(line)
        except ValueError:
            continue
        if isinstance(one, dict) and one.get("verdict") in VERDICTS and isinstance(one.get("shape"), list):
            got[tuple(one["shape"])] = Trial(one["verdict"], str(one.get("detail", "")))
    wanted = [tuple(x) for x in shapes]
    missed = [x for x in wanted if x not in got]
    if missed and missed[0] == wanted[0]:
        got[missed[0]] = _died(rc, err)
    return {x: got[x] for x in wanted if x in got}


def _died(rc: int, err: str) -> Trial:
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


def trial(m: int, n: int, k: int, device: int, also: tuple = (), timeout_s: float = 180.0) -> Trial:
    """What cuDNN does with the offset views of this matmul, tried in a child process once per
    process and shape. The first child also tries `also` (the other shapes the probe will build in
    this process), so a run pays one child's start (torch, CUDA, cuDNN: seconds) and not one per
    size; a shape it left unanswered (it died before) gets a child of its own when asked for."""
    key = (m, n, k, device)
    if key not in _trials:
        shapes = [(m, n, k)] + [tuple(x) for x in also if (*x, device) not in _trials and tuple(x) != (m, n, k)]
        for shape, got in _run_child(shapes, device, timeout_s).items():
            _trials[(*shape, device)] = got
    return _trials[key]


def _run_child(shapes: list, device: int, timeout_s: float) -> dict:
    args = [sys.executable, "-c", CHILD, str(device), str(OFFSET_ELEMS), *(",".join(map(str, x)) for x in shapes)]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s * len(shapes),
                              env=_child_env())
        return parse_child(done.returncode, done.stdout, done.stderr, shapes)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {shapes[0]: Trial("no trial", f"{type(e).__name__}: {e}")}
