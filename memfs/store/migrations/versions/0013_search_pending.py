"""The full-text index leaves the write transaction (SPEC §7): the durable queue
``search_pending``, one row per memory whose search document the indexer has yet to
bring to its head. Created empty: the documents of a database at 0010 are its heads.

Revision ID: 0013_search_pending
Revises: 0012_console_sign_ins
Create Date: 2026-12-03
"""

from alembic import op

from memfs.store.schema import search_pending

revision = "0013_search_pending"
down_revision = "0012_console_sign_ins"
branch_labels = None
depends_on = None


def upgrade() -> None:
    search_pending.create(op.get_bind())


def downgrade() -> None:
    # The older schema indexes in the write's transaction: bring every document to its
    # head before the queue goes.
    from memfs.store import search

    conn = op.get_bind()
    search.index_pending(conn, None)
    search_pending.drop(conn)
