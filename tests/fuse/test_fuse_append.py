"""O_APPEND through a mount: every write of an O_APPEND descriptor goes to the end of
the content the file shows (POSIX write(2)), even when the kernel's cached size is
stale because the memory was changed elsewhere (SPEC §4: nothing is silently lost)."""

from __future__ import annotations

import subprocess

from _support.mount import live, run, run_script


def test_an_append_after_a_change_elsewhere_goes_to_the_end(mount, store_engine) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "f.md"
    run("sh", "-c", f"echo one > {path}")
    out = run_script("append_after_a_change_elsewhere", path, store_id, "/f.md")
    assert out == "appended\n"
    memories = live(store_engine, store_id)
    conflicts = [p for p in memories if ".conflict-" in p]
    assert memories["/f.md"].content == "one\nTWO written via API\nX\n", (
        memories["/f.md"].content, conflicts
    )
    assert conflicts == []


def test_two_mounts_appending_at_once_lose_no_line(mounter, make_store, store_engine) -> None:
    """SPEC §4 concurrent writers: appends that meet another mount's are merged, so the
    head holds every line once and no conflict copy is made."""
    store = make_store("Notes", {"/f.md": "start\n"})
    first = mounter.mount("Notes")
    second = mounter.mount("Notes")
    loops = [
        subprocess.Popen(
            ["sh", "-c", f"for i in $(seq 50); do echo {tag}$i >> {m / 'notes' / 'f.md'}; done"]
        )
        for tag, m in (("A", first), ("B", second))
    ]
    assert [p.wait(timeout=60) for p in loops] == [0, 0]
    memories = live(store_engine, store.id)
    assert list(memories) == ["/f.md"]  # no conflict copy
    head = memories["/f.md"].content or ""
    # Every line once and whole (no write landed inside another one).
    expected = ["start"] + [f"{tag}{i}" for tag in "AB" for i in range(1, 51)]
    assert sorted(head.splitlines()) == sorted(expected), head


def test_renaming_a_file_with_unclosed_writes_keeps_them(mount, store_engine) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    notes = mount / "notes"
    run("sh", "-c", f"echo line1 > {notes / 'log.md'}")
    run_script("fuse_conflicts", "rename_while_written", notes / "log.md", notes / "log-old.md")
    memories = live(store_engine, store_id)
    assert "/log.md" not in memories
    assert memories["/log-old.md"].content == "line1\nline2\n"
    assert (notes / "log-old.md").read_text() == "line1\nline2\n"


def test_renaming_over_an_existing_file_with_unclosed_writes_keeps_them(
    mount, store_engine
) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    notes = mount / "notes"
    run("sh", "-c", f"echo line1 > {notes / 'log.md'}")
    run_script(
        "fuse_conflicts", "rename_while_written", notes / "log.md", notes / "hello.md",
        "line3\n",
    )
    memories = live(store_engine, store_id)
    assert sorted(memories) == ["/hello.md", "/projects/plan.md"]
    assert memories["/hello.md"].content == "line1\nline2\nline3\n"
    assert (notes / "hello.md").read_text() == "line1\nline2\nline3\n"


def test_a_file_held_open_does_not_hide_a_change_from_new_opens(mount, store_engine) -> None:
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "st.md"
    run("sh", "-c", f"echo short > {path}")
    new_content = "longer content, written elsewhere\n"
    out = run_script("read_held_across_a_change", path, store_id, "/st.md", new_content, "append")
    assert out == new_content + new_content + "more\n"
    memories = live(store_engine, store_id)
    assert [p for p in memories if ".conflict-" in p] == []
    assert memories["/st.md"].content == new_content + "more\n"
    assert path.read_text() == new_content + "more\n"


def test_an_old_descriptor_never_puts_old_content_in_front_of_new_opens(
    mount, store_engine
) -> None:
    """The kernel's page cache is per inode: a descriptor opened before a change made
    elsewhere must read the new head too, or its reads would put the old bytes in the
    pages new opens read, and a `sed -i` would then write them back over the change."""
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "race.md"
    for read_first in (False, True):
        run("sh", "-c", f"printf 'AAAA original line\\n' > {path}")
        out = run_script(
            "read_held_across_a_change", path, store_id, "/race.md", "BBBB new\n", "sed",
            *(["read_first"] if read_first else []),
        )
        assert out == "BBBB new\n" * 2, read_first
        memories = live(store_engine, store_id)
        assert memories["/race.md"].content == "BBBB new edited\n", read_first
        assert [p for p in memories if ".conflict-" in p] == []
