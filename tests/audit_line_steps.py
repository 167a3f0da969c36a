"""CPU steps for the line sampler's tests (tests/test_audit_lines.py): each line does one kind of
work, so the tests can check where the sampler puts its time. Line numbers are looked up by the
marker comments, not hard-coded."""
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
