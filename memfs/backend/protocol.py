"""What a mount needs from a store: the :class:`Backend` port and the values it speaks.

The FUSE layer (:mod:`memfs.fuse`) and the remote client (:mod:`memfs.remote`) both
point down at this package and never at each other (one port, two adapters): FUSE talks to a
:class:`Backend`; :class:`memfs.backend.embedded.EmbeddedBackend` and
:class:`memfs.remote.backend.RemoteBackend` implement it.

This module owns the Protocol and its values: :class:`MemoryChange` (one change of a
memory), :class:`AttachmentSpec`, :class:`AsOfPoint` (a store's past an as-of
attachment shows, SPEC §10), :class:`BackendEvent`, :class:`BackendStatistics`.
Backends raise only the domain errors of :mod:`memfs.core.errors`
(:class:`memfs.core.errors.BackendUnavailable` for "the store can't be asked now").

Writes are attributed to the session the backend opened with :meth:`Backend.open_session`
(SPEC §3: writes through a mount are attributed to ``session_actor {session_id}``). A
backend may come with its session already (a session token): then
:meth:`Backend.preset_session` names its stores, access modes and mount paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memfs.core.content import Content
from memfs.core.errors import MemfsError
from memfs.core.model import Change, Layout, Memory, MemoryStore, Session
from memfs.core.records import Record

__all__ = [
    "AsOfPoint",
    "AttachmentSpec",
    "Backend",
    "BackendEvent",
    "BackendStatistics",
    "MemoryChange",
]


@dataclass(frozen=True)
class MemoryChange:
    """One change of an existing memory, made in one version (none if nothing changed).

    Attributes:
        content: the new content (text, or a checked
            :class:`~memfs.core.content.Content`), or None to keep it.
        path: the new path (a rename keeps the id), or None to keep it.
        expected_sha256: precondition: the digest the head must still have (SPEC §4
            concurrent writers); None for none.
        metadata: replaces the metadata wholesale (not versioned), or None to keep it.
        replace: a live memory already at ``path`` is soft-deleted in the same
            transaction (rename(2) semantics); otherwise an occupied path raises
            PathConflict.
    """

    content: str | Content | None = None
    path: str | None = None
    expected_sha256: str | None = None
    metadata: dict[str, str] | None = None
    replace: bool = False

    @property
    def is_metadata_only(self) -> bool:
        """True when neither content nor path changes."""
        return self.content is None and self.path is None


@dataclass(frozen=True)
class BackendEvent:
    """Something a backend met on its own, outside any request of the kernel (e.g. while
    replaying queued writes), shown by ``memfs status``.

    Attributes:
        at: when (UTC).
        path: the memory path concerned ("" when none).
        message: one line for people.
        conflict_path: for a conflict: where this mount's content was saved.
        saved_to: for a refused write: where its bytes are kept locally.
        error: for a refused write: the refusal (its errno is shown).
    """

    at: datetime
    path: str
    message: str
    conflict_path: str | None = None
    saved_to: str | None = None
    error: MemfsError | None = None


@dataclass(frozen=True)
class BackendStatistics:
    """A snapshot of a backend for ``memfs status`` (SPEC §5: outbox depth, server state,
    last errors, conflicts).

    Attributes:
        kind: ``embedded`` or ``remote``.
        location: the database URL (password hidden) or the server URL.
        server_state: ``in-process`` (embedded), ``reachable``, ``unreachable`` or
            ``unknown`` (nothing asked yet).
        outbox_depth: writes accepted by the mount and not yet confirmed by the server.
        outbox_oldest_at: when the oldest of them was accepted.
        cache_entries, cache_size_bytes, cache_max_size_bytes: the backend's own
            content cache (the remote disk cache); 0 when it has none.
        conflict_count, conflicts: conflicts the backend resolved (both contents kept),
            since start; the newest few.
        rejected_count, rejected: writes the server refused for good (bytes kept).
        error_count, last_errors: failures to reach the store.
        search_pending, search_lag_s: memories waiting for their semantic-search vector
            and the oldest wait, as the backend's embedder last saw them; None when no
            embedder runs (SPEC §7).
    """

    kind: str
    location: str
    server_state: str
    outbox_depth: int = 0
    outbox_oldest_at: datetime | None = None
    cache_entries: int = 0
    cache_size_bytes: int = 0
    cache_max_size_bytes: int = 0
    conflict_count: int = 0
    conflicts: tuple[BackendEvent, ...] = ()
    rejected_count: int = 0
    rejected: tuple[BackendEvent, ...] = ()
    error_count: int = 0
    last_errors: tuple[BackendEvent, ...] = ()
    search_pending: int | None = None
    search_lag_s: float | None = None


@dataclass(frozen=True)
class AttachmentSpec:
    """One store to attach to the mount's session.

    Attributes:
        store_id: the ``memstore_…`` id.
        read_only: True for a ``read_only`` attachment (``--store NAME:ro``, or a
            non-default store of a flat layout).
    """

    store_id: str
    read_only: bool


@dataclass(frozen=True)
class AsOfPoint:
    """A point of one store's history, resolved once (SPEC §10 as-of views): what an
    as-of attachment (``memfs mount --store NAME@POINT``) shows for its whole life.

    Attributes:
        store_id: the ``memstore_…`` id.
        text: the point as given (``now``, a time, a snapshot name or id, a version id).
        label: the point as one path segment
            (:func:`memfs.core.points.point_label`): the attachment's directory is
            ``<store directory>@<label>``.
        fixed: what the backend that resolved it reads at, opaque to everyone else
            (embedded: the seq; remote: a point text that names the same state even
            when ``text`` is ``now``).
    """

    store_id: str
    text: str
    label: str
    fixed: str


class Backend(Protocol):
    """The store as seen by a mount. Every method may raise :class:`memfs.core.errors.MemfsError`
    subclasses (NotFound, StoreArchived, PathConflict, PreconditionFailed, …), nothing else
    on purpose."""

    async def preset_session(self) -> Session | None:
        """The session this backend is bound to before any mount (a remote backend holds
        a session token: its resources are the stores to mount, with their access
        modes and mount paths), or None when the mount makes its own session with
        :meth:`open_session` (embedded). Raises AuthenticationFailed,
        BackendUnavailable."""
        ...

    async def resolve_store(self, name_or_id: str) -> MemoryStore:
        """A store by id, exact name or slug. Raises NotFound, InvalidInput (ambiguous)."""
        ...

    async def get_store(self, store_id: str) -> MemoryStore:
        """Raises NotFound."""
        ...

    async def open_session(
        self,
        attachments: Sequence[AttachmentSpec],
        *,
        mount_root: str,
        layout: Layout = Layout.PER_STORE,
    ) -> str:
        """Creates the mount's session and attributes every later write to it; its
        resources' mount paths follow ``layout`` (flat: the mount root itself).

        Returns:
            The ``sesn_…`` id. Raises InvalidInput, NotFound, StoreArchived.
        """
        ...

    async def list_memories(self, store_id: str) -> list[Memory]:
        """Every live memory of a store, without content, in path order. Raises NotFound."""
        ...

    async def resolve_point(self, store_id: str, point: str) -> AsOfPoint:
        """Resolves ``point`` (SPEC §10) in a store once, for an as-of attachment: the
        state it names is fixed from here on (``now`` is the state now, never a later
        one). Raises NotFound (store), InvalidPoint (unparsable, in the future, no such
        snapshot or version: named), BackendUnavailable."""
        ...

    async def list_memories_at(self, at: AsOfPoint) -> list[Memory]:
        """Every memory of ``at``'s store as it was then, without content, in path
        order: each with its version then (``memory_version_id``, digest, size, and a
        ``blob_key`` :meth:`read_content` reads); deleted and redacted ones absent (a
        redacted version shows no path and no content), what the caller may not see
        (SPEC §6) absent. Raises NotFound, InvalidPoint, BackendUnavailable."""
        ...

    async def memory_room(self, store_id: str) -> int | None:
        """How many more live memories the store accepts now (SPEC §1 limit: live
        memories per store), so a mount can refuse ``create`` with ENOSPC before it
        accepts bytes it can't store (SPEC §4: fail early). 0 when full; None when the
        backend can't tell (then the commit at close refuses, as always). Raises
        NotFound, BackendUnavailable."""
        ...

    async def get_memory(self, store_id: str, memory_id: str) -> Memory:
        """A live memory without content. Raises NotFound (unknown or deleted)."""
        ...

    async def read_content(self, memory: Memory) -> bytes:
        """The bytes of ``memory``'s head content. Raises NotFound."""
        ...

    def note_access(self, store_id: str, memory_ids: Sequence[str]) -> None:
        """Records that memories were opened for reading (SPEC §6 ``last_accessed`` of
        records). Cheap and non-blocking (an in-memory note, written in batches);
        raises nothing. Embedded: the engine's access log. Remote: nothing here — the
        server records the full retrieve of a content the mount's cache lacks."""
        ...

    async def get_record(self, store_id: str, memory_id: str) -> Record | None:
        """The record index entry of a live memory (SPEC §6), None when it is no record
        or the backend can't tell (remote). Raises nothing else."""
        ...

    async def read_contents(self, memories: Sequence[Memory]) -> dict[str, bytes]:
        """Read-ahead: the head contents of several memories, keyed by blob key, in as
        few round trips as the backend can. Best effort: content that is gone or can't
        be fetched now is left out (the read that needs it asks :meth:`read_content`,
        which raises)."""
        ...

    async def create_memory(
        self,
        store_id: str,
        path: str,
        content: str | Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory:
        """Creates a memory (one ``created`` version). ``content`` is text, or a
        :class:`~memfs.core.content.Content` the caller checked already (a mount's commit:
        checked, encoded and hashed once). Raises the errors of
        :meth:`memfs.store.memories.Memories.create`."""
        ...

    async def update_memory(self, store_id: str, memory_id: str, change: MemoryChange) -> Memory:
        """Makes ``change`` (content, path and/or metadata) in one version (none if
        nothing changed). Raises PreconditionFailed, PathConflict, NotFound,
        StoreArchived and the validation errors."""
        ...

    async def delete_memory(
        self, store_id: str, memory_id: str, *, expected_sha256: str | None = None
    ) -> None:
        """Soft-deletes a memory (SPEC §4 ``rm``). Raises NotFound, PreconditionFailed."""
        ...

    async def discard_created(self, store_id: str, memory_id: str) -> None:
        """Takes back this mount's exclusive create (an empty memory committed at once,
        SPEC §4 ``O_EXCL``) whose every write was refused, so that it leaves nothing
        (``cp`` of a binary file). Embedded: erased when its only version is that empty
        create (``Memories.retract_create``), else soft-deleted; remote: soft-deleted (a session
        can't hard-delete). Raises NotFound."""
        ...

    async def fill_claim(
        self,
        store_id: str,
        memory_id: str,
        content: Content,
        *,
        metadata: dict[str, str] | None = None,
    ) -> Memory | None:
        """The first content of this mount's ``O_EXCL`` claim replaces the claim's empty
        ``created`` version (SPEC §4: an exclusive create is a claim, not a version).
        Returns None, changing nothing, when the memory is no such claim, or the backend
        can't fold (remote): the caller writes an ordinary update. Raises NotFound,
        StoreArchived and the validation errors."""
        ...

    async def revive(
        self, store_id: str, memory_id: str, content: Content | None
    ) -> Memory | None:
        """Same name, same memory (SPEC §4): a memory this mount soft-deleted moments ago
        (:data:`memfs.core.config.FOLD_WINDOW_S`), whose path is free, is live again,
        with ``content`` (when given) as one ``modified`` version, none when unchanged.
        Returns None, changing nothing, when it can't be revived or the backend can't
        (remote): the caller creates a new memory. Raises NotFound (the store),
        StoreArchived, StoreFull and the validation errors."""
        ...

    async def fold_temporary(
        self,
        store_id: str,
        temporary_id: str,
        *,
        target_id: str | None,
        path: str,
        content: Content | None,
        expected_sha256: str | None,
    ) -> Memory:
        """The atomic save (SPEC §4 "One save, one version"): this mount's temporary
        memory renamed over ``target_id`` (one version of the target, id and metadata
        kept, ``expected_sha256`` its precondition) or to the free ``path`` (one
        ``created`` version there); the temporary memory leaves no memory and no
        version when it is this mount's own and recent (embedded), else it is
        soft-deleted or renamed the ordinary way (remote). Raises PreconditionFailed
        (nothing changed), NotFound, PathConflict, StoreArchived, validation errors."""
        ...

    async def erase_temporary(self, store_id: str, memory_id: str) -> bool:
        """Removes a memory this mount created moments ago (a temporary file: ``link(temp,
        new)`` + ``unlink(temp)``, a failed save's cleanup; SPEC §4): it leaves nothing
        when it is the mount's own and recent (embedded), else it is soft-deleted.
        Returns True when erased. Raises NotFound, StoreArchived."""
        ...

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> list[Memory]:
        """Moves every memory below ``old_prefix`` (ends with ``/``) below ``new_prefix`` in
        one transaction. Returns the moved memories. Raises PathConflict, StoreArchived."""
        ...

    async def last_change_seq(self, store_id: str) -> int:
        """The newest change-feed seq of a store (0 when none). Raises NotFound."""
        ...

    async def change_counter(self, store_id: str, *, local_only: bool = False) -> int | None:
        """The store's newest change-feed seq when the backend can read it cheaply from
        a database other mounts write to (embedded: one indexed read), else None (a
        remote backend: its change feed delivers). An open and a lookup miss compare it
        with the seq the mount applied and catch up first (SPEC §4 close-to-open across
        embedded mounts). ``local_only``: None unless it is read without a worker
        thread (an opendir asks so; on a SQLite file only). Raises NotFound (the store
        is gone)."""
        ...

    def known_change_counter(self, store_id: str) -> int | None:
        """The store's newest change-feed seq when it is read on the calling thread
        without waiting (embedded on a SQLite file: the feed probe, microseconds), else
        None (read it with :meth:`change_counter`). Lets a request that finds the
        store unchanged skip the catch-up's awaits. Never raises."""
        ...

    async def changes_since(
        self, store_id: str, after_seq: int, *, timeout_s: float = 0.0
    ) -> list[Change]:
        """Change-feed entries with seq > ``after_seq``, oldest first (a bounded batch).

        Args:
            timeout_s: when there are none yet, wait up to this long for the first one
                (a long poll), then return what there is (maybe nothing).

        Raises:
            NotFound (the store is gone and its feed fully read), BackendUnavailable.
        """
        ...

    async def maintain(self) -> None:
        """The backend's own background work for the life of the mount, run by the
        daemon as a named task and cancelled at unmount; never returns and never raises
        (failures are logged and counted in :meth:`statistics`). Remote: replays queued
        writes whenever there are some and the server answers. Embedded: nothing."""
        ...

    def statistics(self) -> BackendStatistics:
        """A snapshot for ``memfs status``; cheap (no request to the store)."""
        ...

    async def aclose(self) -> None:
        """Releases connections. The backend is unusable afterwards."""
        ...
