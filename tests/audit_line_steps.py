"""CPU steps for the line sampler's tests (tests/test_audit_lines.py): each line does one kind of
work, so the tests can check where the sampler puts its time. Line numbers are looked up by the
marker comments, not hard-coded."""
import time

import torch

A = torch.randn(96, 96)
W = torch.randn(96, 96)


def python_work():
    s = 0
    for i in range(300):                 # marker: python
        s += i
    return s


def step():
    python_work()                        # marker: calls-python
    torch.mm(A, W)                       # marker: torch-op
    sum(range(3000))                     # marker: builtin
    return A


def tiny_step():
    return None


def raising_step():
    raise ValueError("boom")


def line_of(marker: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# marker: {marker}"):
                return n
    raise KeyError(marker)


# a trap step and its fixed version (CPU): the trap rebuilds a cache key and makes views per call
B = torch.randn(96, 96)
_CACHE = {}


def keyed_step():
    key = (tuple(A.shape), tuple(A.stride()), A.dtype)     # marker: key
    w_t = B.t().unsqueeze(0)                               # marker: views
    fn = _CACHE.setdefault(key, torch.matmul)
    return fn(A, w_t[0])                                   # marker: work


B_T = B.t()


def keyed_step_fixed():
    return torch.matmul(A, B_T)


# a step that waits for a device every step, and its fixed version (CPU): the device is a queue on
# the host clock, so its work runs while the host goes on, and `.item()` waits for it to drain
class FakeDevice:
    """launch(us) queues work that runs in order from its launch; item() waits until the queue is
    empty, as a CUDA `.item()` does (its fixed cost here: the call)."""

    def __init__(self):
        self.done_at = 0.0

    def launch(self, us):
        self.done_at = max(self.done_at, time.perf_counter()) + us * 1e-6

    def item(self):
        while time.perf_counter() < self.done_at:
            pass
        return 0.0


DEV = FakeDevice()
DEVICE_US = 300.0


def synced_step():
    DEV.launch(DEVICE_US)                                  # marker: launch
    key = (tuple(A.shape), tuple(A.stride()), A.dtype)     # marker: sync-key
    views = [B.t().unsqueeze(0) for _ in range(80)]        # marker: sync-views
    torch.matmul(A, views[0][0])                           # marker: sync-work
    return key, DEV.item()                                 # marker: sync


def synced_step_fixed():
    DEV.launch(DEVICE_US)
    torch.matmul(A, B_T)
    return DEV.item()


BIG = torch.randn(320, 320)
SMALL = torch.randn(4)


def long_then_cheap():
    BIG @ BIG                                              # marker: long-op
    torch.isfinite(SMALL)                                  # marker: cheap
    return SMALL


# an op registered with torch.library (define + a CPU impl) reached through torch.ops, twice, with a
# torch.mm between, and the same work called directly: the dispatcher is the only difference (the
# audit's fix); fixed into buffers made once too, the step would also lose three allocations the
# audit does not price, and on a slow CPU state those read 10-14 µs of a 41 µs step (CPU, 2 cores)
_LIB = torch.library.Library("hostbench_test", "DEF")
_LIB.define("lin_relu(Tensor x, Tensor w) -> Tensor")


def _lin_relu(x, w):
    return torch.mm(x, w).relu_()                          # marker: op-body


_LIB.impl("lin_relu", _lin_relu, "CPU")
S, SW = torch.randn(64, 64), torch.randn(64, 64)      # small: the dispatcher is a third of the step


def op_step():
    h = torch.ops.hostbench_test.lin_relu(S, SW)           # marker: op-1
    h = torch.mm(h, SW)                                    # marker: op-mid
    return torch.ops.hostbench_test.lin_relu(h, SW)        # marker: op-2


def op_step_fixed():
    h = _lin_relu(S, SW)
    h = torch.mm(h, SW)
    return _lin_relu(h, SW)


# a timed call (an "execute") reached through a custom_op: 14 frames deep, where the timed call's
# bookkeeping (walking that stack) costs more than the step's own work
class FakeGraph:
    def execute(self, x):
        return torch.mm(x, x)


GRAPH = FakeGraph()


@torch.library.custom_op("hostbench_test::deep", mutates_args=(), device_types="cpu")
def _deep(x: torch.Tensor) -> torch.Tensor:
    return GRAPH.execute(x)                                # marker: deep-execute


@_deep.register_fake
def _(x):
    return torch.empty_like(x)


X16 = torch.randn(16, 16)


def deep_step():
    return _deep(X16)                                      # marker: deep-op
