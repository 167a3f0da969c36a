"""Kernel signatures: the kernels each call of a variant must run, as (family, count) pairs, and the
device-mode check that compares them with what torch.profiler saw.

A count is an int, or a (low, high) pair where a library may legitimately vary with the size (a
split-K GEMM adds a reduce kernel at small sizes). The family "any" takes whatever kernels the
named families leave over. Memset/Memcpy rows are not kernels and are never counted.
"""
from __future__ import annotations

from collections import Counter

FAMILIES = ("gemm", "copy", "reduce", "pointwise", "conv", "sdpa", "norm", "any")

# first match wins: conv before gemm (implicit GEMM), fused matMul graphs stay gemm, reduce before
# the generic elementwise names. Names seen on the H200 are in reports/reference/h200/run.json.
_RULES = (
    ("sdpa", ("sdpa", "flash", "fmha", "attention", "attn")),
    ("conv", ("fprop", "dgrad", "wgrad", "implicit_gemm", "conv", "cutlass__5x_cudnn::kernel")),
    ("reduce", ("splitkreduce", "reduce_kernel", "reduce", "reduction_kernel")),
    ("gemm", ("gemm", "gemv", "nvjet", "matmul", "cutlass", "xmma")),
    ("norm", ("layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "norm_kernel")),
    ("copy", ("copy", "transpose", "nchwtonhwc", "nhwctonchw", "cat_", "catarray")),
    ("pointwise", ("elementwise", "pointwise", "fill", "relu", "gelu", "silu", "add", "mul")),
)


def family_of(name: str) -> str:
    """The family of a kernel name (full or shortened); 'other' when no rule knows it."""
    n = name.lower()
    for fam, keys in _RULES:
        if any(k in n for k in keys):
            return fam
    return "other"


def is_kernel(name: str) -> bool:
    return not (name.startswith("Memcpy") or name.startswith("Memset"))


def families(names: Counter, calls: int) -> dict:
    """{family: kernels per call} from {kernel name: launches over `calls` calls}."""
    out: Counter[str] = Counter()
    for name, c in names.items():
        if is_kernel(name):
            out[family_of(name)] += c
    return {f: c / calls for f, c in out.items()}


def _bounds(count) -> tuple:
    if isinstance(count, tuple):
        return count
    return (count, count)


def validate(kernels) -> None:
    """Raises ValueError for a malformed declaration."""
    if not isinstance(kernels, tuple):
        raise ValueError(f"kernels must be a tuple of (family, count) pairs, not {type(kernels).__name__}")
    seen = set()
    for pair in kernels:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ValueError(f"kernel declaration {pair!r} is not a (family, count) pair")
        fam, count = pair
        if fam not in FAMILIES:
            raise ValueError(f"kernel family {fam!r} not in {FAMILIES}")
        if fam in seen:
            raise ValueError(f"kernel family {fam!r} declared twice")
        seen.add(fam)
        lo, hi = _bounds(count) if isinstance(count, (int, tuple)) else (None, None)
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi) or isinstance(count, bool):
            raise ValueError(f"kernel count {count!r} of {fam!r} is not an int >= 0 or a (low, high) pair")


def expected_text(kernels) -> str:
    def one(fam, count):
        lo, hi = _bounds(count)
        n = str(lo) if lo == hi else f"{lo}-{hi}"
        return f"{n} {fam}"
    return " + ".join(one(f, c) for f, c in kernels)


def observed_text(fams: dict) -> str:
    return ", ".join(f"{_num(c)} {f}" for f, c in sorted(fams.items(), key=lambda x: (-x[1], x[0]))) or "none"


def _num(value: float) -> str:
    return f"{value:g}" if abs(value - round(value)) > 1e-9 else str(int(round(value)))


def mismatch(kernels, fams: dict) -> str | None:
    """None when the per-call family counts `fams` fit the declaration, else the status text,
    e.g. 'kernel signature: ran 3 kernels/call (1 copy, 1 gemm, 1 reduce), expected 1 gemm'."""
    if not kernels:
        return None
    total = sum(fams.values())
    named = 0.0
    ok = True
    for fam, count in kernels:
        if fam == "any":
            continue
        lo, hi = _bounds(count)
        got = fams.get(fam, 0.0)
        named += got
        ok = ok and lo - 1e-6 <= got <= hi + 1e-6
    lo_any, hi_any = (0, 0)
    for fam, count in kernels:
        if fam == "any":
            lo_any, hi_any = _bounds(count)
    rest = total - named
    ok = ok and lo_any - 1e-6 <= rest <= hi_any + 1e-6
    if ok:
        return None
    return (f"kernel signature: ran {_num(total)} kernel(s)/call ({observed_text(fams)}), "
            f"expected {expected_text(kernels)}")


# the common signature: one GEMM, plus the split-K reduce kernel where the plan splits K
GEMM = (("gemm", 1), ("reduce", (0, 1)))


def gemms(count: int) -> tuple:
    """`count` GEMMs per call, each possibly split-K."""
    return (("gemm", count), ("reduce", (0, count)))
