"""SPEC §4 errno table, first row: any mutation on a read-only attachment or an archived
store is EROFS (the mount root is covered in test_fuse_read.py)."""

from __future__ import annotations

import os
import stat

from _support.mount import Mounter, errno_of, live, run, versions, wait_until

from memfs.store import Engine

MUTATIONS = {
    "create": "open({d}/'new.md', 'w')",
    "write": "open({d}/'hello.md', 'a').write('more')",
    "truncate": "os.truncate({d}/'hello.md', 0)",
    "unlink": "os.unlink({d}/'hello.md')",
    "rename": "os.rename({d}/'hello.md', {d}/'renamed.md')",
    "mkdir": "os.mkdir({d}/'dir')",
    "rmdir": "os.rmdir({d}/'projects')",
    "chmod": "os.chmod({d}/'hello.md', 0o600)",
    "utime": "os.utime({d}/'hello.md', (0, 0))",
    "setxattr": "os.setxattr({d}/'hello.md', 'user.meta.topic', b'x')",
}


def _attempt(directory, code: str) -> str:
    return errno_of(f"from pathlib import Path\n{code.format(d=f'Path({str(directory)!r})')}")


def test_every_mutation_of_a_read_only_attachment_is_erofs(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/hello.md": "hello\n", "/projects/plan.md": "# Plan\n"})
    mount = mounter.mount("Notes:ro")
    notes = mount / "notes"
    for operation, code in MUTATIONS.items():
        assert _attempt(notes, code) == "EROFS", operation
    assert (notes / "hello.md").read_text() == "hello\n"
    assert run("grep", "-r", "Plan", notes).returncode == 0
    assert stat.S_IMODE(os.stat(notes / "hello.md").st_mode) == 0o444
    assert stat.S_IMODE(os.stat(notes).st_mode) == 0o555
    assert {p: m.content for p, m in live(store_engine, store.id).items()} == {
        "/hello.md": "hello\n", "/projects/plan.md": "# Plan\n",
    }
    assert len(versions(store_engine, store.id)) == 2


def test_a_store_archived_while_mounted_turns_read_only(mount, store_engine: Engine) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    notes = mount / "notes"
    store_engine.stores.archive(store_id)
    wait_until(lambda: _attempt(notes, "open({d}/'hello.md', 'a')") == "EROFS",
               "the mount to see the archive")
    for operation, code in MUTATIONS.items():
        assert _attempt(notes, code) == "EROFS", operation
    assert (notes / "hello.md").read_text() == "hello\n"
    assert len(versions(store_engine, store_id)) == 2


def test_a_store_deleted_while_mounted_empties_and_turns_read_only(
    mount, store_engine: Engine
) -> None:
    mount.expect_log("was deleted; its directory is empty now")
    store_id = str(mount.status["stores"][0]["id"])
    notes = mount / "notes"
    store_engine.stores.delete(store_id)
    wait_until(lambda: os.listdir(notes) == [], "the deleted store's files to go")
    assert _attempt(notes, MUTATIONS["create"]) == "EROFS"
    assert _attempt(notes, MUTATIONS["mkdir"]) == "EROFS"
