"""Follow values through the project's functions: the files a walk enters, in order.

A walk is the way some values take through the code (a run file's figures to the table; a store's
runs through the history check to its verdicts). `Follow` watches them with sys.setprofile: a call
to a project function that receives a watched value (or a part of one) is the walk entering that
function's file, and what such a call returns is watched from then on. A function is counted at its
first such call, as a reader meets it going down the code. `returns` counts the times the walk
enters a file it had already left: a reader following the figures has to go back there.

Rules, and why:
- A method's `self` is the value's own behaviour, not a step of the walk, so it is not followed
  (a run's `find`, a record's `summary`); except for `owners` (a store): what their methods return
  (the runs, the figures) is followed, and the call is a step.
- A frame's id is forgotten when it returns: Python reuses frame ids, and a later frame with the
  same id must not pass its return value off as the walk's.
- Parts: a returned list, tuple or dict has its items followed `deep` levels down (a store's runs
  are a list of rows).
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Follow:
    def __init__(self, watched=(), owners=(), deep: int = 0):
        self.ids: set[int] = set()
        self.keep: list = []            # every watched value stays alive, so no id is reused
        self.owners = {id(o) for o in owners}
        self.deep = deep
        self.seq: list[tuple[str, str]] = []   # (file, function): each file's first function, per entry
        self._seen: set[tuple[str, str]] = set()
        self._live: set[int] = set()
        self._files: dict[str, str | None] = {}
        self.add(*watched, *owners)

    def add(self, *values, deep: int | None = None) -> None:
        """Watch `values` and their parts (`deep` levels of list, tuple and dict items)."""
        for value in values:
            self._add(value, self.deep if deep is None else deep)

    def _add(self, value, deep: int) -> None:
        if value is None or isinstance(value, (int, float, str, bool, bytes)):
            return
        self.ids.add(id(value))
        self.keep.append(value)
        if deep > 0:
            items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
            for item in items:
                self._add(item, deep - 1)

    def _file(self, code) -> str | None:
        """The project file of `code`, relative to the root; None outside it, in tests, or generated."""
        name = code.co_filename
        if name not in self._files:
            real = os.path.realpath(name)
            inside = real.startswith(str(ROOT) + os.sep) and "/tests/" not in real and not name.startswith("<")
            self._files[name] = os.path.relpath(real, ROOT) if inside else None
        return self._files[name]

    def profile(self, frame, event, arg) -> None:
        if event == "return":
            if id(frame) in self._live:
                self._live.discard(id(frame))
                self.add(arg)
            return
        if event != "call":
            return
        code = frame.f_code
        rel = self._files.get(code.co_filename, "")   # every call passes here: the cheap test first
        if rel == "":
            rel = self._file(code)
        if rel is None or code.co_name.startswith("<"):
            return
        local = frame.f_locals
        if not any(id(v) in self.ids for k, v in local.items()
                   if (k != "self" or id(v) in self.owners) and not k.startswith(".")):
            return
        self._live.add(id(frame))
        fn = (rel, code.co_name)
        if fn not in self._seen:
            self._seen.add(fn)
            if not self.seq or self.seq[-1][0] != rel:
                self.seq.append(fn)

    def __enter__(self) -> Follow:
        import sys
        sys.setprofile(self.profile)
        return self

    def __exit__(self, *exc) -> None:
        import sys
        sys.setprofile(None)

    @property
    def files(self) -> list[str]:
        return [f for f, _ in self.seq]

    @property
    def returns(self) -> int:
        """Entries into a file the walk had already left."""
        return len(self.files) - len(set(self.files))

    def report(self, name: str) -> str:
        """'NAME: N files entered, R returns to a file already left' and the walk, file:function."""
        return (f"{name}: {len(set(self.files))} files entered, {self.returns} returns to a file already left\n  "
                + " -> ".join(f"{f}:{fn}" for f, fn in self.seq))
