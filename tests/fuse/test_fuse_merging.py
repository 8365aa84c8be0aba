"""SPEC §4 concurrent writers through real mounts: a save whose file changed elsewhere
since its open is merged three-way with that change and committed as one version when
the edits do not overlap; where they overlap, both are kept (a conflict copy)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable

from _support.mount import MEMFS, Mount, Mounter, live, run, run_script, versions
from _support.scripts import script_command, script_env

from memfs.core.model import MemoryStore, Operation
from memfs.store import Engine

LINES = 100


def history(engine: Engine, store_id: str, memory_id: str) -> list[tuple[Operation, str | None]]:
    """``(operation, content)`` of every version of a memory, oldest first."""
    return [
        (v.operation, engine.versions.get(store_id, v.id).content)
        for v in versions(engine, store_id, memory_id)
    ]


def merge_count(mount: Mount) -> int:
    """The merges ``memfs status`` reports for ``mount``, checked against its log: one
    INFO line per merge."""
    count = int(mount.status["merge_count"])
    logged = mount.log_file.read_text().count(" merged /")
    assert count == logged, (count, logged)
    return count


def test_a_close_after_an_append_elsewhere_merges(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    store = make_store("Notes", {"/log.md": "start\n"})
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    memory_id = store_engine.memories.get_by_path(store.id, "/log.md", with_content=False).id
    out = run_script(
        "merge_writers", "append_over_an_append_elsewhere",
        first / "notes" / "log.md", second / "notes" / "log.md",
    )
    assert out == "start\ntheirs\nours\n"  # the mount shows the merge at once
    memories = live(store_engine, store.id)
    assert list(memories) == ["/log.md"]  # no conflict copy
    assert memories["/log.md"].id == memory_id
    assert history(store_engine, store.id, memory_id) == [
        (Operation.CREATED, "start\n"),
        (Operation.MODIFIED, "start\ntheirs\n"),
        (Operation.MODIFIED, "start\ntheirs\nours\n"),  # the merge: one version
    ]
    assert merge_count(first) == 1
    assert merge_count(second) == 0
    assert first.status["conflict_count"] == 0
    assert "merges: 1\n" in run(MEMFS, "status", first.path).stdout


def test_edits_of_lines_apart_merge(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    store = make_store("Notes", {"/plan.md": "# Plan\nstep one\nstep two\nstep three\n"})
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    out = run_script(
        "merge_writers", "save_over_a_save_elsewhere",
        first / "notes" / "plan.md", second / "notes" / "plan.md",
        r"# Plan (v2)\nstep one\nstep two\nstep three\n",
        r"# Plan\nstep one\nstep two\nstep three: done\n",
    )
    merged = "# Plan (v2)\nstep one\nstep two\nstep three: done\n"
    assert out == merged
    memories = live(store_engine, store.id)
    assert {p: m.content for p, m in memories.items()} == {"/plan.md": merged}
    assert len(versions(store_engine, store.id, memories["/plan.md"].id)) == 3
    assert merge_count(first) == 1


def test_overlapping_edits_keep_both(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    store = make_store("Notes", {"/plan.md": "# Plan\nstep one\n"})
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    first.expect_log("conflict: /plan.md was changed by another writer")
    memory_id = store_engine.memories.get_by_path(store.id, "/plan.md", with_content=False).id
    out = run_script(
        "merge_writers", "save_over_a_save_elsewhere",
        first / "notes" / "plan.md", second / "notes" / "plan.md",
        r"# Plan\nstep one: ours\n", r"# Plan\nstep one: theirs\n",
    )
    assert out == "# Plan\nstep one: theirs\n"  # the head keeps the other content
    memories = live(store_engine, store.id)
    [copy] = [p for p in memories if p != "/plan.md"]
    assert re.fullmatch(
        rf"/plan\.conflict-\d{{8}}T\d{{6}}\.\d{{6}}Z-{first.session_id}\.md", copy
    ), copy
    assert memories[copy].content == "# Plan\nstep one: ours\n"  # nothing lost
    assert memories["/plan.md"].id == memory_id
    assert len(versions(store_engine, store.id, memory_id)) == 2  # created, theirs
    assert merge_count(first) == 0
    assert first.status["conflict_count"] == 1


def test_a_copy_edited_and_moved_back_merges_with_an_append_elsewhere(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    """``cp r g; sed -i … g; mv g r`` on one mount while another appends to ``r``: the
    move back is an atomic save of ``r`` made on what ``cp`` read, so it merges with the
    append. (Once the ``sed -i`` had saved over ``g``, ``g`` no longer counted as a file
    this mount created: the move replaced ``r``, soft-deleting it with the append.)"""
    store = make_store("Notes", {"/r.md": "# Log\ncounter 0\n---\n"})
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    memory_id = store_engine.memories.get_by_path(store.id, "/r.md", with_content=False).id
    here = second / "notes"
    run("cp", here / "r.md", here / "g.md")
    with open(first / "notes" / "r.md", "a") as elsewhere:
        elsewhere.write("a-1\n")
    run("sed", "-i", "s/^counter .*/counter 1/", here / "g.md")
    run("mv", here / "g.md", here / "r.md")
    assert (here / "r.md").read_text() == "# Log\ncounter 1\n---\na-1\n"
    memories = live(store_engine, store.id)
    assert list(memories) == ["/r.md"]  # no conflict copy, and g.md is gone
    assert memories["/r.md"].id == memory_id
    assert history(store_engine, store.id, memory_id) == [
        (Operation.CREATED, "# Log\ncounter 0\n---\n"),
        (Operation.MODIFIED, "# Log\ncounter 0\n---\na-1\n"),
        (Operation.MODIFIED, "# Log\ncounter 1\n---\na-1\n"),  # the merge: one version
    ]
    assert merge_count(second) == 1
    assert second.status["conflict_count"] == 0


def test_an_append_through_a_descriptor_open_across_a_sed_on_the_same_mount_is_kept(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    """A descriptor opened for appending before ``sed -i`` on the same mount replaced
    the file writes to the replaced file (as on a local filesystem, where that write goes
    to a file without a name): its close merges it with the save instead of dropping it."""
    head = "# Log\ncounter 0\n---\n"
    store = make_store("Notes", {"/log.md": head})
    mount = mounter.mount("Notes")
    memory_id = store_engine.memories.get_by_path(store.id, "/log.md", with_content=False).id
    path = mount / "notes" / "log.md"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        run("sed", "-i", "s/^counter .*/counter 1/", path)
        os.write(fd, b"a-1\n")
    finally:
        os.close(fd)
    assert path.read_text() == "# Log\ncounter 1\n---\na-1\n"
    memories = live(store_engine, store.id)
    assert list(memories) == ["/log.md"]  # no conflict copy
    assert memories["/log.md"].id == memory_id
    assert history(store_engine, store.id, memory_id) == [
        (Operation.CREATED, head),
        (Operation.MODIFIED, "# Log\ncounter 1\n---\n"),  # sed -i: one version
        (Operation.MODIFIED, "# Log\ncounter 1\n---\na-1\n"),  # the append, merged
    ]
    assert mount.status["conflict_count"] == 0


def test_an_overlapping_write_through_a_descriptor_open_across_a_sed_is_kept_beside_it(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    """The same, when that write overlaps the save: it is kept as a conflict copy."""
    store = make_store("Notes", {"/log.md": "# Log\ncounter 0\n---\n"})
    mount = mounter.mount("Notes")
    mount.expect_log("conflict: /log.md was replaced on this mount while open for writing")
    path = mount / "notes" / "log.md"
    fd = os.open(path, os.O_WRONLY)
    try:
        run("sed", "-i", "s/^counter .*/counter 1/", path)
        os.write(fd, b"# LOG")  # line 1, next to sed's line 2: they overlap
    finally:
        os.close(fd)
    assert path.read_text() == "# Log\ncounter 1\n---\n"
    memories = live(store_engine, store.id)
    [copy] = [p for p in memories if p != "/log.md"]
    assert re.fullmatch(
        rf"/log\.conflict-\d{{8}}T\d{{6}}\.\d{{6}}Z-{mount.session_id}\.md", copy
    ), copy
    assert memories[copy].content == "# LOG\ncounter 0\n---\n"  # nothing lost
    assert mount.status["conflict_count"] == 1


def appenders(*targets: tuple[str, Mount]) -> list[subprocess.Popen[bytes]]:
    """One ``append_lines`` process of :data:`LINES` lines per ``(tag, mount)``, all
    started before any is waited for."""
    return [
        subprocess.Popen(
            script_command("merge_writers", "append_lines", mount / "notes" / "log.md", tag,
                           LINES),
            env=script_env(), stdout=subprocess.DEVNULL,
        )
        for tag, mount in targets
    ]


def assert_every_line_once(engine: Engine, store_id: str, head: str, tags: str) -> None:
    """The store holds only ``/log.md`` (no conflict copy), which is ``head`` followed by
    every appended line exactly once, each appender's in its own order."""
    memories = live(engine, store_id)
    assert list(memories) == ["/log.md"], list(memories)
    content = memories["/log.md"].content or ""
    assert content.startswith(head)
    lines = content[len(head):].splitlines()
    assert sorted(lines) == sorted(f"{tag}-{i}" for tag in tags for i in range(1, LINES + 1))
    for tag in tags:
        assert [line for line in lines if line.startswith(f"{tag}-")] == [
            f"{tag}-{i}" for i in range(1, LINES + 1)
        ]


def test_two_mounts_appending_at_once_merge_every_line(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    store = make_store("Notes", {"/log.md": "start\n"})
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    memory_id = store_engine.memories.get_by_path(store.id, "/log.md", with_content=False).id
    processes = appenders(("a", first), ("b", second))
    assert [p.wait(timeout=300) for p in processes] == [0, 0]
    assert_every_line_once(store_engine, store.id, "start\n", "ab")
    # One save, one version: each close made exactly one (a merge included); same id.
    history = versions(store_engine, store.id, memory_id)
    assert len(history) == 1 + 2 * LINES
    merges = merge_count(first) + merge_count(second)
    assert first.status["conflict_count"] == second.status["conflict_count"] == 0
    assert f"merges: {merge_count(first)}\n" in run(MEMFS, "status", first.path).stdout
    assert merges <= 2 * LINES


def test_an_appender_and_sed_on_another_mount_merge(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> None:
    head = "# Log\ncounter 0\n---\n"
    store = make_store("Notes", {"/log.md": head})
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    memory_id = store_engine.memories.get_by_path(store.id, "/log.md", with_content=False).id
    [appender] = appenders(("a", first))
    edits = 0
    target = second / "notes" / "log.md"
    while appender.poll() is None or edits < 3:  # sed -i: a temporary file renamed over
        edits += 1
        run("sed", "-i", f"s/^counter .*/counter {edits}/", target)
    assert appender.wait(timeout=300) == 0
    assert_every_line_once(store_engine, store.id, f"# Log\ncounter {edits}\n---\n", "a")
    history = versions(store_engine, store.id, memory_id)
    assert len(history) == 1 + LINES + edits  # each save one version, the id kept
    assert first.status["conflict_count"] == second.status["conflict_count"] == 0
    merge_count(first), merge_count(second)
