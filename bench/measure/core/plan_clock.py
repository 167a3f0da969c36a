"""Seconds this process spent inside cuDNN's build steps (validate .. build_plans).

The runner's "building" phase also holds random data, torch references and numerics checks;
this clock says how much of it was cuDNN planning, the only part that sharing plans across
worker processes could take away. The cuDNN helpers add to it; the runner reads it per block.
"""
from __future__ import annotations

_seconds = [0.0]


def add(seconds: float) -> None:
    _seconds[0] += seconds


def total() -> float:
    return _seconds[0]
