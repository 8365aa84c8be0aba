"""Session lifecycle (SPEC §3 credential lifecycle): sessions get
``expires_at``, ``revoked_at``, ``archived_at`` and the ``api_key_id`` that created them;
session resources get an index by store (listing a store's sessions).

Sessions that already hold a token get ``expires_at`` = the time of the upgrade plus the
default lifetime (24 h), so upgrading does not cut off running mounts at once and no
token lives on without an end; sessions without a token keep NULL.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from datetime import timedelta

import sqlalchemy as sa
from alembic import op

from memfs.core.config import DEFAULT_SESSION_TTL_S
from memfs.core.model import format_timestamp, utcnow
from memfs.store.schema import sessions

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): on SQLite, rebuilding ``sessions`` would DROP
    # it, and with foreign keys on that cascades into session_resources.
    # The column comments are schema.py's (PostgreSQL keeps them).
    for name, length in (("expires_at", 32), ("revoked_at", 32), ("archived_at", 32)):
        comment = sessions.c[name].comment
        op.add_column(
            "sessions", sa.Column(name, sa.String(length), nullable=True, comment=comment)
        )
    comment = sessions.c.api_key_id.comment
    op.add_column(
        "sessions", sa.Column("api_key_id", sa.String(40), nullable=True, comment=comment)
    )
    op.create_index("ix_sessions_api_key", "sessions", ["api_key_id"])
    op.create_index("ix_session_resources_store", "session_resources", ["store_id"])
    expires = format_timestamp(utcnow() + timedelta(seconds=DEFAULT_SESSION_TTL_S))
    op.execute(
        sa.text(
            "UPDATE sessions SET expires_at = :expires WHERE token_hash IS NOT NULL"
        ).bindparams(expires=expires)
    )


def downgrade() -> None:
    op.drop_index("ix_session_resources_store", "session_resources")
    op.drop_index("ix_sessions_api_key", "sessions")
    for column in ("api_key_id", "archived_at", "revoked_at", "expires_at"):
        op.drop_column("sessions", column)
