"""A merge moves the fork's merge base (SPEC §10 merge): ``stores.fork_merged_seq``, the
fork's own seq when it was last merged into its origin. The fork's state then is what
the two agreed on, so the next merge compares both sides with it instead of with the
fork point (which made a second merge see every change of the first as two-sided). A
new nullable column: existing forks are taken as never merged.

Revision ID: 0017_fork_merged_seq
Revises: 0016_versions_autoincrement
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import stores

revision = "0017_fork_merged_seq"
down_revision = "0016_versions_autoincrement"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): rebuilding ``stores`` on SQLite would DROP it,
    # and with foreign keys on that cascades into memories and versions.
    column = stores.c.fork_merged_seq
    op.add_column(
        stores.name,
        sa.Column(column.name, column.type, nullable=True, comment=column.comment),
    )


def downgrade() -> None:
    op.drop_column(stores.name, "fork_merged_seq")
