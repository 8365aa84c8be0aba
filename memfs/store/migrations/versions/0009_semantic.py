"""Semantic search (SPEC §7): the durable embedding queue ``search_queue`` and
the ``search_vectors`` table. Every live memory of existing stores is queued, so the
embedder (a mount's daemon or ``memfs serve`` with a model configured, or ``memfs
search reindex``) gives each one its vector.

Revision ID: 0009_semantic
Revises: 0008_retention
Create Date: 2026-12-01
"""

from alembic import op

from memfs.store import semantic
from memfs.store.schema import search_queue, search_vectors

revision = "0009_semantic"
down_revision = "0008_retention"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    search_queue.create(conn)
    search_vectors.create(conn)  # with its index ix_search_vectors_model
    semantic.queue_all(conn, None)


def downgrade() -> None:
    conn = op.get_bind()
    search_vectors.drop(conn)
    search_queue.drop(conn)
