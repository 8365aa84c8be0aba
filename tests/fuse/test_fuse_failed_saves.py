"""A failed save changes nothing (SPEC §4 "Order of refusals": a save is all or nothing).

When a ``write()`` or ``ftruncate()`` through a descriptor is refused, nothing that
descriptor changed is committed: not the ``O_TRUNC`` of its open, not the bytes before or
after the refused call. The file stays byte for byte what it was (or absent, if that open
created it), ``close()`` returns the refusal's errno, the accepted bytes are kept under
``rejected/`` and ``memfs status`` counts the failed save.

Every test drives a real mount with the tools that fail this way in the field (the shell's
redirection, ``cp``, Python's ``shutil.copy`` and ``open().write``, ``tar``, ``unzip``,
vim) and asserts the store's versions and ids afterwards; the mounter checks fsck.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from _support.mount import MEMFS, Mount, exists, live, run, run_script, versions, wait_until

from memfs.core.config import MAX_CONTENT_BYTES
from memfs.core.model import Operation
from memfs.store import Engine

VIM = shutil.which("vim") or shutil.which("vim.tiny") or shutil.which("vi")
BIG_TEXT = "y" * 160_000  # text, over SPEC §1's 102,400-byte limit


def _store_id(mount: Mount) -> str:
    return str(mount.status["stores"][0]["id"])


def _history(engine: Engine, mount: Mount, path: str) -> list[tuple[Operation, str | None]]:
    store_id = _store_id(mount)
    memory = engine.memories.get_by_path(store_id, path, with_content=False)
    return [
        (v.operation, engine.versions.get(store_id, v.id).content)
        for v in versions(engine, store_id, memory.id)
    ]


def _paths_ever_stored(engine: Engine, mount: Mount) -> set[str]:
    return {v.path for v in versions(engine, _store_id(mount))}


def _unchanged(engine: Engine, mount: Mount, memory_id: str) -> None:
    """hello.md is exactly what the fixture made: its bytes, its one version, its id."""
    assert (mount / "notes" / "hello.md").read_bytes() == b"hello\n"
    assert _history(engine, mount, "/hello.md") == [(Operation.CREATED, "hello\n")]
    assert live(engine, _store_id(mount))["/hello.md"].id == memory_id


# Each case opens the existing hello.md, then writes; the first refused call fails the
# save. (flags, writes as (offset, bytes), what the writer sees): offset None is write(2)
# looped until all is written or refused, as tools do (the kernel splits a write that
# starts inside a page at the page boundary, and the first part may be accepted), -1 an
# ftruncate(2) past the limit.
OVERWRITES = {
    "O_TRUNC, a NUL byte": (
        os.O_WRONLY | os.O_TRUNC, [(None, b"a\0b")], "write EILSEQ\nclose EILSEQ\n"),
    # A UTF-8 sequence broken only in the whole: refused at close (SPEC §4 errors table).
    "O_TRUNC, bad UTF-8": (
        os.O_WRONLY | os.O_TRUNC, [(None, b"caf\xc3\x28\n")], "close EILSEQ\n"),
    "O_TRUNC, over the size limit": (
        os.O_WRONLY | os.O_TRUNC, [(None, b"x" * (MAX_CONTENT_BYTES + 1))],
        "write EFBIG\nclose EFBIG\n"),
    "O_TRUNC, good then bad": (
        os.O_WRONLY | os.O_TRUNC, [(None, b"new\n"), (None, b"bell\x07")],
        "write EILSEQ\nclose EILSEQ\n"),
    "O_APPEND, a bell": (
        os.O_WRONLY | os.O_APPEND, [(None, b"bell\x07\n")], "write EILSEQ\nclose EILSEQ\n"),
    "O_APPEND, good then too large": (
        os.O_WRONLY | os.O_APPEND, [(None, b"more\n"), (None, b"x" * MAX_CONTENT_BYTES)],
        "write EFBIG\nclose EFBIG\n"),
    "O_RDWR, pwrite past the limit": (
        os.O_RDWR, [(0, b"H"), (MAX_CONTENT_BYTES, b"x")], "write EFBIG\nclose EFBIG\n"),
    "O_RDWR, ftruncate past the limit": (
        os.O_RDWR, [(0, b"H"), (-1, b"")], "write EFBIG\nclose EFBIG\n"),
}


@pytest.mark.parametrize("case", sorted(OVERWRITES))
def test_a_refused_overwrite_leaves_the_file_as_it_was(
    mount: Mount, store_engine: Engine, case: str
) -> None:
    mount.expect_log("save of /notes/hello.md failed", "write to /notes/hello.md refused")
    flags, writes, seen = OVERWRITES[case]
    memory_id = live(store_engine, _store_id(mount))["/hello.md"].id
    path = mount / "notes" / "hello.md"
    out = run_script(
        "fuse_failed_saves", "overwrite", path, flags, repr(writes), MAX_CONTENT_BYTES + 1
    )
    assert out == seen
    _unchanged(store_engine, mount, memory_id)
    assert mount.status["rejected_count"] == 1
    [event] = mount.status["rejected_writes"]
    assert (event["path"], event["errno"]) == ("/notes/hello.md", seen.split()[-1])


def test_the_shell_s_refused_redirection_keeps_the_file(
    mount: Mount, store_engine: Engine
) -> None:
    """``printf 'a\\0b' > f``: the shell's open truncates, the write is refused; the file
    must not be committed empty, nor taken away as an empty new file would be."""
    path = mount / "notes" / "f.md"
    run("bash", "-c", f"echo keep > {path}")
    memory_id = live(store_engine, _store_id(mount))["/f.md"].id
    completed = run("bash", "-c", f"printf 'a\\0b' > {path}", check=False)
    assert completed.returncode == 1
    assert "Invalid or incomplete multibyte or wide character" in completed.stderr
    assert path.read_text() == "keep\n"
    assert _history(store_engine, mount, "/f.md") == [(Operation.CREATED, "keep\n")]
    assert live(store_engine, _store_id(mount))["/f.md"].id == memory_id
    assert mount.status["rejected_count"] == 1
    # Nothing was accepted, so nothing is kept; memfs status says so, not "kept in ".
    shown = run(MEMFS, "status", mount.path).stdout
    assert "/notes/f.md EILSEQ: " in shown
    assert shown.count("no bytes were accepted") == 1


def test_python_writing_too_much_text_keeps_the_file(mount: Mount, store_engine: Engine) -> None:
    memory_id = live(store_engine, _store_id(mount))["/hello.md"].id
    out = run_script("fuse_failed_saves", "write_too_much", mount / "notes" / "hello.md")
    assert out == "File too large\n"
    _unchanged(store_engine, mount, memory_id)


@pytest.mark.parametrize("destination", ["new.md", "hello.md"])
def test_shutil_copy_of_too_much_text_stores_no_prefix(
    mount: Mount, store_engine: Engine, tmp_path: Path, destination: str
) -> None:
    mount.expect_log("its accepted bytes are kept in")  # the 64 KiB shutil wrote first
    source = tmp_path / "big.md"
    source.write_text(BIG_TEXT)
    memory_id = live(store_engine, _store_id(mount))["/hello.md"].id
    out = run_script("fuse_failed_saves", "copy", source, mount / "notes" / destination)
    assert out == "File too large\n"
    _unchanged(store_engine, mount, memory_id)
    # The name goes once the kernel's cached entry is invalidated, just after the close.
    wait_until(lambda: not exists(mount / "notes" / "new.md"), "the failed new file to disappear")
    assert "/new.md" not in _paths_ever_stored(store_engine, mount)


def test_cp_of_too_much_text_over_a_file_keeps_it(
    mount: Mount, store_engine: Engine, tmp_path: Path
) -> None:
    mount.expect_log("its accepted bytes are kept in")
    source = tmp_path / "big.md"
    source.write_text(BIG_TEXT)
    memory_id = live(store_engine, _store_id(mount))["/hello.md"].id
    completed = run("cp", source, mount / "notes" / "hello.md", check=False)
    assert completed.returncode == 1
    assert "File too large" in completed.stderr
    _unchanged(store_engine, mount, memory_id)


def test_tar_extracting_too_much_text_stores_the_rest_and_no_prefix(
    mount: Mount, store_engine: Engine, tmp_path: Path
) -> None:
    mount.expect_log("its accepted bytes are kept in")
    source = tmp_path / "src"
    source.mkdir()
    (source / "big.md").write_text(BIG_TEXT)
    (source / "small.md").write_text("small\n")
    archive = tmp_path / "notes.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(source / "big.md", arcname="big.md")
        tar.add(source / "small.md", arcname="small.md")
    completed = run("tar", "-xf", archive, "-C", mount / "notes", check=False)
    assert completed.returncode == 2
    # tar's 10,240-byte record that crosses the limit is cut at the page boundary by
    # the kernel ("Wrote only 1536 of 10240 bytes"); the refused rest fails the close.
    assert "big.md: Cannot close: File too large" in completed.stderr
    assert (mount / "notes" / "small.md").read_text() == "small\n"
    # The name goes once the kernel's cached entry is invalidated, just after the close.
    wait_until(lambda: not exists(mount / "notes" / "big.md"), "the failed new file to disappear")
    assert "/big.md" not in _paths_ever_stored(store_engine, mount)
    assert _history(store_engine, mount, "/small.md") == [(Operation.CREATED, "small\n")]


def test_unzip_of_too_much_text_stores_no_prefix(
    mount: Mount, store_engine: Engine, tmp_path: Path
) -> None:
    mount.expect_log("its accepted bytes are kept in")
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("small.md", "small\n")
        zipped.writestr("big.md", BIG_TEXT)  # unzip asks whether to go on after it
    completed = run("unzip", "-o", archive, "-d", mount / "notes", check=False)
    assert completed.returncode != 0
    assert (mount / "notes" / "small.md").read_text() == "small\n"
    # The name goes once the kernel's cached entry is invalidated, just after the close.
    wait_until(lambda: not exists(mount / "notes" / "big.md"), "the failed new file to disappear")
    assert "/big.md" not in _paths_ever_stored(store_engine, mount)


@pytest.mark.skipif(VIM is None, reason="no vim binary (Debian vim-tiny provides vim.tiny)")
@pytest.mark.parametrize(
    "settings",
    [
        "",  # the binary's defaults
        "set backup writebackup backupcopy=no",  # rename the original to file~, write anew
        "set nobackup nowritebackup backupcopy=yes",  # overwrite in place
    ],
)
def test_vim_s_failed_write_of_too_much_text_keeps_the_file(
    mount: Mount, store_engine: Engine, settings: str
) -> None:
    """vim's ``:w`` of a buffer over the limit fails ("E514: Write error (file system
    full?)"); the memory keeps its content, id and single version, whatever the backup
    settings (no 98,304-byte prefix, no ``hello.md~`` in the store)."""
    mount.expect_log("its accepted bytes are kept in")
    memory_id = live(store_engine, _store_id(mount))["/hello.md"].id
    target = mount / "notes" / "hello.md"
    commands = ["-c", settings] if settings else []
    completed = subprocess.run(
        [VIM, "-u", "NONE", "-i", "NONE", "-es", *commands,
         "-c", f"call setline(1, repeat('y', {len(BIG_TEXT)}))", "-c", "w", "-c", "qa!", target],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )
    assert completed.returncode != 0
    _unchanged(store_engine, mount, memory_id)
    assert sorted(live(store_engine, _store_id(mount))) == ["/hello.md", "/projects/plan.md"]
    assert sorted(os.listdir(mount / "notes")) == ["hello.md", "projects"]
