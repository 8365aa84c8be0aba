"""History you can use (SPEC §10): the ``snapshots`` table (a name for one point of a
store's history), and the index that answers "the newest version of each memory at or
before seq N" in path order, so that an as-of listing costs what a listing now costs.
Existing versions need no change: their ``seq`` already orders each store's history.

Revision ID: 0011_snapshots
Revises: 0010_trigram_subset
Create Date: 2026-12-06
"""

from alembic import op

from memfs.store.schema import snapshots

revision = "0011_snapshots"
down_revision = "0010_trigram_subset"
branch_labels = None
depends_on = None


def upgrade() -> None:
    snapshots.create(op.get_bind())
    op.create_index(
        "ix_versions_store_path_seq",
        "versions",
        ["store_id", "path", "seq", "memory_id", "operation"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_versions_store_path_seq", table_name="versions")
    op.drop_table("snapshots")
