"""A temporary folder that goes when the command ends: normally, on an error, on Ctrl-C, and on
SIGTERM or SIGHUP (turned into KeyboardInterrupt while the folder exists, so every `finally` runs).

A KeyboardInterrupt raised by a signal handler can be swallowed: raised inside a `__del__` or a
weakref callback, Python prints it and goes on (CI, oldest versions: `history-bench` SIGTERMed
mid-ingest was still running 60 s later). So a signal also arms a timer: a command still unwinding
GRACE_S later has its folders removed and ends with 130, as Ctrl-C ends it."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

GRACE_S = 10.0
_live: set[Path] = set()
_timer: list[threading.Timer] = []             # armed by the first signal


def stop_requested() -> bool:
    """A signal came while a folder was live: long loops check this, in case its exception was lost."""
    return bool(_timer)


def _interrupt(signum, frame):
    if not _timer:
        t = threading.Timer(GRACE_S, _end, (signum,))
        t.daemon = True
        t.start()
        _timer.append(t)
    raise KeyboardInterrupt(f"signal {signum}")


def _end(signum) -> None:
    for folder in list(_live):
        shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(Exception):
        sys.stderr.write(f"hostbench: interrupted (signal {signum}); still unwinding after {GRACE_S:g} s, "
                         "ended; nothing half-written\n")
        sys.stderr.flush()
    os._exit(130)


@contextlib.contextmanager
def scratch(prefix: str):
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    _live.add(folder)
    old = {}
    if threading.current_thread() is threading.main_thread():   # handlers can be set only there
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, _interrupt)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _live.discard(folder)
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if old and not _live:                  # unwound in time: the timer has nothing left to do
            for t in _timer:
                t.cancel()
            _timer.clear()
