"""A dream has its creator's view of records (SPEC §6, §11): ``dreams.viewer_json``, the
viewer (user id and roles, or none) of the credential that created it, so the job that
runs it (possibly after a restart) reads, forks and writes only what that creator may
see. A new nullable column: existing dreams are taken as unrestricted, as they ran.

Revision ID: 0018_dream_viewer
Revises: 0017_fork_merged_seq
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import dreams

revision = "0018_dream_viewer"
down_revision = "0017_fork_merged_seq"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, as 0017: no batch rebuild of the table.
    column = dreams.c.viewer_json
    op.add_column(
        dreams.name,
        sa.Column(column.name, column.type, nullable=True, comment=column.comment),
    )


def downgrade() -> None:
    op.drop_column(dreams.name, "viewer_json")
