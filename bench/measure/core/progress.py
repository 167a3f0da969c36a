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


def on_terminal() -> bool:
    """Progress is for a person: only when stderr is a terminal (never in a pipe, a log or CI)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def step(msg: str) -> None:
    """A line per step of a long command, on stderr, only on a terminal."""
    if on_terminal():
        say(msg)


class Counter:
    """'<label> i/n' rewritten in place on one stderr line while a long loop runs, only on a
    terminal; `done()` ends the line. Call it with the number of items finished."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self.shown = label, total, on_terminal()

    def __call__(self, count: int) -> None:
        if self.shown:
            with uncaptured():
                print(f"\r{self.label} {count}/{self.total}", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            with uncaptured():
                print(file=sys.stderr, flush=True)
