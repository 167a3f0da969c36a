"""Every test runs against a temporary history store, and the suite fails if a person's default
store changed while it ran (tests/store_guard.py), or if it left anything new in the checkout or in
the temporary folder (tests/checkout.py)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests import checkout, store_guard


@pytest.fixture(scope="session", autouse=True)
def temporary_history_store(tmp_path_factory):
    before = store_guard.snapshot(store_guard.default_stores())
    folder = tmp_path_factory.mktemp("default-store")
    with pytest.MonkeyPatch.context() as mp:   # subprocesses (pytest runs, the version matrix) inherit it
        mp.setenv("HOSTBENCH_STORE", store_guard.temporary_url(folder))
        yield folder
    problems = store_guard.changed(before)
    if problems:
        pytest.fail("the test suite touched a person's history store: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind(tmp_path_factory):
    """The session's temporary folder is one of its own ($TMPDIR, inherited by every command the
    tests start; pytest's tmp_path stays where pytest keeps it), empty again at the end; and the
    checkout holds nothing new. Its own folder, not /tmp: other sessions may run at the same time."""
    tmp_path_factory.getbasetemp()   # pytest's folder first, where it always is
    in_checkout = checkout.new_in_checkout()
    private = Path(tempfile.mkdtemp(prefix="hostbench-tests-"))
    private.chmod(0o711)   # the PostgreSQL server runs as `postgres` in a folder under it
    old = tempfile.tempdir
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(private))
        tempfile.tempdir = str(private)
        try:
            yield private
        finally:
            tempfile.tempdir = old
    # torch keeps its per-user compile cache there on purpose, as pytest keeps its folders
    left = sorted(p.name for p in private.iterdir() if not p.name.startswith("torchinductor_"))
    shutil.rmtree(private, ignore_errors=True)
    new = sorted(checkout.new_in_checkout() - in_checkout)
    problems = ([f"left in the temporary folder: {', '.join(left)}"] if left else []) + \
               ([f"new in the checkout: {', '.join(new)}"] if new else [])
    if problems:
        pytest.fail("the test suite left debris: " + "; ".join(problems), pytrace=False)
