"""Progress lines on the user's terminal, also from inside a pytest test.

pytest captures a test's stdout and stderr (and, through the file descriptors, a child
process's) and shows them only when the test fails. The suite runs inside the first probe test,
so its progress would vanish; the plugin installs pytest's own capture-lifting context here.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Callable, ContextManager

_lift: Callable[[], ContextManager] | None = None


def install(lift: Callable[[], ContextManager] | None) -> None:
    """`lift()` must return a context in which output reaches the terminal (pytest's
    `CaptureManager.global_and_fixture_disabled`); None restores plain printing."""
    global _lift
    _lift = lift


def uncaptured() -> ContextManager:
    return _lift() if _lift else contextlib.nullcontext()


def say(msg: str) -> None:
    with uncaptured():
        print(msg, file=sys.stderr, flush=True)
