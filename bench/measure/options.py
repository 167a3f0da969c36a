"""What a suite run asks of the probes: sizes, token counts, heavy sweeps, timing modes.

Built once from the command line by the pytest plugin; probes' `sizes(options)` read it.
"""
from __future__ import annotations

from dataclasses import dataclass

from cudnn_hostbench.bench.measure.records import CALL_MODES

DEFAULT_SIZES = ("256", "1024", "4096")
DEFAULT_TOKENS = ("256", "4096")
DEFAULT_MODES = CALL_MODES


def split(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").split(",") if s.strip())


@dataclass(frozen=True)
class SuiteOptions:
    sizes: tuple = DEFAULT_SIZES       # cube sizes M=N=K of the matmul probes
    tokens: tuple = DEFAULT_TOKENS     # token counts of the transpose probe
    heavy: bool = False                # every plan, every size
    modes: tuple = DEFAULT_MODES       # timing modes; host (build-time) rows always run
    root: str = "."                    # the project folder: results/ (e.g. autotune winners) lives there

    @classmethod
    def from_config(cls, config) -> "SuiteOptions":
        return cls(sizes=split(config.getoption("--hb-sizes")), tokens=split(config.getoption("--hb-tokens")),
                   heavy=bool(config.getoption("--hb-heavy")), modes=split(config.getoption("--hb-modes")),
                   root=str(config.rootpath))
