"""SPEC §4 mapping row "xattr": ``user.memfs.*`` read-only (id, version id, sha256);
``user.meta.<key>`` maps to memory metadata."""

from __future__ import annotations

import os

from _support.mount import Mounter, errno_of, live, run, versions

from memfs.store import Engine


def test_memfs_attributes_mirror_the_head_and_are_read_only(mount, store_engine) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "hello.md"
    memory = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    assert os.getxattr(path, "user.memfs.id") == memory.id.encode()
    assert os.getxattr(path, "user.memfs.version_id") == memory.memory_version_id.encode()
    assert os.getxattr(path, "user.memfs.sha256") == memory.content_sha256.encode()
    for name in ("user.memfs.id", "user.memfs.version_id", "user.memfs.sha256"):
        assert errno_of(f"os.setxattr({str(path)!r}, {name!r}, b'x')") == "EPERM"
        assert errno_of(f"os.removexattr({str(path)!r}, {name!r})") == "EPERM"
    assert errno_of(f"os.getxattr({str(path)!r}, 'user.memfs.nope')") == "ENODATA"
    assert errno_of(f"os.getxattr({str(mount / 'notes')!r}, 'user.memfs.id')") == "ENODATA"
    # After a write the version id and digest follow the new head.
    path.write_text("changed\n")
    head = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False)
    assert os.getxattr(path, "user.memfs.version_id") == head.memory_version_id.encode()
    assert os.getxattr(path, "user.memfs.sha256") == head.content_sha256.encode()


def test_namespaces_other_than_user_are_not_supported(mount) -> None:
    """No security labels, no POSIX ACLs: ENOTSUP (not ENODATA), which ls -l caches per
    filesystem, so it stops asking for both at every file (``ls -lR``)."""
    for path in (mount / "notes" / "hello.md", mount / "notes"):
        for name in ("security.selinux", "system.posix_acl_access", "trusted.x"):
            assert errno_of(f"os.getxattr({str(path)!r}, {name!r})") == "ENOTSUP"
    listing = run("ls", "-l", mount / "notes").stdout.splitlines()[1:]
    assert listing
    assert all(line[10] == " " for line in listing)


def test_user_meta_attributes_are_memory_metadata(mount, store_engine: Engine) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "hello.md"
    memory_id = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False).id
    os.setxattr(path, "user.meta.topic", b"greetings")
    os.setxattr(path, "user.meta.importance", b"high")
    assert store_engine.memories.get(store_id, memory_id).metadata == {
        "topic": "greetings", "importance": "high",
    }
    assert os.getxattr(path, "user.meta.topic") == b"greetings"
    # The read-only user.memfs.* are not listed (tools that copy xattrs would try to set
    # them); getxattr by name still answers.
    assert sorted(os.listxattr(path)) == ["user.meta.importance", "user.meta.topic"]
    assert os.getxattr(path, "user.memfs.id") == memory_id.encode()
    os.removexattr(path, "user.meta.importance")
    assert store_engine.memories.get(store_id, memory_id).metadata == {"topic": "greetings"}
    assert errno_of(f"os.removexattr({str(path)!r}, 'user.meta.importance')") == "ENODATA"
    assert errno_of(f"os.getxattr({str(path)!r}, 'user.meta.importance')") == "ENODATA"
    # Outside user.meta.*: not supported; limits of SPEC §1 metadata.
    assert errno_of(f"os.setxattr({str(path)!r}, 'user.other', b'x')") == "ENOTSUP"
    assert errno_of(f"os.setxattr({str(path)!r}, 'user.meta.long', b'v' * 513)") == "E2BIG"
    assert errno_of(f"os.setxattr({str(path)!r}, 'user.meta.' + 'k' * 65, b'v')") == "E2BIG"
    assert errno_of(f"""
        for i in range(15):
            os.setxattr({str(path)!r}, f'user.meta.k{{i}}', b'v')
        os.setxattr({str(path)!r}, 'user.meta.one-too-many', b'v')
    """) == "ENOSPC"
    assert len(store_engine.memories.get(store_id, memory_id).metadata) == 16
    # Metadata is not content: no version was written.
    assert len(versions(store_engine, store_id, memory_id)) == 1


def test_metadata_set_before_the_first_close_is_stored_with_the_file(
    mount, store_engine: Engine
) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "tagged.md"
    errno_of(f"""
        with open({str(path)!r}, "w") as f:
            os.setxattr({str(path)!r}, "user.meta.type", b"semantic")
            f.write("tagged\\n")
    """)
    memory = store_engine.memories.get_by_path(store_id, "/tagged.md")
    assert memory.metadata == {"type": "semantic"}
    assert memory.content == "tagged\n"


def test_mv_across_stores_copies_without_xattr_complaints(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    notes = make_store("Notes", {"/hello.md": "hello\n"})
    other = make_store("Other")
    mount = mounter.mount("Notes", "Other")
    os.setxattr(mount / "notes" / "hello.md", "user.meta.topic", b"greetings")
    completed = run("mv", mount / "notes" / "hello.md", mount / "other" / "hello.md")
    assert completed.stderr == ""
    assert live(store_engine, notes.id) == {}
    moved = live(store_engine, other.id)["/hello.md"]
    assert moved.content == "hello\n"
    assert moved.metadata == {"topic": "greetings"}  # user.meta.* is copied along
