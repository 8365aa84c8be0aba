"""The store engine: the facade over the aggregate modules of :mod:`memfs.store`.

One engine runs on embedded SQLite (WAL) and on PostgreSQL, through SQLAlchemy Core.
Every public method is synchronous, thread-safe and runs one transaction; callers on
the trio loop (the FUSE layer, the API) call it through ``trio.to_thread.run_sync``.
This module only opens one transaction per call on the connections of
:class:`memfs.store._connections.Database` (which owns opening, the in-process write
lock, typed contention and the WAL checkpoint); the rules live in one module per
aggregate, each a set of functions that take the transaction's
:class:`~sqlalchemy.Connection`:

=================  ===========================================================
``stores``         stores: create, find, patch, list, archive, delete; counts
``memories``       memories: create, read, update, delete, restore
``renames``        directory renames (one set-based move)
``listing``        prefix listings with depth roll-up, a mount's tree, tombstones
``versions``       versions and their redaction
``access``         sessions, API keys, their tokens and secrets
``feed``           the change feed and the audit log
``blobs``          content-addressed blobs and their collection
``retention``      a store's version retention period; pruning past it
``search``         the full-text index of live memories and its ranked query
``identities``     mounts on (identity, template) pairs, default stores (SPEC §8)
``records``        the record index (SPEC §6): typed headers, tags, relations, access
``fsck``           one check per invariant of ``schema.py``
=================  ===========================================================

Visibility (issue 15, SPEC §6): the reads and writes callers make on behalf of a
restricted caller take ``viewer`` (a :class:`memfs.core.visibility.Viewer`; None, the
default, is an unrestricted caller). The hooks (``seen.…``, memfs/store/visibility.py)
run in the call's transaction: what is hidden from the viewer is absent from listings,
counts, search, versions and the change feed, a NotFound by id, and a write whose
result the viewer could not see is refused and rolled back.

The module is long only because the public surface is: each method is its contract (the
docstring callers rely on) and one delegating call.

Write transactions lock the store row first (``SELECT … FOR UPDATE`` on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite), so the per-store invariants that span rows (path
uniqueness against ancestors and descendants, the memory limit, the gap-free change
sequence, the counters) hold across threads, processes and API servers sharing one
database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from types import EllipsisType
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from memfs.core import config, rules
from memfs.core import query as query_language
from memfs.core.errors import InvalidInput, NotFound, PathConflict, SearchUnavailable
from memfs.core.model import (
    Access,
    Actor,
    ActorType,
    ApiKey,
    Change,
    DeleteMode,
    IdentityMount,
    Layout,
    Memory,
    MemoryPrefix,
    MemoryStatus,
    MemoryStore,
    MemoryVersion,
    Operation,
    Page,
    Scope,
    Session,
    utcnow,
)
from memfs.core.records import Record, RecordFilter, RecordRelation
from memfs.core.visibility import UserPrincipal, Viewer
from memfs.store import (
    access,
    blobs,
    embeddings,
    feed,
    identities,
    listing,
    memories,
    renames,
    retention,
    search,
    semantic,
    stores,
    versions,
)
from memfs.store import fsck as _fsck
from memfs.store import records as record_index
from memfs.store import visibility as seen
from memfs.store._connections import ERASE_WAIT_S, Database
from memfs.store._db import SQLITE_BUSY_TIMEOUT_MS
from memfs.store.access import ResourceSpec
from memfs.store.embedder import Embedder, drain
from memfs.store.embeddings import IndexLag
from memfs.store.notify import ChangeCallback
from memfs.store.retention import PruneResult

__all__ = ["ERASE_WAIT_S", "Engine", "PruneResult", "ResourceSpec"]

T = TypeVar("T")


class Engine:
    """A handle on one store database.

    Args:
        url: a SQLAlchemy URL (see :func:`memfs.core.config.database_url`); SQLite files and
            their directory are created on first use, schema included.
        memory_limit: live memories allowed per store (SPEC §1 limits); None reads
            ``$MEMFS_MEMORY_LIMIT``, else 10,000.
        synchronous_full: SQLite only. True (``PRAGMA synchronous=FULL``) fsyncs the WAL
            at every commit, so a committed version survives power loss too. False
            (``NORMAL``, the WAL's usual setting) makes a commit durable against any
            process crash — the WAL is written before commit returns — and fsyncs at
            checkpoints; a power loss may roll back the newest commits, never corrupt.
            None reads ``$MEMFS_SQLITE_SYNC`` (``full`` or ``normal``), else ``normal``.
        busy_timeout_s: how long a call waits for a lock another writer holds (another
            thread, process or server) before it raises StoreBusy, changing nothing.
        create: SQLite: make the file (and its directory) when it does not exist; False
            raises DatabaseNotFound instead (commands that only read or check, issue 11
            item 7).
        read_only: open for reading only: nothing is ever written (no journal-mode
            switch, no checkpoint; writes raise DatabaseReadOnly). None: read-only
            exactly when the SQLite file exists and this process may not write it.
        clock: the time of record reads (``last_accessed``) and of decay scores (SPEC
            §6); a fake clock in tests. Writes keep their own timestamps.

    Raises:
        DatabaseNotFound: a missing SQLite file with ``create=False`` (or ``read_only``).
        ForeignDatabase: the database holds another application's tables; untouched.
        DatabaseReadOnly: ``read_only`` and the schema needs an upgrade.
        DatabaseUnavailable: the database can't be opened (the reason is named).
        StoreBusy: another process held the database past the busy timeout.

    Every method may raise StoreBusy (issue 10 item 6: contention gives a typed outcome).
    """

    def __init__(
        self,
        url: str,
        *,
        memory_limit: int | None = None,
        synchronous_full: bool | None = None,
        busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_MS / 1000,
        create: bool = True,
        read_only: bool | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.url = url
        self.memory_limit = config.memory_limit() if memory_limit is None else memory_limit
        if synchronous_full is None:
            synchronous_full = config.sqlite_synchronous_full()
        self._db = Database(
            url,
            synchronous_full=synchronous_full,
            busy_timeout_s=busy_timeout_s,
            create=create,
            read_only=read_only,
        )
        self._sa = self._db.sa
        self.dialect = self._db.dialect
        self.read_only = self._db.read_only
        self.clock = clock
        self._access_log = record_index.AccessLog(self._write_access_times, clock=clock)
        self._vectors = semantic.VectorCache()
        self._embedder: Embedder | None = None

    def close(self) -> None:
        """Stops the embedder, then releases every pooled connection (checkpointing the
        SQLite WAL, waiting at most :data:`ERASE_WAIT_S` for readers), after writing the
        pending record reads, and ends every :meth:`watch_changes`."""
        if self._embedder is not None:
            self._embedder.stop()
            self._embedder = None
        self._access_log.close()
        self._db.close()

    def watch_changes(self, callback: ChangeCallback) -> Callable[[], None]:
        """Calls ``callback(store_ids)`` — the ids of stores whose change feed grew, or
        None when any may have — whenever a commit of any process grows a change feed of
        this database, from a thread of the engine's (so ``callback`` must be quick and
        thread-safe, e.g. hand over to an event loop). Committed after this returns
        means told: read the feed afterwards and nothing is missed. What it costs when
        nothing changes: one cheap check per database every few seconds, however many
        stores and subscribers (issue 12 idle cost; :mod:`memfs.store.notify`).
        Blocking the first time (opens the watch).

        Returns:
            The function that ends this subscription.
        """
        return self._db.watch.subscribe(callback)

    def erasure_pending(self) -> datetime | None:
        """Since when bytes erased by a redaction, hard delete, store deletion or
        retention may still be in the SQLite file or its WAL (None: they are gone).

        An erasing call checkpoints and truncates the WAL before it returns; a reader
        holding an old snapshot longer than :data:`ERASE_WAIT_S` makes that wait give up
        (so writers never stall behind it), and the erasure stays pending — recorded in
        the file ``<database>-erase-pending`` for every process (``memfs fsck`` and
        ``memfs status`` report it) — until a later write or close of any engine on this
        database completes the checkpoint. Always None on PostgreSQL (see README,
        "Redaction on PostgreSQL").
        """
        return self._db.erasure_pending()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------- stores

    def create_store(
        self,
        name: str,
        description: str = "",
        metadata: dict[str, str] | None = None,
        *,
        version_retention_s: int | None = None,
    ) -> MemoryStore:
        """Creates a store (api-contract §5.1).

        Args:
            version_retention_s: prune versions older than this many seconds (SPEC §2
                retention, :meth:`prune_versions`); None keeps them forever.

        Raises:
            InvalidStoreField: name or description breaks SPEC §1.
            InvalidMetadata: metadata breaks SPEC §1 (every problem named).
            InvalidInput: a retention period out of range (1 s to 100 years).
        """
        rules.validate_retention_s(version_retention_s)
        with self._db.write() as conn:
            store = stores.create_store(conn, name, description, metadata)
            if version_retention_s is None:
                return store
            retention.init_version_retention(conn, store.id, version_retention_s)
            return stores.get_store(conn, store.id)

    def get_store(self, store_id: str, *, viewer: Viewer | None = None) -> MemoryStore:
        """A store, archived or not; its counts are those ``viewer`` sees. Raises NotFound."""
        with self._db.read() as conn:
            return _counted(conn, viewer, stores.get_store(conn, store_id))

    def find_store(self, name_or_id: str) -> MemoryStore:
        """A store by id, else by exact name, else by slug (CLI convenience).

        Raises:
            NotFound: nothing matches.
            InvalidInput: several stores share that name or slug (the message lists ids).
        """
        with self._db.read() as conn:
            return stores.find_store(conn, name_or_id)

    def update_store(
        self,
        store_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        metadata_patch: dict[str, str | None] | None = None,
        viewer: Viewer | None = None,
        version_retention_s: int | None | EllipsisType = ...,
    ) -> MemoryStore:
        """Patches a store; None means "no change"; a metadata value None removes the key.

        ``updated_at`` moves only when something changed (api-contract §5.3).

        Args:
            version_retention_s: the new retention period in seconds, None to keep
                versions forever; ``...`` (default) leaves it unchanged (SPEC §2).

        Raises:
            NotFound, StoreArchived (updating an archived store), InvalidStoreField,
            InvalidMetadata (also when the patched result has more than 16 keys),
            InvalidInput (a retention period out of range).

        The store comes back with the counts ``viewer`` sees.
        """
        if version_retention_s is not ...:
            rules.validate_retention_s(version_retention_s)
        with self._db.write() as conn:
            store = stores.update_store(
                conn, store_id, name=name, description=description, metadata_patch=metadata_patch
            )
            if version_retention_s is not ... and retention.set_version_retention(
                conn, store_id, version_retention_s
            ):
                store = stores.get_store(conn, store_id)
            return _counted(conn, viewer, store)

    def list_stores(
        self,
        *,
        include_archived: bool = False,
        created_gte: datetime | None = None,
        created_lte: datetime | None = None,
        limit: int = 20,
        cursor: str | None = None,
        viewer: Viewer | None = None,
    ) -> Page[MemoryStore]:
        """Stores newest first (by id, which sorts by creation time); their counts are
        those ``viewer`` sees.

        Raises:
            InvalidInput: limit outside 1–100.
            InvalidCursor: a cursor from another query.
        """
        with self._db.read() as conn:
            page = stores.list_stores(
                conn,
                include_archived=include_archived,
                created_gte=created_gte,
                created_lte=created_lte,
                limit=limit,
                cursor=cursor,
            )
            if viewer is None:
                return page
            items = [_counted(conn, viewer, store) for store in page.items]
            return page.model_copy(update={"items": items})

    def archive_store(
        self,
        store_id: str,
        *,
        actor: Actor | None = None,
        force: bool = False,
        viewer: Viewer | None = None,
    ) -> MemoryStore:
        """Archives a store (one-way; an archived store comes back unchanged), with the
        counts ``viewer`` sees.

        Raises:
            NotFound.
            StoreBound: the store is mounted on an (identity, template) pair and
                ``force`` is False (SPEC §8; the message names the bindings).
        """
        with self._db.write() as conn:
            return stores.archive_store(conn, store_id, actor=actor, force=force)

    def delete_store(
        self, store_id: str, *, actor: Actor | None = None, force: bool = False
    ) -> None:
        """Deletes a store with its memories, versions, mounts and now-unreferenced blobs.

        A final ``store_deleted`` entry stays in the change feed so mounts learn of it.

        Raises:
            NotFound.
            StoreBound: the store is mounted on a pair and ``force`` is False, or it is
                a pair's default store and the pair has explicit mounts (SPEC §8).
        """
        with self._db.write() as conn:
            stores.delete_store(conn, store_id, actor=actor, force=force)
        self._db.checkpoint()

    # ------------------------------------------- identities (SPEC §8)

    def _write_racing_default(self, work: Callable[[Connection], T]) -> T:
        """Runs ``work`` in a write transaction, again when it lost the race to create a
        pair's default store (the unique index ``ix_identity_mounts_default``: the other
        transaction committed one, which the next attempt finds)."""
        for attempt in range(identities.DEFAULT_STORE_ATTEMPTS):
            try:
                with self._db.write() as conn:
                    return work(conn)
            except IntegrityError:
                if attempt + 1 == identities.DEFAULT_STORE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def ensure_default_store(
        self, identity_id: str, template_id: str
    ) -> tuple[MemoryStore, bool]:
        """The (identity, template) pair's system-managed default store, created on the
        first call (named ``default:<identity_id>:<template_id>``); returns it and
        whether this call created it. Two callers racing get the same one store.

        Raises:
            InvalidInput: an identity id not ``idn_…`` or a template id not ``tmpl_…``.
        """
        return self._write_racing_default(
            lambda conn: identities.ensure_default_store(conn, identity_id, template_id)
        )

    def mount_store(
        self,
        identity_id: str,
        template_id: str,
        store_id: str,
        access: Access = Access.READ_ONLY,
    ) -> tuple[IdentityMount, bool]:
        """Mounts a store on a pair, read-only; returns the mount and whether it is new
        (mounting it again gives the same mount).

        Raises:
            InvalidInput: a malformed pair, ``read_write`` access, or the pair's 10
                explicit mounts taken (``mount_limit_reached``).
            Conflict: a default store (``default_store_not_mountable``).
            NotFound: unknown store. StoreArchived: an archived store.
        """
        with self._db.write() as conn:
            return identities.mount_store(conn, identity_id, template_id, store_id, access)

    def unmount_store(self, identity_id: str, template_id: str, store_id: str) -> None:
        """Removes a pair's explicit mount of a store.

        Raises:
            InvalidInput: a malformed pair. Conflict: the pair's default store.
            NotFound: the store is not mounted on the pair.
        """
        with self._db.write() as conn:
            identities.unmount_store(conn, identity_id, template_id, store_id)

    def list_pair_mounts(self, identity_id: str, template_id: str) -> list[IdentityMount]:
        """A pair's mounts: the default store first, then by mount creation time.
        Raises InvalidInput (a malformed pair)."""
        with self._db.read() as conn:
            return identities.list_pair_mounts(conn, identity_id, template_id)

    def list_store_mounts(self, store_id: str) -> list[IdentityMount]:
        """The pairs a store is mounted on, oldest mount first. Raises NotFound."""
        with self._db.read() as conn:
            return identities.list_store_mounts(conn, store_id)

    def create_pair_session(
        self,
        identity_id: str,
        template_id: str,
        *,
        mount_root: str = config.DEFAULT_PAIR_MOUNT_ROOT,
        with_token: bool = True,
        title: str | None = None,
        ttl_s: int | None = None,
        api_key_id: str | None = None,
        principal: UserPrincipal | None = None,
    ) -> tuple[Session, str | None]:
        """A session for an (identity, template) pair (SPEC §8), in one transaction: its
        default store (created if needed) ``read_write``, then every explicit mount of an
        active store ``read_only`` by mount time, in the flat layout at ``mount_root``.

        Raises:
            InvalidInput: a malformed pair; and what :meth:`create_session` raises.
            StoreArchived: the pair's default store is archived.
        """

        def work(conn: Connection) -> tuple[Session, str | None]:
            resources = identities.pair_resources(conn, identity_id, template_id)
            return access.create_session(
                conn,
                resources,
                mount_root=mount_root,
                with_token=with_token,
                title=title,
                ttl_s=ttl_s,
                api_key_id=api_key_id,
                layout=Layout.FLAT,
                max_stores=config.MAX_STORES_PER_PAIR_SESSION,
                principal=principal,
            )

        return self._write_racing_default(work)

    # ----------------------------------------------------------- memories

    def create_memory(
        self,
        store_id: str,
        path: str,
        content: str,
        *,
        actor: Actor | None,
        metadata: dict[str, str] | None = None,
        viewer: Viewer | None = None,
    ) -> Memory:
        """Creates a memory and its ``created`` version; returns it with content.

        Raises:
            NotFound, StoreArchived, InvalidPath, PathTooLong, InvalidContent,
            ContentTooLarge, InvalidMetadata, StoreFull, PathConflict (path, ancestor or
            descendant occupied; names the blocker).
            PermissionDenied: ``record_not_visible``, a record ``viewer`` could not see.
        """
        with self._db.write() as conn:
            try:
                memory = memories.create_memory(
                    conn,
                    store_id,
                    path,
                    content,
                    actor=actor,
                    metadata=metadata,
                    memory_limit=self.memory_limit,
                )
            except PathConflict as conflict:
                raise seen.masked_conflict(conn, viewer, conflict, path) from None
            seen.check_written(conn, viewer, memory.id, memory.path)
            return memory

    def memory_store_id(self, memory_id: str) -> str:
        """The id of the store holding memory ``memory_id``, live or tombstoned (the
        seed 004 store-less routes find the store this way).

        Raises:
            NotFound: no memory has this id (never was, or hard-deleted).
        """
        with self._db.read() as conn:
            return memories.memory_store_id(conn, memory_id)

    def get_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        with_content: bool = True,
        viewer: Viewer | None = None,
    ) -> Memory:
        """A live memory by id. Raises NotFound (unknown, deleted, other store, hidden
        from ``viewer``)."""
        with self._db.read() as conn:
            seen.require_visible(conn, viewer, memory_id)
            return memories.get_memory(conn, store_id, memory_id, with_content=with_content)

    def get_memory_by_path(
        self,
        store_id: str,
        path: str,
        *,
        with_content: bool = True,
        viewer: Viewer | None = None,
    ) -> Memory:
        """A live memory by path. Raises NotFound (also: hidden from ``viewer``)."""
        with self._db.read() as conn:
            memory = memories.get_memory_by_path(conn, store_id, path, with_content=with_content)
            seen.require_visible(conn, viewer, memory.id)
            return memory

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
        viewer: Viewer | None = None,
    ) -> Memory:
        """Changes content and/or path (rename keeps the id); returns it with content.

        The precondition is checked first; an update that changes nothing writes no
        version and returns the memory unchanged (SPEC §2). ``metadata`` replaces the
        memory's metadata wholesale (no version: metadata is not versioned). With
        ``replace=True`` a live memory already at the new path is soft-deleted in the same
        transaction (rename(2) semantics, used by the FUSE layer); otherwise an occupied
        destination raises PathConflict.

        Raises:
            NotFound, StoreArchived, PreconditionFailed, PathConflict, and the
            validation errors of create; NotFound for a memory hidden from ``viewer``,
            PermissionDenied ``record_not_visible`` for a result it could not see.
        """
        with self._db.write() as conn:
            seen.require_visible(conn, viewer, memory_id)
            replace = seen.keeps_hidden(conn, viewer, store_id, path, replace)
            try:
                memory = memories.update_memory(
                    conn,
                    store_id,
                    memory_id,
                    actor=actor,
                    content=content,
                    path=path,
                    expected_sha256=expected_sha256,
                    metadata=metadata,
                    replace=replace,
                )
            except PathConflict as conflict:
                raise seen.masked_conflict(conn, viewer, conflict, path) from None
            seen.check_written(conn, viewer, memory.id, memory.path)
            return memory

    def retract_create(self, store_id: str, memory_id: str, *, actor: Actor) -> bool:
        """Erases a memory whose whole history is the one empty ``created`` version
        ``actor`` wrote — an exclusive create (committed at once, SPEC §4 ``O_EXCL``)
        whose every write was then refused, which must leave nothing (issue 10 item 5:
        ``cp`` of a binary file). Only the audit log keeps the fact (as for any hard
        delete). Returns False, changing nothing, when the memory holds content or
        another version (someone else wrote to it meanwhile).

        Raises:
            NotFound: no live memory ``memory_id`` in the store.
        """
        with self._db.write() as conn:
            return memories.retract_create(conn, store_id, memory_id, actor=actor)

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
        audit_metadata: dict[str, str] | None = None,
        viewer: Viewer | None = None,
    ) -> frozenset[str]:
        """Deletes a live memory in one of the SPEC §2 modes; audited with ``reason``
        and ``audit_metadata`` (seed 004: the request's metadata, SPEC §1 rules).

        soft_delete: tombstone + ``deleted`` version, restorable. redact: tombstone whose
        content is ``replacement``, metadata cleared, every earlier version redacted, not
        restorable. hard_delete: the memory and all its versions erased (the audit log
        keeps the fact, the reason and the actor). Allowed on archived stores.

        Returns:
            The paths the memory ever had (every version's, store-absolute) when they
            were erased (redact, hard_delete), for the caller to scrub them from local
            files too (:func:`memfs.home.scrub_stopped_mounts`); empty for a soft
            delete.

        Raises:
            NotFound (also: hidden from ``viewer``), PreconditionFailed, InvalidContent
            (bad replacement), InvalidInput (unknown mode), InvalidMetadata
            (``audit_metadata``).
        """
        with self._db.write() as conn:
            seen.require_visible(conn, viewer, memory_id)
            erased = memories.delete_memory(
                conn,
                store_id,
                memory_id,
                actor=actor,
                expected_sha256=expected_sha256,
                mode=mode,
                reason=reason,
                replacement=replacement,
                audit_metadata=audit_metadata,
            )
        if mode != DeleteMode.SOFT_DELETE:
            self._db.checkpoint()
        return erased

    def restore_memory(
        self,
        store_id: str,
        memory_id: str,
        *,
        actor: Actor | None,
        reason: str | None = None,
        audit_metadata: dict[str, str] | None = None,
        viewer: Viewer | None = None,
    ) -> Memory:
        """Brings a soft-deleted memory back with its id, path and content; audited with
        ``reason`` and ``audit_metadata`` (seed 004).

        Writes a ``created`` version (the memory comes back into existence) carrying the
        content of its newest content version.

        Raises:
            NotFound: no such memory in the store.
            StoreArchived, StoreFull.
            NotRestorable: the memory is live, was redacted, or its content was redacted.
            PathConflict: its path (or an ancestor/descendant) is now taken.
            InvalidMetadata: ``audit_metadata`` breaks SPEC §1.

        A memory whose restored record ``viewer`` could not see is NotFound for it
        (rolled back), as it is absent from its restore listing.
        """
        with self._db.write() as conn:
            # A live record hidden from the viewer is the 404 of an unknown id, before
            # any answer that would tell it exists ("is not deleted").
            seen.require_visible(conn, viewer, memory_id)
            try:
                memory = memories.restore_memory(
                    conn,
                    store_id,
                    memory_id,
                    actor=actor,
                    reason=reason,
                    memory_limit=self.memory_limit,
                    audit_metadata=audit_metadata,
                )
            except PathConflict as conflict:
                raise seen.masked_conflict(conn, viewer, conflict, None) from None
            seen.require_visible(conn, viewer, memory.id)
            return memory

    def rename_prefix(
        self, store_id: str, old_prefix: str, new_prefix: str, *, actor: Actor | None
    ) -> list[Memory]:
        """Moves every live memory under ``old_prefix`` below ``new_prefix`` in one
        transaction (directory rename, SPEC §4); one ``modified`` version each.

        Args:
            old_prefix, new_prefix: directory prefixes ending with ``/``.

        Returns:
            The moved memories (without content), in their new path order.

        Raises:
            NotFound, StoreArchived, InvalidPath (prefixes, or a resulting path),
            PathConflict (a destination or its ancestor is a memory outside the move),
            InvalidInput (moving a directory into itself).
        """
        with self._db.write() as conn:
            moved = renames.rename_prefix(conn, store_id, old_prefix, new_prefix, actor=actor)
        return renames.as_memories(moved)

    # ------------------------------------------------------------ listing

    def list_memories(
        self,
        store_id: str,
        *,
        path_prefix: str = "/",
        depth: int = 0,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
        status: MemoryStatus | None = MemoryStatus.ACTIVE,
        viewer: Viewer | None = None,
        record_filter: RecordFilter | None = None,
    ) -> Page[Memory | MemoryPrefix]:
        """Memories under ``path_prefix`` in byte order of path, rolled up by depth.

        With a ``record_filter`` that is not empty, only the records it keeps (SPEC §6
        curation, the API's ``record_type``/``tag``/``min_importance``/``user_id``).

        With ``depth`` > 0, a memory more than ``depth`` segments below the prefix is
        replaced by one ``MemoryPrefix`` of its first ``depth`` segments (deduplicated;
        api-contract §5.10). Prefixes and memories both count toward ``limit``. What is
        hidden from ``viewer`` is left out in the query (pages stay full; a prefix only
        of hidden memories is not shown).

        Args:
            status: ``ACTIVE`` (default) lists the live memories; ``DELETED`` the
                soft-deleted (restorable) ones, None both (seed 004: an admin finds what
                to restore), in path then id order, ``deleted_at`` set on tombstones,
                which have no content; redacted tombstones are never listed, nor
                tombstones of records hidden from ``viewer``; no ``record_filter``.

        Raises:
            NotFound, InvalidPath (prefix), InvalidInput (depth/limit; a depth other
            than 0 with deleted memories), InvalidCursor.
        """
        if status is not MemoryStatus.ACTIVE:
            if depth != 0:
                raise InvalidInput("depth must be 0 when deleted memories are listed")
            if record_filter is not None and not record_filter.empty:
                raise InvalidInput("record filters list live records only, not deleted ones")
            with self._db.read() as conn:
                page = listing.list_with_deleted(
                    conn,
                    store_id,
                    path_prefix=path_prefix,
                    status=status,
                    limit=limit,
                    cursor=cursor,
                    with_content=with_content,
                    viewer=viewer,
                )
                # A tombstone whose last content is a record hidden from the viewer is
                # left out (the page may then hold fewer than limit items).
                tombstones = [m.id for m in page.items if isinstance(m, Memory) and m.deleted_at]
                hidden = seen.hidden_tombstones(conn, viewer, tombstones)
            return Page[Memory | MemoryPrefix](
                items=[m for m in page.items if not isinstance(m, Memory) or m.id not in hidden],
                next_cursor=page.next_cursor,
            )
        with self._db.read() as conn:
            return listing.list_memories(
                conn,
                store_id,
                path_prefix=path_prefix,
                depth=depth,
                limit=limit,
                cursor=cursor,
                with_content=with_content,
                viewer=viewer,
                record_filter=record_filter,
            )

    def all_memories(self, store_id: str, *, viewer: Viewer | None = None) -> list[Memory]:
        """Every live memory of a store without content, in path order (mount start-up).

        Built from plain tuples of the columns a Memory needs: a mount waits for this
        call, and that takes half the time of whole rows (55 ms instead of 115 ms for
        10,000 memories).

        Raises:
            NotFound.
        """
        with self._db.read() as conn:
            return listing.all_memories(conn, store_id, viewer=viewer)

    def deleted_memories(self, store_id: str, *, viewer: Viewer | None = None) -> list[Memory]:
        """Soft-deleted (restorable) memories, newest deletion first, without content;
        for ``viewer`` without those whose last content is a record hidden from it."""
        with self._db.read() as conn:
            deleted = listing.deleted_memories(conn, store_id)
            hidden = seen.hidden_tombstones(conn, viewer, [m.id for m in deleted])
            return [m for m in deleted if m.id not in hidden]

    # ------------------------------------------------------------- search

    def search(
        self,
        query: str | query_language.Query,
        store_ids: Sequence[str] | None,
        *,
        path_prefix: str = "/",
        limit: int = query_language.DEFAULT_SEARCH_LIMIT,
        mode: str = query_language.SEARCH_AUTO,
        record_filter: RecordFilter | None = None,
        viewer: Viewer | None = None,
    ) -> list[query_language.SearchHit]:
        """Ranked hits among the live memories of ``store_ids`` (SPEC §7), best first;
        the query language is :mod:`memfs.core.query`'s.

        Full text is written in the transaction of every write, so it sees every
        committed head. Semantic search ranks by the cosine similarity of the
        configured model's vectors (``$MEMFS_SEARCH_MODEL_DIR``), which the embedder
        computes off the write path: a memory is found by meaning once embedded
        (:meth:`index_lag`). Hybrid fuses both by reciprocal rank.

        Args:
            query: the query text (parsed with :func:`memfs.core.query.parse`) or a parsed one.
            store_ids: the stores to search; the caller passes only those it may read.
                None searches every store (a caller that may read them all).
            path_prefix: a directory prefix ending with ``/`` (whole segments match).
            limit: at most this many hits, 1–100.
            mode: ``auto`` (hybrid with a usable model configured, else full text), ``text``,
                ``semantic`` or ``hybrid`` (:data:`memfs.core.query.SEARCH_MODES`).
            record_filter: only records it keeps (SPEC §7: record type, tags,
                minimum importance); None or empty: every memory.
            viewer: what is hidden from it is never a hit (SPEC §7), left out in the query.

        Raises:
            InvalidInput: a malformed query, prefix, limit or mode.
            NotFound: an unknown store.
            SearchUnavailable: ``semantic``/``hybrid`` without a usable model (the
                message names the setting).
        """
        query_language.validate_mode(mode)
        parsed = query if isinstance(query, query_language.Query) else query_language.parse(query)
        scope = None if store_ids is None else list(store_ids)
        model = None
        if mode == query_language.SEARCH_AUTO:
            with contextlib.suppress(SearchUnavailable):  # a broken model: full text only
                model = embeddings.configured_model()
        elif mode != query_language.SEARCH_TEXT:
            model = embeddings.configured_model()
            if model is None:
                raise _semantic_unavailable()
        with self._db.read() as conn:
            hidden = None if viewer is None else seen.hidden_ids(viewer)
            if model is None:
                return search.search(
                    conn,
                    parsed,
                    scope,
                    path_prefix=path_prefix,
                    limit=limit,
                    hidden=hidden,
                    record_filter=record_filter,
                )
            vector = model.embed([" ".join(t.text for t in parsed.positive)])[0]
            ranked = (
                search.semantic_search
                if mode == query_language.SEARCH_SEMANTIC
                else search.hybrid_search
            )
            probe = semantic.Probe(self._vectors, model.fingerprint, vector)
            return ranked(
                conn,
                probe,
                parsed,
                scope,
                path_prefix=path_prefix,
                limit=limit,
                hidden=hidden,
                record_filter=record_filter,
            )

    def start_embedder(self) -> bool:
        """Starts the embedder thread when a model is configured and the database is
        writable (a mount's daemon, ``memfs serve``); :meth:`close` stops it. Returns
        whether it runs.

        Raises:
            SearchUnavailable: ``$MEMFS_SEARCH_MODEL_DIR`` names no usable model.
        """
        model = embeddings.configured_model()
        if model is None or self.read_only or self._embedder is not None:
            return self._embedder is not None
        self._embedder = Embedder(self._db.read, self._db.write, model)
        self._embedder.start()
        return True

    def embedder_lag(self) -> IndexLag | None:
        """The lag this engine's embedder last saw (no I/O: safe on an event loop);
        None when no embedder runs or before its first poll."""
        return None if self._embedder is None else self._embedder.lag

    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embeds every queued memory now, in this thread (``memfs search reindex``,
        tests); ``progress`` is called with each batch's size. Returns how many vectors
        were stored.

        Raises:
            SearchUnavailable: no usable model is configured.
        """
        model = embeddings.configured_model()
        if model is None:
            raise _semantic_unavailable()
        stored = 0
        for done, taken in drain(self._db.read, self._db.write, model):
            stored += done
            if progress is not None:
                progress(taken)
        return stored

    def index_lag(self) -> IndexLag:
        """How many live memories wait for their vector, and the oldest wait (seconds);
        ``model`` is the configured model's fingerprint (None without one, or when its
        files are unusable)."""
        try:
            model = embeddings.configured_model()
        except SearchUnavailable:
            model = None
        with self._db.read() as conn:
            return semantic.lag(conn, None if model is None else model.fingerprint)

    def reindex(self, store_ids: Sequence[str] | None) -> int:
        """Rebuilds the full-text documents of ``store_ids`` (None: the whole index) from
        the heads and queues every memory for a new vector (a changed model, an
        upgraded database); :meth:`embed_pending` then embeds them. Returns how many
        memories were indexed.

        Raises:
            NotFound: an unknown store.
        """
        with self._db.write() as conn:
            if store_ids is None:
                count = search.rebuild(conn)
            else:
                for store_id in store_ids:
                    stores.get_store(conn, store_id)
                count = search.rebuild_stores(conn, list(store_ids))
            semantic.queue_all(conn, None if store_ids is None else list(store_ids))
            search.scrub(conn)
            return count

    # ------------------------------------------------------------ records

    def get_records(
        self, memory_ids: Sequence[str], *, viewer: Viewer | None = None
    ) -> dict[str, Record]:
        """The index entries of those of ``memory_ids`` that are live records (SPEC §6),
        by memory id; ids that are no record (or unknown, or hidden from ``viewer``) are
        absent, and a relation's target hidden from ``viewer`` has no ``target_path``
        (it shows as written, never where it is). One transaction whatever the number
        of ids (the API's ``record`` objects of a page)."""
        with self._db.read() as conn:
            found = record_index.get_records(conn, list(memory_ids), self.clock())
            if viewer is None:
                return found
            return seen.visible_records(conn, viewer, found)

    def list_records(
        self,
        store_ids: Sequence[str] | None,
        record_filter: RecordFilter | None = None,
        *,
        viewer: Viewer | None = None,
    ) -> list[Record]:
        """The live records of ``store_ids`` (None: every store) that ``record_filter``
        keeps and ``viewer`` sees, by store then path (SPEC §6 curation; ``memfs record
        ls``)."""
        with self._db.read() as conn:
            found = record_index.list_records(
                conn,
                None if store_ids is None else list(store_ids),
                record_filter or RecordFilter(),
                self.clock(),
            )
            if viewer is None:
                return found
            hidden = seen.hidden_among(conn, viewer, [r.memory_id for r in found])
            return [r for r in found if r.memory_id not in hidden]

    def stores_with_records(self, store_ids: Sequence[str]) -> set[str]:
        """Those of ``store_ids`` that hold at least one live record (``memfs prompt``
        explains the record header only then). One indexed probe per store."""
        with self._db.read() as conn:
            return record_index.stores_with_records(conn, list(store_ids))

    def relations_to(
        self, memory_id: str, *, viewer: Viewer | None = None
    ) -> list[RecordRelation]:
        """The relations of live records whose target resolved to ``memory_id`` (what
        points to it), by source path; ``memfs record show`` lists them beside the
        record's own :attr:`Record.relations`. Those of records hidden from ``viewer``
        are left out."""
        with self._db.read() as conn:
            found = record_index.relations_to(conn, memory_id)
            if viewer is None:
                return found
            hidden = seen.hidden_among(conn, viewer, [r.memory_id for r in found])
            return [r for r in found if r.memory_id not in hidden]

    def note_access(self, memory_ids: Sequence[str]) -> None:
        """Records that ``memory_ids`` were read (SPEC §6 ``last_accessed``: an open for
        reading through a mount, a full retrieve, a memory-tool or MCP view, a fetched
        search hit). Costs no transaction: the reads are written in batches, without a
        version, within :data:`memfs.store.records.ACCESS_FLUSH_INTERVAL_S` and at
        :meth:`close` (see :meth:`flush_access`). A read-only engine records nothing."""
        if not self.read_only:
            self._access_log.note(memory_ids)

    def flush_access(self) -> None:
        """Writes the reads :meth:`note_access` gathered now (tests, ``memfs record``)."""
        self._access_log.flush()

    def _write_access_times(self, accessed: dict[str, str]) -> None:
        with self._db.write() as conn:
            record_index.touch(conn, accessed)

    def forget_records(
        self,
        store_ids: Sequence[str] | None,
        *,
        below: float,
        apply: bool,
        actor: Actor | None = None,
    ) -> list[Record]:
        """The live records of ``store_ids`` (None: every store) whose decay score is
        below ``below``, by store then path; with ``apply``, each is soft-deleted
        (restorable; audited with the reason ``decay_score below <below>``) in one
        transaction (SPEC §6 curation: "dry-run by default, soft delete").

        Raises:
            InvalidInput: ``below`` outside 0–1.
        """
        if isinstance(below, bool) or not 0 <= below <= 1:
            raise InvalidInput("the decay threshold must be a number from 0 to 1")
        self.flush_access()  # reads noted so far count
        chosen = None if store_ids is None else list(store_ids)
        if not apply:
            with self._db.read() as conn:
                found = record_index.list_records(conn, chosen, RecordFilter(), self.clock())
            return [record for record in found if record.decay_score < below]
        with self._db.write() as conn:
            found = record_index.list_records(conn, chosen, RecordFilter(), self.clock())
            decayed = [record for record in found if record.decay_score < below]
            for record in decayed:
                memories.delete_memory(
                    conn,
                    record.store_id,
                    record.memory_id,
                    actor=actor,
                    expected_sha256=None,
                    mode=DeleteMode.SOFT_DELETE,
                    reason=f"decay_score below {below}",
                    replacement="",
                )
        return decayed

    def record_findings(self) -> list[str]:
        """``memfs fsck --records``: one line per dangling relation (a target that is no
        live memory; SPEC §6 reports them, never refuses them)."""
        with self._db.read() as conn:
            return list(record_index.check_relations(conn))

    # -------------------------------------------------------------- blobs

    def read_blob(self, blob_key: str) -> bytes:
        """The bytes of a content-addressed blob. Raises NotFound (purged or unknown)."""
        with self._db.read() as conn:
            return blobs.read_blob(conn, blob_key)

    def read_blobs(self, blob_keys: Sequence[str]) -> dict[str, bytes]:
        """The bytes of several blobs in one query (a mount's read-ahead), keyed by blob
        key; keys not stored (purged or unknown) are left out, never an error.

        Args:
            blob_keys: at most a few hundred keys (one ``IN`` list).
        """
        if not blob_keys:
            return {}
        with self._db.read() as conn:
            return blobs.read_blobs(conn, blob_keys)

    # ----------------------------------------------------------- versions

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
        viewer: Viewer | None = None,
    ) -> Page[MemoryVersion]:
        """Versions newest first, filtered (api-contract §5.12); for ``viewer`` without
        those it may not see (:func:`memfs.store.visibility.visible_versions`; a page may
        then hold fewer than ``limit``).

        Raises:
            NotFound (store), InvalidInput (operation, limit), InvalidCursor.
        """
        with self._db.read() as conn:
            page = versions.list_versions(
                conn,
                store_id,
                memory_id=memory_id,
                operation=operation,
                actor_filters={
                    ActorType.SESSION: session_id,
                    ActorType.API: api_key_id,
                    ActorType.SERVICE_ACCOUNT: service_account_id,
                },
                created_gte=created_gte,
                created_lte=created_lte,
                limit=limit,
                cursor=cursor,
                with_content=with_content,
            )
            if viewer is None:
                return page
            return page.model_copy(
                update={"items": seen.visible_versions(conn, viewer, page.items)}
            )

    def get_version(
        self,
        store_id: str,
        version_id: str,
        *,
        with_content: bool = True,
        viewer: Viewer | None = None,
    ) -> MemoryVersion:
        """A version, redacted or not. Raises NotFound (also: hidden from ``viewer``)."""
        with self._db.read() as conn:
            version = versions.get_version(conn, store_id, version_id, with_content=with_content)
            if not seen.visible_versions(conn, viewer, [version]):
                raise NotFound(f"memory version {version_id!r} not found")
            return version

    def redact_version(
        self, store_id: str, version_id: str, *, actor: Actor | None
    ) -> MemoryVersion:
        """Scrubs a version (SPEC §2 redaction); already-redacted ones come back unchanged.

        The version's content, path, digest and size become null; its bytes are erased
        from the database (and, on SQLite, from the WAL by a checkpoint) unless another
        version or a live memory still holds identical content.

        Raises:
            NotFound, HeadVersionRedaction (head version of a live memory).
        """
        with self._db.write() as conn:
            result = versions.redact_version(conn, store_id, version_id, actor=actor)
        self._db.checkpoint()
        return result

    # -------------------------------------------------- change feed, audit

    def audit_events(
        self,
        store_id: str | None,
        *,
        memory_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Audit trail of deletions, redactions, restores, prunes and store events,
        newest first (SPEC §2 "audited").

        Args:
            store_id: one store's events (they outlive the store); None: every store's.
            memory_id: only the events of this memory.
            since: only events at or after this time.
            limit: at most this many (the newest); None: all.

        Returns:
            dicts with keys ``action``, ``memory_store_id``, ``memory_id``, ``reason``,
            ``metadata`` (a dict, ``{}`` when none), ``actor_type``, ``actor_id``,
            ``created_at`` (RFC 3339 text).
        """
        with self._db.read() as conn:
            return feed.audit_events(
                conn, store_id, memory_id=memory_id, since=since, limit=limit
            )

    def last_change_seq(self, store_id: str) -> int:
        """The newest change seq of a store (0 when none). Raises NotFound."""
        with self._db.read() as conn:
            return feed.last_change_seq(conn, store_id)

    def feed_probe(self) -> feed.FeedProbe | None:
        """A :class:`memfs.store.feed.FeedProbe` of this database: the newest change seq
        of a store read on the calling thread without waiting (issue 17). SQLite files
        only; None for PostgreSQL and in-memory databases (use :meth:`last_change_seq`).
        The caller closes it."""
        path = self._db.sqlite_file
        if path is None or not path.exists():
            return None
        return feed.FeedProbe(path)

    def feed_receipt(self) -> list[Change]:
        """The change-feed entries the calling thread's last write appended, as
        committed, oldest first (empty when it appended none or failed): a writer that
        follows the feed knows its own entries without reading them back (issue 17)."""
        return self._db.receipt()

    def changes_since(
        self,
        store_id: str,
        after_seq: int,
        *,
        limit: int = 1000,
        viewer: Viewer | None = None,
    ) -> list[Change]:
        """Changes with seq > ``after_seq``, oldest first, at most ``limit``; an entry
        about a memory hidden from ``viewer`` keeps only its seq, kind and memory id
        (:func:`memfs.store.visibility.visible_changes`).

        Works after the store is deleted (the final entry is ``store_deleted``).
        """
        with self._db.read() as conn:
            changes = feed.changes_since(conn, store_id, after_seq, limit)
            return seen.visible_changes(conn, viewer, changes)

    # --------------------------------------------------- sessions and keys

    def create_session(
        self,
        resources: Sequence[ResourceSpec],
        *,
        mount_root: str = "/mnt/memory",
        with_token: bool = True,
        title: str | None = None,
        ttl_s: int | None = None,
        api_key_id: str | None = None,
        layout: Layout = Layout.PER_STORE,
        principal: UserPrincipal | None = None,
    ) -> tuple[Session, str | None]:
        """Attaches 1–8 non-archived stores; returns the session and its token (once).

        Each resource snapshots the store's name and description and gets a mount path
        ``<mount_root>/<slug>`` (SPEC §4 per-store layout; collisions get ``-2``, ``-3``),
        or ``<mount_root>`` itself in the flat layout (which has at most one
        ``read_write`` store, its default).
        The token is ``memfs_st_…``; only its SHA-256 is stored. It expires ``ttl_s``
        seconds after creation (``Session.expires_at``; SPEC §3 credential lifecycle).

        Args:
            with_token: False for an embedded mount's session: no token, no expiry.
            ttl_s: the token's lifetime in seconds, 1 to 30 days (2,592,000); None means
                the default, 24 h (:data:`memfs.core.config.DEFAULT_SESSION_TTL_S`).
            api_key_id: the API key creating the session (the API passes its caller's);
                revoking that key revokes the session. None for local callers.
            principal: the user the session speaks for (SPEC §6 visibility), kept for
                its whole life; None for none. Who may hand which principal is the
                caller's rule (the API's: a key hands its own, an admin key any).

        Raises:
            InvalidInput: no store, more than 8, a store twice, bad access or instructions,
                a ttl without a token.
            InvalidTtl: ttl_s not an int from 1 to 2,592,000.
            NotFound: an unknown store or API key.
            CredentialRevoked: ``api_key_id`` is revoked.
            StoreArchived: an archived store can't be attached.
        """
        with self._db.write() as conn:
            return access.create_session(
                conn,
                resources,
                mount_root=mount_root,
                with_token=with_token,
                title=title,
                ttl_s=ttl_s,
                api_key_id=api_key_id,
                layout=layout,
                principal=principal,
            )

    def get_session(self, session_id: str) -> Session:
        """A session, whatever its state (check ``expires_at``, ``revoked_at``,
        ``archived_at``). Raises NotFound."""
        with self._db.read() as conn:
            return access.get_session(conn, session_id)

    def authenticate_session(self, token: str) -> Session:
        """The session a ``memfs_st_…`` token belongs to, if the token still works.

        Raises:
            AuthenticationFailed: no session has this token.
            CredentialRevoked: the session was revoked (itself, or with the API key that
                created it) or archived.
            CredentialExpired: the session's ``expires_at`` has passed.
        """
        with self._db.read() as conn:
            return access.authenticate_session(conn, token)

    def list_sessions(
        self,
        store_id: str | None = None,
        *,
        include_archived: bool = False,
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page[Session]:
        """Sessions newest first (by id), expired and revoked ones included; archived ones
        only with ``include_archived`` (the SDK's ``sessions.list`` default).

        Args:
            store_id: only sessions that attach this store (``memory_store_id=`` of the
                SDK's ``client.beta.sessions.list``); an unknown id gives an empty page.

        Raises:
            InvalidInput: limit outside 1–100.
            InvalidCursor: a cursor from another query.
        """
        with self._db.read() as conn:
            return access.list_sessions(
                conn,
                store_id=store_id,
                include_archived=include_archived,
                limit=limit,
                cursor=cursor,
            )

    def revoke_session(self, session_id: str) -> Session:
        """Revokes a session: its token gets CredentialRevoked from now on (idempotent;
        the session stays listed). Raises NotFound."""
        with self._db.write() as conn:
            return access.revoke_session(conn, session_id)

    def archive_session(self, session_id: str) -> Session:
        """Archives a session (the SDK's ``sessions.archive``): it is ended, its token
        gets CredentialRevoked, and listings leave it out unless ``include_archived``.
        Idempotent. Raises NotFound."""
        with self._db.write() as conn:
            return access.archive_session(conn, session_id)

    def delete_session(self, session_id: str) -> None:
        """Deletes a session and its attachments (the SDK's ``sessions.delete``); its token
        then gets AuthenticationFailed. Memories and versions it wrote keep its id as
        their actor. Raises NotFound."""
        with self._db.write() as conn:
            access.delete_session(conn, session_id)

    def create_api_key(
        self,
        name: str,
        scopes: Sequence[Scope],
        store_ids: Sequence[str] = (),
        *,
        principal: UserPrincipal | None = None,
    ) -> tuple[ApiKey, str]:
        """Creates a key; returns it and its ``memfs_sk_…`` secret, shown this once.
        ``principal`` is the user it speaks for (SPEC §6 visibility), kept for its
        whole life.

        Raises:
            InvalidInput: no scope, or an unknown scope.
            NotFound: a listed store does not exist.
        """
        with self._db.write() as conn:
            return access.create_api_key(conn, name, scopes, store_ids, principal)

    def list_api_keys(self) -> list[ApiKey]:
        """Every key, newest first (secrets are never stored, so never shown)."""
        with self._db.read() as conn:
            return access.list_api_keys(conn)

    def revoke_api_key(self, api_key_id: str) -> ApiKey:
        """Revokes a key and, in the same transaction, every session it created (SPEC §3
        credential lifecycle). Idempotent. Raises NotFound."""
        with self._db.write() as conn:
            return access.revoke_api_key(conn, api_key_id)

    def authenticate_api_key(self, secret: str) -> ApiKey:
        """The active key with this secret.

        Raises:
            AuthenticationFailed: no key has this secret.
            CredentialRevoked: the key is revoked.
        """
        with self._db.read() as conn:
            return access.authenticate_api_key(conn, secret)

    # -------------------------------------------------------- maintenance

    def prune_versions(
        self,
        *,
        store_id: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> list[PruneResult]:
        """Drops the versions older than their store's retention period (SPEC §2
        retention; :mod:`memfs.store.retention`): never the head version of a memory,
        nor the content version a soft-deleted memory would be restored from. Pruned
        content leaves the database as a redaction's does (blobs, change-feed paths,
        FTS segments, then a WAL checkpoint). Stores without a period keep everything.

        Args:
            store_id: prune this store only (None: every store with a period).
            dry_run: count what would be dropped, change nothing.
            now: the clock the periods count back from (None: the current time); tests
                pass a fake one.

        Returns:
            One :class:`PruneResult` per store with a retention period, by store id.

        Raises:
            NotFound: ``store_id`` names no store.
        """
        clock = utcnow() if now is None else now
        if dry_run:
            with self._db.read() as conn:
                return retention.prune_versions(
                    conn, clock=clock, store_id=store_id, dry_run=True
                )
        with self._db.write() as conn:
            results = retention.prune_versions(conn, clock=clock, store_id=store_id, dry_run=False)
        if any(result.versions for result in results):
            self._db.checkpoint()
        return results

    def statistics(self) -> dict[str, int]:
        """Row counts: ``stores``, ``memories`` (live), ``versions``, ``blobs``."""
        with self._db.read() as conn:
            return stores.statistics(conn)

    def iter_fsck_findings(self, *, sqlite_check: str | None = None) -> Iterator[str]:
        """One line per broken invariant, from one consistent snapshot (memfs/store/fsck.py).

        Args:
            sqlite_check: also run SQLite's page-level check first: ``"integrity"``
                (``PRAGMA integrity_check``) or ``"quick"`` (``quick_check``); ignored on
                PostgreSQL. None: the memfs invariants only.

        Raises:
            InvalidInput: an unknown ``sqlite_check``.
        """
        findings: list[str] = []
        try:
            with self._db.read() as conn:
                if sqlite_check is not None and self.dialect == "sqlite":
                    findings.extend(_fsck.sqlite_findings(conn, sqlite_check))
                findings.extend(_fsck.run_checks(conn))
        except DBAPIError as exc:  # a damaged file: what was found stands, and this too
            findings.append(f"database: reading it failed: {exc.orig}")
        yield from findings


def _counted(conn: Connection, viewer: Viewer | None, store: MemoryStore) -> MemoryStore:
    """``store`` with the counts ``viewer`` sees (SPEC §6: hidden records are not
    counted); as it is for an unrestricted viewer."""
    if viewer is None:
        return store
    entry_count, total_size_bytes = seen.visible_counts(conn, viewer, store.id)
    return store.model_copy(
        update={"entry_count": entry_count, "total_size_bytes": total_size_bytes}
    )


def _semantic_unavailable() -> SearchUnavailable:
    """The SearchUnavailable of a semantic search: it names the setting (SPEC §7)."""
    return SearchUnavailable(
        f"semantic search is not configured: {config.SEARCH_MODEL_ENV} names no embedding "
        "model directory; full-text search works without one (drop --semantic)"
    )
