"""The SDK's client-side memory tool (``memory_20250818``) on memfs stores.

:class:`AsyncMemfsMemoryTool` subclasses ``BetaAsyncAbstractMemoryTool`` and
:class:`MemfsMemoryTool` subclasses ``BetaAbstractMemoryTool`` (``anthropic.lib.tools``);
pass either to ``client.beta.messages.tool_runner(tools=[…])``. Both run the commands of
:class:`memfs.memory_tool.files.MemoryFiles` and answer refusals as the SDK's
``ToolError`` (an ``is_error`` tool result with the text), the one translation of this
edge.

The sync tool runs the async core on an event loop of its own in a worker thread (an
anyio blocking portal), started at construction and stopped by :meth:`close` (or at the
end of a ``with`` block): one loop for the tool's whole life, so its HTTP connections
are reused across commands.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self, TypeVar

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from anyio.from_thread import BlockingPortal, start_blocking_portal

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
        portal_cm = start_blocking_portal()
        self._portal = portal_cm.__enter__()
        try:
            self.files = self._portal.call(make_files)
        except BaseException:
            portal_cm.__exit__(None, None, None)
            raise
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = portal_cm

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
        """Closes the file service and stops the tool's loop thread (idempotent)."""
        portal_cm, self._portal_cm = self._portal_cm, None
        if portal_cm is None:
            return
        try:
            self._portal.call(self.files.aclose)
        finally:
            portal_cm.__exit__(None, None, None)

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
