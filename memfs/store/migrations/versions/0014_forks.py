"""Forks (SPEC §10): a store remembers the store it was forked from and the point it
was forked at (``stores.forked_from``, ``fork_base_seq``, ``fork_base_version_id``), and
a forked memory the origin memory it was copied from (``memories.origin_memory_id``),
so that diff and merge match the two by it. New nullable columns only: existing stores
and memories are no forks.

Numbered 0014 and chained after 0012: a 0013 made beside it on another branch is
chained before it when both are in one tree (the history is one line,
tests/store/test_engine_migrations.py).

Revision ID: 0014_forks
Revises: 0013_search_pending
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import memories, stores

revision = "0014_forks"
down_revision = "0013_search_pending"
branch_labels = None
depends_on = None

_STORE_COLUMNS = ("forked_from", "fork_base_seq", "fork_base_version_id")


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): rebuilding ``stores`` on SQLite would DROP it,
    # and with foreign keys on that cascades into memories and versions. The columns
    # and comments are schema.py's (PostgreSQL keeps the comments).
    for table, name in (*((stores, n) for n in _STORE_COLUMNS), (memories, "origin_memory_id")):
        column = table.c[name]
        op.add_column(
            table.name, sa.Column(name, column.type, nullable=True, comment=column.comment)
        )
    op.create_index("ix_stores_forked_from", stores.name, ["forked_from"])


def downgrade() -> None:
    op.drop_index("ix_stores_forked_from", stores.name)
    op.drop_column(memories.name, "origin_memory_id")
    for name in reversed(_STORE_COLUMNS):
        op.drop_column(stores.name, name)
