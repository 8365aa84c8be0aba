"""The working copy without a kernel: :class:`memfs.fuse.content.WorkingCopy` transitions,
and the commit / keep-both / reject paths of :class:`memfs.fuse.operations.Operations`
driven directly against an embedded backend (an Operations-level test layer: no kernel, no mount).

Handlers are called as pyfuse3 would call them; no mount, no subprocess.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pyfuse3
import pytest

from memfs.backend import AttachmentSpec, MemoryChange
from memfs.backend.embedded import EmbeddedBackend
from memfs.core.errors import InvalidContent, NotFound
from memfs.core.model import MemoryStore
from memfs.fuse.content import WorkingCopy
from memfs.fuse.inodes import Attachment, InodeTable, Layout
from memfs.fuse.operations import Operations
from memfs.fuse.status import MountStatus
from memfs.store import Engine


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------ pure transitions


def test_a_write_makes_the_copy_dirty_and_zero_fills_a_gap() -> None:
    working = WorkingCopy()
    working.load(b"ab")
    working.write(4, b"cd")
    assert working.dirty
    assert working.pending() == b"ab\0\0cd"


def test_truncate_reports_whether_it_changed_anything() -> None:
    working = WorkingCopy()
    working.load(b"abc")
    assert working.truncate(3) is False
    assert not working.dirty
    assert working.truncate(1) is True
    assert working.pending() == b"a"
    assert working.truncate(0) is True
    assert working.fresh


def test_an_unloaded_truncate_of_an_empty_head_changes_nothing() -> None:
    working = WorkingCopy()
    assert working.truncate_unloaded(head_size_bytes=0) is False
    assert not working.dirty
    other = WorkingCopy()
    assert other.truncate_unloaded(head_size_bytes=5) is True
    assert other.pending() == b""


def test_committed_keeps_writes_that_arrived_meanwhile_pending() -> None:
    working = WorkingCopy()
    working.load(b"")
    working.write(0, b"one")
    sent = working.pending()
    assert sent is not None
    working.write(3, b"two")  # while the store call ran
    working.committed(sha(sent), sent)
    assert working.dirty
    assert working.base_sha256 == sha(b"one")
    assert working.kernel_sha256 == working.opened_sha256 == sha(b"one")
    working.committed(sha(b"onetwo"), b"onetwo")
    assert not working.dirty


def test_reset_to_head_drops_pending_content_refusal_and_pages() -> None:
    working = WorkingCopy(kernel_sha256="k", base_sha256="old")
    working.load(b"x")
    working.write(0, b"y")
    working.refuse()
    working.lost = InvalidContent("no")
    working.fresh = True
    working.reset_to_head("head")
    assert (working.buffer, working.dirty, working.refused, working.lost, working.fresh) == (
        None, False, False, None, False)
    assert working.kernel_sha256 is None
    assert working.base_sha256 == "head"


def test_a_purge_reports_discarded_changes_only() -> None:
    clean = WorkingCopy(base_sha256="s")
    clean.load(b"x")
    clean.purge(NotFound("gone"))
    assert clean.buffer is None
    assert clean.lost is None
    dirty = WorkingCopy(base_sha256="s")
    dirty.load(b"x")
    dirty.write(1, b"y")
    dirty.purge(NotFound("gone"))
    assert dirty.buffer is None
    assert isinstance(dirty.lost, NotFound)


def test_content_written_after_truncation_does_not_derive_from_the_old_head() -> None:
    working = WorkingCopy(base_sha256="s")
    working.load(b"secret")
    assert working.derives_from("s", head_sha256=None)
    working.truncate(0)
    working.write(0, b"new")
    assert not working.derives_from("s", head_sha256="s")


def test_an_open_serves_the_base_and_keeps_the_cache_only_when_the_kernel_has_it() -> None:
    working = WorkingCopy(base_sha256="a")
    assert working.opened() == (False, False)
    assert working.opened() == (True, False)  # the kernel holds "a" now
    working.base_sha256 = "b"
    assert working.opened() == (False, True)
    assert working.opened_sha256 == "b"


def test_follow_head_moves_the_precondition_only_of_a_closed_clean_file() -> None:
    working = WorkingCopy(base_sha256="a")
    working.follow_head("b", is_open=True)
    assert working.base_sha256 == "a"
    working.follow_head("b", is_open=False)
    assert working.base_sha256 == "b"


# ------------------------------------------------------- Operations, no mount


class _Context:
    """What the handlers read of a ``pyfuse3.RequestContext``."""

    pid = 4242
    uid = 0
    gid = 0
    umask = 0o022


CTX = _Context()


class Harness:
    """An Operations over a real engine, called like the kernel would."""

    def __init__(self, ops: Operations, engine: Engine, store_id: str, table: InodeTable) -> None:
        self.ops = ops
        self.engine = engine
        self.store_id = store_id
        self.table = table

    @property
    def directory(self) -> int:
        return self.table.store_root(self.table.attachments[0]).inode

    async def create(self, name: str, flags: int = os.O_WRONLY) -> tuple[int, int]:
        info, attributes = await self.ops.create(self.directory, name.encode(), 0o644, flags,
                                                 CTX)  # type: ignore[arg-type]
        return info.fh, attributes.st_ino

    async def open(self, inode: int, flags: int) -> int:
        info = await self.ops.open(inode, flags, CTX)  # type: ignore[arg-type]
        return info.fh

    async def close(self, fh: int) -> None:
        try:
            await self.ops.flush(fh)
        finally:
            await self.ops.release(fh)

    def content(self, path: str) -> str | None:
        memory = self.engine.memories.get_by_path(self.store_id, path, with_content=True)
        return memory.content


@pytest.fixture
async def harness(
    tmp_path: Path, store_engine: Engine, make_store: Callable[..., MemoryStore]
) -> AsyncIterator[Harness]:
    engine = store_engine
    store = make_store()
    backend = EmbeddedBackend(engine)
    await backend.open_session([AttachmentSpec(store.id, False)], mount_root=str(tmp_path / "m"))
    table = InodeTable(Layout.PER_STORE, [Attachment(store.id, "Notes", "notes", 0, False)])
    status = MountStatus(str(tmp_path / "m"), {})
    ops = Operations(backend, table, session_id="sesn_test", status=status, memory_limit=100)
    await ops.load()
    yield Harness(ops, engine, store.id, table)
    findings = list(engine.iter_fsck_findings())
    assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)


async def test_a_close_commits_exactly_one_version(harness: Harness) -> None:
    fh, inode = await harness.create("a.md")
    assert await harness.ops.write(fh, 0, b"hello\n") == 6
    await harness.close(fh)
    assert harness.content("/a.md") == "hello\n"
    node = harness.table.get(inode)
    assert not node.working.dirty
    assert node.working.buffer is None
    memory = harness.engine.memories.get_by_path(harness.store_id, "/a.md", with_content=False)
    assert len(harness.engine.versions.list(harness.store_id, memory_id=memory.id).items) == 1


async def test_a_changed_head_keeps_both_and_the_file_shows_the_head(harness: Harness) -> None:
    fh, inode = await harness.create("b.md")
    await harness.ops.write(fh, 0, b"v1\n")
    await harness.close(fh)
    memory = harness.engine.memories.get_by_path(harness.store_id, "/b.md", with_content=False)
    fh = await harness.open(inode, os.O_WRONLY)
    await harness.ops.write(fh, 0, b"mine\n")
    harness.engine.memories.update(harness.store_id, memory.id, content="theirs\n")
    await harness.close(fh)
    assert harness.content("/b.md") == "theirs\n"
    copies = [m for m in harness.engine.memories.all(harness.store_id) if ".conflict-" in m.path]
    assert len(copies) == 1
    assert harness.content(copies[0].path) == "mine\n"
    node = harness.table.get(inode)
    assert not node.working.dirty
    assert node.working.lost is None


def test_only_refused_means_nothing_was_accepted() -> None:
    working = WorkingCopy()
    working.start_empty(dirty=True)
    working.refuse()
    assert working.only_refused
    working.write(0, b"ok")
    assert not working.only_refused


async def test_a_refused_write_fails_the_whole_save(harness: Harness, memfs_home: Path) -> None:
    """SPEC §4 "a save is all or nothing": the write is refused and changes nothing; the
    close commits nothing of the descriptor (the bytes before it neither), reports the
    refusal, and keeps what was accepted under ``rejected/``."""
    fh, inode = await harness.create("c.md")
    await harness.ops.write(fh, 0, b"before\n")
    await harness.close(fh)
    fh = await harness.open(inode, os.O_WRONLY | os.O_TRUNC)
    assert await harness.ops.write(fh, 0, b"good\n") == 5
    with pytest.raises(pyfuse3.FUSEError) as refused:
        await harness.ops.write(fh, 5, b"bad\x01")
    assert refused.value.errno == errno.EILSEQ
    assert harness.table.get(inode).working.pending() == b"good\n"
    with pytest.raises(pyfuse3.FUSEError) as closed:
        await harness.close(fh)
    assert closed.value.errno == errno.EILSEQ
    assert harness.content("/c.md") == "before\n"
    kept = list((memfs_home / "rejected").rglob("*c.md"))
    assert [p.read_bytes() for p in kept] == [b"good\n"]


async def test_eilseq_is_reported_before_efbig(harness: Harness) -> None:
    fh, _ = await harness.create("big.md")
    with pytest.raises(pyfuse3.FUSEError) as refused:
        await harness.ops.write(fh, 0, b"\x00" * 200_000)
    assert refused.value.errno == errno.EILSEQ
    with pytest.raises(pyfuse3.FUSEError) as closed:
        await harness.close(fh)
    assert closed.value.errno == errno.EILSEQ


async def test_a_new_file_whose_every_write_was_refused_is_not_created(harness: Harness) -> None:
    fh, _ = await harness.create("only-refused.md")
    with pytest.raises(pyfuse3.FUSEError):
        await harness.ops.write(fh, 0, b"bad\x01")
    with pytest.raises(pyfuse3.FUSEError) as closed:
        await harness.close(fh)
    assert closed.value.errno == errno.EILSEQ
    with pytest.raises(NotFound):
        harness.engine.memories.get_by_path(
            harness.store_id, "/only-refused.md", with_content=False
        )


async def test_a_store_refusal_at_close_keeps_the_bytes_under_rejected(
    harness: Harness, memfs_home: Path
) -> None:
    fh, _ = await harness.create("d.md")
    await harness.ops.write(fh, 0, b"\xc3")  # half a character: refused only as a whole
    with pytest.raises(pyfuse3.FUSEError) as closed:
        await harness.close(fh)
    assert closed.value.errno == errno.EILSEQ
    kept = list((memfs_home / "rejected").rglob("*d.md"))
    assert [p.read_bytes() for p in kept] == [b"\xc3"]


async def test_metadata_of_a_new_file_is_applied_by_its_first_commit(harness: Harness) -> None:
    fh, inode = await harness.create("e.md")
    await harness.ops.setxattr(inode, b"user.meta.kind", b"note", None)  # type: ignore[arg-type]
    await harness.ops.write(fh, 0, b"x\n")
    await harness.close(fh)
    memory = harness.engine.memories.get_by_path(harness.store_id, "/e.md", with_content=False)
    assert memory.metadata == {"kind": "note"}
    assert harness.table.get(inode).working.pending_metadata == {}


async def test_xattr_refusals_follow_the_rules_of_spec_1(harness: Harness) -> None:
    _, inode = await harness.create("f.md")
    setxattr = harness.ops.setxattr
    with pytest.raises(pyfuse3.FUSEError) as long_value:
        await setxattr(inode, b"user.meta.k", b"v" * 513, None)  # type: ignore[arg-type]
    assert long_value.value.errno == errno.E2BIG
    for n in range(16):
        await setxattr(inode, f"user.meta.k{n}".encode(), b"v", None)  # type: ignore[arg-type]
    with pytest.raises(pyfuse3.FUSEError) as many:
        await setxattr(inode, b"user.meta.k16", b"v", None)  # type: ignore[arg-type]
    assert many.value.errno == errno.ENOSPC
    with pytest.raises(pyfuse3.FUSEError) as nul:
        await setxattr(inode, b"user.meta.k0", b"a\0b", None)  # type: ignore[arg-type]
    assert nul.value.errno == errno.EINVAL


async def test_a_change_elsewhere_resets_a_closed_file_to_the_new_head(harness: Harness) -> None:
    fh, inode = await harness.create("g.md")
    await harness.ops.write(fh, 0, b"one\n")
    await harness.close(fh)
    node = harness.table.get(inode)
    fh = await harness.open(inode, os.O_RDONLY)
    assert await harness.ops.read(fh, 0, 100) == b"one\n"
    assert node.working.loaded
    memory = harness.engine.memories.get_by_path(harness.store_id, "/g.md", with_content=False)
    harness.engine.memories.update(harness.store_id, memory.id, content="two\n")
    await harness.ops.apply_changes(harness.table.attachments[0])
    assert not node.working.loaded
    assert node.working.base_sha256 == sha(b"two\n")
    assert await harness.ops.read(fh, 0, 100) == b"two\n"
    await harness.close(fh)


async def test_the_backend_takes_one_memory_change_value(harness: Harness) -> None:
    fh, _ = await harness.create("h.md")
    await harness.ops.write(fh, 0, b"x\n")
    await harness.close(fh)
    memory = harness.engine.memories.get_by_path(harness.store_id, "/h.md", with_content=False)
    moved = await harness.ops.committer._backend.update_memory(
        harness.store_id, memory.id, MemoryChange(path="/i.md", expected_sha256=sha(b"x\n"))
    )
    assert moved.path == "/i.md"
    assert moved.id == memory.id


async def test_an_exclusive_create_of_a_name_taken_elsewhere_is_eexist(harness: Harness) -> None:
    harness.engine.memories.create(harness.store_id, "/x.md", "theirs\n")
    with pytest.raises(pyfuse3.FUSEError) as taken:
        await harness.create("x.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert taken.value.errno == errno.EEXIST


async def test_an_exclusive_create_is_committed_at_once(harness: Harness) -> None:
    fh, _ = await harness.create("y.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert harness.content("/y.md") == ""
    await harness.ops.write(fh, 0, b"y\n")
    await harness.close(fh)
    assert harness.content("/y.md") == "y\n"


async def test_an_open_catches_up_with_the_store_before_it_returns(harness: Harness) -> None:
    fh, inode = await harness.create("z.md")
    await harness.ops.write(fh, 0, b"one\n")
    await harness.close(fh)
    memory = harness.engine.memories.get_by_path(harness.store_id, "/z.md", with_content=False)
    harness.engine.memories.update(harness.store_id, memory.id, content="two\n")
    fh = await harness.open(inode, os.O_RDONLY)  # no feed round in between
    assert await harness.ops.read(fh, 0, 100) == b"two\n"
    await harness.close(fh)


async def test_a_lookup_miss_catches_up_with_the_store(harness: Harness) -> None:
    harness.engine.memories.create(harness.store_id, "/elsewhere.md", "x\n")
    attributes = await harness.ops.lookup(harness.directory, b"elsewhere.md", CTX)  # type: ignore[arg-type]
    assert attributes.st_size == 2
    with pytest.raises(pyfuse3.FUSEError) as missing:
        await harness.ops.lookup(harness.directory, b"nowhere.md", CTX)  # type: ignore[arg-type]
    assert missing.value.errno == errno.ENOENT


# ---------------------------------------------- a read the kernel cut (SPEC §4 merges)


async def _edit_and_rename_over(harness: Harness, seen: bytes) -> None:
    """What ``sed -i`` does with what it read: writes the edit to a temporary file in
    the same directory and renames it over ``log.md``."""
    fh, _ = await harness.create("sedXYZ")
    await harness.ops.write(fh, 0, seen.replace(b"counter 0", b"counter 1"))
    await harness.close(fh)
    await harness.ops.rename(harness.directory, b"sedXYZ", harness.directory, b"log.md", 0,
                             CTX)  # type: ignore[arg-type]


async def _log_with_a_reader(harness: Harness) -> tuple[int, int, str]:
    """``log.md`` committed, its size handed to the kernel, and open for reading."""
    fh, inode = await harness.create("log.md")
    await harness.ops.write(fh, 0, b"# Log\ncounter 0\n---\na-1\n")
    await harness.close(fh)
    await harness.ops.getattr(inode, CTX)  # type: ignore[arg-type]
    memory = harness.engine.memories.get_by_path(harness.store_id, "/log.md", with_content=False)
    return await harness.open(inode, os.O_RDONLY), inode, memory.id


async def test_a_read_the_kernel_cut_is_the_base_of_the_save_made_from_it(
    harness: Harness,
) -> None:
    # An append made elsewhere lands between the kernel learning the size and its read:
    # the reply holds the new content, the kernel hands out only the size it held.
    fh, inode, memory_id = await _log_with_a_reader(harness)
    kernel_size = harness.table.get(inode).kernel_attributes[0]  # type: ignore[index]
    harness.engine.memories.update(harness.store_id, memory_id,
                                   content="# Log\ncounter 0\n---\na-1\na-2\n")
    await harness.ops.apply_changes(harness.table.attachments[0])
    seen = (await harness.ops.read(fh, 0, 4096))[:kernel_size]
    assert seen == b"# Log\ncounter 0\n---\na-1\n"
    await harness.close(fh)
    await _edit_and_rename_over(harness, seen)
    # Made on the cut content, the save is merged with the append (the head, a-2), which
    # it does not hold: committed with the head as its precondition, a-2 was lost.
    assert harness.content("/log.md") == "# Log\ncounter 1\n---\na-1\na-2\n"
    versions = harness.engine.versions.list(harness.store_id, memory_id=memory_id).items
    assert len(versions) == 3  # created, a-2 elsewhere, the merge: one save, one version


async def test_a_read_past_the_cut_hands_out_the_whole_content(harness: Harness) -> None:
    # The kernel learnt the new size and read again: the reader saw all of it, so a later
    # append elsewhere merges without the first one twice.
    fh, inode, memory_id = await _log_with_a_reader(harness)
    harness.engine.memories.update(harness.store_id, memory_id,
                                   content="# Log\ncounter 0\n---\na-1\na-2\n")
    await harness.ops.apply_changes(harness.table.attachments[0])
    await harness.ops.read(fh, 0, 4096)  # cut by the kernel
    await harness.ops.getattr(inode, CTX)  # type: ignore[arg-type]
    seen = await harness.ops.read(fh, 0, 4096)
    assert seen == b"# Log\ncounter 0\n---\na-1\na-2\n"
    await harness.close(fh)
    harness.engine.memories.update(harness.store_id, memory_id,
                                   content="# Log\ncounter 0\n---\na-1\na-2\na-3\n")
    await harness.ops.apply_changes(harness.table.attachments[0])
    await _edit_and_rename_over(harness, seen)
    assert harness.content("/log.md") == "# Log\ncounter 1\n---\na-1\na-2\na-3\n"
