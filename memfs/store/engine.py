"""The store engine: the only module that speaks SQL.

One engine runs on embedded SQLite (WAL) and on PostgreSQL, through SQLAlchemy Core.
Every public method is synchronous, thread-safe and runs one transaction; callers on
the trio loop (the FUSE layer, the API) call it through ``trio.to_thread.run_sync``.

Write transactions lock the store row first (``SELECT … FOR UPDATE`` on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite), so that per-store invariants that span rows (path
uniqueness against prefixes, the memory limit, the gap-free change sequence, counters)
hold across threads, processes and API servers sharing one database.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from memfs.model import (
    Access,
    Actor,
    ApiKey,
    Change,
    DeleteMode,
    Memory,
    MemoryPrefix,
    MemoryStore,
    MemoryVersion,
    Operation,
    Page,
    Scope,
    Session,
)

__all__ = ["Engine", "ResourceSpec"]


class ResourceSpec:
    """A store to attach to a new session: id, access mode and optional instructions."""

    def __init__(
        self, memory_store_id: str, access: Access = Access.READ_WRITE, instructions: str | None = None
    ) -> None:
        self.memory_store_id = memory_store_id
        self.access = access
        self.instructions = instructions


class Engine:
    """A handle on one store database.

    Args:
        url: a SQLAlchemy URL (see :func:`memfs.config.database_url`); SQLite files and
            their directory are created on first use, schema included.
        memory_limit: live memories allowed per store (SPEC §1 limits); None reads
            ``$MEMFS_MEMORY_LIMIT``, else 10,000.
        synchronous_full: SQLite only; True makes every commit fsync the WAL, so a
            committed version survives power loss, not only a process crash.
    """

    def __init__(self, url: str, *, memory_limit: int | None = None, synchronous_full: bool = True) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Releases every pooled connection (checkpointing the SQLite WAL)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- stores

    def create_store(
        self, name: str, description: str = "", metadata: dict[str, str] | None = None
    ) -> MemoryStore:
        """Creates a store. Raises InvalidStoreField, InvalidMetadata."""
        raise NotImplementedError

    def get_store(self, store_id: str) -> MemoryStore:
        """Raises NotFound."""
        raise NotImplementedError

    def find_store(self, name_or_id: str) -> MemoryStore:
        """A store by id, else by exact name, else by slug (CLI convenience).

        Raises:
            NotFound: nothing matches.
            InvalidInput: several stores share that name or slug (the message lists ids).
        """
        raise NotImplementedError

    def update_store(
        self,
        store_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        metadata_patch: dict[str, str | None] | None = None,
    ) -> MemoryStore:
        """Patches a store; None means "no change"; a metadata value None removes the key.

        ``updated_at`` moves only when something changed (api-contract §5.3).

        Raises:
            NotFound, StoreArchived, InvalidStoreField, InvalidMetadata.
        """
        raise NotImplementedError

    def list_stores(
        self,
        *,
        include_archived: bool = False,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page[MemoryStore]:
        """Stores newest first (created_at desc, id desc). Raises InvalidCursor, InvalidInput."""
        raise NotImplementedError

    def archive_store(self, store_id: str, *, actor: Actor | None = None) -> MemoryStore:
        """Archives (one-way; idempotent: an archived store is returned unchanged)."""
        raise NotImplementedError

    def delete_store(self, store_id: str, *, actor: Actor | None = None) -> None:
        """Deletes a store with its memories, versions and now-unreferenced blobs."""
        raise NotImplementedError

    # --------------------------------------------------------------- memories

    def create_memory(
        self,
        store_id: str,
        path: str,
        content: str,
        *,
        actor: Actor | None,
        metadata: dict[str, str] | None = None,
    ) -> Memory:
        """Creates a memory and its ``created`` version; returns it with content.

        Raises:
            NotFound, StoreArchived, InvalidPath, PathTooLong, InvalidContent,
            ContentTooLarge, InvalidMetadata, StoreFull, PathConflict (path, ancestor or
            descendant occupied; names the blocker).
        """
        raise NotImplementedError

    def get_memory(self, store_id: str, memory_id: str, *, with_content: bool = True) -> Memory:
        """A live memory by id. Raises NotFound (unknown, deleted, other store)."""
        raise NotImplementedError

    def get_memory_by_path(self, store_id: str, path: str, *, with_content: bool = True) -> Memory:
        """A live memory by path. Raises NotFound."""
        raise NotImplementedError

    def update_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        actor: Actor | None,
        content: str | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
        metadata: dict[str, str] | None = None,
        replace: bool = False,
    ) -> Memory:
        """Changes content and/or path (rename keeps the id); returns it with content.

        The precondition is checked first; an update that changes nothing writes no
        version and returns the memory unchanged (SPEC §2). ``metadata`` replaces the
        memory's metadata wholesale. With ``replace=True`` a live memory already at the
        new path is soft-deleted in the same transaction (rename(2) semantics, used by
        the FUSE layer); otherwise an occupied destination raises PathConflict.

        Raises:
            NotFound, StoreArchived, PreconditionFailed, PathConflict, and the
            validation errors of create.
        """
        raise NotImplementedError

    def delete_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        actor: Actor | None,
        expected_sha256: str | None = None,
        mode: DeleteMode = DeleteMode.SOFT_DELETE,
        reason: str | None = None,
        replacement: str = "[REDACTED]",
    ) -> None:
        """Deletes a live memory in one of the SPEC §2 modes; audited with ``reason``.

        soft_delete: tombstone + ``deleted`` version, restorable. redact: tombstone whose
        content is ``replacement``, every earlier version redacted, not restorable.
        hard_delete: the memory and all its versions erased. Allowed on archived stores.

        Raises:
            NotFound, PreconditionFailed, InvalidContent (bad replacement).
        """
        raise NotImplementedError

    def restore_memory(self, store_id: str, memory_id: str, *, actor: Actor | None, reason: str | None = None) -> Memory:
        """Brings a soft-deleted memory back with its id, path and content (new version).

        Raises:
            NotFound, StoreArchived, NotRestorable (live, redacted, or path now taken).
        """
        raise NotImplementedError

    def list_memories(
        self,
        store_id: str,
        *,
        path_prefix: str = "/",
        depth: int = 0,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
    ) -> Page[Memory | MemoryPrefix]:
        """Live memories under ``path_prefix`` in byte order of path, rolled up by depth.

        Raises:
            NotFound, InvalidPath (prefix), InvalidInput (depth/limit), InvalidCursor.
        """
        raise NotImplementedError

    def all_memories(self, store_id: str) -> list[Memory]:
        """Every live memory of a store without content, in path order (mount start-up).

        Raises:
            NotFound.
        """
        raise NotImplementedError

    def deleted_memories(self, store_id: str) -> list[Memory]:
        """Soft-deleted (restorable) memories, newest deletion first, without content."""
        raise NotImplementedError

    def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str, *, actor: Actor | None) -> list[Memory]:
        """Moves every live memory under ``old_prefix`` below ``new_prefix`` in one
        transaction (directory rename, SPEC §4); one ``modified`` version each.

        Args:
            old_prefix, new_prefix: directory prefixes ending with ``/``.

        Raises:
            NotFound, StoreArchived, InvalidPath, PathConflict (a destination is taken).
        """
        raise NotImplementedError

    def read_blob(self, blob_key: str) -> bytes:
        """The bytes of a content-addressed blob. Raises NotFound."""
        raise NotImplementedError

    # --------------------------------------------------------------- versions

    def list_versions(
        self,
        store_id: str,
        *,
        memory_id: str | None = None,
        operation: Operation | None = None,
        session_id: str | None = None,
        api_key_id: str | None = None,
        service_account_id: str | None = None,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
    ) -> Page[MemoryVersion]:
        """Versions newest first. Raises NotFound, InvalidInput, InvalidCursor."""
        raise NotImplementedError

    def get_version(self, store_id: str, version_id: str, *, with_content: bool = True) -> MemoryVersion:
        """Raises NotFound."""
        raise NotImplementedError

    def redact_version(self, store_id: str, version_id: str, *, actor: Actor | None) -> MemoryVersion:
        """Scrubs a version (SPEC §2 redaction); already-redacted ones come back unchanged.

        Raises:
            NotFound, HeadVersionRedaction (head version of a live memory).
        """
        raise NotImplementedError

    def audit_events(self, store_id: str, *, memory_id: str | None = None) -> list[dict[str, str | None]]:
        """Audit trail of deletions, redactions and restores, newest first.

        Returns:
            dicts with keys ``action``, ``memory_id``, ``reason``, ``actor_type``,
            ``actor_id``, ``created_at`` (RFC 3339 text).
        """
        raise NotImplementedError

    # ----------------------------------------------------------- change feed

    def last_change_seq(self, store_id: str) -> int:
        """The newest change seq of a store (0 when none). Raises NotFound."""
        raise NotImplementedError

    def changes_since(self, store_id: str, after_seq: int, *, limit: int = 1000) -> list[Change]:
        """Changes with seq > ``after_seq``, oldest first, at most ``limit``."""
        raise NotImplementedError

    # ------------------------------------------------------ sessions and keys

    def create_session(
        self, resources: Sequence[ResourceSpec], *, mount_root: str = "/mnt/memory", with_token: bool = True
    ) -> tuple[Session, str | None]:
        """Attaches 1–8 non-archived stores; returns the session and its token (once).

        Raises:
            InvalidInput (count, duplicates, instructions), NotFound, StoreArchived.
        """
        raise NotImplementedError

    def get_session(self, session_id: str) -> Session:
        """Raises NotFound."""
        raise NotImplementedError

    def authenticate_session(self, token: str) -> Session:
        """Raises AuthenticationFailed."""
        raise NotImplementedError

    def create_api_key(self, name: str, scopes: Sequence[Scope], store_ids: Sequence[str] = ()) -> tuple[ApiKey, str]:
        """Creates a key; returns it and its secret, which is never retrievable again."""
        raise NotImplementedError

    def list_api_keys(self) -> list[ApiKey]:
        raise NotImplementedError

    def revoke_api_key(self, api_key_id: str) -> ApiKey:
        """Raises NotFound."""
        raise NotImplementedError

    def authenticate_api_key(self, secret: str) -> ApiKey:
        """Raises AuthenticationFailed (unknown or revoked)."""
        raise NotImplementedError

    # ------------------------------------------------------------ maintenance

    def prune_versions(self, *, older_than_s: int) -> int:
        """Drops versions older than the retention, never a live memory's head. Returns count."""
        raise NotImplementedError

    def iter_fsck_findings(self) -> Iterator[str]:
        """One line per broken invariant (see memfs/store/fsck.py)."""
        raise NotImplementedError
