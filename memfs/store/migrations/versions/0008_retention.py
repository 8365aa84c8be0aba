"""Version retention and audit metadata (seeds 003/004, SPEC §2): stores get
``version_retention_s`` (NULL = keep every version forever, as before), and audit-log
entries get ``metadata_json`` (the metadata a forget or restore request carried, or the
facts of a retention prune; NULL for every existing entry).

Revision ID: 0008_retention
Revises: 0007_identities
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import audit_log, stores

revision = "0008_retention"
down_revision = "0007_identities"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): rebuilding ``stores`` on SQLite would DROP it,
    # and with foreign keys on that cascades into memories and versions.
    op.add_column(
        "stores",
        sa.Column(
            "version_retention_s",
            sa.BigInteger(),
            nullable=True,
            comment=stores.c.version_retention_s.comment,
        ),
    )
    op.add_column(
        "audit_log",
        sa.Column(
            "metadata_json", sa.Text(), nullable=True, comment=audit_log.c.metadata_json.comment
        ),
    )


def downgrade() -> None:
    op.drop_column("audit_log", "metadata_json")
    op.drop_column("stores", "version_retention_s")
