"""Names through a mount: SPEC §4 mapping rows rm, mv (within and across stores), mkdir,
rmdir, chmod/chown/utimens, symlink/link/mknod, and the name rows of the errno table."""

from __future__ import annotations

import os

from _support.mount import Mounter, errno_of, exists, live, run, run_python, run_script, versions

from memfs.core.model import Operation
from memfs.store import Engine


def _store_id(mount, index: int = 0) -> str:
    return str(mount.status["stores"][index]["id"])


def test_rm_soft_deletes_the_memory(mount, store_engine: Engine) -> None:
    store_id = _store_id(mount)
    memory = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    run("rm", mount / "notes" / "hello.md")
    assert not exists(mount / "notes" / "hello.md")
    assert "/hello.md" not in live(store_engine, store_id)
    assert [v.operation for v in versions(store_engine, store_id, memory.id)] == [
        Operation.CREATED, Operation.DELETED,
    ]
    # Soft: restorable with its id.
    assert [m.id for m in store_engine.memories.deleted(store_id)] == [memory.id]


def test_mv_within_a_store_renames_keeping_the_id(mount, store_engine: Engine) -> None:
    store_id = _store_id(mount)
    memory = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    run("mv", mount / "notes" / "hello.md", mount / "notes" / "projects" / "greeting.md")
    moved = store_engine.memories.get_by_path(store_id, "/projects/greeting.md")
    assert moved.id == memory.id
    assert moved.content == "hello\n"
    history = versions(store_engine, store_id, memory.id)
    assert [(v.operation, v.path) for v in history] == [
        (Operation.CREATED, "/hello.md"), (Operation.MODIFIED, "/projects/greeting.md"),
    ]
    assert (mount / "notes" / "projects" / "greeting.md").read_text() == "hello\n"


def test_mv_over_an_existing_file_replaces_it(mount, store_engine: Engine) -> None:
    store_id = _store_id(mount)
    source = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    target = store_engine.memories.get_by_path(store_id, "/projects/plan.md", with_content=False)
    run("mv", mount / "notes" / "hello.md", mount / "notes" / "projects" / "plan.md")
    assert (mount / "notes" / "projects" / "plan.md").read_text() == "hello\n"
    memories = live(store_engine, store_id)
    assert list(memories) == ["/projects/plan.md"]
    assert memories["/projects/plan.md"].id == source.id
    assert [v.operation for v in versions(store_engine, store_id, target.id)] == [
        Operation.CREATED, Operation.DELETED,
    ]


def test_mv_of_a_directory_moves_every_memory_atomically(mount, store_engine: Engine) -> None:
    store_id = _store_id(mount)
    notes = mount / "notes"
    run("mkdir", "-p", notes / "projects" / "sub")
    (notes / "projects" / "sub" / "deep.md").write_text("deep\n")
    before = {m.path: m.id for m in store_engine.memories.all(store_id)}
    run("mv", notes / "projects", notes / "archive")
    after = {m.path: m.id for m in store_engine.memories.all(store_id)}
    assert after == {
        "/hello.md": before["/hello.md"],
        "/archive/plan.md": before["/projects/plan.md"],
        "/archive/sub/deep.md": before["/projects/sub/deep.md"],
    }
    assert sorted(os.listdir(notes)) == ["archive", "hello.md"]
    assert (notes / "archive" / "sub" / "deep.md").read_text() == "deep\n"
    history = versions(store_engine, store_id, before["/projects/plan.md"])
    assert [(v.operation, v.path) for v in history][-1] == (Operation.MODIFIED, "/archive/plan.md")


def test_mv_across_stores_is_exdev_and_mv_falls_back_to_copy(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    first = make_store("First", {"/a.md": "a\n"})
    second = make_store("Second")
    mount = mounter.mount("First", "Second")
    source, target = mount / "first" / "a.md", mount / "second" / "a.md"
    assert errno_of(f"os.rename({str(source)!r}, {str(target)!r})") == "EXDEV"
    run("mv", source, target)  # mv(1) copies, then unlinks
    assert list(live(store_engine, first.id)) == []
    assert live(store_engine, second.id)["/a.md"].content == "a\n"


def test_mkdir_is_held_by_the_mount_until_a_file_is_created(mount, store_engine) -> None:
    store_id = _store_id(mount)
    notes = mount / "notes"
    os.mkdir(notes / "drafts")
    os.mkdir(notes / "drafts" / "empty")
    assert sorted(os.listdir(notes)) == ["drafts", "hello.md", "projects"]
    assert sorted(live(store_engine, store_id)) == ["/hello.md", "/projects/plan.md"]
    (notes / "drafts" / "one.md").write_text("one\n")
    assert live(store_engine, store_id)["/drafts/one.md"].content == "one\n"
    # rmdir of a non-empty directory: ENOTEMPTY; rm -r empties it, then removes it.
    assert errno_of(f"os.rmdir({str(notes / 'drafts')!r})") == "ENOTEMPTY"
    run("rm", notes / "drafts" / "one.md")
    assert sorted(os.listdir(notes / "drafts")) == ["empty"]  # still there after rm
    run("rmdir", notes / "drafts" / "empty")
    run("rmdir", notes / "drafts")
    assert not exists(notes / "drafts")
    run("rm", "-r", notes / "projects")
    assert os.listdir(notes) == ["hello.md"]
    assert sorted(live(store_engine, store_id)) == ["/hello.md"]


def test_chmod_chown_utimens_are_accepted_and_ignored(mount, store_engine, tmp_path) -> None:
    store_id = _store_id(mount)
    path = mount / "notes" / "hello.md"
    os.chmod(path, 0o600)
    os.chown(path, 1234, 1234)
    os.utime(path, (1_000_000, 1_000_000))
    os.utime(mount / "notes" / "projects", (1_000_000, 1_000_000))
    memory = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    assert len(versions(store_engine, store_id, memory.id)) == 1
    # So `cp -p` works (it copies mode, owner and times).
    source = tmp_path / "kept.md"
    source.write_text("kept\n")
    run("cp", "-p", source, mount / "notes" / "kept.md")
    assert live(store_engine, store_id)["/kept.md"].content == "kept\n"


def test_symlink_and_mknod_are_eperm(mount, store_engine: Engine) -> None:
    notes = mount / "notes"
    assert errno_of(f"os.symlink('hello.md', {str(notes / 'link.md')!r})") == "EPERM"
    assert errno_of(f"os.mkfifo({str(notes / 'fifo')!r})") == "EPERM"
    assert errno_of(f"os.link({str(notes / 'projects')!r}, {str(notes / 'p2')!r})") == "EPERM"
    assert sorted(os.listdir(notes)) == ["hello.md", "projects"]


def test_a_hard_link_is_a_copy_of_the_content_at_link_time(mount, store_engine: Engine) -> None:
    """SPEC §4 mapping (README): link(2) makes the new name a memory of its own holding
    the content at link time (one ``created`` version, the same metadata); later writes
    to either name don't show in the other; an existing name is EEXIST."""
    notes = mount / "notes"
    os.setxattr(notes / "hello.md", "user.meta.topic", b"greeting")
    os.link(notes / "hello.md", notes / "hard.md")
    store_id = str(mount.status["stores"][0]["id"])
    memories = live(store_engine, store_id)
    original, copy = memories["/hello.md"], memories["/hard.md"]
    assert copy.id != original.id
    assert copy.content == "hello\n"
    assert copy.metadata == {"topic": "greeting"}
    assert [v.operation for v in versions(store_engine, store_id, copy.id)] == [Operation.CREATED]
    with open(notes / "hard.md", "a") as hard:
        hard.write("more\n")
    assert (notes / "hello.md").read_text() == "hello\n"
    assert (notes / "hard.md").read_text() == "hello\nmore\n"
    assert errno_of(f"os.link({str(notes / 'hello.md')!r}, {str(notes / 'hard.md')!r})") == "EEXIST"
    assert live(store_engine, store_id)["/hello.md"].content == "hello\n"


def test_a_file_may_be_20_segments_deep_and_a_directory_19(mount, store_engine: Engine) -> None:
    """SPEC §1: at most 20 segments, ENAMETOOLONG past them like any too-long path; a
    directory is refused where no file could ever go in it (20 segments)."""
    deep = mount / "notes"
    for level in range(1, 20):
        deep = deep / f"d{level}"
        os.mkdir(deep)
    assert errno_of(f"os.mkdir({str(deep / 'd20')!r})") == "ENAMETOOLONG"
    assert errno_of(f"os.makedirs({str(deep / 'd20' / 'd21')!r})") == "ENAMETOOLONG"
    os.mkdir(mount / "notes" / "d20")
    assert errno_of(f"os.rename({str(mount / 'notes' / 'd20')!r}, {str(deep / 'd20')!r})") == (
        "ENAMETOOLONG"
    )
    os.rmdir(mount / "notes" / "d20")
    run_python(f"open({str(deep / 'leaf.md')!r}, 'w').write('deepest')")
    leaf = "/" + "/".join(f"d{level}" for level in range(1, 20)) + "/leaf.md"
    assert live(store_engine, _store_id(mount))[leaf].content == "deepest"
    assert sorted(os.listdir(deep)) == ["leaf.md"]


def test_names_the_path_rules_refuse(mount, store_engine: Engine) -> None:
    notes = mount / "notes"
    # ENAMETOOLONG: a component over 255 bytes, a path over 1,024 bytes.
    assert errno_of(f"open({str(notes / ('x' * 256))!r}, 'w')") == "ENAMETOOLONG"
    assert errno_of(f"os.mkdir({str(notes / ('é' * 128))!r})") == "ENAMETOOLONG"  # 256 bytes
    deep = notes
    for level in range(4):
        deep = deep / (f"{level}" * 250)
        os.mkdir(deep)
    assert errno_of(f"open({str(deep / ('y' * 30))!r}, 'w')") == "ENAMETOOLONG"
    # EINVAL: whitespace at an end, control or format characters, not NFC, backslash.
    for name in ("trailing ", " leading", "bell\x07", "zero\u200bwidth", "e\u0301.md", "a\\b"):
        assert errno_of(f"open({str(notes / name)!r}, 'w')") == "EINVAL", name
        assert errno_of(f"os.mkdir({str(notes / name)!r})") == "EINVAL", name
    assert errno_of(
        f"os.rename({str(notes / 'hello.md')!r}, {str(notes / 'bad ')!r})"
    ) == "EINVAL"
    assert sorted(live(store_engine, _store_id(mount))) == ["/hello.md", "/projects/plan.md"]


def test_a_file_unlinked_while_open_stays_readable(mount) -> None:
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_namespace", "read_after_unlink", path)
    assert out == "hello\nFalse\n"
