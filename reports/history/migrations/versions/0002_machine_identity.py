"""Schema 2: which machine a run ran on and which probes it held (hb_runs.start, gpu_uuid,
machine_json, probes), and each figure's plan rule and plan (hb_figures.plan_rule, plan).

Runs stored before it keep '' for start and GPU (an unknown start: never the same GPU, never a
confirmation by itself); their probes are filled in from their own figures, so nothing is lost.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("hb_runs") as b:
        b.add_column(sa.Column("start", sa.String(255), nullable=False, server_default=""))
        b.add_column(sa.Column("gpu_uuid", sa.String(128), nullable=False, server_default=""))
        b.add_column(sa.Column("machine_json", sa.Text, nullable=False, server_default="{}"))
        b.add_column(sa.Column("probes", sa.Text, nullable=False, server_default=""))
    with op.batch_alter_table("hb_figures") as b:
        b.add_column(sa.Column("plan_rule", sa.String(64), nullable=False, server_default=""))
        b.add_column(sa.Column("plan", sa.String(255), nullable=False, server_default=""))
    bind = op.get_bind()
    held: dict = {}
    for rid, probe in bind.execute(sa.text("SELECT DISTINCT f.run_id, r.probe FROM hb_figures f "
                                           "JOIN hb_rows r ON r.id = f.row_id")):
        held.setdefault(rid, set()).add(probe)
    for rid, probes in held.items():
        bind.execute(sa.text("UPDATE hb_runs SET probes = :p WHERE id = :i"), {"p": ",".join(sorted(probes)), "i": rid})


def downgrade() -> None:
    raise NotImplementedError("machine identity is kept; restore the backup to go back")
