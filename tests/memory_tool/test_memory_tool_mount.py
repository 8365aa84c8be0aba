"""The memory tool and a real mount of the same store (embedded, one database): an edit
made through the mount between the tool's ``view`` and its ``str_replace``, or between
the read and the write of one ``str_replace``, is never lost (SPEC §2 preconditions)."""

from __future__ import annotations

import pytest
import trio
from _support.mount import Mount, Mounter, run_script, wait_until
from memory_helpers import InterferingAccess, arun, live, run, versions

from memfs.core.model import Access, Actor, MemoryStore
from memfs.memory_tool import AsyncMemfsMemoryTool, MemfsMemoryTool, MemoryFiles
from memfs.memory_tool.port import open_embedded
from memfs.store import Engine

pytestmark = pytest.mark.fuse

PLAN = "# Plan\n- one\n- two\n"


def make_store(engine: Engine) -> MemoryStore:
    store = engine.stores.create("Notes")
    engine.memories.create(store.id, "/plan.md", PLAN)
    return store


def append_through_mount(path: str, text: str) -> None:
    """Appends through the mount in another process; the version is committed when its
    close returns (SPEC §4 close-to-open)."""
    run_script("files", "append", path, text)


def read_through_mount(path: str) -> str:
    return run_script("files", "cat", path)


def test_a_mount_edit_between_view_and_str_replace_is_kept(
    mounter: Mounter, store_engine: Engine
) -> None:
    store = make_store(store_engine)
    mount: Mount = mounter.mount("Notes")
    plan = str(mount / "notes" / "plan.md")
    with MemfsMemoryTool.embedded(store_engine, ["Notes"]) as tool:
        assert run(tool, "view", path="/memories/plan.md") == (
            "ok",
            "Here's the content of /memories/plan.md with line numbers:\n"
            "     1\t# Plan\n     2\t- one\n     3\t- two\n     4\t",
        )
        append_through_mount(plan, "- three\n")
        edit = run(tool, "str_replace", path="/memories/plan.md", old_str="- one", new_str="- 1")
        assert edit[0] == "ok"
        tool_session = tool.files.access.actor
    final = "# Plan\n- 1\n- two\n- three\n"
    assert live(store_engine, store.id) == {"/plan.md": final}
    written = versions(store_engine, store.id)
    assert [v.content for v in written] == [PLAN, PLAN + "- three\n", final]
    assert [v.created_by for v in written[1:]] == [Actor.session(mount.session_id), tool_session]
    # The mount sees the tool's version (SPEC §4: within about a second).
    wait_until(lambda: read_through_mount(plan) == final, "the tool's edit in the mount")


async def test_a_mount_write_racing_one_str_replace_is_kept(
    mounter: Mounter, store_engine: Engine
) -> None:
    store = make_store(store_engine)
    mount: Mount = mounter.mount("Notes")
    plan = str(mount / "notes" / "plan.md")

    async def mount_writer() -> None:
        # After the tool has read the file, before it writes it back.
        await trio.to_thread.run_sync(append_through_mount, plan, "- raced\n")

    attach = [("Notes", Access.READ_WRITE)]
    inner = await trio.to_thread.run_sync(open_embedded, store_engine, attach)
    access = InterferingAccess(inner, mount_writer)
    tool = AsyncMemfsMemoryTool(await MemoryFiles.open(access))
    try:
        outcome = await arun(
            tool, "str_replace", path="/memories/plan.md", old_str="- two", new_str="- 2"
        )
    finally:
        await tool.aclose()
    assert outcome[0] == "ok"
    assert access.updates_tried == 2  # the precondition refused the first write
    final = "# Plan\n- one\n- 2\n- raced\n"
    assert live(store_engine, store.id) == {"/plan.md": final}
    written = versions(store_engine, store.id)
    assert [v.created_by for v in written[1:]] == [Actor.session(mount.session_id), inner.actor]
    assert await trio.to_thread.run_sync(
        wait_until, lambda: read_through_mount(plan) == final, "the tool's edit in the mount"
    )
