"""Baseline: the schema of memfs 0.1.

A new database is built from ``memfs.store.schema.metadata`` and stamped at the head
(Alembic cookbook, "Building an Up to Date Database from Scratch"), so this revision has
nothing to do. Every later schema change adds a revision after it, with a test.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
