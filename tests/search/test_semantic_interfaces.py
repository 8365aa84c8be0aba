"""Semantic search through its interfaces (SPEC §7): a real ``memfs serve`` with a model
(its embedder drains the queue; ``semantic_index`` shows the lag), written with the real
``anthropic`` SDK and searched with httpx; ``memfs search`` (hybrid by default,
``--semantic``/``--text``) and ``memfs search reindex`` with its progress bar."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from _support.cli import memfs_env, run_memfs
from _support.polling import wait_until
from _support.serve import ServeProcess

from memfs.core.config import SEARCH_MODEL_ENV, database_url
from memfs.store import Engine

FIRST = {
    "/db.md": "Tune postgres: the query planner and the table index.",
    "/jp/trip.md": "来月の旅行はホテルを予約した。",
    "/bread.md": "Bake bread in the oven: a recipe.",
}


@pytest.fixture
def served(tmp_path: Path, model_dir: Path) -> Iterator[tuple[str, str, Path]]:
    """``(url, admin secret, database file)`` of a server with the tiny model."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = memfs_env(home, **{SEARCH_MODEL_ENV: str(model_dir)})
    database = tmp_path / "api.db"
    created = run_memfs(
        "key", "create", "--scope", "admin", "--database", str(database), "--json", env=env
    )
    assert created.returncode == 0, created.stderr
    process = ServeProcess(database, tmp_path, env=env)
    try:
        yield process.url, json.loads(created.stdout)["secret"], database
    finally:
        process.stop()


def _search(http: httpx.Client, store_id: str, q: str, mode: str) -> dict[str, Any]:
    response = http.get(f"/v1/memory_stores/{store_id}/search", params={"q": q, "mode": mode})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_the_server_embeds_off_the_write_path(served: tuple[str, str, Path]) -> None:
    url, secret, database = served
    sdk = anthropic.Anthropic(api_key=secret, base_url=url, timeout=30)
    store = sdk.beta.memory_stores.create(name="semantic api")
    for path, content in FIRST.items():
        sdk.beta.memory_stores.memories.create(store.id, path=path, content=content)
    headers = {"authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        # Found by its words at once (full text is in the write's transaction).
        words = _search(http, store.id, "ホテル", "auto")  # a substring of /jp/trip.md
        assert [h["path"] for h in words["data"]] == ["/jp/trip.md"]
        assert set(words["semantic_index"]) == {"model", "pending", "lag_seconds"}
        assert words["semantic_index"]["model"] is not None

        def embedded() -> bool:
            return _search(http, store.id, "sqlite", "semantic")["semantic_index"]["pending"] == 0

        wait_until(embedded, "the server's embedder to drain the queue", 60)
        meaning = _search(http, store.id, "sqlite", "semantic")
        assert [h["path"] for h in meaning["data"]] == ["/db.md"]
        assert _search(http, store.id, "sqlite", "text")["data"] == []
        posted = http.post("/v1/search", json={"query": "飛行機", "semantic": True})
        assert [h["path"] for h in posted.json()["data"]] == ["/jp/trip.md"]
        bad = http.get(f"/v1/memory_stores/{store.id}/search", params={"q": "x", "mode": "nope"})
        assert bad.status_code == 400
    engine = Engine(database_url(str(database)))
    try:
        assert list(engine.iter_fsck_findings()) == []
    finally:
        engine.close()


def test_cli_search_modes_and_reindex(tmp_path: Path, model_dir: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    database = tmp_path / "cli.db"
    env = memfs_env(home, MEMFS_DATABASE=str(database), **{SEARCH_MODEL_ENV: str(model_dir)})
    with Engine(database_url(str(database))) as engine:
        store = engine.stores.create("Notes")
        for path, content in FIRST.items():
            engine.memories.create(store.id, path, content)

    def paths(*args: str) -> list[str]:
        result = run_memfs("search", *args, "--json", env=env)
        assert result.returncode == 0, result.stderr
        return [hit["path"] for hit in json.loads(result.stdout)["data"]]

    # Nothing embedded yet: hybrid finds by words, and says how many wait.
    waiting = run_memfs("search", "recipe", env=env)
    assert "3 memories wait for their vector" in waiting.stderr
    assert paths("sqlite", "--semantic") == []
    reindexed = run_memfs("search", "reindex", "--store", "Notes", env=env)
    assert reindexed.returncode == 0, reindexed.stderr
    assert "reindexed 3 memories: full text and 3 vectors" in reindexed.stdout
    assert re.search(r"^vectors .* 3/3 ", reindexed.stdout, re.MULTILINE)  # the progress bar
    assert paths("sqlite", "--semantic") == ["/db.md"]
    assert paths("sqlite", "--text") == []
    assert paths("sqlite") == ["/db.md"]  # hybrid: by meaning
    assert paths("bread")[0] == "/bread.md"
    without = dict(env, **{SEARCH_MODEL_ENV: ""})
    plain = run_memfs("search", "reindex", env=without)
    assert plain.returncode == 0, plain.stderr
    assert "their vectors wait for an embedding model" in plain.stdout
