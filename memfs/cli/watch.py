"""``memfs watch STORE…``: follow stores' change feeds, one JSON line per change.

File watchers (inotify, ``fs.watch``) on a mount see only the changes made through that
mount: the kernel raises no event when the mount invalidates a file another writer
changed. ``memfs watch`` follows the change feed instead (SPEC §4 "Semantics": every
mutation appends one entry, seq +1, no gaps), from any process or server:

* embedded (default, ``--database``): waits on :meth:`memfs.store.Engine.watch_changes`
  (PostgreSQL ``LISTEN/NOTIFY``, an inotify watch of the SQLite file: nothing is read
  while nothing changes) and reads :meth:`memfs.store.Engine.changes_since`; it reads
  as the CLI does everywhere, unrestricted (every record visible).
* remote (``--api URL``, token from ``--token`` or ``$MEMFS_TOKEN``): the long poll
  ``GET …/changes`` of :meth:`memfs.remote.client.MemfsClient.changes`; the server
  shows what the token may see (an entry about a record hidden from it keeps its seq,
  kind and memory id, and has ``path`` null). Stores are named by id, or — with a
  session token — by the name or slug of a store attached to the session.

Each line on stdout is :func:`memfs.wire.change_to_wire` (the feed's wire object) plus
``memory_store_name`` (the store's name when the watch started), flushed at once. Each
store's lines come in seq order; lines of different stores interleave as they come.
Once every store is followed, one line per store on stderr says so
(``memfs: watching NAME (ID) after seq N``). A store's watch ends after its
``store_deleted`` entry; the command ends when every store's has, at ``--count``, at
``--timeout`` (a total duration), at SIGTERM or a closed stdout (exit status 0), or at
Ctrl-C (SIGINT, exit status 130). An unknown store, an unreachable server or a refused
token is one error line, exit status 1.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Protocol

import typer

from memfs.cli._common import DatabaseOption, command_engine, fail, one_line
from memfs.core.config import TOKEN_ENV, session_token
from memfs.core.errors import MemfsError, NotFound, PermissionDenied

if TYPE_CHECKING:
    import trio

    from memfs.core.model import Change
    from memfs.remote.client import MemfsClient
    from memfs.store import Engine

__all__ = ["EXIT_INTERRUPTED", "register"]

# Ctrl-C: the shell's convention (128 + SIGINT), so that a script can tell it from an
# end by --count, --timeout or SIGTERM (0).
EXIT_INTERRUPTED = 128 + signal.SIGINT
# How often a store is read when the change watch could not be opened (SPEC §4: a change
# made elsewhere shows within about one second).
FALLBACK_POLL_INTERVAL_S = 0.25
# Changes read per request.
BATCH_LIMIT = 1000


def register(app: typer.Typer) -> None:
    """Adds ``memfs watch`` to the ``memfs`` app."""
    app.command("watch")(watch_command)


def watch_command(
    stores: Annotated[
        list[str], typer.Argument(help="Store names, slugs or memstore_ ids.", show_default=False)
    ],
    database: DatabaseOption = None,
    api: Annotated[
        str | None,
        typer.Option("--api", help="URL of a memfs serve to watch (needs --token)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=TOKEN_ENV,
            show_envvar=True,
            help="With --api: a session token or API key that may read the stores.",
        ),
    ] = None,
    since: Annotated[
        int | None,
        typer.Option(
            "--since",
            min=0,
            show_default=False,
            help="Print each store's changes after this seq first (0: the whole feed). "
            "Default: only changes made from now on.",
        ),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option("--count", min=1, help="Exit after this many changes.", show_default=False),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.0,
            show_default=False,
            help="Exit after this many seconds in all, however many changes came.",
        ),
    ] = None,
) -> None:
    """Print the changes of memory stores as JSON lines, as they happen.

    Each line is a change of the feed (type, seq, memory_store_id, kind, memory_id, path,
    old_path, content_sha256, memory_version_id, created_at) plus memory_store_name.
    Exit status 0 at --count, --timeout, SIGTERM or a closed pipe; 130 at Ctrl-C.
    """
    import trio

    if api is not None:
        if database is not None:
            fail("--api and --database exclude each other")
        if not token:
            fail(f"a remote watch needs --token (or ${TOKEN_ENV})")
    elif token is not None and session_token() != token:
        fail("--token needs --api URL")
    lines = _Lines(count)
    try:
        if api is not None:
            assert token is not None
            trio.run(_watch_remote, api, token, stores, since, timeout, lines)
        else:
            with command_engine(database) as engine:
                trio.run(_watch_embedded, engine, stores, since, timeout, lines)
    except KeyboardInterrupt:  # Ctrl-C before the signal receiver was in place
        lines.signal = signal.SIGINT
    if lines.error is not None:
        raise lines.error
    if lines.signal == signal.SIGINT:
        raise typer.Exit(EXIT_INTERRUPTED)


class _Lines:
    """The output of one watch: prints each change as a line, counts them, and ends the
    watch (cancels its scope) at ``--count``, a closed stdout, a signal or an error."""

    def __init__(self, count: int | None) -> None:
        self.count = count
        self.printed = 0
        self.finished = False
        self.signal: int | None = None
        self.error: MemfsError | None = None
        self.scope: trio.CancelScope | None = None

    def emit(self, change: Change, store_name: str) -> None:
        """Prints ``change`` as one JSON line and flushes it (nothing once finished)."""
        from memfs.wire import change_to_wire

        if self.finished:
            return
        line = json.dumps(
            {**change_to_wire(change), "memory_store_name": store_name}, ensure_ascii=False
        )
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `memfs watch … | head -1`: the reader is gone
            _drop_stdout()
            self.finish()
            return
        self.printed += 1
        if self.count is not None and self.printed >= self.count:
            self.finish()

    def fail(self, error: MemfsError) -> None:
        if self.error is None:
            self.error = error
        self.finish()

    def finish(self) -> None:
        self.finished = True
        if self.scope is not None:
            self.scope.cancel()


def _drop_stdout() -> None:
    """Points stdout at /dev/null, so that the interpreter's final flush of a closed
    pipe raises nothing at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class _Feed(Protocol):
    """Where one watch reads: the embedded engine or a server."""

    async def newest_seq(self, store_id: str) -> int: ...

    async def next_changes(self, store_id: str, after: int) -> list[Change]:
        """The store's changes after ``after``, oldest first; waits until there is one."""
        ...


async def _follow(
    feed: _Feed,
    stores: dict[str, str],
    since: int | None,
    timeout_s: float | None,
    lines: _Lines,
) -> None:
    """Follows every store of ``stores`` (id → name) until :class:`_Lines` finishes,
    every store is deleted, or ``timeout_s`` passes."""
    import trio

    from memfs.core.model import ChangeKind

    starts: dict[str, int] = {}
    for store_id, name in stores.items():
        newest = await feed.newest_seq(store_id)
        if since is not None and since > newest:
            raise _invalid(
                f"--since {since} is beyond the newest change of {name!r} (seq {newest})"
            )
        starts[store_id] = newest if since is None else since

    async def follow_store(store_id: str) -> None:
        after = starts[store_id]
        try:
            while True:
                for change in await feed.next_changes(store_id, after):
                    lines.emit(change, stores[store_id])
                    after = change.seq
                    if change.kind is ChangeKind.STORE_DELETED:
                        return
        except MemfsError as exc:
            lines.fail(exc)

    with (
        trio.CancelScope() as scope,
        trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals,
    ):
        lines.scope = scope
        if timeout_s is not None:
            scope.deadline = trio.current_time() + timeout_s
        for store_id, name in stores.items():
            print(
                f"memfs: watching {name} ({store_id}) after seq {starts[store_id]}",
                file=sys.stderr,
                flush=True,
            )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_signal, signals, lines)
            async with trio.open_nursery() as followers:
                for store_id in stores:
                    followers.start_soon(follow_store, store_id)
            nursery.cancel_scope.cancel()  # every store was deleted


async def _stop_on_signal(signals: AsyncIterator[int], lines: _Lines) -> None:
    async for signum in signals:
        lines.signal = signum
        lines.finish()
        return


def _invalid(message: str) -> MemfsError:
    from memfs.core.errors import InvalidInput

    return InvalidInput(message)


# ----------------------------------------------------------------- embedded


async def _watch_embedded(
    engine: Engine, names: list[str], since: int | None, timeout_s: float | None, lines: _Lines
) -> None:
    import trio

    stores = {}
    for name in names:
        store = await trio.to_thread.run_sync(engine.stores.find, name)
        stores[store.id] = store.name
    feed = _EmbeddedFeed(engine)
    await feed.subscribe()
    try:
        await _follow(feed, stores, since, timeout_s, lines)
    finally:
        feed.unsubscribe()


class _EmbeddedFeed:
    """The engine's change feed, woken by its change watch (module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._events: dict[str, trio.Event] = {}
        self._interval_s = math.inf
        self._unsubscribe: Callable[[], None] | None = None

    async def subscribe(self) -> None:
        """Opens the change watch; without one, stores are read every
        :data:`FALLBACK_POLL_INTERVAL_S` (said once on stderr)."""
        import trio

        token = trio.lowlevel.current_trio_token()

        def on_change(store_ids: frozenset[str] | None) -> None:  # an engine thread
            with contextlib.suppress(trio.RunFinishedError):  # the watch has ended
                token.run_sync_soon(self._wake, store_ids)

        try:
            self._unsubscribe = await trio.to_thread.run_sync(self._engine.watch_changes, on_change)
        except Exception as exc:
            print(
                f"memfs: no change notifications ({one_line(exc)}); reading the stores "
                f"every {FALLBACK_POLL_INTERVAL_S} s",
                file=sys.stderr,
                flush=True,
            )
            self._interval_s = FALLBACK_POLL_INTERVAL_S

    def unsubscribe(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _wake(self, store_ids: frozenset[str] | None) -> None:
        for store_id in list(self._events) if store_ids is None else store_ids:
            event = self._events.pop(store_id, None)
            if event is not None:
                event.set()

    async def newest_seq(self, store_id: str) -> int:
        import trio

        return await trio.to_thread.run_sync(self._engine.feed.last_seq, store_id)

    async def next_changes(self, store_id: str, after: int) -> list[Change]:
        import trio

        read = partial(self._engine.feed.changes_since, store_id, after, limit=BATCH_LIMIT)
        while True:
            # Registered before the read: a commit after it wakes this wait.
            event = self._events.setdefault(store_id, trio.Event())
            changes = await trio.to_thread.run_sync(read)
            if changes:
                return changes
            with trio.move_on_after(self._interval_s):
                await event.wait()


# ----------------------------------------------------------------- remote


async def _watch_remote(
    api: str,
    token: str,
    names: list[str],
    since: int | None,
    timeout_s: float | None,
    lines: _Lines,
) -> None:
    from memfs.remote.client import MemfsClient

    async with MemfsClient(api, token) as client:
        stores = {}
        for name in names:
            store_id, store_name = await _find_remote_store(client, name)
            stores[store_id] = store_name
        await _follow(_RemoteFeed(client), stores, since, timeout_s, lines)


async def _find_remote_store(client: MemfsClient, name: str) -> tuple[str, str]:
    """``(id, name)`` of a store by id, or by name or slug among the stores attached to
    the token's session (an API key can't list them here: it names stores by id).

    Raises:
        NotFound, InvalidInput (several attached stores match), AuthenticationFailed,
        ServerUnavailable.
    """
    from memfs.core.rules import slugify

    if name.startswith("memstore_"):
        store = await client.retrieve_store(name)
        return store.id, store.name
    try:
        session = await client.retrieve_session()
    except PermissionDenied:
        raise NotFound(
            f"no memory store has the id {name!r} (with an API key, name stores by their "
            "memstore_ id)"
        ) from None
    found = [r for r in session.resources if r.name == name] or [
        r for r in session.resources if slugify(r.name) == name
    ]
    if not found:
        raise NotFound(f"no memory store attached to session {session.id} is named {name!r}")
    if len(found) > 1:
        ids = ", ".join(r.memory_store_id for r in found)
        raise _invalid(f"several memory stores are named {name!r} ({ids}); use an id")
    return found[0].memory_store_id, found[0].name


class _RemoteFeed:
    """A server's change feed, read with its long poll."""

    def __init__(self, client: MemfsClient) -> None:
        self._client = client

    async def newest_seq(self, store_id: str) -> int:
        return (await self._client.changes(store_id, after=0, limit=1)).last_seq

    async def next_changes(self, store_id: str, after: int) -> list[Change]:
        from memfs.core.model import Change
        from memfs.remote.client import MAX_LONG_POLL_TIMEOUT_S

        while True:
            batch = await self._client.changes(
                store_id, after=after, timeout_s=MAX_LONG_POLL_TIMEOUT_S, limit=BATCH_LIMIT
            )
            if batch.data:
                return [
                    Change(**c.model_dump(exclude={"type"}), blob_key=None) for c in batch.data
                ]
            if batch.last_seq < after:
                raise _invalid(
                    f"the change feed of {store_id} was reset (its newest seq is "
                    f"{batch.last_seq}, below {after}): start the watch again"
                )
