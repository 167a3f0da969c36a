"""What a suite run asks of the probes: sizes, token counts, heavy sweeps, timing modes.

Built once from the command line by the pytest plugin; probes' `sizes(options)` read it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudnn_hostbench.bench.measure.runfile.records import CALL_MODES

DEFAULT_SIZES = ("256", "1024", "4096")
DEFAULT_TOKENS = ("256", "4096")
DEFAULT_MODES = CALL_MODES


class OptionError(ValueError):
    """A bad --hb-* value; its text is the one usage line (the plugin raises it as pytest.UsageError)."""


_SIZE = re.compile(r"[1-9][0-9]*(x[1-9][0-9]*){0,2}")


def _list(name: str, text, accepted: str, accepts) -> tuple[str, ...]:
    items = split(text)
    bad = [x for x in items if not accepts(x)]
    if not items or bad or any(not s.strip() for s in str(text).split(",")):
        what = f"{bad[0]!r} is not" if bad else f"{text!r} is not"
        raise OptionError(f"{name}: {what} valid; accepted: {accepted}")
    return items


def validate(sizes, tokens, modes, rounds) -> None:
    """Raises OptionError naming the option and the accepted values for the first bad one."""
    _list("--hb-sizes", sizes, "a comma-separated list of positive integers N or NxNxN (e.g. 256,1024)",
          _SIZE.fullmatch)
    _list("--hb-tokens", tokens, "a comma-separated list of positive integers (e.g. 256,4096)",
          re.compile(r"[1-9][0-9]*").fullmatch)
    _list("--hb-modes", modes, f"a comma-separated list of {', '.join(CALL_MODES)}", lambda m: m in CALL_MODES)
    if not isinstance(rounds, int) or rounds < 1:
        raise OptionError(f"--hb-rounds: {rounds!r} is not valid; accepted: an integer of 1 or more")


def check_config(config) -> None:
    """validate() on a pytest config's --hb-* options."""
    validate(config.getoption("--hb-sizes"), config.getoption("--hb-tokens"), config.getoption("--hb-modes"),
             config.getoption("--hb-rounds"))


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
