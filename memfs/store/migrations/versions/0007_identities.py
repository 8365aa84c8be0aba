"""Identities, templates and default stores (SPEC §8): the ``identity_mounts``
table binding stores to (identity, template) pairs; stores get the pair of the default
store they are (``identity_id``, ``template_id``) and their ``identity_template_count``;
sessions get their ``layout`` (``flat`` for a pair's session).

Existing stores are user-created (NULL pair) and mounted nowhere (count 0); existing
sessions keep the per-store layout (NULL).

Revision ID: 0007_identities
Revises: 0006_principals
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import identity_mounts, sessions, stores

revision = "0007_identities"
down_revision = "0006_principals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): on SQLite, rebuilding ``stores`` would DROP it,
    # and with foreign keys on that cascades into memories and versions.
    for name in ("identity_id", "template_id"):
        op.add_column(
            "stores",
            sa.Column(name, sa.String(80), nullable=True, comment=stores.c[name].comment),
        )
    op.add_column(
        "stores",
        sa.Column(
            "identity_template_count",
            sa.Integer(),
            nullable=False,
            server_default=sa.text("0"),
            comment=stores.c.identity_template_count.comment,
        ),
    )
    op.add_column(
        "sessions",
        sa.Column("layout", sa.String(16), nullable=True, comment=sessions.c.layout.comment),
    )
    identity_mounts.create(op.get_bind())


def downgrade() -> None:
    identity_mounts.drop(op.get_bind())
    op.drop_column("sessions", "layout")
    for name in ("identity_template_count", "template_id", "identity_id"):
        op.drop_column("stores", name)
