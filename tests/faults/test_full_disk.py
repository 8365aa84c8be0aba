"""A full disk is an answer, not a crash (README "A full disk"): with ``$MEMFS_HOME`` (the
database, status files, rejected bytes) or a remote mount's outbox on a small tmpfs that
a filler file fills up, a close gets ``ENOSPC``, nothing is half-written, the daemon
stays up and serves reads, ``memfs status`` says "disk full" with the path, and the same
write succeeds once the filler is deleted. ``memfs fsck`` is clean at the end.

The tmpfs is mounted over the test's ``$MEMFS_HOME`` (or its ``outbox/``) before anything
is created in it, so it needs root; the suite runs as root.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support.mount import MEMFS, Mount, Mounter, errno_of, run, wait_until
from faults_helpers import Server, memfs_status, mount_remote, read_text, wait_outbox_empty

from memfs.core.model import MemoryStore
from memfs.fuse import mounts
from memfs.fuse.daemon import DaemonLogHandler
from memfs.remote.outbox import JOURNAL_NAME, _decode_line, read_pending
from memfs.store import Engine

# Room for the database (schema, WAL), the status files and a few memories.
HOME_SIZE = "6m"
# The home of the first trial that met the full disk (tests named ``…small_home…``):
# the database's first WAL barely fits.
SMALL_HOME_SIZE = "600k"
OUTBOX_SIZE = "256k"
# Distinct contents of ~60 KB: each commit needs new WAL pages (a full WAL frame per
# page), so one of a few of them meets the full disk whatever space the WAL had left.
ATTEMPTS = 20
FILLER = "filler"


def _content(index: int) -> str:
    return "".join(f"{index:03d} line {i:05d} of a memory written on a full disk\n"
                   for i in range(1200))


def _mount_tmpfs(directory: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("a small tmpfs for the full disk needs root (mount -t tmpfs)")
    directory.mkdir(mode=0o700, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "memfs-full-disk",
         str(directory)], capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"mount -t tmpfs failed: {result.stderr.strip()}")


def _unmount_tmpfs(directory: Path) -> None:
    if subprocess.run(["umount", str(directory)], check=False).returncode != 0:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def _fill(directory: Path) -> Path:
    """Fills the filesystem of ``directory`` with a filler file until ``ENOSPC``: 64 KiB
    chunks, then 512 bytes at a time for what is left."""
    filler = directory / FILLER
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (bytes(64 * 1024), bytes(512)):
            with pytest.raises(OSError, match="No space left") as raised:  # noqa: PT012
                while True:
                    os.write(fd, chunk)
            assert raised.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _write(path: Path, text: str) -> str:
    """Writes ``text`` to ``path`` in a new process; the errno name of the failure (or
    ``no error``)."""
    return errno_of(f"with open({str(path)!r}, 'w') as f: f.write({text!r})")


@pytest.fixture
def memfs_home(memfs_home: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """``$MEMFS_HOME`` on its own small tmpfs (embedded tests), or with ``outbox/`` on
    one (remote tests, marked by their name)."""
    target = memfs_home / "outbox" if "outbox" in request.node.name else memfs_home
    if target != memfs_home:
        size = OUTBOX_SIZE
    else:
        size = SMALL_HOME_SIZE if "small_home" in request.node.name else HOME_SIZE
    _mount_tmpfs(target, size)
    try:
        yield memfs_home
    finally:
        _unmount_tmpfs(target)


@pytest.fixture
def embedded_mounter(
    fuse_available: None, store_engine: Engine, memfs_home: Path, tmp_path: Path
) -> Iterator[Mounter]:
    """Embedded mounts without a server (the server's own full disk is tested with
    ``memfs serve``); ``memfs fsck`` must be clean after them."""
    mounter = Mounter(tmp_path, store_engine)
    try:
        yield mounter
    finally:
        mounter.close()
    checked = run(MEMFS, "fsck", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("fsck: clean"), checked.stdout


def _alive(mount: Mount) -> bool:
    return (
        mount.process is not None
        and mount.process.poll() is None
        and mounts.is_mounted(str(mount.path))
    )


def test_an_embedded_mount_on_a_full_disk_answers_enospc_and_writes_again_once_freed(
    embedded_mounter: Mounter,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    memfs_home: Path,
) -> None:
    store = make_store("Notes", {"/hello.md": "hello\n"})
    mount = embedded_mounter.mount("Notes")
    mount.expect_log(
        "disk full under", "could not update the status file",
        "could not keep the", "refused (ENOSPC",
    )
    notes = mount / "notes"
    filler = _fill(memfs_home)

    failed_at = None
    for index in range(ATTEMPTS):
        outcome = _write(notes / f"full-{index}.md", _content(index))
        if outcome != "no error":
            failed_at = index
            break
    assert failed_at is not None, "every write fitted: the disk was never full"
    assert outcome == "ENOSPC"
    refused = f"/full-{failed_at}.md"

    # The daemon is up and serves reads; nothing of the refused write is stored.
    assert _alive(mount), mount.log_file.read_text()
    assert read_text(notes / "hello.md") == "hello\n"
    assert not (notes / refused.lstrip("/")).exists()
    assert refused not in {m.path for m in store_engine.memories.all(store.id)}
    status = memfs_status(mount)
    assert f"disk full:    {memfs_home / 'memfs.db'}" in status, status

    filler.unlink()
    wait_until(lambda: "disk full:    " not in memfs_status(mount), "the disk-full state to end")
    assert _write(notes / refused.lstrip("/"), _content(failed_at)) == "no error"
    assert read_text(notes / refused.lstrip("/")) == _content(failed_at)
    stored = {m.path: m for m in store_engine.memories.all(store.id)}
    assert stored[refused].content_size_bytes == len(_content(failed_at))
    # The refused bytes, held in memory while the disk was full, are kept on disk now.
    rejected = memfs_home / "rejected" / mount.session_id
    wait_until(lambda: any(rejected.glob("*")), "the refused bytes under rejected/")
    assert [p.read_text() for p in rejected.iterdir()] == [_content(failed_at)]
    assert _alive(mount)


def _fsck_clean() -> None:
    checked = run(MEMFS, "fsck", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("fsck: clean"), checked.stdout


def test_writes_refused_on_a_full_small_home_leave_no_erasure_pending(memfs_home: Path) -> None:
    """A full disk erases nothing: ``memfs fsck`` is clean while the disk is full and
    after space is freed, with no ``-erase-pending`` marker (it said an erasure was
    pending because a close's checkpoint could not grow the file)."""
    assert run(MEMFS, "store", "create", "Red7").returncode == 0
    filler = _fill(memfs_home)  # what the store left free: freed afterwards
    refused = None
    for index in range(ATTEMPTS):
        put = subprocess.run(
            [MEMFS, "memory", "put", "Red7", f"/m{index}.md"], input=_content(index),
            capture_output=True, text=True, check=False,
        )
        if put.returncode != 0:
            refused = put
            break
    assert refused is not None, "every write fitted: the disk was never full"
    assert "disk full" in refused.stderr, refused.stderr
    assert not (memfs_home / "memfs.db-erase-pending").exists()
    _fsck_clean()
    filler.unlink()
    _fsck_clean()
    # The WAL, which a checkpoint could not move into the file, needs more than that.
    subprocess.run(["mount", "-o", f"remount,size={HOME_SIZE}", str(memfs_home)], check=True)
    assert run(MEMFS, "memory", "put", "Red7", "/small.md", "-c", "fits\n").returncode == 0
    _fsck_clean()
    assert not (memfs_home / "memfs.db-erase-pending").exists()


def test_a_remote_mount_whose_outbox_disk_is_full_answers_enospc_and_keeps_no_torn_record(
    mounter: Mounter,
    server: Server,
    make_session: Callable[..., str],
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    memfs_home: Path,
) -> None:
    store = make_store("Notes", {"/hello.md": "hello\n"})
    mount = mount_remote(mounter, server, make_session(store))
    mount.expect_log("the server is unreachable", "disk full under", "refused (ENOSPC")
    notes = mount / "notes"
    assert read_text(notes / "hello.md") == "hello\n"  # cached: readable with no server
    server.kill()  # writes queue in the outbox
    assert _write(notes / "queued.md", "queued\n") == "no error"
    outbox = memfs_home / "outbox"
    journal = outbox / mount.session_id / JOURNAL_NAME
    before = journal.read_bytes()
    filler = _fill(outbox)

    # ~60 KB: more than the journal's last page has left, so today's append tears it.
    assert _write(notes / "refused.md", _content(1)) == "ENOSPC"
    assert _alive(mount), mount.log_file.read_text()
    assert journal.read_bytes() == before  # nothing of the refused write, not a byte
    assert all(_decode_line(line) is not None for line in before.split(b"\n")[:-1])
    assert [e.write.path for e in read_pending(journal.parent)] == ["/queued.md"]
    assert read_text(notes / "hello.md") == "hello\n"
    assert f"disk full:    {journal}" in memfs_status(mount)

    filler.unlink()
    wait_until(lambda: "disk full:    " not in memfs_status(mount), "the disk-full state to end")
    assert _write(notes / "refused.md", _content(1)) == "no error"
    assert [e.write.path for e in read_pending(journal.parent)] == ["/queued.md", "/refused.md"]
    server.start()  # the same port: the outbox replays in order
    wait_outbox_empty(mount)
    stored = {m.path: m for m in store_engine.memories.all(store.id)}
    assert stored["/queued.md"].content_size_bytes == len("queued\n")
    assert stored["/refused.md"].content_size_bytes == len(_content(1))
    assert _alive(mount)


class _FullStream(io.StringIO):
    """A log stream on a disk that is full until ``full`` is set False."""

    full = True

    def write(self, text: str) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(text)


def test_log_lines_a_full_disk_cannot_take_are_counted_and_reported_never_raised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream = _FullStream()
    handler = DaemonLogHandler(stream)
    logger = logging.getLogger("memfs.tests.full-disk-log")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("one")
        logger.error("two")
        stream.full = False
        logger.warning("three")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue().splitlines() == [
        "2 log line(s) could not be written ([Errno 28] No space left on device) and are lost",
        "three",
    ]
    # Not a traceback on standard error (the same full file for a background daemon).
    assert capsys.readouterr().err == ""
