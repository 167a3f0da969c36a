"""Schema migrations of the history store, through Alembic (reports/history/migrations).

The store records two things about its schema: `hb_meta.schema_version` (what this hostbench
checks on open: a newer one is refused, an older one is pointed at `hostbench history upgrade`)
and Alembic's revision in `hb_alembic_version` (what an upgrade runs from). A new store is made
with the current tables and stamped at the head revision; a store made before Alembic was wired
(schema 1, no revision table) is stamped at revision 0001 on open. Each revision that changes tables bumps
schema.SCHEMA_VERSION and names it in SCHEMA_OF_REVISION.

Alembic runs on the caller's connection, inside its transaction: on PostgreSQL an upgrade is one
transaction (DDL included), so a failed one leaves the store as it was.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "hb_alembic_version"
SCHEMA_OF_REVISION = {"0001": 1, "0002": 2, "0003": 3}    # Alembic revision -> the schema version it leaves


def _config(connection):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    from alembic.script import ScriptDirectory
    return ScriptDirectory(str(HERE)).get_current_head()


def revision_of(connection) -> str | None:
    """The store's Alembic revision, or None where it has no revision table. Read with plain SQL:
    importing Alembic's runtime takes about a second, and every open reads this."""
    from sqlalchemy import text
    if VERSION_TABLE not in set(connection.dialect.get_table_names(connection)):
        return None
    return connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def stamp(connection) -> None:
    """Marks the store as at the head revision (its tables are already the current ones)."""
    stamp_at(connection, "head")


def stamp_at(connection, revision: str) -> None:
    from alembic import command
    command.stamp(_config(connection), revision)


def upgrade(connection) -> tuple[str | None, str]:
    """Runs every revision after the store's own; (from, to)."""
    from alembic import command
    before = revision_of(connection)
    command.upgrade(_config(connection), "head")
    return before, head()
