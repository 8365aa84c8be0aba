"""The SQLite trigram table holds only the documents a substring term can match (issue
14: its write cost). Those whose path or body holds a character of a script written
without spaces (memfs.core.query.holds_unspaced_script); every other document's trigram
entries are dropped (``'delete-all'``, then those documents indexed again), so a
database built by 0004 and the writes after it agrees with what memfs/store/search.py
now writes and deletes. PostgreSQL: nothing changes.

Revision ID: 0010_trigram_subset
Revises: 0009_semantic
Create Date: 2026-12-02
"""

from alembic import op

from memfs.store import search

revision = "0010_trigram_subset"
down_revision = "0009_semantic"
branch_labels = None
depends_on = None


def upgrade() -> None:
    search.rebuild_trigram(op.get_bind())


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":  # the table of 0004: every document
        op.execute("INSERT INTO search_fts_trigram(search_fts_trigram) VALUES ('rebuild')")
