"""Alembic's environment for the history store: always run from cudnn_hostbench.reports.history.migrate,
on the connection (and inside the transaction) it is given; never from an alembic.ini."""
from alembic import context

from cudnn_hostbench.reports.history import migrate
from cudnn_hostbench.reports.history import schema as S

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=S.metadata, version_table=migrate.VERSION_TABLE,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
