"""Schema 1, the baseline: hb_meta, hb_runs, hb_rows, hb_figures as reports/history/schema.py
declared them when Alembic was wired. A later revision changes tables with op.* (batch mode on
SQLite) and bumps schema.SCHEMA_VERSION; it does not edit this one.

Revision ID: 0001
Revises:
"""
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    from cudnn_hostbench.reports.history import schema as S
    S.metadata.create_all(op.get_bind())
    op.get_bind().execute(S.meta.insert().values(name="schema_version", value="1"))


def downgrade() -> None:
    raise NotImplementedError("the baseline has nothing to go back to")
