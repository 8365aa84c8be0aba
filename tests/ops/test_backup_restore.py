"""``memfs backup`` and ``memfs restore`` (README "Backup and restore"): a backup made
while a real mount keeps writing is consistent (fsck clean), private, free of content
redacted before it, and restores into a fresh home with the same stores, memories,
versions, sessions and keys; a restore over a database some process has open is
refused."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _support.cli import fsck_findings, memfs_env, run_memfs
from _support.mount import Mounter, wait_until

from memfs.core.model import Access, MemoryStore, Page, Scope
from memfs.store import Engine, ResourceSpec, open_engine

# How many versions the mount must have written before the backup starts (and the
# writer keeps going while it runs).
WRITES_BEFORE_BACKUP = 30

WRITER = textwrap.dedent(
    """
    import pathlib, sys
    directory, stop = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    for i in range(100_000):
        if stop.exists():
            break
        (directory / f"note-{i % 7}.md").write_text(f"note written {i} times\\n")
    """
)


def _start_writer(directory: Path, stop: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(directory), str(stop)])


def _all(fetch: Callable[[str | None], Page[Any]]) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = fetch(cursor)
        items += page.items
        cursor = page.next_cursor
        if cursor is None:
            return items


def _everything(engine: Engine) -> dict[str, Any]:
    """What a restore must keep: stores, memories (heads), versions, sessions, keys."""
    stores = _all(lambda c: engine.stores.list(include_archived=True, limit=100, cursor=c))
    memories = {}
    versions = {}
    for store in stores:
        for memory in _all(lambda c, s=store: engine.memories.list(s.id, limit=100, cursor=c)):
            memories[memory.id] = (memory.path, memory.content_sha256)
        for version in _all(lambda c, s=store: engine.versions.list(s.id, limit=100, cursor=c)):
            versions[version.id] = (version.memory_id, version.operation, version.content_sha256)
    sessions = _all(lambda c: engine.sessions.list(include_archived=True, limit=100, cursor=c))
    return {
        "stores": sorted((s.id, s.name) for s in stores),
        "memories": memories,
        "versions": versions,
        "sessions": sorted(s.id for s in sessions),
        "keys": sorted((k.id, k.name) for k in engine.api_keys.list()),
    }


def _version_count(engine: Engine, store_id: str) -> int:
    return len(_all(lambda c: engine.versions.list(store_id, limit=100, cursor=c)))


def test_backup_under_writes_restores_into_a_fresh_home(
    mounter: Mounter,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    memfs_home: Path,
    tmp_path: Path,
) -> None:
    store = make_store("Notes")
    # Content redacted before the backup: in no byte of it.
    canary = f"REDACTED-CANARY-{uuid.uuid4().hex}"
    secret = store_engine.memories.create(store.id, "/secret.md", f"{canary}\n")
    store_engine.memories.update(store.id, secret.id, content="nothing to see\n")
    store_engine.versions.redact(store.id, secret.memory_version_id)
    key, key_secret = store_engine.api_keys.create("backup-test", [Scope.ADMIN])
    store_engine.sessions.create([ResourceSpec(store.id, Access.READ_WRITE)])

    mount = mounter.mount("Notes")
    stop = tmp_path / "stop-writing"
    writer = _start_writer(mount / "notes", stop)
    try:
        wait_until(
            lambda: _version_count(store_engine, store.id) >= WRITES_BEFORE_BACKUP,
            "the mount's first writes",
        )
        backup = tmp_path / "backups" / "memfs.db"
        backup.parent.mkdir()
        result = run_memfs("backup", str(backup), env=memfs_env(memfs_home))
        assert result.returncode == 0, result.stderr
        assert writer.poll() is None, "the writer must still be writing during the backup"
        # A restore over the database a mount (and this test) has open is refused.
        refused = run_memfs("restore", str(backup), "--force", env=memfs_env(memfs_home))
    finally:
        stop.touch()
        assert writer.wait(timeout=60) == 0
    assert result.stdout.startswith(f"backup: wrote {backup} (1 stores, ")
    assert result.stdout.rstrip().endswith("fsck clean")
    assert refused.returncode == 1
    assert "is open by another process (pid " in refused.stderr
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert fsck_findings(backup) == []
    data = backup.read_bytes()
    assert canary.encode() not in data
    assert key_secret.encode() not in data  # only a digest of a secret is stored
    assert not backup.with_name("memfs.db-wal").exists()

    fresh_home = tmp_path / "fresh-home"
    restored = run_memfs("restore", str(backup), "--home", str(fresh_home))
    assert restored.returncode == 0, restored.stderr
    assert restored.stdout.startswith(f"restore: {fresh_home / 'memfs.db'} is now the backup ")
    database = fresh_home / "memfs.db"
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    assert stat.S_IMODE(fresh_home.stat().st_mode) == 0o700
    assert fsck_findings(database) == []
    with open_engine(str(backup), create=False, read_only=True) as copy:
        in_backup = _everything(copy)
    with open_engine(str(database), create=False) as engine:
        assert _everything(engine) == in_backup
        assert engine.api_keys.authenticate(key_secret).id == key.id  # the key still works
    now = _everything(store_engine)
    # A snapshot of the live database: every version it holds is one the source has
    # (same memory, operation, content); the writes after it are not in it.
    assert len(in_backup["versions"]) >= WRITES_BEFORE_BACKUP
    assert in_backup["versions"].items() <= now["versions"].items()
    assert in_backup["keys"] == now["keys"]
    assert in_backup["sessions"] == [s for s in now["sessions"] if s in in_backup["sessions"]]
    assert os.listdir(fresh_home) == ["memfs.db"]


def test_restore_refuses_an_existing_database_without_force(
    store_engine: Engine, make_store: Callable[..., MemoryStore], memfs_home: Path,
    tmp_path: Path,
) -> None:
    make_store("Notes", {"/a.md": "a\n"})
    backup = tmp_path / "b.db"
    assert run_memfs("backup", str(backup), env=memfs_env(memfs_home)).returncode == 0
    again = run_memfs("backup", str(backup), env=memfs_env(memfs_home))
    assert again.returncode == 1
    assert again.stderr == f"memfs: error: {backup} exists; give --force to replace it\n"
    store_engine.close()  # nothing has the database open now
    refused = run_memfs("restore", str(backup), env=memfs_env(memfs_home))
    assert refused.stderr == (
        f"memfs: error: a database exists at {memfs_home / 'memfs.db'}; give --force to "
        "replace it\n"
    )
    with open_engine() as engine:  # the original gets a new memory, then is put back
        engine.memories.create(engine.stores.list().items[0].id, "/b.md", "b\n")
    replaced = run_memfs("restore", str(backup), "--force", env=memfs_env(memfs_home))
    assert replaced.returncode == 0, replaced.stderr
    with open_engine() as engine:
        store = engine.stores.list().items[0]
        paths = [m.path for m in engine.memories.list(store.id).items]
    assert paths == ["/a.md"]
    assert fsck_findings(memfs_home / "memfs.db") == []
