"""Probe definitions: a probe names its variants up front and builds them per size at run time."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from cudnn_hostbench.bench.measure.core.kernels import validate as validate_kernels
from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES

ROLES = ("baseline", "trap", "fixed", "floor", "private", "info")


@dataclass(frozen=True)
class Variant:
    name: str
    role: str
    label: str
    ops_per_call: int = 1          # >1: figures are per op (unit us/op)
    modes: tuple = CALL_MODES
    kernels: tuple = ()            # the kernels each call must run: (family, count) pairs; () = not declared

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"variant {self.name}: role {self.role!r} not in {ROLES}")
        try:
            validate_kernels(self.kernels)
        except ValueError as e:
            raise ValueError(f"variant {self.name}: {e}") from None

    @property
    def unit(self) -> str:
        return "us/op" if self.ops_per_call > 1 else "us/call"


@dataclass
class Case:
    """One built variant: `fn` makes one call and returns its output (or None).

    `check(out)` returns the relative error against the torch reference, or None when there is
    nothing to compare; `poison()` overwrites reused outputs so an unwritten output fails.
    """
    fn: Callable[[], Any]
    check: Callable[[Any], float | None] = lambda out: None
    poison: Callable[[], None] = lambda: None
    tol: float = 2e-2
    note: str = ""
    plan: str = ""      # the cuDNN plan it runs ('<index>:<engine and knobs>'), where it runs one


@dataclass
class Probe:
    name: str
    doc: str
    variants: list
    build: Callable                    # build(ctx, size) -> {variant name: Case | Exception}
    sizes: Callable                    # sizes(SuiteOptions) -> list of size labels
    baseline: str | None = "torch_mm"
    # prepare(ctx) -> the context build and measure get (e.g. the GPU context with cuDNN loaded);
    # raising Unsupported marks every variant
    prepare: Callable | None = None
    extra: dict = field(default_factory=dict)
    # the first size's eager ratios are a headline figure (host-bound, trap against fix): its
    # eager cycles get their own wait for the host's fast state (hoststate.HostState.focused)
    focus: bool = False

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"{self.name} has no variant {name}")

    def focus_size(self, options) -> str | None:
        """The size whose eager cycles are a focus block, if this probe has one."""
        sizes = self.sizes(options) if self.focus else []
        return sizes[0] if sizes else None

    def context(self, ctx):
        return self.prepare(ctx) if self.prepare is not None else ctx

    def cases(self, options) -> list[tuple]:
        """(size, variant, mode) triples in collection order."""
        return [(s, v.name, m) for s in self.sizes(options) for v in self.variants for m in v.modes]


def rel_err(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64; NaN anywhere fails."""
    import torch
    o = out.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    if o.shape != r.shape:
        o = o.reshape(r.shape)
    if not torch.isfinite(o).all():
        return float("inf")
    den = torch.linalg.vector_norm(r).item() or 1.0
    return torch.linalg.vector_norm(o - r).item() / den
