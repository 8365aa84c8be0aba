"""Tools that save atomically (SPEC §4 "Atomic save"): sed -i, vim, rsync, and the
write-a-temporary-then-rename pattern. Exactly one new version of the target; scratch
names never reach the store."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from _support.mount import exists, live, run, run_script, versions

from memfs.core.model import Operation
from memfs.store import Engine

VIM = shutil.which("vim") or shutil.which("vim.tiny") or shutil.which("vi")


def _store_id(mount) -> str:
    return str(mount.status["stores"][0]["id"])


def _operations(engine: Engine, mount, path: str) -> list[tuple[Operation, str | None]]:
    store_id = _store_id(mount)
    memory = engine.memories.get_by_path(store_id, path, with_content=False)
    return [
        (v.operation, engine.versions.get(store_id, v.id).content)
        for v in versions(engine, store_id, memory.id)
    ]


def test_sed_in_place_makes_one_version_and_keeps_the_id(mount, store_engine: Engine) -> None:
    store_id = _store_id(mount)
    before = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    run("sed", "-i", "s/hello/goodbye/", mount / "notes" / "hello.md")
    assert (mount / "notes" / "hello.md").read_text() == "goodbye\n"
    assert _operations(store_engine, mount, "/hello.md") == [
        (Operation.CREATED, "hello\n"), (Operation.MODIFIED, "goodbye\n"),
    ]
    memories = live(store_engine, store_id)
    assert sorted(memories) == ["/hello.md", "/projects/plan.md"]  # no sedXXXXXX
    assert memories["/hello.md"].id == before.id
    assert sorted(os.listdir(mount / "notes")) == ["hello.md", "projects"]


@pytest.mark.skipif(VIM is None, reason="no vim binary (Debian vim-tiny provides vim.tiny)")
@pytest.mark.parametrize(
    "settings",
    [
        "",  # the binary's defaults
        "set backup writebackup backupcopy=no",  # rename the original to file~, write anew
        "set nobackup nowritebackup backupcopy=yes",  # overwrite in place
    ],
)
def test_vim_save_makes_exactly_one_version(mount, store_engine: Engine, settings: str) -> None:
    store_id = _store_id(mount)
    before = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    target = mount / "notes" / "hello.md"
    commands = ["-c", settings] if settings else []
    run(VIM, "-u", "NONE", "-i", "NONE", "-es", *commands,
        "-c", "%s/hello/edited by vim/", "-c", "wq", target)
    assert target.read_text() == "edited by vim\n"
    assert _operations(store_engine, mount, "/hello.md") == [
        (Operation.CREATED, "hello\n"), (Operation.MODIFIED, "edited by vim\n"),
    ]
    memories = live(store_engine, store_id)
    assert sorted(memories) == ["/hello.md", "/projects/plan.md"]  # no 4913, hello.md~, .swp
    assert memories["/hello.md"].id == before.id
    assert sorted(os.listdir(mount / "notes")) == ["hello.md", "projects"]


def test_rsync_archive_copies_once_and_updates_once(mount, store_engine, tmp_path: Path) -> None:
    store_id = _store_id(mount)
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "one.md").write_text("one\n")
    (source / "sub" / "two.md").write_text("two\n")
    run("rsync", "-a", f"{source}/", f"{mount / 'notes' / 'synced'}/")
    synced = {p: m.content for p, m in live(store_engine, store_id).items() if p != "/hello.md"}
    assert synced == {
        "/projects/plan.md": "# Plan\n", "/synced/one.md": "one\n", "/synced/sub/two.md": "two\n",
    }
    (source / "one.md").write_text("one, changed\n")
    run("rsync", "-a", f"{source}/", f"{mount / 'notes' / 'synced'}/")
    assert _operations(store_engine, mount, "/synced/one.md") == [
        (Operation.CREATED, "one\n"), (Operation.MODIFIED, "one, changed\n"),
    ]
    assert [op for op, _ in _operations(store_engine, mount, "/synced/sub/two.md")] == [
        Operation.CREATED
    ]
    assert run("diff", "-r", source, mount / "notes" / "synced").returncode == 0
    # rsync's temporaries (.one.md.XXXXXX) never reached the store.
    assert all(not m.startswith("/synced/.") for m in live(store_engine, store_id))


def test_write_a_temporary_then_rename_over_the_target(mount, store_engine: Engine) -> None:
    notes = mount / "notes"
    run_script(
        "fuse_namespace", "save_by_rename", notes / "plan.md.tmp", notes / "projects" / "plan.md"
    )
    assert _operations(store_engine, mount, "/projects/plan.md") == [
        (Operation.CREATED, "# Plan\n"), (Operation.MODIFIED, "# Plan, v2\n"),
    ]
    assert sorted(live(store_engine, _store_id(mount))) == ["/hello.md", "/projects/plan.md"]


def test_scratch_files_live_only_in_the_mount(mount, store_engine: Engine) -> None:
    notes = mount / "notes"
    names = [
        "4913", "hello.md~", ".#hello.md", ".hello.md.swp", "sedAb12Cd", ".x.md.Q3zT9a", "a.tmp",
    ]
    for name in names:
        # Scratch files may hold anything (a vim swap file is binary).
        (notes / name).write_bytes(b"scratch \x00\x01 bytes")
    assert sorted(os.listdir(notes)) == sorted([*names, "hello.md", "projects"])
    assert (notes / "4913").read_bytes() == b"scratch \x00\x01 bytes"
    assert sorted(live(store_engine, _store_id(mount))) == ["/hello.md", "/projects/plan.md"]
    # Renamed to a real name, a scratch file becomes a memory (content rules apply).
    (notes / "a.tmp").write_text("kept\n")
    os.rename(notes / "a.tmp", notes / "kept.md")
    assert live(store_engine, _store_id(mount))["/kept.md"].content == "kept\n"
    for name in names[:-1]:
        os.unlink(notes / name)
    assert sorted(os.listdir(notes)) == ["hello.md", "kept.md", "projects"]


def test_a_stored_file_renamed_to_a_scratch_name_and_removed_is_deleted(
    mount, store_engine: Engine
) -> None:
    notes = mount / "notes"
    os.rename(notes / "hello.md", notes / "hello.md~")
    assert not exists(notes / "hello.md")
    assert (notes / "hello.md~").read_text() == "hello\n"
    # The store does not see scratch names: the memory stays where it was...
    assert "/hello.md" in live(store_engine, _store_id(mount))
    # ...until the scratch file is removed (like `mv f f~; rm f~`).
    os.unlink(notes / "hello.md~")
    assert sorted(live(store_engine, _store_id(mount))) == ["/projects/plan.md"]
