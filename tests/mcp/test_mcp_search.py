"""The MCP ``search`` tool (SPEC §7) under a real ``memfs serve``: ranked hits
of the session's stores only, paths under ``/memories``, Japanese by substring, a bad
query as a tool error."""

from __future__ import annotations

import json

from _support.serve import ServeProcess
from mcp_helpers import call, http_session

from memfs.core.model import Access
from memfs.store import Engine, ResourceSpec


async def test_search_finds_only_what_the_session_can_read(
    server: ServeProcess, store_engine: Engine
) -> None:
    notes = store_engine.stores.create("Notes")
    team = store_engine.stores.create("Team")
    other = store_engine.stores.create("Other")
    store_engine.memories.create(notes.id, "/best.md", "kernel kernel kernel")
    store_engine.memories.create(team.id, "/kioku.md", "長期記憶 and the kernel")
    store_engine.memories.create(other.id, "/secret.md", "kernel secret")
    _session, token = store_engine.sessions.create(
        [ResourceSpec(notes.id), ResourceSpec(team.id, Access.READ_ONLY)]
    )
    assert token is not None
    async with http_session(server.url, token) as client:
        is_error, text = await call(client, "search", query="kernel")
        assert not is_error, text
        hits = json.loads(text)
        assert [h["path"] for h in hits] == ["/memories/notes/best.md", "/memories/team/kioku.md"]
        assert hits[0]["snippet"] == "**kernel** **kernel** **kernel**"
        assert {h["memory_store_id"] for h in hits} == {notes.id, team.id}
        is_error, text = await call(client, "search", query="記憶", limit=5)
        assert [h["path"] for h in json.loads(text)] == ["/memories/team/kioku.md"]
        is_error, text = await call(client, "search", query='"open')
        assert is_error
        assert "unterminated quote" in text
