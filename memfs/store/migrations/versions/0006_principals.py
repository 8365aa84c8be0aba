"""Principals ("Visibility by user and role", SPEC §6, §3): API keys and
sessions may carry the user they speak for — ``principal_user_id`` and
``principal_roles_json`` — set at creation and never changed. Existing keys and
sessions get none (NULL): they keep seeing every memory that is not a private record.

Revision ID: 0006_principals
Revises: 0005_records
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import api_keys, sessions

revision = "0006_principals"
down_revision = "0005_records"
branch_labels = None
depends_on = None

_TABLES = (sessions, api_keys)


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild), as in 0002: rebuilding ``sessions`` on SQLite
    # would DROP it and cascade into session_resources. Comments are schema.py's.
    for table in _TABLES:
        op.add_column(
            table.name,
            sa.Column(
                "principal_user_id",
                sa.String(128),
                nullable=True,
                comment=table.c.principal_user_id.comment,
            ),
        )
        op.add_column(
            table.name,
            sa.Column(
                "principal_roles_json",
                sa.Text,
                nullable=True,
                comment=table.c.principal_roles_json.comment,
            ),
        )


def downgrade() -> None:
    for table in _TABLES:
        op.drop_column(table.name, "principal_roles_json")
        op.drop_column(table.name, "principal_user_id")
