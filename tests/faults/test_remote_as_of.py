"""Remote as-of mounts (SPEC §10): ``memfs mount DIR --api URL --store NAME@POINT``
shows the store as it was, through the API's ``at=`` and each version's content, read
with ``cat``, ``grep -r``, ``find`` and ``diff -r`` against a copy made at that point,
refuses writes (EROFS), and fails with exit 2 on a bad point."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from _support.mount import Mounter, errno_of, run, wait_until
from faults_helpers import Server, mount_remote

from memfs.core.model import Actor, DeleteMode, MemoryStore
from memfs.store import Engine

FILES = {
    "/hello.md": "hello\n",
    "/projects/plan.md": "# Plan\nship it\n",
    "/people/ada.md": "Ada likes grep\n",
}


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_remote_as_of_mount_is_the_store_as_it_was(
    mounter: Mounter,
    server: Server,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_session: Callable[..., str],
    tmp_path: Path,
) -> None:
    store = make_store("Notes", FILES)
    token = make_session(store)
    live = mount_remote(mounter, server, token)
    notes = live / "notes"
    export = tmp_path / "export"
    shutil.copytree(notes, export)
    snapshot = store_engine.for_caller(actor=Actor.api_key("apikey_test")).snapshots.create(
        store.id, "before"
    )
    (notes / "hello.md").write_text("hello, changed\n")
    (notes / "people" / "ada.md").unlink()
    os.rename(notes / "projects" / "plan.md", notes / "projects" / "plan-v2.md")
    (notes / "new.md").write_text("grep me too\n")

    # A session is mounted once (its outbox): each view of the past takes its own.
    past = mount_remote(mounter, server, make_session(store), extra=("--store", "Notes@before"))
    view = past / "notes@before"
    assert os.listdir(past.path) == ["notes@before"]
    assert run("diff", "-r", export, view, check=False).returncode == 0
    assert _tree(view) == _tree(export)
    assert run("grep", "-r", "grep", ".", cwd=view).stdout == "./people/ada.md:Ada likes grep\n"
    assert sorted(run("find", ".", cwd=view).stdout.split()) == sorted(
        run("find", ".", cwd=export).stdout.split()
    )
    for code in (
        "open({d}/'hello.md', 'a').write('x')",
        "open({d}/'brand-new.md', 'w')",
        "os.unlink({d}/'hello.md')",
        "os.rename({d}/'hello.md', {d}/'x.md')",
        "os.mkdir({d}/'dir')",
        "os.utime({d}/'hello.md', (0, 0))",
    ):
        assert errno_of(code.format(d=f"__import__('pathlib').Path({str(view)!r})")) == "EROFS"
    assert (notes / "hello.md").read_text() == "hello, changed\n"  # the live mount: as is
    assert past.status["stores"][0]["at"] == "before"

    # By snapshot id: the directory is named after the snapshot; `now` stays put.
    by_id = mount_remote(
        mounter, server, make_session(store), extra=("--store", f"Notes@{snapshot.id}")
    )
    assert _tree(by_id / "notes@before") == _tree(export)
    now = mount_remote(mounter, server, make_session(store), extra=("--store", "Notes@now"))
    (directory,) = os.listdir(now.path)
    assert _tree(now / directory) == _tree(notes)
    (notes / "later.md").write_text("after the as-of mount started\n")
    wait_until(lambda: "later.md" in {m.path.lstrip("/") for m in store_engine.memories.all(
        store.id)}, "the write to reach the server")
    assert not (now / directory / "later.md").exists()


def test_a_bad_point_fails_a_remote_mount_with_exit_2(
    mounter: Mounter,
    server: Server,
    make_store: Callable[..., MemoryStore],
    make_session: Callable[..., str],
) -> None:
    store = make_store("Notes", FILES)
    token = make_session(store)
    for spec, says in {
        "Notes@no-such": "no snapshot of that name",
        "Notes@2999-01-01T00:00:00Z": "in the future",
    }.items():
        mount = mount_remote(mounter, server, token, extra=("--store", spec), wait=False)
        assert mount.process is not None
        assert mount.process.wait(timeout=60) == 2, mount.log_file.read_text()
        mount.unmounted = True
        assert says in mount.log_file.read_text()
        mount.expect_log("mount of", says)


def test_an_erasure_leaves_a_remote_as_of_mount_though_its_bytes_stay_stored(
    mounter: Mounter,
    server: Server,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_session: Callable[..., str],
) -> None:
    """A redaction (the bytes also in another store) and a hard delete (the bytes also
    in a fork) purge no blob, and the remote view drops both files all the same
    (SPEC §2, §10)."""
    actor = Actor.api_key("apikey_test")
    store = make_store("Red7", {"/s.md": "SAME-CONTENT-E\n", "/h.md": "SAME-CONTENT-H\n"})
    make_store("Red7Other", {"/o.md": "SAME-CONTENT-E\n"})
    store_engine.for_caller(actor=actor).history.fork(store.id, name="Red7Fork")
    store_engine.for_caller(actor=actor).snapshots.create(store.id, "s1")
    secret = store_engine.memories.get_by_path(store.id, "/s.md")
    store_engine.memories.update(store.id, secret.id, content="fine\n")
    past = mount_remote(mounter, server, make_session(store), extra=("--store", "Red7@s1"))
    view = past / "red7@s1"
    assert (view / "s.md").read_text() == "SAME-CONTENT-E\n"
    assert (view / "h.md").read_text() == "SAME-CONTENT-H\n"
    store_engine.versions.redact(store.id, str(secret.memory_version_id))
    wait_until(lambda: "s.md" not in os.listdir(view), "the redacted file to leave")
    hard = store_engine.memories.get_by_path(store.id, "/h.md")
    store_engine.memories.delete(store.id, hard.id, mode=DeleteMode.HARD_DELETE)
    wait_until(lambda: os.listdir(view) == [], "the hard-deleted file to leave")
    assert run("grep", "-r", "SAME-CONTENT", past.path, check=False).stdout == ""
