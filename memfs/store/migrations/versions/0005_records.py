"""Long-term memory records (SPEC §6): the record index — ``records`` and its
side tables ``record_tags``, ``record_relations`` and ``record_grants`` — built here from
the live memories of existing stores. A memory whose front matter makes it a record but
breaks a rule (written before records existed) is left out of the index and stays as
it is; ``memfs fsck`` names it.

Revision ID: 0005_records
Revises: 0004
Create Date: 2026-12-01
"""

from alembic import op

from memfs.core.model import format_timestamp, utcnow
from memfs.store import records
from memfs.store.schema import record_grants, record_relations, record_tags
from memfs.store.schema import records as records_table

revision = "0005_records"
down_revision = "0004"
branch_labels = None
depends_on = None

_TABLES = (records_table, record_tags, record_relations, record_grants)


def upgrade() -> None:
    conn = op.get_bind()
    for table in _TABLES:
        table.create(conn)
    records.rebuild(conn, format_timestamp(utcnow()))


def downgrade() -> None:
    conn = op.get_bind()
    for table in reversed(_TABLES):
        table.drop(conn)
