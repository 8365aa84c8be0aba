"""The memory tool over a real ``memfs serve`` with a session token: the session's stores,
versions attributed to that session, the server's own refusals in the tool's words."""

from __future__ import annotations

import dataclasses

import pytest
from _support.serve import ServeProcess
from anthropic.lib.tools import ToolError
from memory_helpers import InterferingAccess, arun, live, run, versions

from memfs.core.model import Access, Actor, Operation
from memfs.memory_tool import AsyncMemfsMemoryTool, MemfsMemoryTool, MemoryFiles
from memfs.memory_tool.port import HttpAccess
from memfs.remote.client import MemfsClient
from memfs.store import Engine, ResourceSpec


def make_session(engine: Engine) -> tuple[str, str, str, str]:
    """Stores Notes (read_write) and Team (read_only, one memory); (session id, token,
    notes id, team id)."""
    notes = engine.stores.create("Notes")
    team = engine.stores.create("Team")
    engine.memories.create(team.id, "/rules.md", "be kind\n")
    session, token = engine.sessions.create(
        [ResourceSpec(notes.id), ResourceSpec(team.id, Access.READ_ONLY)]
    )
    assert token is not None
    return session.id, token, notes.id, team.id


def test_every_command_over_the_server_is_a_version_of_the_session(
    server: ServeProcess, store_engine: Engine
) -> None:
    session_id, token, notes_id, team_id = make_session(store_engine)
    with MemfsMemoryTool.remote(server.url, token) as tool:
        assert run(tool, "create", path="/memories/notes/a.md", file_text="one\n") == (
            "ok",
            "File created successfully at: /memories/notes/a.md",
        )
        assert run(tool, "insert", path="/memories/notes/a.md", insert_line=1, insert_text="2")
        assert run(tool, "str_replace", path="/memories/notes/a.md", old_str="one", new_str="1")
        assert run(tool, "view", path="/memories") == (
            "ok",
            "Here're the files and directories up to 2 levels deep in /memories, excluding "
            "hidden items:\n4K\t/memories\n4K\t/memories/notes/\n4B\t/memories/notes/a.md\n"
            "4K\t/memories/team/\n8B\t/memories/team/rules.md",
        )
        assert run(
            tool, "rename", old_path="/memories/notes/a.md", new_path="/memories/notes/d/b.md"
        )
        assert run(tool, "rename", old_path="/memories/notes/d", new_path="/memories/notes/e")
        assert run(tool, "view", path="/memories/notes/e/b.md") == (
            "ok",
            "Here's the content of /memories/notes/e/b.md with line numbers:\n"
            "     1\t1\n     2\t2\n     3\t",
        )
        assert run(tool, "create", path="/memories/team/x.md", file_text="x") == (
            "error",
            "Cannot modify /memories/team/x.md: the memory store 'Team' is attached read-only",
        )
        assert run(tool, "delete", path="/memories/notes/e") == (
            "ok",
            "Successfully deleted /memories/notes/e",
        )
    written = versions(store_engine, notes_id)
    assert [v.operation for v in written] == [Operation.CREATED] + [Operation.MODIFIED] * 4 + [
        Operation.DELETED
    ]
    assert {v.created_by for v in written} == {Actor.session(session_id)}
    assert live(store_engine, notes_id) == {}
    assert len(versions(store_engine, team_id)) == 1


async def test_the_server_enforces_a_read_only_attachment_too(
    server: ServeProcess, store_engine: Engine
) -> None:
    _session_id, token, _notes_id, team_id = make_session(store_engine)
    access = HttpAccess(MemfsClient(server.url, token))
    # Pretend the attachment were writable: the server must still refuse.
    attachments = [
        dataclasses.replace(a, access=Access.READ_WRITE) for a in await access.attachments()
    ]
    tool = AsyncMemfsMemoryTool(MemoryFiles(access, attachments))
    try:
        outcome = await arun(
            tool, "str_replace", path="/memories/team/rules.md", old_str="kind", new_str="mean"
        )
    finally:
        await tool.aclose()
    assert outcome[0] == "error"
    assert outcome[1].startswith("Cannot modify /memories/team/rules.md: memory store ")
    assert outcome[1].endswith(" is attached read_only to session " + _session_id)
    assert live(store_engine, team_id) == {"/rules.md": "be kind\n"}


async def test_a_race_over_http_is_redone_on_the_new_content(
    server: ServeProcess, store_engine: Engine
) -> None:
    _session_id, token, notes_id, _team_id = make_session(store_engine)
    memory = store_engine.memories.create(notes_id, "/a.md", "x\ny\n")

    async def other_writer() -> None:
        store_engine.memories.update(notes_id, memory.id, content="x\ny\nz\n")

    access = InterferingAccess(HttpAccess(MemfsClient(server.url, token)), other_writer)
    tool = AsyncMemfsMemoryTool(await MemoryFiles.open(access))
    try:
        outcome = await arun(
            tool, "str_replace", path="/memories/notes/a.md", old_str="x", new_str="X"
        )
    finally:
        await tool.aclose()
    assert outcome[0] == "ok"
    assert access.updates_tried == 2
    assert live(store_engine, notes_id) == {"/a.md": "X\ny\nz\n"}


def test_a_bad_token_is_refused_in_the_tool_words(server: ServeProcess) -> None:
    with pytest.raises(ToolError) as refused:
        MemfsMemoryTool.remote(server.url, "memfs_st_not-a-token")
    assert refused.value.content == (
        "memfs refused the credential of this memory tool: invalid credentials: unknown or "
        "revoked API key or session token"
    )
