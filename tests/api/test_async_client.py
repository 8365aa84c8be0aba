"""The SDK's async client sends the same requests (api-contract §0): a round trip of
store, memory and version methods with ``AsyncAnthropic``, under trio."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anthropic
import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server


async def test_async_client_round_trip(server: Server) -> None:
    async with anthropic.AsyncAnthropic(api_key=server.admin_secret, base_url=server.url) as client:
        stores = client.beta.memory_stores
        store = await stores.create(name="async")
        memory = await stores.memories.create(store.id, path="/a.md", content="one")
        updated = await stores.memories.update(
            memory.id, memory_store_id=store.id, content="two", view="full"
        )
        assert updated.content == "two"
        paths = [item.path async for item in stores.memories.list(store.id)]
        assert paths == ["/a.md"]
        versions = [v.operation async for v in stores.memory_versions.list(store.id)]
        assert versions == ["modified", "created"]
        with pytest.raises(anthropic.ConflictError) as conflict:
            await stores.memories.create(store.id, path="/a.md", content="again")
        assert conflict.value.type == "memory_path_conflict_error"
        assert (await stores.delete(store.id)).type == "memory_store_deleted"
