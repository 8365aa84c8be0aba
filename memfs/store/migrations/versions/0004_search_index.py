"""Full-text search (SPEC §7): the ``search_docs`` table of live memories and,
per dialect, its index objects (SQLite FTS5 tables ``search_fts_words`` and
``search_fts_trigram``; PostgreSQL GIN indexes over a tsvector and pg_trgm, which this
migration enables with CREATE EXTENSION and fails clearly without). The documents of
every live memory of existing stores are built here.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from alembic import op

from memfs.store import search
from memfs.store.schema import search_docs

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    search_docs.create(conn)
    search.create_index_objects(conn)
    search.rebuild(conn)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for table in search.SQLITE_FTS_TABLES:
            op.execute(f"DROP TABLE {table}")
    search_docs.drop(conn)
