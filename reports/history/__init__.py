"""The history store: runs, rows and figures in SQLite (embedded default) or PostgreSQL (a team's,
by URL), one schema and one code path through SQLAlchemy Core. See docs/history.md."""
