"""A mount's daemon embeds what is written through the mount (SPEC §7): a file
written with the shell is found by meaning once the daemon's embedder has run, and
``memfs status`` shows the queue (``search:`` line, ``search_pending`` in ``--json``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.mount import FUSE_UNAVAILABLE_REASON, MEMFS, Mounter, run, wait_until

from memfs.store import Engine, open_engine

pytestmark = pytest.mark.fuse


@pytest.fixture
def store_engine(memfs_home: Path, model_dir: Path) -> Iterator[Engine]:
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)
    engine = open_engine()
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def mounter(tmp_path: Path, store_engine: Engine) -> Iterator[Mounter]:
    mounter = Mounter(tmp_path, store_engine)
    try:
        yield mounter
    finally:
        mounter.close()
    assert list(store_engine.iter_fsck_findings()) == []


def test_the_daemon_embeds_and_status_shows_the_queue(
    mounter: Mounter, store_engine: Engine
) -> None:
    store = store_engine.stores.create("Notes")
    mount = mounter.mount("Notes")
    run("sh", "-c", f"echo 'Booked a hotel near the airport' > {mount.path}/notes/trip.md")

    def found() -> bool:
        hits = store_engine.search.query("flight", [store.id], mode="semantic")
        return [h.path for h in hits] == ["/trip.md"]

    wait_until(found, "the daemon's embedder to embed the new file", 60)

    def status_caught_up() -> dict[str, object] | None:
        record = json.loads(run(MEMFS, "status", str(mount.path), "--json").stdout)
        backend = record["backend"]
        return backend if backend["search_pending"] == 0 else None

    backend = wait_until(status_caught_up, "the status to show an empty queue", 30)
    assert backend["search_lag_s"] == 0.0
    text = run(MEMFS, "status", str(mount.path)).stdout
    assert "search:       0 memories wait for their vector" in text
