"""A temporary folder that goes when the command ends: normally, on an error, on Ctrl-C, and on
SIGTERM or SIGHUP (turned into KeyboardInterrupt while the folder exists, so every `finally` runs)."""
from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
import threading
from pathlib import Path


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def scratch(prefix: str):
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    old = {}
    if threading.current_thread() is threading.main_thread():   # handlers can be set only there
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, _interrupt)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for sig, handler in old.items():
            signal.signal(sig, handler)
