"""The tree's search modes and record filters in the console (SPEC §6, §7, §12)."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path

import pytest
from _support.console import ConsoleClient

from memfs.store import Engine


def _records(engine: Engine) -> str:
    store = engine.stores.create("records")
    engine.memories.create(store.id, "/people/alice.md",
                           "---\ntype: profile\nimportance: 0.9\ntags: [family]\n---\nAlice.\n")
    engine.memories.create(store.id, "/people/deep/bob.md",
                           "---\ntype: episodic\nimportance: 0.2\n---\nBob came by.\n")
    engine.memories.create(store.id, "/notes/plain.md", "Alice and Bob, plain.\n")
    return store.id


def test_record_filters_keep_only_matching_records_at_any_depth(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id = _records(engine)
    console.sign_in(admin_secret)
    base = f"/console/stores/{store_id}"
    episodic = console.http.get(base + "?record_type=episodic").text
    assert "people/deep/bob.md" in episodic
    assert "alice.md" not in episodic
    assert "plain.md" not in episodic
    important = console.http.get(base + "?prefix=/people/&min_importance=0.5").text
    assert "alice.md" in important
    assert "bob.md" not in important
    tagged = console.http.get(base + "?tag=family&q=Alice").text
    assert "/people/alice.md" in tagged
    assert "/notes/plain.md" not in tagged
    bad = console.http.get(base + "?min_importance=lots")
    assert bad.status_code == HTTPStatus.BAD_REQUEST
    assert "min_importance" in bad.text


def test_semantic_search_is_offered_disabled_without_a_model(
    engine: Engine, console: ConsoleClient, admin_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMFS_SEARCH_MODEL_DIR", raising=False)
    store_id = _records(engine)
    console.sign_in(admin_secret)
    page = console.http.get(f"/console/stores/{store_id}").text
    assert '<option value="semantic" disabled>by meaning</option>' in page
    assert "needs an embedding model" in page
    forced = console.http.get(f"/console/stores/{store_id}?q=Alice&mode=semantic")
    assert forced.status_code == HTTPStatus.BAD_REQUEST
    assert "search_unavailable" in forced.text


def test_semantic_search_with_a_model_finds_by_meaning(
    engine: Engine, console: ConsoleClient, admin_secret: str, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from search.tiny_model import write_model

    monkeypatch.setenv("MEMFS_SEARCH_MODEL_DIR", str(write_model(tmp_path / "model")))
    store_id = _records(engine)
    console.sign_in(admin_secret)
    page = console.http.get(f"/console/stores/{store_id}").text
    assert '<option value="semantic">by meaning</option>' in page
    assert "needs an embedding model" not in page

    assert engine.search.embed_pending() == 3
    response = console.http.get(f"/console/stores/{store_id}?q=Alice&mode=semantic")
    assert response.status_code == HTTPStatus.OK, response.text[:300]
    assert "(by meaning)" in response.text
    assert "/people/alice.md" in response.text
