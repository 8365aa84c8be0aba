"""SPEC §4 concurrent writers: a close commits with a precondition on the content the
file was opened with; if another writer changed it meanwhile, both contents are kept."""

from __future__ import annotations

import re
import subprocess

from _support.mount import live, run_script, versions, wait_until

from memfs.core.model import Actor
from memfs.store import Engine


def test_a_close_after_another_writer_keeps_both_contents(mount, store_engine: Engine) -> None:
    mount.expect_log("conflict: /hello.md was changed by another writer")
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "hello.md"
    out = run_script(
        "fuse_conflicts", "close_after_another_writer", path, store_id, "/hello.md"
    )
    assert out == "closed\n"
    memories = live(store_engine, store_id)
    assert memories["/hello.md"].content == "theirs\n"  # the head keeps the other content
    [copy_path] = [p for p in memories if p not in ("/hello.md", "/projects/plan.md")]
    assert re.fullmatch(
        rf"/hello\.conflict-\d{{8}}T\d{{6}}\.\d{{6}}Z-{mount.session_id}\.md", copy_path
    ), copy_path
    assert memories[copy_path].content == "mine\n"
    [created] = versions(store_engine, store_id, memories[copy_path].id)
    assert created.created_by == Actor.session(mount.session_id)
    assert (mount / "notes" / "hello.md").read_text() == "theirs\n"
    assert (mount / "notes" / copy_path[1:]).read_text() == "mine\n"
    status = mount.status
    assert status["conflict_count"] == 1
    assert status["conflicts"][0]["conflict_path"] == copy_path


def test_a_file_deleted_elsewhere_while_written_is_created_again(mount, store_engine) -> None:
    mount.expect_log("was deleted elsewhere while open")
    store_id = str(mount.status["stores"][0]["id"])
    old_id = store_engine.memories.get_by_path(store_id, "/hello.md", with_content=False).id
    path = mount / "notes" / "hello.md"
    out = run_script("fuse_conflicts", "close_after_a_delete", path, store_id, old_id)
    assert out == "closed\n"
    memory = store_engine.memories.get_by_path(store_id, "/hello.md")
    assert memory.content == "hello\nappended\n"
    assert memory.id != old_id
    assert [v.operation for v in versions(store_engine, store_id, memory.id)] == ["created"]


def test_appends_racing_from_two_mounts_are_never_lost(mounter, make_store, store_engine) -> None:
    """Three appenders, two of them on one mount: a close that meets another mount's
    version is merged with it (the appends do not overlap), and writes other handles of
    the same file made while that close was asking the store are carried over onto the
    merge. Every line ends up in the head, once; no conflict copy is made."""
    store = make_store("Notes", {"/ap.md": "start\n"})
    first = mounter.mount("Notes")
    second = mounter.mount("Notes")
    script = 'for i in $(seq 40); do echo "$1-$i" >> "$2"; done'
    processes = [
        subprocess.Popen(["bash", "-c", script, "x", prefix, str(mount / "notes" / "ap.md")])
        for prefix, mount in (("m1", first), ("m2", second), ("p1b", first))
    ]
    assert [p.wait(timeout=120) for p in processes] == [0, 0, 0]
    memories = live(store_engine, store.id)
    assert list(memories) == ["/ap.md"]
    expected = ["start"] + [f"{p}-{i}" for p in ("m1", "m2", "p1b") for i in range(1, 41)]
    assert sorted((memories["/ap.md"].content or "").splitlines()) == sorted(expected)


def test_an_editor_save_after_a_change_elsewhere_conflicts(mounter, make_store,
                                                           store_engine) -> None:
    """sed -i style: read the file, write a temporary file, rename it over the file. A
    version written elsewhere after the read, even once this mount has applied it, is
    not replaced: the save becomes a conflict copy, and the name shows the head at once
    (not the temporary file's inode the kernel moved there)."""
    store = make_store("Notes", {"/k.md": "AAAA original\n"})
    first = mounter.mount("Notes")
    second = mounter.mount("Notes")
    first.expect_log("conflict:")
    for when in ("at_once", "applied"):  # before and after the first mount applies it
        path, other = first / "notes" / "k.md", second / "notes" / "k.md"
        head = f"BBBB written on mount2, {when}\n"
        run_script("save_over_a_change_elsewhere", first.path, path, other, head, when)
        assert live(store_engine, store.id)["/k.md"].content == head
        assert path.read_text() == head  # no 10 s entry-cache window
        copies = [m for p, m in live(store_engine, store.id).items() if ".conflict-" in p]
        assert any("edited" in (m.content or "") for m in copies)
        for copy in copies:
            store_engine.memories.delete(store.id, copy.id)
        path.write_text("AAAA original\n")
        wait_until(lambda o=other: o.read_text() == "AAAA original\n", "the reset to reach mount 2")
