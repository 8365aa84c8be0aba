"""A redaction erases the memory's path too (SPEC §2): scrub what
redactions and hard deletes made before this revision left behind.

- a redacted tombstone's path becomes ``/.redacted``;
- its ``deleted`` version (written before with the path) becomes redacted: path NULL,
  ``redacted_at``/``redacted_by`` those of the deletion itself;
- change-feed entries of redacted or hard-deleted memories lose ``path`` and
  ``old_path`` (their seqs and ids stay).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_REDACTED = "SELECT id FROM memories WHERE delete_mode = 'redact'"


def upgrade() -> None:
    op.execute(
        sa.text(
            "UPDATE versions SET path = NULL, redacted_at = created_at, "
            "redacted_by_type = actor_type, redacted_by_id = actor_id "
            f"WHERE operation = 'deleted' AND redacted_at IS NULL AND memory_id IN ({_REDACTED})"
        )
    )
    op.execute(sa.text("UPDATE memories SET path = '/.redacted' WHERE delete_mode = 'redact'"))
    op.execute(
        sa.text(
            "UPDATE changes SET path = NULL, old_path = NULL "
            "WHERE memory_id IS NOT NULL AND (path IS NOT NULL OR old_path IS NOT NULL) "
            f"AND (memory_id IN ({_REDACTED}) OR memory_id NOT IN (SELECT id FROM memories))"
        )
    )


def downgrade() -> None:
    pass  # erased paths can't come back
