"""Version retention through the edges (SPEC §2): the store's period on the
API (``version_retention_seconds``, sent by the unmodified SDK as ``extra_body``) and the
CLI (``--retention 30d``), ``memfs version prune [--dry-run]``, and ``memfs serve``
pruning on its schedule.

The old versions are written through a fake clock: the engine's clock in this process
(``memfs.store._common.utcnow``) is set back 40 days while they are written, so the
real clock of the CLI and the server sees them as past a 30-day period at once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import pytest
from _support.cli import fsck_findings, memfs_env, run_memfs
from _support.polling import wait_until
from _support.serve import ServeProcess

from memfs.core.model import Actor, utcnow

if TYPE_CHECKING:
    from tests.seedapi.conftest import Api

ACTOR = Actor.api_key("apikey_retention_surface")
THIRTY_DAYS_S = 30 * 24 * 3600
# How long a scheduled prune may take to show: the server's interval is 1 s.
SCHEDULE_TIMEOUT_S = 20.0


@pytest.fixture
def written_long_ago(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Any]:
    """A context manager: the engine's clock reads 40 days ago inside it."""

    @contextmanager
    def back_in_time() -> Iterator[None]:
        with monkeypatch.context() as patch:
            # By name: tests outside tests/store do not import the store's insides.
            patch.setattr("memfs.store._common.utcnow", lambda: utcnow() - timedelta(days=40))
            yield

    return back_in_time


def _history(api: Api, store_id: str, memory_id: str) -> list[str]:
    versions = api.sdk().beta.memory_stores.memory_versions
    return [v.operation for v in versions.list(store_id, memory_id=memory_id)]


def _two_versions(api: Api, store_id: str, written_long_ago: Callable[[], Any]) -> str:
    """A memory with an old ``created`` version and an old head."""
    with written_long_ago():
        memory = api.engine.for_caller(actor=ACTOR).memories.create(store_id, "/old.md", "first")
        api.engine.for_caller(actor=ACTOR).memories.update(store_id, memory.id, content="second")
    return memory.id


def test_the_sdk_sets_and_clears_the_period(api: Api) -> None:
    stores = api.sdk().beta.memory_stores
    created = stores.create(name="retained", extra_body={"version_retention_seconds": 86400})
    assert created.version_retention_seconds == 86400  # type: ignore[attr-defined]
    forever = stores.create(name="kept")
    assert forever.version_retention_seconds is None  # type: ignore[attr-defined]
    renamed = stores.update(created.id, name="renamed")
    assert renamed.version_retention_seconds == 86400  # type: ignore[attr-defined]
    cleared = stores.update(created.id, extra_body={"version_retention_seconds": 0})
    assert cleared.version_retention_seconds is None  # type: ignore[attr-defined]
    with pytest.raises(anthropic.BadRequestError):
        stores.update(created.id, extra_body={"version_retention_seconds": -1})
    with pytest.raises(anthropic.BadRequestError):
        stores.create(name="bad", extra_body={"version_retention_seconds": "30d"})
    with pytest.raises(anthropic.BadRequestError):
        stores.create(name="bad", extra_body={"version_retention_seconds": 1.5})
    whole = stores.create(name="whole", extra_body={"version_retention_seconds": 3600.0})
    assert whole.version_retention_seconds == 3600  # type: ignore[attr-defined]
    assert stores.retrieve(created.id).version_retention_seconds is None  # type: ignore[attr-defined]


def _memfs(api: Api, home: Path, *args: str) -> Any:
    return run_memfs(*args, "--database", api.database, env=memfs_env(home))


def test_the_cli_sets_the_period(api: Api, tmp_path: Path) -> None:
    created = _memfs(
        api, tmp_path, "store", "create", "cli retained", "--retention", "30d", "--json"
    )
    assert created.returncode == 0, created.stderr
    store = json.loads(created.stdout)
    assert store["version_retention_seconds"] == THIRTY_DAYS_S
    shown = _memfs(api, tmp_path, "store", "show", store["id"])
    assert "30d (older versions are pruned)" in shown.stdout
    updated = _memfs(
        api, tmp_path, "store", "update", store["id"], "--retention", "forever", "--json"
    )
    assert json.loads(updated.stdout)["version_retention_seconds"] is None
    refused = _memfs(api, tmp_path, "store", "update", store["id"], "--retention", "soon")
    assert refused.returncode == 1
    assert "--retention: 'soon' is not a duration" in refused.stderr


def test_version_prune_with_dry_run(
    api: Api, store: Any, tmp_path: Path, written_long_ago: Callable[[], Any]
) -> None:
    api.engine.stores.update(store.id, version_retention_s=THIRTY_DAYS_S)
    memory_id = _two_versions(api, store.id, written_long_ago)
    fresh = api.engine.for_caller(actor=ACTOR).memories.create(store.id, "/fresh.md", "new")
    api.engine.for_caller(actor=ACTOR).memories.update(store.id, fresh.id, content="newer")

    dry = _memfs(api, tmp_path, "version", "prune", "--store", store.id, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    [planned] = json.loads(dry.stdout)["data"]
    assert (planned["versions_pruned"], planned["dry_run"]) == (1, True)
    assert _history(api, store.id, memory_id) == ["modified", "created"]

    done = _memfs(api, tmp_path, "version", "prune", "--store", store.id)
    assert done.returncode == 0, done.stderr
    assert "PRUNED" in done.stdout
    assert _history(api, store.id, memory_id) == ["modified"]
    assert _history(api, store.id, fresh.id) == ["modified", "created"]  # within the period
    memories = api.sdk().beta.memory_stores.memories
    assert memories.retrieve(memory_id, memory_store_id=store.id).content == "second"
    assert fsck_findings(api.database) == []
    audit = _memfs(api, tmp_path, "audit", "ls", "--store", store.id, "--json")
    [event] = json.loads(audit.stdout)["data"]
    assert (event["action"], event["metadata"]["versions"]) == ("prune_versions", "1")


def test_serve_prunes_on_its_schedule(
    api: Api, store: Any, tmp_path: Path, written_long_ago: Callable[[], Any]
) -> None:
    api.engine.stores.update(store.id, version_retention_s=THIRTY_DAYS_S)
    at_start = _two_versions(api, store.id, written_long_ago)
    process = ServeProcess(
        api.database, tmp_path, "--prune-interval", "1s", env=memfs_env(tmp_path)
    )
    try:
        wait_until(
            lambda: _history(api, store.id, at_start) == ["modified"],
            "the start-up prune",
            SCHEDULE_TIMEOUT_S,
        )
        with written_long_ago():
            later = api.engine.for_caller(actor=ACTOR).memories.create(store.id, "/later.md", "one")
            api.engine.for_caller(actor=ACTOR).memories.update(store.id, later.id, content="two")
        wait_until(
            lambda: _history(api, store.id, later.id) == ["modified"],
            "a scheduled prune",
            SCHEDULE_TIMEOUT_S,
        )
    finally:
        status = process.stop()
    log = process.log_text()
    assert status == 0, log
    assert "Traceback" not in log, log
    assert f"version retention: pruned 1 versions of {store.id}" in log
    assert fsck_findings(api.database) == []


def test_serve_refuses_a_bad_interval(api: Api, tmp_path: Path) -> None:
    done = run_memfs(
        "serve",
        "--port",
        "0",
        "--database",
        api.database,
        "--prune-interval",
        "often",
        env=memfs_env(tmp_path),
    )
    assert done.returncode == 1
    assert "'often' is not a duration" in done.stderr
