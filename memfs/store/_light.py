"""What the store shares without importing SQLAlchemy, so that the SQLite peek of
:mod:`memfs.store.peek` uses it too and a command that only peeks never loads SQLAlchemy
(README "Performance", CLI start): the schema head, the busy timeout, the models built
from the store's own rows, the last step of finding a store by name, and the name of the
pending-erasure marker beside a SQLite file.

The rows' columns already hold what the fields are (the schema's types and CHECKs,
fsck): ``model_construct`` skips pydantic's validation, and with it building the models'
validators in every process that only reads.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memfs.core.errors import InvalidInput, NotFound
from memfs.core.model import Memory, MemoryStore

__all__ = [
    "SCHEMA_HEAD",
    "SQLITE_BUSY_TIMEOUT_MS",
    "erase_marker",
    "memory_model",
    "only_store",
    "parse_ts",
    "store_model",
]

# The newest migration's revision id; a test checks it against the migration scripts.
# Opening an up-to-date database compares against it without loading Alembic.
SCHEMA_HEAD = "0019_fork_created_seq"

# How long a statement waits for another connection's lock before StoreBusy: SQLite's
# busy timeout, PostgreSQL's lock_timeout, and the in-process write lock's wait.
SQLITE_BUSY_TIMEOUT_MS = 30_000


# A file name's limit on Linux filesystems (NAME_MAX), in bytes.
_NAME_MAX = 255
_ERASE_SUFFIX = "-erase-pending"


def erase_marker(database: Path) -> Path:
    """The file that records a pending erasure of the SQLite file ``database``
    (:meth:`memfs.store.Engine.erasure_pending`): ``<database>-erase-pending`` beside
    it; for a file name too long to take the suffix within NAME_MAX (255 bytes), its
    first bytes, ``~``, 16 hex digits of the SHA-256 of the whole name, then the suffix
    (so that it can still be made, and is still one name per database).
    """
    name = os.fsencode(database.name)
    suffix = _ERASE_SUFFIX.encode()
    if len(name) + len(suffix) <= _NAME_MAX:
        return database.with_name(database.name + _ERASE_SUFFIX)
    digest = hashlib.sha256(name).hexdigest()[:16].encode()
    head = name[: _NAME_MAX - len(suffix) - len(digest) - 1]
    return database.with_name(os.fsdecode(head + b"~" + digest + suffix))


def only_store(rows: Sequence[Any], name_or_id: str) -> Any:
    """The one store row of ``rows`` (the stores named ``name_or_id``, else those whose
    slug it is, by id): the last step of finding a store by name (the engine's
    ``memfs/store/stores.py`` ``find_store`` and the peek's, whose errors must be the
    same).

    Raises:
        NotFound: no row.
        InvalidInput: several rows (the message lists their ids).
    """
    if not rows:
        raise NotFound(f"no memory store is named or has the id {name_or_id!r}")
    if len(rows) > 1:
        ids = ", ".join(r.id for r in rows)
        raise InvalidInput(f"several memory stores are named {name_or_id!r} ({ids}); use an id")
    return rows[0]


def parse_ts(value: str | None) -> datetime | None:
    """A stored timestamp (ISO 8601 text) as a datetime; None stays None."""
    return None if value is None else datetime.fromisoformat(value)


def store_model(row: Any) -> MemoryStore:
    """A MemoryStore from a ``stores`` row: a SQLAlchemy ``Row`` or any object with its
    columns as attributes (not validated: see the module docstring)."""
    return MemoryStore.model_construct(
        id=row.id,
        name=row.name,
        description=row.description,
        metadata=json.loads(row.metadata_json),
        created_at=datetime.fromisoformat(row.created_at),
        updated_at=datetime.fromisoformat(row.updated_at),
        archived_at=parse_ts(row.archived_at),
        entry_count=row.entry_count,
        total_size_bytes=row.total_size_bytes,
        identity_id=row.identity_id,
        template_id=row.template_id,
        identity_template_count=row.identity_template_count,
        version_retention_s=row.version_retention_s,
        forked_from=row.forked_from,
        fork_base=row.fork_base_version_id,
    )


def memory_model(row: Any, content: bytes | None = None) -> Memory:
    """A Memory from a ``memories`` row (a SQLAlchemy ``Row``, or a namespace of its
    columns: as just written, or as :mod:`memfs.store.peek` read them), with ``content``
    the blob's bytes (None: without content). Not validated: see the module docstring."""
    return Memory.model_construct(
        id=row.id,
        memory_store_id=row.store_id,
        path=row.path,
        content=None if content is None else content.decode("utf-8"),
        content_sha256=row.content_sha256,
        content_size_bytes=row.size_bytes,
        memory_version_id=row.head_version_id,
        metadata=json.loads(row.metadata_json),
        created_at=datetime.fromisoformat(row.created_at),
        updated_at=datetime.fromisoformat(row.updated_at),
        blob_key=row.blob_key or "",
        deleted_at=parse_ts(row.deleted_at),
    )
