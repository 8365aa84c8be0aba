"""As-of mounts (SPEC §10): ``memfs mount DIR --store NAME@POINT`` shows the store as it
was, read with ``cat``, ``grep -r``, ``find`` and ``diff -r`` against a copy made at
that point, refuses every write (EROFS), never shows redacted content, and leaves a
live mount of the same store beside it alone. Also: a live mount sees a
``memfs store restore`` within a second."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from _support.mount import MEMFS, Mounter, errno_of, run, wait_until

from memfs.core.model import Actor, DeleteMode
from memfs.fuse import mounts
from memfs.store import Engine

FILES = {
    "/hello.md": "hello\n",
    "/projects/plan.md": "# Plan\nship the as-of mount\n",
    "/projects/old/notes.md": "old notes\n",
    "/people/ada.md": "Ada likes grep\n",
}
ACTOR = Actor.api_key("apikey_test")


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _find(root: Path) -> list[str]:
    out = run("find", ".", cwd=root).stdout.splitlines()
    return sorted(out)


def _grep(root: Path, word: str) -> list[str]:
    return sorted(run("grep", "-r", word, ".", cwd=root, check=False).stdout.splitlines())


def _shell_errors(directory: Path) -> dict[str, str]:
    """What each shell write prints on stderr (the refusal's strerror)."""
    commands = {
        "echo >": "echo more > hello.md",
        "echo > new": "echo new > brand-new.md",
        "rm": "rm hello.md",
        "mv": "mv hello.md moved.md",
        "mkdir": "mkdir fresh",
        "touch": "touch hello.md",
        "touch new": "touch other.md",
    }
    found = {}
    for name, command in commands.items():
        result = subprocess.run(
            ["bash", "-c", command], cwd=directory, capture_output=True, text=True, check=False
        )
        found[name] = "" if result.returncode == 0 else result.stderr
    return found


def test_an_as_of_mount_is_the_store_as_it_was(
    mounter: Mounter, make_store, store_engine: Engine, tmp_path: Path
) -> None:
    store = make_store("Notes", FILES)
    live = mounter.mount("Notes")
    notes = live / "notes"
    export = tmp_path / "export"
    shutil.copytree(notes, export)
    store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "before-cleanup")
    # Keep writing through the live mount: modify, delete, rename, create.
    (notes / "hello.md").write_text("hello, changed\n")
    (notes / "people" / "ada.md").unlink()
    os.rename(notes / "projects" / "plan.md", notes / "projects" / "plan-v2.md")
    (notes / "projects" / "new.md").write_text("created after the snapshot, grep me\n")
    (notes / "projects" / "old" / "notes.md").write_text("rewritten, grep me\n")

    past = mounter.mount("Notes@before-cleanup")
    view = past / "notes@before-cleanup"
    assert sorted(os.listdir(past.path)) == ["notes@before-cleanup"]
    assert run("diff", "-r", export, view, check=False).returncode == 0
    assert _tree(view) == _tree(export)
    assert _find(view) == _find(export)
    assert _grep(view, "grep") == _grep(export, "grep") == ["./people/ada.md:Ada likes grep"]
    assert run("cat", view / "projects" / "plan.md").stdout == FILES["/projects/plan.md"]
    # Read-only everywhere: the shell's writes and every system call (EROFS).
    for name, stderr in _shell_errors(view).items():
        assert "Read-only file system" in stderr, (name, stderr)
    for code in (
        "open({d}/'hello.md', 'a').write('x')",
        "os.truncate({d}/'hello.md', 0)",
        "os.unlink({d}/'hello.md')",
        "os.rename({d}/'hello.md', {d}/'x.md')",
        "os.mkdir({d}/'dir')",
        "os.rmdir({d}/'projects/old')",
        "os.chmod({d}/'hello.md', 0o600)",
        "os.setxattr({d}/'hello.md', 'user.meta.topic', b'x')",
    ):
        assert errno_of(code.format(d=f"__import__('pathlib').Path({str(view)!r})")) == "EROFS"
    assert (os.stat(view / "hello.md").st_mode & 0o222) == 0
    # The live mount beside it is unaffected, and the view does not follow it.
    (notes / "hello.md").write_text("hello, live\n")
    assert (notes / "hello.md").read_text() == "hello, live\n"
    assert (view / "hello.md").read_text() == "hello\n"
    assert not (view / "projects" / "new.md").exists()
    status = past.status["stores"][0]
    assert (status["directory"], status["access"], status["at"]) == (
        "notes@before-cleanup", "read_only", "before-cleanup",
    )


def test_points_name_the_directory(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/a.md": "one\n"})
    first = store_engine.memories.all(store.id)[0]
    written = first.updated_at  # the time of its first version: "one" then
    store_engine.memories.update(store.id, first.id, content="two\n")
    snapshot = store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "after-two")
    store_engine.memories.update(store.id, first.id, content="three\n")
    moment = written.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    fraction = f".{written.microsecond:06d}" if written.microsecond else ""
    label = written.strftime("%Y%m%dT%H%M%S") + fraction + "Z"
    version = str(first.memory_version_id)
    cases = {
        f"Notes@{moment}": (f"notes@{label}", "one\n"),
        f"Notes@{version}": (f"notes@{version}", "one\n"),
        f"Notes@{snapshot.id}": ("notes@after-two", "two\n"),
        f"{store.id}@after-two:ro": ("notes@after-two", "two\n"),
    }
    for spec, (directory, content) in cases.items():
        mount = mounter.mount(spec)
        assert os.listdir(mount.path) == [directory], spec
        assert (mount / directory / "a.md").read_text() == content, spec
        mounter.unmount(mount)
    now = mounter.mount("Notes@now")
    (directory,) = os.listdir(now.path)
    assert directory.startswith("notes@")
    assert directory.endswith("Z")
    store_engine.memories.update(store.id, first.id, content="four\n")
    assert (now / directory / "a.md").read_text() == "three\n"  # fixed at mount time


def test_a_flat_mount_never_copies_the_past_up(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    make_store("Live", {"/live.md": "live\n"})
    notes = make_store("Notes", {"/old.md": "old\n"})
    store_engine.for_caller(actor=ACTOR).snapshots.create(notes.id, "then")
    store_engine.memories.create(notes.id, "/newer.md", "newer\n")
    mount = mounter.mount("Live", "Notes@then", layout="flat")
    assert sorted(os.listdir(mount.path)) == ["live.md", "old.md"]
    assert errno_of(f"open({str(mount / 'old.md')!r}, 'a').write('x')") == "EROFS"
    (mount / "fresh.md").write_text("into the default\n")
    assert store_engine.memories.get_by_path(notes.id, "/old.md").content == "old\n"
    assert {m.path for m in store_engine.memories.all(notes.id)} == {"/old.md", "/newer.md"}
    assert mount.status["stores"][1]["directory"] == "."


def test_a_bad_point_fails_the_mount_before_anything_is_attached(
    fuse_available: None, make_store, store_engine: Engine, tmp_path: Path
) -> None:
    make_store("Notes", {"/a.md": "one\n"})
    target = tmp_path / "mnt"
    target.mkdir()
    sessions_before = len(store_engine.sessions.list(include_archived=True, limit=100).items)
    for spec, says in {
        "Notes@no-such-snapshot": "no snapshot of that name",
        "Notes@2999-01-01T00:00:00Z": "in the future",
        "Notes@2026-13-45": "not a valid time",
        "Notes@memver_": "not a valid version id",
        "Notes@": "give a point after '@'",
    }.items():
        result = run(MEMFS, "mount", target, "--store", spec, check=False)
        assert result.returncode == 2, (spec, result.stderr)
        assert says in result.stderr, (spec, result.stderr)
        assert not mounts.is_mounted(str(target))
    result = run(MEMFS, "mount", target, "--store", "Notes@now:rw", check=False)
    assert result.returncode == 1
    assert "read-only" in result.stderr
    sessions = store_engine.sessions.list(include_archived=True, limit=100).items
    assert len(sessions) == sessions_before


def test_redacted_content_never_shows_in_an_as_of_mount(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/secret.md": "the password is hunter2\n", "/b.md": "b\n"})
    secret = next(m for m in store_engine.memories.all(store.id) if m.path == "/secret.md")
    store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "with-secret")
    store_engine.memories.update(store.id, secret.id, content="nothing to see\n")
    store_engine.versions.redact(store.id, str(secret.memory_version_id))
    mount = mounter.mount("Notes@with-secret")
    view = mount / "notes@with-secret"
    assert sorted(os.listdir(view)) == ["b.md"]  # the redacted version has no path
    assert run("grep", "-r", "hunter2", mount.path, check=False).stdout == ""
    # Redacted while mounted: the file leaves the view.
    other = store_engine.memories.create(store.id, "/c.md", "another secret\n")
    store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "with-c")
    second = mounter.mount("Notes@with-c")
    view = second / "notes@with-c"
    assert (view / "c.md").read_text() == "another secret\n"
    store_engine.memories.update(store.id, other.id, content="gone\n")
    store_engine.versions.redact(store.id, str(other.memory_version_id))
    wait_until(lambda: "c.md" not in os.listdir(view), "the redacted file to leave the view")
    assert run("grep", "-r", "another secret", second.path, check=False).stdout == ""
    # Hard-deleted while mounted: it leaves the view too (its content is erased).
    b = store_engine.memories.get_by_path(store.id, "/b.md")
    store_engine.memories.delete(store.id, b.id, mode=DeleteMode.HARD_DELETE)
    wait_until(lambda: "b.md" not in os.listdir(view), "the hard-deleted file to leave")


@pytest.mark.parametrize("sharer", ["another store", "a fork"])
def test_an_erasure_leaves_an_as_of_mount_though_its_bytes_stay_stored(
    mounter: Mounter, make_store, store_engine: Engine, sharer: str
) -> None:
    """Blobs are shared by content: a redaction or hard delete in this store purges no
    bytes another store or a fork still holds, and the view drops the file all the
    same (SPEC §2, §10), open descriptors included."""
    files = {"/s.md": "SAME-CONTENT-E\n", "/h.md": "SAME-CONTENT-H\n", "/k.md": "kept\n"}
    store = make_store("Red7", files)
    if sharer == "another store":
        keeper = make_store("Red7Other", {"/o.md": files["/s.md"], "/p.md": files["/h.md"]})
    else:
        keeper = store_engine.for_caller(actor=ACTOR).history.fork(store.id, name="Red7Fork")
    store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "s1")
    secret = store_engine.memories.get_by_path(store.id, "/s.md")
    store_engine.memories.update(store.id, secret.id, content="fine\n")
    mount = mounter.mount("Red7@s1")
    view = mount / "red7@s1"
    assert (view / "s.md").read_text() == files["/s.md"]
    with open(view / "s.md", "rb") as held:
        assert held.read() == b"SAME-CONTENT-E\n"  # in the kernel's pages and the cache
        store_engine.versions.redact(store.id, str(secret.memory_version_id))
        wait_until(lambda: "s.md" not in os.listdir(view), "the redacted file to leave")
        assert os.pread(held.fileno(), 100, 0) == b""
    assert not (view / "s.md").exists()
    hard = store_engine.memories.get_by_path(store.id, "/h.md")
    store_engine.memories.delete(store.id, hard.id, mode=DeleteMode.HARD_DELETE)
    wait_until(lambda: "h.md" not in os.listdir(view), "the hard-deleted file to leave")
    assert sorted(os.listdir(view)) == ["k.md"]
    assert run("grep", "-r", "SAME-CONTENT", mount.path, check=False).stdout == ""
    # The bytes were not erased: the other store (or the fork) still reads them.
    kept = [store_engine.memories.get(keeper.id, m.id).content
            for m in store_engine.memories.all(keeper.id)]
    assert sorted(c for c in kept if c and "SAME" in c) == [files["/s.md"], files["/h.md"]]


def test_a_live_mount_sees_a_store_restore_within_a_second(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Notes", {"/a.md": "one\n", "/b.md": "bee\n"})
    mount = mounter.mount("Notes")
    notes = mount / "notes"
    store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "good")
    (notes / "a.md").write_text("broken\n")
    (notes / "b.md").unlink()
    (notes / "c.md").write_text("junk\n")
    run(MEMFS, "store", "restore", "Notes", "--to", "good")
    restored = time.monotonic()
    wait_until(
        lambda: sorted(os.listdir(notes)) == ["a.md", "b.md"]
        and (notes / "a.md").read_text() == "one\n",
        "the live mount to show the restore", timeout_s=1.0,
    )
    assert time.monotonic() - restored < 1.0
    assert (notes / "b.md").read_text() == "bee\n"


def _record(user: str, scope: str = "private") -> str:
    return f"---\ntype: preference\nscope: {scope}\nuser_id: {user}\n---\n{user} likes tea\n"


def test_an_as_of_mount_for_a_user_shows_only_what_she_may_see(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    store = make_store("Shared", {
        "/alice.md": _record("alice"),
        "/bob.md": _record("bob"),
        "/team.md": _record("bob", "share"),
        "/plain.md": "no header\n",
    })
    store_engine.for_caller(actor=ACTOR).snapshots.create(store.id, "then")
    mount = mounter.mount("Shared@then", extra_args=("--user-id", "alice"))
    view = mount / "shared@then"
    assert sorted(os.listdir(view)) == ["alice.md", "plain.md", "team.md"]
    assert errno_of(f"open({str(view / 'bob.md')!r})") == "ENOENT"
    assert (view / "alice.md").read_text() == _record("alice")
    mounter.unmount(mount)
    # Hidden from her today, hidden in the past too (SPEC §10: today's visibility).
    mine = store_engine.memories.get_by_path(store.id, "/alice.md")
    store_engine.memories.update(store.id, mine.id, content=_record("bob"))
    again = mounter.mount("Shared@then", extra_args=("--user-id", "alice"))
    assert sorted(os.listdir(again / "shared@then")) == ["plain.md", "team.md"]
