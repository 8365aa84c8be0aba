"""What a :class:`~memfs.remote.backend.RemoteBackend` knows and tracks (SPEC §4):
its shared state, the session fetch, and whether the server answers and still takes
the session token.

:class:`RemoteState` owns the attributes every part of the backend reads (client,
cache, outbox, the write lock, the memories this mount knows and the provisional ids
it handed out), :meth:`RemoteState._ask` (each client call goes through it: it keeps
``server_state`` — ``reachable``, ``unreachable``, :data:`TOKEN_REFUSED` — and the
errors ``memfs status`` shows), the session (fetched once, retried at startup) and
:meth:`RemoteState.statistics`, and the conversion of wire records into the core's
models. The reading side (:mod:`memfs.remote.reading`), the write path
(:mod:`memfs.remote.writing`), the change-feed follower (:mod:`memfs.remote.feed`) and
:class:`~memfs.remote.backend.RemoteBackend` (session attachment, lifecycle) build on
it, each inheriting from the one before.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import trio

from memfs.backend import BackendEvent, BackendStatistics
from memfs.core.config import memfs_home
from memfs.core.errors import (
    AuthenticationFailed,
    InvalidInput,
    MemfsError,
)
from memfs.core.model import (
    Change,
    Memory,
    MemoryStore,
    Session,
    utcnow,
)
from memfs.remote.cache import ContentCache, default_cache_root
from memfs.remote.client import MemfsClient, ServerUnavailable
from memfs.remote.outbox import Outbox
from memfs.wire.changes import ChangeOut
from memfs.wire.memories import MemoryOut
from memfs.wire.stores import MemoryStoreOut

__all__ = [
    "PENDING_VERSION_PREFIX",
    "PROVISIONAL_ID_PREFIX",
    "REPLAY_RETRY_MAX_S",
    "REPLAY_RETRY_MIN_S",
    "TOKEN_REFUSED",
    "TOKEN_RETRY_S",
    "RemoteState",
]

# Logged under the name of the module this one was split from (mount logs, filters).
log = logging.getLogger("memfs.remote.backend")

T = TypeVar("T")

PROVISIONAL_ID_PREFIX = "mem_local_"
PENDING_VERSION_PREFIX = "memver_pending_"
# How many conflicts, refusals and errors statistics() remembers (newest last).
MAX_RECORDED_EVENTS = 20
# Read-ahead requests in flight at once (Backend.read_contents).
# How long aclose() tries a last replay before leaving the writes queued.
# Pause between replays of a non-empty outbox while the server can't take it: doubles
# from the minimum to the maximum (so a returning server is used within a second).
REPLAY_RETRY_MIN_S = 0.1
REPLAY_RETRY_MAX_S = 1.0
# Pause between tries of the first session fetch while the server is unreachable.
STARTUP_RETRY_MAX_S = 1.0
# server_state once the server refuses the session token (401), and the pause between
# two replays then (the queued writes wait for a token the server takes, SPEC §3).
TOKEN_REFUSED = "token refused"
TOKEN_RETRY_S = 30.0



def _location(url: str) -> str:
    """The server URL without credentials, for logs and ``memfs status``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url.rstrip("/")
    return (scheme + sep + rest.rpartition("@")[2]).rstrip("/")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _memory(remote: MemoryOut) -> Memory:
    return Memory(
        id=remote.id,
        memory_store_id=remote.memory_store_id,
        path=remote.path,
        content=None,
        content_sha256=remote.content_sha256,
        content_size_bytes=remote.content_size_bytes,
        memory_version_id=remote.memory_version_id,
        metadata=dict(remote.metadata),
        created_at=remote.created_at,
        updated_at=remote.updated_at,
        blob_key=remote.content_sha256,
    )


def _store(remote: MemoryStoreOut) -> MemoryStore:
    return MemoryStore(
        id=remote.id,
        name=remote.name,
        description=remote.description,
        metadata=dict(remote.metadata),
        created_at=remote.created_at,
        updated_at=remote.updated_at,
        archived_at=remote.archived_at,
        entry_count=remote.entry_count,
        total_size_bytes=remote.total_size,
        forked_from=remote.forked_from,
        fork_base=remote.fork_base,
    )


def _change(remote: ChangeOut, memory_id: str | None) -> Change:
    return Change(
        seq=remote.seq,
        memory_store_id=remote.memory_store_id,
        kind=remote.kind,
        memory_id=memory_id,
        path=remote.path,
        old_path=remote.old_path,
        blob_key=remote.content_sha256,
        content_sha256=remote.content_sha256,
        memory_version_id=remote.memory_version_id,
        created_at=remote.created_at,
    )


class RemoteState:
    """The state and bookkeeping shared by the parts of
    :class:`~memfs.remote.backend.RemoteBackend` (its arguments are documented there)."""

    def __init__(
        self,
        client: MemfsClient,
        *,
        cache: ContentCache | None = None,
        home: Path | None = None,
        startup_wait_s: float = 0.0,
    ) -> None:
        self._client = client
        self._home = home if home is not None else memfs_home()
        self._cache = cache if cache is not None else ContentCache(default_cache_root())
        self._cache_failing = False  # the last cache write failed (logged once)
        self._startup_wait_s = startup_wait_s
        self._session: Session | None = None
        self._outbox: Outbox | None = None
        # Direct writes vs. queued ones and the replay, which holds it per entry (never
        # for a whole drain); ids and states of memories are read under it.
        self._write_lock = trio.Lock()
        self._replay_lock = trio.Lock()  # one replay at a time
        self._queued = trio.Event()  # set while the outbox may hold writes (maintain)
        self._known: dict[str, Memory] = {}  # memory id (provisional too) → last state
        self._real_ids: dict[str, str] = {}  # provisional id → server id
        self._unclaimed: dict[str, str] = {}  # server id → provisional id, until a
        # change naming it has been handed out under the provisional id
        # Server id → its state (None: gone) fetched ahead for the last change batch;
        # taken by get_memory, dropped at the next batch.
        self._ahead: dict[str, Memory | None] = {}
        # Server id → (seq, state) read by a listing made once the feed was at seq: the
        # state is current for any change up to seq (later batches of a backlog).
        self._listed: dict[str, tuple[int, Memory]] = {}
        self._server_state = "unknown"
        self._errors: deque[BackendEvent] = deque(maxlen=MAX_RECORDED_EVENTS)
        self._conflicts: deque[BackendEvent] = deque(maxlen=MAX_RECORDED_EVENTS)
        self._rejected: deque[BackendEvent] = deque(maxlen=MAX_RECORDED_EVENTS)
        self._error_count = 0
        self._conflict_count = 0
        self._rejected_count = 0

    # ---------------------------------------------------------------- helpers

    async def _thread(self, fn: Callable[..., T], *args: object) -> T:
        return await trio.to_thread.run_sync(functools.partial(fn, *args))

    async def _ask(self, call: Awaitable[T]) -> T:
        """Awaits one client call, tracking whether the server answers and whether it
        still takes the token."""
        try:
            result = await call
        except ServerUnavailable as exc:
            self._unreachable(exc)
            raise
        except AuthenticationFailed as exc:
            self._token_refused(exc)
            raise
        self._server_state = "reachable"
        return result

    def _unreachable(self, exc: MemfsError) -> None:
        if self._server_state != "unreachable":
            log.warning("the server is unreachable: %s", exc)
        self._server_state = "unreachable"
        self._error_count += 1
        self._errors.append(BackendEvent(utcnow(), "", f"server unreachable: {exc}"))

    def _token_refused(self, exc: MemfsError) -> None:
        """The server answered 401: the session token was revoked or has expired (issue
        11 item 1). Writes are queued, not sent, until it is taken again; the outbox
        keeps them."""
        first = self._server_state != TOKEN_REFUSED
        self._server_state = TOKEN_REFUSED
        outbox = self._outbox
        message = (
            f"the server refused this mount's session token ({exc}): it was revoked or "
            "has expired. Writes are no longer sent; they are kept queued in "
            f"{outbox.directory if outbox is not None else 'the outbox'}; after "
            f"`memfs umount`, `memfs outbox replay "
            f"{self._session.id if self._session is not None else 'SESSION'} --api "
            f"{self.location} --token NEW_TOKEN` sends them with a new session"
        )
        if first:
            log.error("%s", message)
            self._error_count += 1
            self._errors.append(BackendEvent(utcnow(), "", message))

    def _remember(self, memory: Memory) -> Memory:
        self._known[memory.id] = memory
        return memory

    def _server_id(self, memory_id: str) -> str | None:
        """The server's id of ``memory_id``; None for a create still in the outbox."""
        if memory_id.startswith(PROVISIONAL_ID_PREFIX):
            return self._real_ids.get(memory_id)
        return memory_id

    def _require_outbox(self) -> Outbox:
        if self._outbox is None:
            raise InvalidInput("the remote backend has no session yet: call open_session")
        return self._outbox

    async def _cache_put(self, text: str) -> None:
        """Caches ``text``; a failure (a full disk) fails neither the read nor the write
        that brought it: logged once until a cache write succeeds again."""
        try:
            await self._thread(self._cache.put, text.encode("utf-8"))
        except OSError as exc:  # a full disk must not fail a write the server has
            if not self._cache_failing:
                log.warning("could not cache content (logged once until it can): %s", exc)
            self._cache_failing = True
            return
        if self._cache_failing:
            log.info("the content cache takes writes again")
        self._cache_failing = False


    async def session(self) -> Session:
        """The session of the token (fetched once): its stores, access modes and mount
        paths, from which ``memfs mount --api`` builds its store list. The first fetch
        retries for up to ``startup_wait_s`` while the server is unreachable.

        Raises:
            AuthenticationFailed, ServerUnavailable.
        """
        if self._session is not None:
            return self._session
        deadline = trio.current_time() + self._startup_wait_s
        pause_s = REPLAY_RETRY_MIN_S
        while True:
            try:
                self._session = await self._ask(self._client.retrieve_session())
            except ServerUnavailable as exc:
                if trio.current_time() + pause_s > deadline:
                    raise
                if pause_s == REPLAY_RETRY_MIN_S:
                    log.warning(
                        "waiting up to %.0f s for the server %s: %s",
                        self._startup_wait_s, self.location, exc,
                    )
                await trio.sleep(pause_s)
                pause_s = min(2 * pause_s, STARTUP_RETRY_MAX_S)
                continue
            return self._session

    async def preset_session(self) -> Session:
        """The token's session (:meth:`session`): its resources are what the mount shows."""
        return await self.session()

    @property
    def location(self) -> str:
        """The server's URL, without credentials."""
        return _location(str(self._client.base_url))

    def statistics(self) -> BackendStatistics:
        """A snapshot for ``memfs status`` (cheap; no I/O but one fstat)."""
        outbox = self._outbox.statistics() if self._outbox is not None else None
        cache = self._cache.statistics()
        return BackendStatistics(
            kind="remote",
            location=self.location,
            server_state=self._server_state,
            outbox_depth=outbox.depth if outbox is not None else 0,
            outbox_oldest_at=outbox.oldest_created_at if outbox is not None else None,
            cache_entries=cache.entries,
            cache_size_bytes=cache.size_bytes,
            cache_max_size_bytes=cache.max_size_bytes,
            conflict_count=self._conflict_count,
            conflicts=tuple(self._conflicts),
            rejected_count=self._rejected_count,
            rejected=tuple(self._rejected),
            error_count=self._error_count,
            last_errors=tuple(self._errors),
        )

    @property
    def cache(self) -> ContentCache:
        """The disk cache (tests, benchmarks)."""
        return self._cache
