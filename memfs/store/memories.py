"""Memories: create, read, update (content, path, metadata); :class:`Memories` is the
facade of the whole aggregate (``engine.memories``, ``engine.for_caller(…).memories``):
these, deletes in the three SPEC §2 modes and restores (:mod:`memfs.store.tombstones`),
directory renames (:mod:`memfs.store.renames`) and listings (:mod:`memfs.store.listing`).

The per-store rules that span the rows of the ``memories`` table (one live memory per
path, SPEC §1; the memory limit) are :mod:`memfs.store.memory_rows`. Every write locks
the store row first and writes the memory's version (:mod:`memfs.store.versions`) and
change (:mod:`memfs.store.feed`) with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    Connection,
    select,
)

from memfs.core import rules
from memfs.core.content import Content
from memfs.core.errors import InvalidInput, NotFound, PathConflict
from memfs.core.ids import new_id
from memfs.core.model import (
    Actor,
    ChangeKind,
    DeleteMode,
    Memory,
    MemoryPrefix,
    MemoryStatus,
    Operation,
    Page,
)
from memfs.core.records import Record, RecordFilter, RecordHeader, parse_record
from memfs.store import _hot, feed, listing, memory_rows, renames, search, tombstones, visibility
from memfs.store import records as record_index
from memfs.store._common import (
    lock_store,
    memory_model,
    now,
    require_writable,
    store_row,
)
from memfs.store._facade import Facade
from memfs.store.blobs import blob_data, put_blob
from memfs.store.memory_rows import (
    check_capacity,
    check_path_free,
    check_precondition,
    live_row,
    path_conflict,
    require_free,
    set_memory_columns,
    tombstone,
)
from memfs.store.schema import memories
from memfs.store.versions import insert_version


def _checked(content: str | Content) -> Content:
    """``content`` checked by the SPEC §1 content rules: as given when the caller
    checked it already (a mount's commit), else checked and hashed now."""
    return content if isinstance(content, Content) else rules.content_from_text(content)


def create_memory(
    conn: Connection,
    store_id: str,
    path: str,
    content: str | Content,
    *,
    actor: Actor | None,
    metadata: dict[str, str] | None,
    memory_limit: int,
) -> tuple[Memory, RecordHeader | None]:
    """See :meth:`Memories.create`; returns the memory and its parsed record header."""
    rules.validate_path(path)
    checked = _checked(content)
    header = parse_record(checked.text)
    clean = rules.validate_metadata(metadata or {})
    data = checked.data
    store = lock_store(conn, store_id)
    require_writable(store)
    require_free(conn, store_id, path, None)
    check_capacity(store, memory_limit)
    key, digest = put_blob(conn, data, checked.sha256)
    created = now()
    memory_id = new_id("memory")
    version_id = insert_version(
        conn,
        store_id=store_id,
        memory_id=memory_id,
        operation=Operation.CREATED,
        path=path,
        blob_key=key,
        sha=digest,
        size=len(data),
        actor=actor,
        now=created,
    )
    columns = dict(
        id=memory_id,
        store_id=store_id,
        path=path,
        blob_key=key,
        content_sha256=digest,
        size_bytes=len(data),
        head_version_id=version_id,
        metadata_json=json.dumps(clean, sort_keys=True),
        created_at=created,
        updated_at=created,
    )
    _hot.run(conn, memory_rows.INSERT_MEMORY, columns)
    search.queue(conn, memory_id)
    record_index.index_memory(conn, memory_id, store_id, header, created, new=True)
    record_index.memories_arrived(conn, store_id, [(memory_id, path)])
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=path,
        content_sha256=digest,
        version_id=version_id,
        entries=1,
        size_bytes=len(data),
    )
    return memory_model(SimpleNamespace(**columns, deleted_at=None), data), header


def get_memory(conn: Connection, store_id: str, memory_id: str, *, with_content: bool) -> Memory:
    """See :meth:`Memories.get`."""
    store_row(conn, store_id)
    row = live_row(conn, store_id, memory_id)
    return memory_model(row, blob_data(conn, row.blob_key) if with_content else None)


def get_memory_by_path(conn: Connection, store_id: str, path: str, *, with_content: bool) -> Memory:
    """See :meth:`Memories.get_by_path`."""
    store_row(conn, store_id)
    row = conn.execute(
        select(memories).where(
            memories.c.store_id == store_id,
            memories.c.path == path,
            memories.c.deleted_at.is_(None),
        )
    ).first()
    if row is None:
        raise NotFound(f"no memory at {path!r} in memory store {store_id!r}")
    return memory_model(row, blob_data(conn, row.blob_key) if with_content else None)


def update_memory(
    conn: Connection,
    store_id: str,
    memory_id: str,
    *,
    actor: Actor | None,
    content: str | Content | None,
    path: str | None,
    expected_sha256: str | None,
    metadata: dict[str, str] | None,
    replace: bool,
) -> Memory:
    """See :meth:`Memories.update`."""
    if path is not None:
        rules.validate_path(path)
    checked = _checked(content) if content is not None else None
    header = parse_record(checked.text) if checked is not None else None
    clean = rules.validate_metadata(metadata) if metadata is not None else None
    data = checked.data if checked is not None else None
    store = lock_store(conn, store_id)
    row = live_row(conn, store_id, memory_id)
    require_writable(store)
    check_precondition(row, expected_sha256)
    new_sha = checked.sha256 if checked is not None else row.content_sha256
    content_changed = data is not None and new_sha != row.content_sha256
    path_changed = path is not None and path != row.path
    metadata_changed = clean is not None and clean != json.loads(row.metadata_json)
    # Unchanged content given again is the stored bytes (same SHA-256): no read.
    current = data if data is not None and not content_changed else None
    if not (content_changed or path_changed or metadata_changed):
        if current is None:
            current = blob_data(conn, row.blob_key)
        return memory_model(row, current)
    written_at = now()
    values: dict[str, Any] = {"updated_at": written_at}
    if metadata_changed:
        values["metadata_json"] = json.dumps(clean, sort_keys=True)
    new_path = row.path
    if path is not None and path_changed:
        _clear_destination(conn, store_id, memory_id, path, replace, actor, written_at)
        new_path = path
        values["path"] = path
    if content_changed or path_changed:
        key, digest, size = row.blob_key, row.content_sha256, row.size_bytes
        if data is not None and content_changed:
            key, digest = put_blob(conn, data, new_sha)
            size = len(data)
        version_id = insert_version(
            conn,
            store_id=store_id,
            memory_id=memory_id,
            operation=Operation.MODIFIED,
            path=new_path,
            blob_key=key,
            sha=digest,
            size=size,
            actor=actor,
            now=written_at,
        )
        values.update(
            blob_key=key, content_sha256=digest, size_bytes=size, head_version_id=version_id
        )
    set_memory_columns(conn, memory_id, values)
    after = SimpleNamespace(**{**row._mapping, **values})
    if content_changed or path_changed:
        body = data if content_changed and data is not None else None
        _reindex(conn, store_id, memory_id, new_path, body, header, written_at)
    feed.emit(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        memory_id=memory_id,
        path=new_path,
        old_path=row.path if path_changed else None,
        content_sha256=after.content_sha256,
        version_id=after.head_version_id,
        size_bytes=after.size_bytes - row.size_bytes,
    )
    # The row as just written, without reading it (or its blob) back.
    written = data if content_changed else current
    if written is None:
        written = blob_data(conn, after.blob_key)
    return memory_model(after, written)


def _reindex(
    conn: Connection,
    store_id: str,
    memory_id: str,
    path: str,
    body: bytes | None,
    header: RecordHeader | None,
    written_at: str,
) -> None:
    """Brings the record index to a memory's new head and queues it for the search
    index: ``body`` (and its parsed ``header``) when the content changed, else only the
    new ``path``."""
    search.queue(conn, memory_id)
    if body is not None:
        record_index.index_memory(conn, memory_id, store_id, header, written_at)
    record_index.memories_arrived(conn, store_id, [(memory_id, path)])


def _clear_destination(
    conn: Connection,
    store_id: str,
    memory_id: str,
    path: str,
    replace: bool,
    actor: Actor | None,
    written_at: str,
) -> None:
    """Makes ``path`` free for ``memory_id`` to move to: a memory already there is
    soft-deleted when ``replace`` (rename(2) over a file; the API's ``replace``).

    Raises:
        PathConflict: a memory holds ``path`` and ``replace`` is False (or
            :func:`check_path_free` refuses it: an ancestor or a descendant is taken).
    """
    occupant = check_path_free(conn, store_id, path, ignore_id=memory_id)
    if occupant is None:
        return
    if not replace:
        raise path_conflict(path, occupant.id, occupant.path)
    tombstone(
        conn,
        store_id,
        occupant,
        mode=DeleteMode.SOFT_DELETE,
        actor=actor,
        reason="replaced by rename",
        now=written_at,
        content={"blob_key": None},
    )


class Memories(Facade):
    """The memories of the stores, as one caller writes and sees them: every write names
    its actor; what is hidden from its viewer is absent from listings, a NotFound by id,
    and a write whose result the viewer could not see is refused and rolled back (SPEC §6).
    """

    def create(
        self,
        store_id: str,
        path: str,
        content: str | Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory:
        """Creates a memory and its ``created`` version; returns it with content.

        Args:
            content: the text, or a :class:`~memfs.core.content.Content` its caller
                checked already (a mount's commit: not checked or hashed again).

        Raises:
            NotFound, StoreArchived, InvalidPath, PathTooLong, InvalidContent,
            ContentTooLarge, InvalidMetadata, StoreFull, PathConflict (path, ancestor or
            descendant occupied; names the blocker).
            PermissionDenied: ``record_not_visible``, a record the viewer could not see.
        """
        return self.create_with_record(store_id, path, content, metadata=metadata)[0]

    def create_with_record(
        self,
        store_id: str,
        path: str,
        content: str | Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> tuple[Memory, Record | None]:
        """:meth:`create`, and the memory's index entry when its content is a record
        (SPEC §6) as the viewer sees it, read in the same transaction from the header
        the write parsed (None: no record header). Raises what :meth:`create` raises."""
        with self._write() as conn:
            try:
                memory, header = create_memory(
                    conn,
                    store_id,
                    path,
                    content,
                    actor=self.actor,
                    metadata=metadata,
                    memory_limit=self._parts.memory_limit,
                )
            except PathConflict as conflict:
                raise self._masked(conn, conflict, path) from None
            self._check_written(conn, memory.id, memory.path)
            if header is None:
                return memory, None
            found = record_index.get_records(conn, [memory.id], self._parts.clock())
            if self.viewer is not None:
                found = visibility.visible_records(conn, self.viewer, found)
            return memory, found.get(memory.id)

    def store_id_of(self, memory_id: str) -> str:
        """The id of the store holding memory ``memory_id``, live or tombstoned (the
        store-less routes find the store this way).

        Raises:
            NotFound: no memory has this id (never was, or hard-deleted).
        """
        with self._read() as conn:
            return memory_rows.memory_store_id(conn, memory_id)

    def get(self, store_id: str, memory_id: str, *, with_content: bool = True) -> Memory:
        """A live memory by id. Raises NotFound (unknown, deleted, other store, hidden
        from the viewer)."""
        with self._read() as conn:
            self._require_visible(conn, memory_id)
            return get_memory(conn, store_id, memory_id, with_content=with_content)

    def get_by_path(self, store_id: str, path: str, *, with_content: bool = True) -> Memory:
        """A live memory by path. Raises NotFound (also: hidden from the viewer)."""
        with self._read() as conn:
            memory = get_memory_by_path(conn, store_id, path, with_content=with_content)
            self._require_visible(conn, memory.id)
            return memory

    def update(
        self,
        store_id: str,
        memory_id: str,
        *,
        content: str | Content | None = None,
        path: str | None = None,
        expected_sha256: str | None = None,
        metadata: dict[str, str] | None = None,
        replace: bool = False,
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
            validation errors of create; NotFound for a memory hidden from the viewer,
            PermissionDenied ``record_not_visible`` for a result it could not see.
        """
        with self._write() as conn:
            self._require_visible(conn, memory_id)
            replace = visibility.keeps_hidden(conn, self.viewer, store_id, path, replace)
            try:
                memory = update_memory(
                    conn,
                    store_id,
                    memory_id,
                    actor=self.actor,
                    content=content,
                    path=path,
                    expected_sha256=expected_sha256,
                    metadata=metadata,
                    replace=replace,
                )
            except PathConflict as conflict:
                raise self._masked(conn, conflict, path) from None
            self._check_written(conn, memory.id, memory.path)
            return memory

    def retract_create(self, store_id: str, memory_id: str) -> bool:
        """Erases a memory whose whole history is the one empty ``created`` version the
        actor wrote — an exclusive create (committed at once, SPEC §4 ``O_EXCL``) whose
        every write was then refused, which must leave nothing (``cp`` of a binary
        file). Only the audit log keeps the fact (as for any hard delete). Returns
        False, changing nothing, when the memory holds content or another version
        (someone else wrote to it meanwhile).

        Raises:
            NotFound: no live memory ``memory_id`` in the store.
            ValueError: a caller without an actor.
        """
        actor = self._require_actor()
        with self._write() as conn:
            return tombstones.retract_create(conn, store_id, memory_id, actor=actor)

    def delete(
        self,
        store_id: str,
        memory_id: str,
        *,
        expected_sha256: str | None = None,
        mode: DeleteMode = DeleteMode.SOFT_DELETE,
        reason: str | None = None,
        replacement: str = "[REDACTED]",
        audit_metadata: dict[str, str] | None = None,
    ) -> frozenset[str]:
        """Deletes a live memory in one of the SPEC §2 modes; audited with ``reason``
        and ``audit_metadata`` (the request's metadata, SPEC §1 rules).

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
            NotFound (also: hidden from the viewer), PreconditionFailed, InvalidContent
            (bad replacement), InvalidInput (unknown mode), InvalidMetadata
            (``audit_metadata``).
        """
        with self._write() as conn:
            self._require_visible(conn, memory_id)
            erased = tombstones.delete_memory(
                conn,
                store_id,
                memory_id,
                actor=self.actor,
                expected_sha256=expected_sha256,
                mode=mode,
                reason=reason,
                replacement=replacement,
                audit_metadata=audit_metadata,
            )
        if mode != DeleteMode.SOFT_DELETE:
            self._db.checkpoint()
        return erased

    def restore(
        self,
        store_id: str,
        memory_id: str,
        *,
        reason: str | None = None,
        audit_metadata: dict[str, str] | None = None,
    ) -> Memory:
        """Brings a soft-deleted memory back with its id, path and content; audited with
        ``reason`` and ``audit_metadata``.

        Writes a ``created`` version (the memory comes back into existence) carrying the
        content of its newest content version.

        Raises:
            NotFound: no such memory in the store.
            StoreArchived, StoreFull.
            NotRestorable: the memory is live, was redacted, or its content was redacted.
            PathConflict: its path (or an ancestor/descendant) is now taken.
            InvalidMetadata: ``audit_metadata`` breaks SPEC §1.

        A memory whose restored record the viewer could not see is NotFound for it
        (rolled back), as it is absent from its restore listing.
        """
        with self._write() as conn:
            # A live record hidden from the viewer is the 404 of an unknown id, before
            # any answer that would tell it exists ("is not deleted").
            self._require_visible(conn, memory_id)
            try:
                memory = tombstones.restore_memory(
                    conn,
                    store_id,
                    memory_id,
                    actor=self.actor,
                    reason=reason,
                    memory_limit=self._parts.memory_limit,
                    audit_metadata=audit_metadata,
                )
            except PathConflict as conflict:
                raise self._masked(conn, conflict, None) from None
            self._require_visible(conn, memory.id)
            return memory

    def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
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
        with self._write() as conn:
            moved = renames.rename_prefix(conn, store_id, old_prefix, new_prefix, actor=self.actor)
        return renames.as_memories(moved)

    def forget_decayed(
        self, store_ids: Sequence[str] | None, *, below: float, apply: bool
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
        self._parts.flush_access()  # reads noted so far count
        chosen = None if store_ids is None else list(store_ids)
        clock = self._parts.clock
        if not apply:
            with self._read() as conn:
                found = record_index.list_records(conn, chosen, RecordFilter(), clock())
            return [record for record in found if record.decay_score < below]
        with self._write() as conn:
            found = record_index.list_records(conn, chosen, RecordFilter(), clock())
            decayed = [record for record in found if record.decay_score < below]
            for record in decayed:
                tombstones.delete_memory(
                    conn,
                    record.store_id,
                    record.memory_id,
                    actor=self.actor,
                    expected_sha256=None,
                    mode=DeleteMode.SOFT_DELETE,
                    reason=f"decay_score below {below}",
                    replacement="",
                )
        return decayed

    def all(self, store_id: str) -> list[Memory]:
        """Every live memory of a store the viewer sees, without content, in path order
        (mount start-up).

        Built from plain tuples of the columns a Memory needs: a mount waits for this
        call, and that takes half the time of whole rows (55 ms instead of 115 ms for
        10,000 memories).

        Raises:
            NotFound.
        """
        with self._read() as conn:
            return listing.all_memories(conn, store_id, viewer=self.viewer)

    def deleted(self, store_id: str) -> list[Memory]:
        """Soft-deleted (restorable) memories, newest deletion first, without content;
        without those whose last content is a record hidden from the viewer."""
        with self._read() as conn:
            deleted = listing.deleted_memories(conn, store_id)
            hidden = visibility.hidden_tombstones(conn, self.viewer, [m.id for m in deleted])
            return [m for m in deleted if m.id not in hidden]

    def list(
        self,
        store_id: str,
        *,
        path_prefix: str = "/",
        depth: int = 0,
        limit: int = 20,
        cursor: str | None = None,
        with_content: bool = False,
        status: MemoryStatus | None = MemoryStatus.ACTIVE,
        record_filter: RecordFilter | None = None,
    ) -> Page[Memory | MemoryPrefix]:
        """Memories under ``path_prefix`` in byte order of path, rolled up by depth.

        With a ``record_filter`` that is not empty, only the records it keeps (SPEC §6
        curation, the API's ``record_type``/``tag``/``min_importance``/``user_id``).

        With ``depth`` > 0, a memory more than ``depth`` segments below the prefix is
        replaced by one ``MemoryPrefix`` of its first ``depth`` segments (deduplicated;
        api-contract §5.10). Prefixes and memories both count toward ``limit``. What is
        hidden from the viewer is left out in the query (pages stay full; a prefix only
        of hidden memories is not shown).

        Args:
            status: ``ACTIVE`` (default) lists the live memories; ``DELETED`` the
                soft-deleted (restorable) ones, None both (an admin finds what to
                restore), in path then id order, ``deleted_at`` set on tombstones,
                which have no content; redacted tombstones are never listed, nor
                tombstones of records hidden from the viewer; no ``record_filter``.

        Raises:
            NotFound, InvalidPath (prefix), InvalidInput (depth/limit; a depth other
            than 0 with deleted memories), InvalidCursor.
        """
        if status is not MemoryStatus.ACTIVE:
            if depth != 0:
                raise InvalidInput("depth must be 0 when deleted memories are listed")
            if record_filter is not None and not record_filter.empty:
                raise InvalidInput("record filters list live records only, not deleted ones")
            with self._read() as conn:
                page = listing.list_with_deleted(
                    conn,
                    store_id,
                    path_prefix=path_prefix,
                    status=status,
                    limit=limit,
                    cursor=cursor,
                    with_content=with_content,
                    viewer=self.viewer,
                )
                # A tombstone whose last content is a record hidden from the viewer is
                # left out (the page may then hold fewer than limit items).
                tombs = [m.id for m in page.items if isinstance(m, Memory) and m.deleted_at]
                hidden = visibility.hidden_tombstones(conn, self.viewer, tombs)
            return Page[Memory | MemoryPrefix](
                items=[m for m in page.items if not isinstance(m, Memory) or m.id not in hidden],
                next_cursor=page.next_cursor,
            )
        with self._read() as conn:
            return listing.list_memories(
                conn,
                store_id,
                path_prefix=path_prefix,
                depth=depth,
                limit=limit,
                cursor=cursor,
                with_content=with_content,
                viewer=self.viewer,
                record_filter=record_filter,
            )
