"""A real PostgreSQL server for tests, started from the distribution's binaries (initdb, pg_ctl
under /usr/lib/postgresql/*/bin) on a temporary folder, listening on 127.0.0.1 only. As root it
runs as the `postgres` user (initdb refuses root). Without the binaries the tests skip with a
reason, except under CI (CI=1), where they fail: .ci/run installs the `postgresql` package."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing under CI (.ci/run installs the postgresql package)")
    pytest.skip(f"{what} (apt-get install -y postgresql to run the PostgreSQL half)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: Path):
        self.bin = binaries()
        if self.bin is None:
            missing("no PostgreSQL server binaries (initdb, pg_ctl)")
        self.root, self.data, self.port = root, root / "data", _free_port()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            self.prefix = ["runuser", "-u", "postgres", "--"]
            root.mkdir(parents=True, exist_ok=True)
            shutil.chown(root, "postgres", "postgres")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        p = subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {p.stderr[-800:]}")

    def start(self) -> "Server":
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        return self

    def new_database(self, name: str) -> str:
        """A fresh empty database on this server; its URL."""
        import psycopg
        for _ in range(50):
            try:
                with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                                     autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "{name}"')
                return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise RuntimeError("PostgreSQL did not accept connections")

    def stop(self) -> None:
        subprocess.run([*self.prefix, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def pg_server():
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg (pip install 'psycopg[binary]')")
    # not under pytest's own temp folder: it is private to root, and the server runs as postgres
    root = Path(tempfile.mkdtemp(prefix="hostbench-pg-"))
    server = Server(root).start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


_count = [0]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A fresh, empty store URL on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.db'}"
    server = request.getfixturevalue("pg_server")
    _count[0] += 1
    return server.new_database(f"hb_{os.getpid()}_{_count[0]}")
