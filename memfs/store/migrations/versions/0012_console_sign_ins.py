"""Console sign-ins (SPEC §12): the ``console_sign_ins`` table of schema.py, one row per
person signed in to the web console (the SHA-256 of the cookie's random id, the
credential it was made with, its expiry). A new table only: nothing else changes.

Revision ID: 0012_console_sign_ins
Revises: 0011_snapshots
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import console_sign_ins

revision = "0012_console_sign_ins"
# The migration history is one line (tests/store/test_engine_migrations.py): a 0011
# made beside this one is chained before it when both are in one tree.
down_revision = "0011_snapshots"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The columns and comments are schema.py's (PostgreSQL keeps the comments).
    op.create_table(
        console_sign_ins.name,
        *(
            sa.Column(
                c.name,
                c.type,
                primary_key=c.primary_key,
                nullable=c.nullable,
                comment=c.comment,
            )
            for c in console_sign_ins.columns
        ),
        comment=console_sign_ins.comment,
    )
    op.create_index("ix_console_sign_ins_expires", console_sign_ins.name, ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_console_sign_ins_expires", console_sign_ins.name)
    op.drop_table(console_sign_ins.name)
