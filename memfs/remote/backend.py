"""The FUSE backend of a remote mount: :class:`memfs.backend.Backend` over the HTTP
client, the local content cache and the durable outbox (SPEC §4).

One FUSE layer, two backends: the operations in ``memfs/fuse`` do not know whether
their store is an in-process engine or a server elsewhere. This backend differs from
:class:`~memfs.backend.EmbeddedBackend` only where the network shows:

* **Content addresses.** ``Memory.blob_key`` and ``Change.blob_key`` are opaque to the
  FUSE layer; here they are the content's SHA-256 (the engine's xxh3 key never
  crosses the wire). Reads come from :class:`~memfs.remote.cache.ContentCache` when it
  holds the digest (no round trip), else from the memory version, verified, then
  cached. ``blob_purged`` changes purge the disk cache (SPEC §2 redaction).
* **Writes while the server is unreachable** (:class:`ServerUnavailable`) are appended
  to the :class:`~memfs.remote.outbox.Outbox` (fsync'd) and the call returns a
  *provisional* memory: digest and path of the new state, version id
  ``memver_pending_<seq>``, and for a create the id ``mem_local_<seq>``. While the
  outbox is not empty every write is queued behind it, so the server sees them in the
  order the mount accepted them. Direct writes raise the server's answer as it is
  (``PreconditionFailed``, ``PathConflict``, refusals): the FUSE layer makes the
  conflict copy or keeps the rejected bytes, as for the embedded backend.
* **Replay** of the outbox runs in :meth:`RemoteBackend.maintain` (the daemon's
  ``memfs-backend`` task) whenever the outbox holds writes, retrying every
  :data:`REPLAY_RETRY_MAX_S` at most while the server is unreachable; also when the
  session is opened (before the tree is loaded) and at the start of
  :meth:`RemoteBackend.changes_since`. It goes through
  :func:`memfs.remote.replay.replay_outbox`; conflicts and refusals found then are
  resolved there (conflict copy / ``rejected/``) and recorded for ``memfs status``.
  The replay holds the write lock for one entry at a time: a write arriving meanwhile
  queues behind the rest at once instead of waiting for the drain, and the ids and
  states a write is built from are read under that lock (a provisional id may turn into
  the server's while the write waits).
* **Change feed**: :meth:`RemoteBackend.changes_since` is the server's long poll
  (``GET …/changes?timeout_s=N``), so a change made elsewhere reaches the mount in one
  round trip. A memory with writes still in the outbox keeps its queued state in
  :meth:`RemoteBackend.get_memory`: the server's older state never overwrites what
  the mount has accepted. For a large batch (a bulk import, thousands of changes) the
  states of the memories it names are fetched ahead, by listing their directories
  (100 per request; a listing made when the feed was at seq S is current for every
  change up to S, so it also serves the next batches of the backlog) and the rest
  eight requests at a time; :meth:`RemoteBackend.get_memory` answers from them
  instead of one request per change (SPEC §4: remote mounts see changes "within one
  second under load, bulk changes included"; 5,000 imported memories took ~43 s one
  request at a time, ~2-4 s so).
* **Startup**: the session (:meth:`RemoteBackend.preset_session`) is fetched once;
  while the server is unreachable the first fetch is retried for up to
  ``startup_wait_s`` (a mount restarted before its server, e.g. after a crash).
* **Provisional ids.** When the create of ``mem_local_<seq>`` reaches the server, the
  next change that names the real id is handed to the FUSE layer under the provisional
  id, and :meth:`RemoteBackend.get_memory` of the provisional id returns the real
  memory, so the FUSE layer re-keys its node instead of making a second one.

Limitations, stated here so nobody relies on them:

* A mount needs its server to start (session, tree); once running, cached reads and
  queued writes work without it. Content never read (not cached) can't be read while
  the server is away (EIO), nor appended to; it can be overwritten (``O_TRUNC``).
* A file whose queued writes were replayed shows ``memver_pending_<seq>`` as its
  ``user.memfs.version_id`` until the change feed brings a newer state of it.
* A change feed that restarted (``last_seq`` below the mount's seq: a store recreated
  on a new database) is logged, not followed: remount.
* A mount started with writes in its outbox shows the server's tree once they have
  been replayed (at start, when the server is up); writes that could not be replayed
  then (refused, or the server went away again) are not overlaid on the tree.
* Metadata changes (``user.meta.*`` xattrs) are not queued: with the server
  unreachable they fail with :class:`ServerUnavailable`.
* A revoked or expired session token (401 from the server) ends the sending, not the
  mount: ``server_state`` becomes ``token refused`` and ``memfs status`` says why;
  every write is queued (a replay is tried every :data:`TOKEN_RETRY_S`), and the
  queued writes stay in ``outbox/<session>`` (SPEC §4: never silently dropped). They
  replay only at a mount of that same session, or when ``memfs outbox replay`` sends
  them with a new session's token (memfs/cli/outbox.py).
* A refused queued create leaves its provisional file in the tree until remount (its
  bytes are under ``rejected/``).

Layout: :class:`RemoteBackend` (this module: attaching the session's stores, closing)
inherits, in this order, the change-feed follower (:mod:`memfs.remote.feed`), the write
path with its queueing and replay (:mod:`memfs.remote.writing`), the reading side
(:mod:`memfs.remote.reading`) and the shared state, server-state tracking and
statistics (:mod:`memfs.remote.state`). Each part reads and writes the same
attributes, initialised in :class:`~memfs.remote.state.RemoteState`; others import
from this module only.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import trio

from memfs.backend import AttachmentSpec
from memfs.core.errors import (
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from memfs.core.model import Access, Layout, MemoryStore
from memfs.core.rules import slugify
from memfs.home import rejected_directory
from memfs.remote.feed import RemoteFeed
from memfs.remote.outbox import Outbox
from memfs.remote.state import (
    PENDING_VERSION_PREFIX,
    PROVISIONAL_ID_PREFIX,
    REPLAY_RETRY_MAX_S,
    REPLAY_RETRY_MIN_S,
    TOKEN_REFUSED,
    _store,
)

__all__ = [
    "CLOSE_REPLAY_TIMEOUT_S",
    "PENDING_VERSION_PREFIX",
    "PROVISIONAL_ID_PREFIX",
    "REPLAY_RETRY_MAX_S",
    "REPLAY_RETRY_MIN_S",
    "TOKEN_REFUSED",
    "RemoteBackend",
]

log = logging.getLogger(__name__)

# How long aclose() tries a last replay before leaving the writes queued.
CLOSE_REPLAY_TIMEOUT_S = 5.0
# How long open_session() tries to replay queued writes before the tree is loaded.
OPEN_REPLAY_TIMEOUT_S = 10.0


class RemoteBackend(RemoteFeed):
    """:class:`memfs.backend.Backend` over a ``memfs serve`` reached with a session
    token (see the module docstring).

    Args:
        client: the session's client; :meth:`aclose` closes it.
        cache: the content cache; default ``$MEMFS_HOME/cache``.
        home: where the outbox (``outbox/<session_id>``) and refused writes
            (``rejected/<session_id>``) live; default ``$MEMFS_HOME``.
        startup_wait_s: how long the first session fetch keeps retrying while the
            server is unreachable (0: fail at once).
    """

    # -------------------------------------------------------- session, stores

    async def resolve_store(self, name_or_id: str) -> MemoryStore:
        """A store of the session by id, name, slug or mount directory name.

        Raises:
            NotFound: no attached store matches. InvalidInput: several do.
        """
        session = await self.session()
        matches = [
            r
            for r in session.resources
            if name_or_id
            in (r.memory_store_id, r.name, slugify(r.name), r.mount_path.rsplit("/", 1)[-1])
        ]
        if not matches:
            raise NotFound(f"no memory store {name_or_id!r} is attached to session {session.id}")
        if len(matches) > 1:
            raise InvalidInput(f"{name_or_id!r} names several stores of session {session.id}")
        return await self.get_store(matches[0].memory_store_id)

    async def get_store(self, store_id: str) -> MemoryStore:
        return _store(await self._ask(self._client.retrieve_store(store_id)))

    async def open_session(
        self,
        attachments: Sequence[AttachmentSpec],
        *,
        mount_root: str,
        layout: Layout = Layout.PER_STORE,
    ) -> str:
        """Checks ``attachments`` against the token's session (the server enforces the
        access modes; a store may be mounted read-only although attached read-write)
        and opens the session's outbox. ``mount_root`` and ``layout`` are unused: the
        mount paths are the session's.

        Raises:
            PermissionDenied: a store not attached to the session (``store_not_allowed``)
                or asked writable but attached ``read_only`` (``read_only_attachment``).
            OutboxLocked: another daemon serves this session.
            AuthenticationFailed, ServerUnavailable.
        """
        session = await self.session()
        access = {r.memory_store_id: r.access for r in session.resources}
        for attachment in attachments:
            if attachment.store_id not in access:
                raise PermissionDenied(
                    f"memory store {attachment.store_id} is not attached to session {session.id}",
                    code="store_not_allowed",
                )
            if not attachment.read_only and access[attachment.store_id] is Access.READ_ONLY:
                raise PermissionDenied(
                    f"memory store {attachment.store_id} is attached read_only to session "
                    f"{session.id}",
                    code="read_only_attachment",
                )
        if self._outbox is None:
            self._outbox = await self._thread(
                functools.partial(
                    Outbox,
                    self._home / "outbox" / session.id,
                    rejected_dir=rejected_directory(session.id, self._home),
                )
            )
            depth = len(self._outbox)
            if depth:
                log.info("outbox of session %s holds %d write(s) to replay", session.id, depth)
                self._queued.set()
                with trio.move_on_after(OPEN_REPLAY_TIMEOUT_S):
                    await self.replay()
        return session.id

    # ------------------------------------------------------------- lifecycle

    async def aclose(self) -> None:
        """Closes the outbox (queued writes stay on disk for the next mount) and the
        client. A last replay is tried first."""
        try:
            with trio.move_on_after(CLOSE_REPLAY_TIMEOUT_S):
                await self.replay()
        finally:
            if self._outbox is not None:
                left = len(self._outbox)
                if left:
                    log.warning(
                        "%d write(s) stay queued in %s: they are replayed when session %s is "
                        "mounted again", left, self._outbox.directory,
                        self._session.id if self._session else "?",
                    )
                await self._thread(self._outbox.close)
                self._outbox = None
            await self._client.aclose()
