"""Dreams and transcripts (SPEC §11): the ``session_events`` and ``dreams`` tables of
schema.py, with their indexes. New tables only: nothing else changes.

Revision ID: 0015_dreams
Revises: 0014_forks
Create Date: 2026-12-10

Chained after 0012, the newest in the tree it was made in; 0013 and 0014 are made on
other branches, and whichever tree holds them all chains this one after the newest
(the migration history is one line: tests/store/test_engine_migrations.py).
"""

import sqlalchemy as sa
from alembic import op

from memfs.store.schema import dreams, session_events

revision = "0015_dreams"
down_revision = "0014_forks"
branch_labels = None
depends_on = None

_ACTIVE = "status IN ('pending', 'running')"
# Columns schema.py's ``dreams`` got in later migrations (each adds its own).
_LATER = ("viewer_json",)  # 0018_dream_viewer


def _columns(table: sa.Table, later: tuple[str, ...] = ()) -> list[sa.Column]:  # type: ignore[type-arg]
    """schema.py's columns with their comments (PostgreSQL keeps them) and foreign keys,
    but those named in ``later``."""
    return [
        sa.Column(
            c.name,
            c.type,
            *(
                sa.ForeignKey(fk.target_fullname, ondelete=fk.ondelete)
                for fk in c.foreign_keys
            ),
            primary_key=c.primary_key,
            nullable=c.nullable,
            comment=c.comment,
        )
        for c in table.columns
        if c.name not in later
    ]


def upgrade() -> None:
    op.create_table(
        session_events.name,
        *_columns(session_events),
        sa.UniqueConstraint("session_id", "seq", name="uq_session_events_seq"),
        comment=session_events.comment,
    )
    op.create_table(dreams.name, *_columns(dreams, _LATER), comment=dreams.comment)
    op.create_index(
        "ix_dreams_active_input",
        dreams.name,
        ["input_store_id"],
        unique=True,
        sqlite_where=sa.text(_ACTIVE),
        postgresql_where=sa.text(_ACTIVE),
    )
    op.create_index("ix_dreams_created", dreams.name, ["created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_dreams_created", dreams.name)
    op.drop_index("ix_dreams_active_input", dreams.name)
    op.drop_table(dreams.name)
    op.drop_table(session_events.name)
