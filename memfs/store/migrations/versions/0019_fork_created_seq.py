"""A diff or merge of a fork with its origin reads only what changed since the fork
(SPEC §10): ``stores.fork_created_seq``, the fork's own seq when its making committed
(set only for a fork that copied all of its base), and ``ix_memories_origin``,
by which the origin's changed memories find their fork counterparts. A new nullable
column: existing forks are read whole, as before.

Revision ID: 0019_fork_created_seq
Revises: 0018_dream_viewer
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import stores

revision = "0019_fork_created_seq"
down_revision = "0018_dream_viewer"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): rebuilding ``stores`` on SQLite would DROP it,
    # and with foreign keys on that cascades into memories and versions.
    column = stores.c.fork_created_seq
    op.add_column(
        stores.name,
        sa.Column(column.name, column.type, nullable=True, comment=column.comment),
    )
    op.create_index("ix_memories_origin", "memories", ["origin_memory_id", "store_id"])


def downgrade() -> None:
    op.drop_index("ix_memories_origin", table_name="memories")
    op.drop_column(stores.name, "fork_created_seq")
