"""A throwaway PostgreSQL server, started from the distribution's binaries (initdb, pg_ctl under
/usr/lib/postgresql/*/bin) on a temporary folder, listening on 127.0.0.1 only; as root it runs as
the `postgres` user (initdb refuses root). `hostbench history-bench --start-pg` and the tests'
fixtures (tests/pg_server.py) both start it from here.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


class Unavailable(RuntimeError):
    """No server binaries (or no psycopg): the server cannot be started here."""


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`with Server() as s:` starts it in a folder of its own and removes both on the way out."""

    def __init__(self, root: Path | None = None):
        found = binaries()
        if found is None:
            raise Unavailable("no PostgreSQL server binaries (initdb, pg_ctl)")
        self.bin = found
        # not under pytest's own temp folder: it is private to root, and the server runs as postgres
        self.root = root or Path(tempfile.mkdtemp(prefix="hostbench-pg-"))
        self.data, self.port = self.root / "data", _free_port()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            self.prefix = ["runuser", "-u", "postgres", "--"]
            self.root.mkdir(parents=True, exist_ok=True)
            shutil.chown(self.root, "postgres", "postgres")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        p = subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {p.stderr[-800:]}")

    def start(self) -> Server:
        try:
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "--no-sync", "-E", "UTF8")
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-o",
                      f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        except BaseException:
            self.stop()   # a half-made data folder is removed too
            raise
        return self

    def new_database(self, name: str) -> str:
        """A fresh empty database on this server; its URL."""
        try:
            import psycopg
        except ImportError as e:
            raise Unavailable("psycopg is not installed (pip install 'psycopg[binary]')") from e
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
        """Stops the server (if it runs) and removes its folder."""
        if (self.data / "postmaster.pid").exists():
            subprocess.run([*self.prefix, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                            "stop"], capture_output=True, timeout=60)
        for _ in range(50):   # the stopped server's last files can land while the folder is removed
            shutil.rmtree(self.root, ignore_errors=True)
            if not self.root.exists():
                break
            time.sleep(0.1)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
