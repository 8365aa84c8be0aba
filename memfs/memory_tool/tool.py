"""The SDK's client-side memory tool (``memory_20250818``) on memfs stores.

:class:`AsyncMemfsMemoryTool` subclasses ``BetaAsyncAbstractMemoryTool`` and
:class:`MemfsMemoryTool` subclasses ``BetaAbstractMemoryTool`` (``anthropic.lib.tools``);
pass either to ``client.beta.messages.tool_runner(tools=[…])``. Both run the commands of
:class:`memfs.memory_tool.files.MemoryFiles` and answer refusals as the SDK's
``ToolError`` (an ``is_error`` tool result with the text), the one translation of this
edge.

The sync tool runs the async core on an event loop of its own in a daemon thread (an
anyio blocking portal), started at construction and stopped by :meth:`close`, at the
end of a ``with`` block, when the tool is garbage-collected, or at interpreter exit
(whichever comes first): one loop for the tool's whole life, so its HTTP connections
are reused across commands, and a tool used without ``with`` (as the SDK's own
``BetaLocalFilesystemMemoryTool`` is) never keeps the interpreter from exiting.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

import anyio
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from anyio.from_thread import BlockingPortal

from memfs.core.model import Access
from memfs.memory_tool.access import HttpAccess, StoreAccess, open_embedded
from memfs.memory_tool.files import MemoryFiles
from memfs.memory_tool.refusals import Refused

if TYPE_CHECKING:
    from memfs.store import Engine

__all__ = ["AsyncMemfsMemoryTool", "MemfsMemoryTool"]

T = TypeVar("T")

StoreSpecs = Sequence[tuple[str, Access] | str]


def _specs(stores: StoreSpecs) -> list[tuple[str, Access]]:
    """Plain names mean ``read_write``."""
    return [(s, Access.READ_WRITE) if isinstance(s, str) else s for s in stores]


def _remote_access(api_url: str, token: str) -> StoreAccess:
    from memfs.remote.client import MemfsClient

    return HttpAccess(MemfsClient(api_url, token))


async def _answer(call: Awaitable[str]) -> str:
    try:
        return await call
    except Refused as refused:
        raise ToolError(refused.text) from refused


class AsyncMemfsMemoryTool(BetaAsyncAbstractMemoryTool):
    """The memory tool for ``AsyncAnthropic`` tool runners, on memfs stores.

    Build it with :meth:`embedded` (a database in this process) or :meth:`remote` (a
    ``memfs serve`` and a session token); close it with :meth:`aclose`.

    Args:
        files: the memory file service (attachments and actor).
    """

    def __init__(self, files: MemoryFiles) -> None:
        super().__init__()
        self.files = files

    @classmethod
    async def embedded(cls, engine: Engine, stores: StoreSpecs) -> Self:
        """Attaches ``stores`` (names or ids; ``(name, Access.READ_ONLY)`` for read-only)
        to a new session on ``engine``; every version is that session's.

        Raises:
            InvalidInput, NotFound, StoreArchived: as :func:`open_embedded`.
        """
        import anyio.to_thread

        access = await anyio.to_thread.run_sync(open_embedded, engine, _specs(stores))
        return cls(await MemoryFiles.open(access))

    @classmethod
    async def remote(cls, api_url: str, token: str) -> Self:
        """The stores of the session token ``token`` on the server ``api_url``.

        Raises:
            ToolError: the server refused the token or can't be reached.
        """
        return cls(await _answer_files(_remote_access(api_url, token)))

    async def aclose(self) -> None:
        await self.files.aclose()

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await _answer(self.files.view(command.path, command.view_range))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await _answer(self.files.create(command.path, command.file_text))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await _answer(
            self.files.str_replace(command.path, command.old_str, command.new_str)
        )

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await _answer(
            self.files.insert(command.path, command.insert_line, command.insert_text)
        )

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await _answer(self.files.delete(command.path))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await _answer(self.files.rename(command.old_path, command.new_path))


async def _answer_files(access: StoreAccess) -> MemoryFiles:
    try:
        return await MemoryFiles.open(access)
    except Refused as refused:
        await access.aclose()
        raise ToolError(refused.text) from refused


class MemfsMemoryTool(BetaAbstractMemoryTool):
    """The memory tool for ``Anthropic`` (sync) tool runners, on memfs stores.

    Build it with :meth:`embedded` or :meth:`remote`; use it as a context manager or call
    :meth:`close` (module docstring: it owns an event loop thread).

    Args:
        make_files: builds the memory file service on the tool's loop.
    """

    def __init__(self, make_files: Callable[[], Awaitable[MemoryFiles]]) -> None:
        super().__init__()
        self._portal, thread = _start_loop_thread()
        try:
            self.files = self._portal.call(make_files)
        except BaseException:
            _stop_loop_thread(self._portal, thread)
            raise
        # Not a method of self: the finalizer must not keep the tool alive.
        self._finalizer = weakref.finalize(self, _shut_down, self._portal, thread, self.files)

    @classmethod
    def embedded(cls, engine: Engine, stores: StoreSpecs) -> Self:
        """As :meth:`AsyncMemfsMemoryTool.embedded`."""
        access = open_embedded(engine, _specs(stores))

        async def make() -> MemoryFiles:
            return await MemoryFiles.open(access)

        return cls(make)

    @classmethod
    def remote(cls, api_url: str, token: str) -> Self:
        """As :meth:`AsyncMemfsMemoryTool.remote`."""

        async def make() -> MemoryFiles:
            return await _answer_files(_remote_access(api_url, token))

        return cls(make)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the file service and stops the tool's loop thread (idempotent; also
        done when the tool is garbage-collected or the interpreter exits)."""
        self._finalizer()

    def _run(self, func: Callable[..., Awaitable[str]], *args: Any) -> str:
        async def call() -> str:
            return await _answer(func(*args))

        return self._portal.call(call)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(self.files.view, command.path, command.view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(self.files.create, command.path, command.file_text)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(self.files.str_replace, command.path, command.old_str, command.new_str)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(self.files.insert, command.path, command.insert_line, command.insert_text)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(self.files.delete, command.path)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(self.files.rename, command.old_path, command.new_path)


def _start_loop_thread() -> tuple[BlockingPortal, threading.Thread]:
    """Starts an anyio event loop in a daemon thread and returns its portal and thread.

    A daemon thread, unlike the executor thread of ``anyio.from_thread.
    start_blocking_portal``, is not joined by the interpreter before ``atexit`` runs, so
    a tool nobody closed can't hang the exit; the finalizer closes it at exit instead.
    """
    handed: queue.Queue[BlockingPortal | BaseException] = queue.Queue(maxsize=1)

    async def serve() -> None:
        async with BlockingPortal() as portal:
            handed.put(portal)
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(serve)
        except BaseException as exc:  # the loop could not start: tell the constructor
            handed.put(exc)

    thread = threading.Thread(target=run, name="memfs-memory-tool-loop", daemon=True)
    thread.start()
    portal = handed.get()
    if isinstance(portal, BaseException):
        raise portal
    return portal, thread


def _stop_loop_thread(portal: BlockingPortal, thread: threading.Thread) -> None:
    """Stops the portal's loop (tasks still running are cancelled) and joins its thread."""
    with contextlib.suppress(RuntimeError):  # the loop is gone already
        portal.call(portal.stop, True)
    thread.join()


def _shut_down(portal: BlockingPortal, thread: threading.Thread, files: MemoryFiles) -> None:
    """The tool's finalizer: closes the file service on its loop, then stops the loop."""
    try:
        portal.call(files.aclose)
    finally:
        _stop_loop_thread(portal, thread)
