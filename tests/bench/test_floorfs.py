"""scripts/floorfs.py does what the benchmark's workloads need, correctly."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.polling import wait_until
from benchlib.host import is_mount_point

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

pytestmark = pytest.mark.fuse

MOUNT_DEADLINE_S = 20.0


@pytest.fixture(params=[[], ["--kernel-cache"]], ids=["floor", "patched-floor"])
def floor(fuse_available: None, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """floorfs mounted as is, and as the patched floor (noflush on read-only
    opens and cached listings, which must not change what the workloads see)."""
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    log = (tmp_path / "floorfs.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "floorfs.py"), str(mount_point), *request.param],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    def mounted() -> bool:
        assert process.poll() is None, (tmp_path / "floorfs.log").read_text()
        return is_mount_point(mount_point)

    wait_until(mounted, "floorfs to mount", MOUNT_DEADLINE_S, interval_s=0.01)
    try:
        yield mount_point
    finally:
        fusermount = shutil.which("fusermount3") or "fusermount"
        subprocess.run([fusermount, "-u", str(mount_point)], check=False)
        try:
            status = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
            log.close()
        assert status == 0, (tmp_path / "floorfs.log").read_text()
        assert not is_mount_point(mount_point)


def test_files_and_directories_behave_like_a_filesystem(floor: Path) -> None:
    (floor / "a" / "b").mkdir(parents=True)
    note = floor / "a" / "b" / "note.md"
    note.write_text("one\n")
    with note.open("a") as stream:  # the small-edits workload: echo >> f
        stream.write("two\n")
    assert note.read_text() == "one\ntwo\n"
    assert note.stat().st_size == 8

    note.write_text("short\n")  # O_TRUNC
    assert note.read_text() == "short\n"
    with note.open("r+b") as stream:  # a write past the end leaves a hole of zeros
        stream.seek(10)
        stream.write(b"x")
    assert note.read_bytes() == b"short\n\0\0\0\0x"
    os.truncate(note, 3)
    assert note.read_bytes() == b"sho"

    other = floor / "a" / "other.md"
    other.write_text("other\n")
    os.rename(other, note)  # replaces the target
    assert note.read_text() == "other\n"
    assert sorted(os.listdir(floor / "a")) == ["b"]

    os.rename(floor / "a" / "b", floor / "c")
    assert (floor / "c" / "note.md").read_text() == "other\n"
    assert os.stat(floor).st_nlink == 4  # ., a, c (and the root's own entry)


def test_errors_are_the_ones_tools_expect(floor: Path) -> None:
    (floor / "d").mkdir()
    (floor / "d" / "f").write_text("x")
    for call, expected in [
        (lambda: os.rmdir(floor / "d"), errno.ENOTEMPTY),
        (lambda: os.mkdir(floor / "d"), errno.EEXIST),
        (lambda: os.stat(floor / "nope"), errno.ENOENT),
        (lambda: os.unlink(floor / "d"), errno.EISDIR),
        (lambda: os.symlink("f", floor / "d" / "link"), errno.ENOSYS),
    ]:
        with pytest.raises(OSError, match=re.escape(os.strerror(expected))):
            call()


def test_an_unlinked_open_file_stays_readable_until_closed(floor: Path) -> None:
    path = floor / "gone.md"
    path.write_text("still here\n")
    with path.open() as stream:
        os.unlink(path)
        assert not path.exists()
        assert stream.read() == "still here\n"


def test_readdir_returns_every_entry_once_across_many_replies(floor: Path) -> None:
    # 3,000 entries do not fit in one readdir reply: the cursor must resume exactly.
    directory = floor / "many"
    directory.mkdir()
    names = {f"entry-{n:05d}-with-a-longish-name.md" for n in range(3000)}
    for name in names:
        (directory / name).write_bytes(b"")
    listed = os.listdir(directory)
    assert len(listed) == len(names)
    assert set(listed) == names
    # Again, after the kernel forgot nothing: lookup counts from readdirplus stay sane.
    for name in list(names)[:100]:
        os.unlink(directory / name)
    assert len(os.listdir(directory)) == len(names) - 100
