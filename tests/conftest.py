"""Every test runs against a temporary history store, and the suite fails if a person's default
store changed while it ran (tests/store_guard.py)."""
from __future__ import annotations

import pytest

from tests import store_guard


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
