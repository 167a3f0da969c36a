"""Schema 3: the paired results of A/B jobs (`hostbench ab`), one row per (job, comparison, row)
in hb_ab_rows (reports/history/schema.py names the columns). Nothing stored before changes: the
table starts empty, and a job ingested after the upgrade fills it.

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from cudnn_hostbench.reports.history import schema as S
    if "hb_ab_rows" in set(sa.inspect(op.get_bind()).get_table_names()):
        return   # made by 0001's create_all of today's tables: already there
    op.create_table("hb_ab_rows", *S.ab_rows_columns())
    op.create_index("hb_ab_rows_time", "hb_ab_rows", ["started_at", "job_hash"])


def downgrade() -> None:
    op.drop_index("hb_ab_rows_time", table_name="hb_ab_rows")
    op.drop_table("hb_ab_rows")
