"""Fixtures of the semantic search tests (those of tests/conftest.py come first).

- ``model_dir``: a tiny model2vec model written to a temp dir (tiny_model.py), named
  by ``$MEMFS_SEARCH_MODEL_DIR`` for the test.
- ``store``: a fresh store in ``engine``; ``actor``: who writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_model import write_model

from memfs.core.config import SEARCH_MODEL_ENV
from memfs.core.model import Actor, MemoryStore
from memfs.store import Engine


@pytest.fixture
def model_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = write_model(tmp_path / "model")
    monkeypatch.setenv(SEARCH_MODEL_ENV, str(directory))
    return directory


@pytest.fixture
def actor() -> Actor:
    return Actor.api_key("apikey_tests")


@pytest.fixture
def store(engine: Engine) -> MemoryStore:
    return engine.stores.create("semantic store")
