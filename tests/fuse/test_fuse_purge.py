"""Purged content and fetches in flight, without a kernel: a redaction's purge that
lands while a read-ahead is waiting on the store must win (SPEC §2: after redaction
the bytes are gone from every local cache)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio

from memfs.core.errors import NotFound
from memfs.core.model import Memory
from memfs.fuse.inodes import Attachment, InodeTable, Layout
from memfs.fuse.operations import Operations
from memfs.fuse.status import MountStatus


def _memory(store_id: str, n: int, content: str) -> Memory:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Memory(
        id=f"mem_{n:026d}", memory_store_id=store_id, path=f"/d/{n}.md", content=None,
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        content_size_bytes=len(content), memory_version_id=f"memver_{n:026d}",
        metadata={}, created_at=now, updated_at=now, blob_key=f"blob{n}",
    )


class _SlowStore:
    """The two content calls of the Backend Protocol, answering once released."""

    def __init__(self, contents: dict[str, bytes]) -> None:
        self.contents = contents
        self.release = trio.Event()
        self.asked = trio.Event()

    async def read_contents(self, memories: Sequence[Memory]) -> dict[str, bytes]:
        self.asked.set()
        await self.release.wait()
        return {m.blob_key: self.contents[m.blob_key] for m in memories}

    async def read_content(self, memory: Memory) -> bytes:
        return self.contents[memory.blob_key]


@pytest.fixture
def operations(tmp_path: Path) -> tuple[Operations, _SlowStore, list[Any]]:
    store = Attachment("memstore_x", "Notes", "notes", 0, False)
    table = InodeTable(Layout.PER_STORE, [store])
    memories = [_memory(store.store_id, n, f"content {n}") for n in range(3)]
    nodes = [table.add_memory(store, m) for m in memories]
    backend = _SlowStore({m.blob_key: f"content {n}".encode() for n, m in enumerate(memories)})
    status = MountStatus(str(tmp_path), {})
    ops = Operations(backend, table, session_id="sesn_x", status=status,  # type: ignore[arg-type]
                     memory_limit=10)
    return ops, backend, nodes


async def test_a_purge_during_a_read_ahead_keeps_the_bytes_out_of_the_cache(
    operations: tuple[Operations, _SlowStore, list[Any]],
) -> None:
    ops, backend, nodes = operations
    purged = nodes[1].memory.blob_key
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ops.reader.read_ahead, nodes[0], nodes[0].memory)
        await backend.asked.wait()
        ops.follower.purge(purged)  # the change feed applies a redaction meanwhile
        backend.release.set()
    assert purged not in ops.reader.cache
    assert nodes[0].memory.blob_key in ops.reader.cache
    assert nodes[2].memory.blob_key in ops.reader.cache


async def test_a_read_whose_own_content_is_purged_meanwhile_fails(
    operations: tuple[Operations, _SlowStore, list[Any]],
) -> None:
    ops, backend, nodes = operations
    wanted = nodes[0].memory

    async def read() -> None:
        with pytest.raises(NotFound):
            await ops.reader.read_ahead(nodes[0], wanted)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await backend.asked.wait()
        ops.follower.purge(wanted.blob_key)
        backend.release.set()
    assert wanted.blob_key not in ops.reader.cache
    assert ops.reader.purged == {}  # no fetch left in flight: the marks are dropped
