"""The PostgreSQL fixtures: a real server (scripts/maint/pg_server.py) for the session, and a fresh store
URL per test on each engine. Without the binaries the tests skip with a reason, except under CI
(CI=1), where they fail: .ci/run installs the `postgresql` package."""
from __future__ import annotations

import os

import pytest

from cudnn_hostbench.scripts.maint.pg_server import Server, Unavailable


def missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing under CI (.ci/run installs the postgresql package)")
    pytest.skip(f"{what} (apt-get install -y postgresql to run the PostgreSQL half)")


@pytest.fixture(scope="session")
def pg_server(nothing_left_behind):   # set up after the debris check, so torn down (folder gone) before it
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg (pip install 'psycopg[binary]')")
    try:
        server = Server()
    except Unavailable as e:
        missing(str(e))
    with server:
        yield server


_count = [0]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A fresh, empty store URL on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.db'}"
    server = request.getfixturevalue("pg_server")
    _count[0] += 1
    return server.new_database(f"hb_{os.getpid()}_{_count[0]}")
