"""Helpers of the memory-front-end tests (``tests/memory_tool``, ``tests/mcp``): the SDK's
command types, running a command on a tool, a store access that lets a test act between
an edit's read and its write, the versions a store holds, and the fixtures both conftests
name: ``store_engine``, ``fuse_available``, ``server`` (a real ``memfs serve``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.mount import FUSE_UNAVAILABLE_REASON
from _support.serve import ServeProcess
from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from memfs.core.model import Memory, MemoryVersion
from memfs.memory_tool.port import FileInfo, StoreAccess, StoredFile
from memfs.store import Engine, open_engine

COMMAND_TYPES: dict[str, Any] = {
    "view": BetaMemoryTool20250818ViewCommand,
    "create": BetaMemoryTool20250818CreateCommand,
    "str_replace": BetaMemoryTool20250818StrReplaceCommand,
    "insert": BetaMemoryTool20250818InsertCommand,
    "delete": BetaMemoryTool20250818DeleteCommand,
    "rename": BetaMemoryTool20250818RenameCommand,
}

Outcome = tuple[str, str]  # ("ok", result text) or ("error", ToolError text)


def command(name: str, **fields: Any) -> Any:
    """The SDK's command object (``BetaMemoryTool20250818…Command``)."""
    return COMMAND_TYPES[name](command=name, **fields)


def run(tool: Any, name: str, **fields: Any) -> Outcome:
    """Runs one command on a sync tool (the SDK's ``execute`` dispatch)."""
    try:
        return "ok", tool.execute(command(name, **fields))
    except ToolError as error:
        return "error", str(error.content)


async def arun(tool: Any, name: str, **fields: Any) -> Outcome:
    """Runs one command on an async tool."""
    try:
        return "ok", await tool.execute(command(name, **fields))
    except ToolError as error:
        return "error", str(error.content)


def mask_directory_sizes(outcome: Outcome, viewed: str) -> Outcome:
    """A ``view`` listing with directory sizes replaced by ``<dir>`` (a local folder's
    directory size depends on its filesystem); files keep theirs."""
    kind, text = outcome
    if kind != "ok" or not text.startswith("Here're the files"):
        return outcome
    lines = text.split("\n")
    masked = [lines[0]]
    for line in lines[1:]:
        size, _, name = line.partition("\t")
        masked.append(f"<dir>\t{name}" if name.endswith("/") or name == viewed else line)
    return kind, "\n".join(masked)


def versions(engine: Engine, store_id: str) -> list[MemoryVersion]:
    """Every version of a store, oldest first."""
    found: list[MemoryVersion] = []
    cursor = None
    while True:
        page = engine.versions.list(store_id, limit=20, cursor=cursor, with_content=True)
        found.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return list(reversed(found))


def live(engine: Engine, store_id: str) -> dict[str, str]:
    """``{path: content}`` of a store's live memories."""
    result: dict[str, str] = {}
    for memory in engine.memories.all(store_id):
        full: Memory = engine.memories.get(store_id, memory.id, with_content=True)
        result[full.path] = full.content or ""
    return result


class InterferingAccess:
    """A :class:`StoreAccess` that runs ``interfere`` just before each of the first
    ``times`` content updates: another writer acting between an edit's read and its
    write (the race the precondition exists for)."""

    def __init__(
        self, inner: StoreAccess, interfere: Callable[[], Awaitable[None]], times: int = 1
    ) -> None:
        self.inner = inner
        self.interfere = interfere
        self.remaining = times
        self.updates_tried = 0

    async def attachments(self) -> Any:
        return await self.inner.attachments()

    async def read(self, store_id: str, path: str) -> StoredFile | None:
        return await self.inner.read(store_id, path)

    async def listing(self, store_id: str, prefix: str) -> list[FileInfo]:
        return await self.inner.listing(store_id, prefix)

    async def create(self, store_id: str, path: str, content: str) -> None:
        await self.inner.create(store_id, path, content)

    async def update(self, store_id: str, memory_id: str, **changes: Any) -> None:
        self.updates_tried += 1
        if self.remaining > 0 and changes.get("content") is not None:
            self.remaining -= 1
            await self.interfere()
        await self.inner.update(store_id, memory_id, **changes)

    async def delete(self, store_id: str, memory_id: str) -> None:
        await self.inner.delete(store_id, memory_id)

    async def rename_prefix(self, store_id: str, old_prefix: str, new_prefix: str) -> None:
        await self.inner.rename_prefix(store_id, old_prefix, new_prefix)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def store_engine(memfs_home: Path) -> Iterator[Engine]:
    """An engine on ``$MEMFS_HOME/memfs.db``: the database of the mount daemons, of
    ``memfs mcp`` and of ``memfs serve`` started by the test."""
    engine = open_engine()
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def fuse_available() -> None:
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)


@pytest.fixture
def server(store_engine: Engine, memfs_home: Path, tmp_path: Path) -> Iterator[ServeProcess]:
    """A real ``memfs serve`` on ``$MEMFS_HOME/memfs.db``; it must stop cleanly and log no
    traceback, and fsck must find the database clean."""
    log_dir = tmp_path / "server-logs"
    log_dir.mkdir()
    server = ServeProcess(memfs_home / "memfs.db", log_dir)
    try:
        yield server
    finally:
        server.stop()
    assert server.tracebacks() == [], "the server logged a traceback"
    findings = list(store_engine.iter_fsck_findings())
    assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)
