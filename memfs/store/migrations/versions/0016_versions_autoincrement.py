"""Version numbers are never reused (SPEC §10 points): on SQLite, ``versions.seq``
becomes ``INTEGER PRIMARY KEY AUTOINCREMENT``. Without it SQLite gives a new row the
largest seq + 1, so after the newest version was erased (a hard delete, a fold) the
next write took its number again, and a snapshot or fork base at that number silently
took in the later write. PostgreSQL's identity never reuses a value: nothing changes
there.

Revision ID: 0016_versions_autoincrement
Revises: 0015_dreams
Create Date: 2026-12-06
"""

from alembic import op

revision = "0016_versions_autoincrement"
down_revision = "0015_dreams"
branch_labels = None
depends_on = None


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Nothing references versions by foreign key, so the copy-and-swap of batch mode
    # leaves every other table as it is; the copy sets sqlite_sequence to the largest
    # seq, from which new versions count on.
    with op.batch_alter_table(
        "versions", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    ):
        pass


def upgrade() -> None:
    _rebuild(True)


def downgrade() -> None:
    _rebuild(False)
