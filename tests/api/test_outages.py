"""Outages a server must answer, never as a 500: a full disk under its SQLite database,
a PostgreSQL server restarted under it (api-contract §2.3: a retryable outage is a 503
with ``retry-after`` and ``x-should-retry: true``; README "Errors").

Real processes: ``memfs serve`` over a database on a small tmpfs this test mounts (the
suite runs as root), and over a PostgreSQL server of the test's own (never the shared
one of ``$MEMFS_TEST_PG_URL``, which other tests use at the same time).
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest
from _support.cli import REPO_ROOT, SETUP_ACTOR, memfs_env, run_memfs
from _support.polling import wait_until
from _support.serve import ServeProcess

from memfs.api.app import create_app
from memfs.core.config import database_url
from memfs.core.errors import DatabaseUnreachable
from memfs.core.model import Scope
from memfs.store import Engine

TMPFS_SIZE_BYTES = 8 * 1024 * 1024
CONTENT_BYTES = 60_000  # big enough that a few of them must grow the WAL
# A bound on the writes it takes a full tmpfs to refuse one (the WAL may reuse space).
MAX_WRITES_UNTIL_FULL = 40
HTTP_TIMEOUT_S = 30.0


def _require_root(what: str) -> None:
    if os.geteuid() != 0:
        pytest.skip(
            f"{what} needs root (the test suite runs as root); running as uid {os.geteuid()}"
        )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of :data:`TMPFS_SIZE_BYTES` mounted for this test only."""
    _require_root("mounting a tmpfs")
    where = tmp_path / "small-disk"
    where.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE_BYTES},mode=0700", "tmpfs", str(where)],
        check=True,
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)


def _write_until_full(out: BinaryIO, block: bytes) -> None:
    while True:
        try:
            out.write(block)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            return


def _fill(disk: Path) -> Path:
    """Writes ``disk/filler`` until the filesystem answers ENOSPC; returns its path."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        _write_until_full(out, b"\0" * 65536)
        _write_until_full(out, b"\0" * 512)  # and the last partial block
    return filler


def _content(n: int) -> str:
    return (f"memory {n} " * (CONTENT_BYTES // 8))[:CONTENT_BYTES]


def _assert_retryable_503(response: httpx.Response, code: str) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["x-should-retry"] == "true"
    error = response.json()["error"]
    assert error["type"] == "overloaded_error"
    assert error["details"]["error_code"] == code


def _fsck(database: str) -> None:
    checked = run_memfs("fsck", "--database", database, timeout_s=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("fsck: clean"), checked.stdout


def test_a_full_disk_is_a_retryable_503_and_writes_resume_once_space_is_freed(
    small_disk: Path, tmp_path: Path
) -> None:
    database = small_disk / "memfs.db"
    with Engine(database_url(str(database))) as engine:
        _, secret = engine.api_keys.create("outage", [Scope.ADMIN])
        store = engine.stores.create("full-disk")
    home = tmp_path / "home"
    home.mkdir()
    server = ServeProcess(database, tmp_path, env=memfs_env(home))
    acknowledged: dict[str, str] = {}
    try:
        with httpx.Client(
            base_url=server.url,
            headers={"authorization": f"Bearer {secret}"},
            timeout=HTTP_TIMEOUT_S,
        ) as http:
            memories = f"/v1/memory_stores/{store.id}/memories"
            first = http.post(memories, json={"path": "/before.md", "content": _content(0)})
            assert first.status_code == 200, first.text
            acknowledged[first.json()["id"]] = _content(0)
            filler = _fill(small_disk)

            refused = None
            for n in range(1, MAX_WRITES_UNTIL_FULL):
                body = {"path": f"/full/{n}.md", "content": _content(n)}
                response = http.post(memories, json=body)
                if response.status_code == 200:
                    acknowledged[response.json()["id"]] = _content(n)
                    continue
                refused = response
                break
            assert refused is not None, "the full disk never refused a write"
            _assert_retryable_503(refused, "storage_full")
            assert "disk full" in refused.json()["error"]["message"]
            # An update is refused alike; reads and the server keep answering.
            update = http.post(f"{memories}/{first.json()['id']}", json={"content": _content(99)})
            _assert_retryable_503(update, "storage_full")
            assert http.get(f"{memories}/{first.json()['id']}").json()["content"] == _content(0)
            assert http.get("/healthz").status_code == 200
            assert server.process is not None
            assert server.process.poll() is None

            filler.unlink()
            resumed = http.post(memories, json={"path": "/after.md", "content": _content(100)})
            assert resumed.status_code == 200, resumed.text
            acknowledged[resumed.json()["id"]] = _content(100)
            for memory_id, content in acknowledged.items():
                assert http.get(f"{memories}/{memory_id}").json()["content"] == content
    finally:
        status = server.stop()
    assert status == 0, server.log_text()
    assert server.tracebacks() == [], server.log_text()
    _fsck(str(database))


class _OwnPostgres:
    """A throwaway PostgreSQL server of this test's own, started by
    ``scripts/pg-test-server`` in its own directory on its own port, so that restarting
    it disturbs no other test."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.directory = Path(f"/tmp/memfs-outage-pg-{uuid.uuid4().hex[:12]}")
        self.env = os.environ | {
            "MEMFS_PG_DIR": str(self.directory),
            "MEMFS_PG_PORT": str(self.port),
        }
        self.url = self._script("start").stdout.strip()

    def _script(self, action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPO_ROOT / "scripts" / "pg-test-server"), action],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )

    def _pg_ctl(self, *args: str) -> None:
        versions = sorted(Path("/usr/lib/postgresql").iterdir(), key=lambda p: int(p.name))
        command = [str(versions[-1] / "bin" / "pg_ctl"), "-D", str(self.directory), *args]
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *command],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is terminated (admin_shutdown)."""
        # -l: the new postmaster's output goes to the log, not to our pipe.
        self._pg_ctl("restart", "-m", "fast", "-w", "-l", str(self.directory / "server.log"))

    def stop(self) -> None:
        self._script("stop")

    def start(self) -> None:
        self._script("start")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def own_postgres() -> Iterator[_OwnPostgres]:
    _require_root("a PostgreSQL server of the test's own (run as user postgres)")
    if not Path("/usr/lib/postgresql").is_dir():
        pytest.skip("PostgreSQL is not installed (/usr/lib/postgresql is missing)")
    server = _OwnPostgres()
    try:
        yield server
    finally:
        server.remove()


def _contents(http: httpx.Client, memories: str) -> dict[str, str]:
    """Path → content of every live memory, through the listing pages."""
    listed: dict[str, str] = {}
    params: dict[str, str | int] = {"view": "full", "limit": 20}
    while True:
        page = http.get(memories, params=params).json()
        listed |= {m["path"]: m["content"] for m in page["data"] if m["type"] == "memory"}
        if page.get("next_page") is None:
            return listed
        params["page"] = page["next_page"]


WRITER_THREADS = 4
RESTARTS = 3


def test_a_postgresql_restart_is_a_retryable_503_and_loses_nothing_acknowledged(
    own_postgres: _OwnPostgres, tmp_path: Path
) -> None:
    with Engine(database_url(own_postgres.url)) as engine:
        _, secret = engine.api_keys.create("outage", [Scope.ADMIN])
        store = engine.stores.create("restarts")
    home = tmp_path / "home"
    home.mkdir()
    server = ServeProcess(own_postgres.url, tmp_path, env=memfs_env(home))
    memories = f"/v1/memory_stores/{store.id}/memories"
    headers = {"authorization": f"Bearer {secret}"}
    statuses: list[tuple[int, str | None, bool]] = []  # status, x-should-retry, retry-after
    acknowledged: dict[str, str] = {}  # path → content of each 200
    unanswered: list[str] = []
    stop = threading.Event()

    def write(worker: int) -> None:
        with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_TIMEOUT_S) as http:
            n = 0
            while not stop.is_set():
                n += 1
                path, content = f"/w{worker}/{n}.md", f"writer {worker} memory {n}"
                try:
                    response = http.post(memories, json={"path": path, "content": content})
                except httpx.HTTPError as exc:
                    unanswered.append(f"{path}: {exc!r}")
                    continue
                retry = (response.headers.get("x-should-retry"), "retry-after" in response.headers)
                statuses.append((response.status_code, *retry))
                if response.status_code == 200:
                    acknowledged[path] = content

    writers = [
        threading.Thread(target=write, args=(w,), name=f"writer-{w}") for w in range(WRITER_THREADS)
    ]
    try:
        for thread in writers:
            thread.start()
        for _ in range(RESTARTS):
            count = len(acknowledged)
            wait_until(lambda count=count: len(acknowledged) > count + 10, "writes to succeed")
            own_postgres.restart()
        with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_TIMEOUT_S) as http:
            # The server is away only while PostgreSQL is: a write then is a 503, never 500.
            own_postgres.stop()
            down = http.post(memories, json={"path": "/down.md", "content": "x"})
            _assert_retryable_503(down, "database_unreachable")
            read = http.get(memories)
            _assert_retryable_503(read, "database_unreachable")
            own_postgres.start()
            count = len(acknowledged)
            wait_until(lambda: len(acknowledged) > count + 10, "writes to resume", timeout_s=30)
            stop.set()
            for thread in writers:
                thread.join(timeout=HTTP_TIMEOUT_S * 2)
            assert [t.name for t in writers if t.is_alive()] == []
            assert unanswered == []
            # A create cut off during its commit and run again by the server is a 409
            # naming the memory it made: nothing else may fail, and every 503 says retry.
            outcomes = set(statuses)
            assert outcomes <= {(200, None, False), (409, "false", False), (503, "true", True)}
            listed = _contents(http, memories)
            lost = {path for path, content in acknowledged.items() if listed.get(path) != content}
            assert lost == set()
    finally:
        stop.set()
        for thread in writers:
            thread.join(timeout=HTTP_TIMEOUT_S * 2)
        status = server.stop()
    assert status == 0, server.log_text()
    assert server.tracebacks() == [], server.log_text()
    _fsck(own_postgres.url)


# ------------------------------------------------------------- in process


def _flaky(facade: object, name: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Makes method ``name`` of ``facade``'s class (every caller's: the routes bind a
    caller per request) lose its connection on its first call; returns the list that
    counts the calls."""
    calls: list[int] = []
    cls = type(facade)
    real = getattr(cls, name)

    def lose_connection_once(self: object, *args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise DatabaseUnreachable("server closed the connection unexpectedly")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, lose_connection_once)
    return calls


async def test_a_lost_connection_is_run_once_more_only_where_that_is_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Engine(f"sqlite:///{tmp_path / 'local.db'}") as engine:
        _, secret = engine.api_keys.create("t", [Scope.ADMIN])
        store = engine.stores.create("s")
        memory = engine.for_caller(actor=SETUP_ACTOR).memories.create(store.id, "/a.md", "one")
        app = create_app(engine)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://memfs.test",
            headers={"authorization": f"Bearer {secret}"},
        ) as http:
            memories = f"/v1/memory_stores/{store.id}/memories"
            # Authentication is a read: run again, answered.
            calls = _flaky(engine.api_keys, "authenticate", monkeypatch)
            assert (await http.get(f"/v1/memory_stores/{store.id}")).status_code == 200
            assert len(calls) == 2
            # A read: run again, answered.
            calls = _flaky(engine.stores, "get", monkeypatch)
            assert (await http.get(f"/v1/memory_stores/{store.id}")).status_code == 200
            assert len(calls) == 2
            # An update under its precondition: run again, applied once.
            calls = _flaky(engine.memories, "update", monkeypatch)
            precondition = {"type": "content_sha256", "content_sha256": memory.content_sha256}
            body = {"content": "two", "precondition": precondition}
            updated = await http.post(f"{memories}/{memory.id}", json=body)
            assert updated.status_code == 200, updated.text
            assert len(calls) == 2
            # A create: its path must be free, so running it again can't make two.
            calls = _flaky(engine.memories, "create_with_record", monkeypatch)
            created = await http.post(memories, json={"path": "/b.md", "content": "b"})
            assert created.status_code == 200, created.text
            assert len(calls) == 2
            # An update without a precondition, a store's creation: the client decides.
            calls = _flaky(engine.memories, "update", monkeypatch)
            blind = await http.post(f"{memories}/{memory.id}", json={"content": "three"})
            _assert_retryable_503(blind, "database_unreachable")
            assert len(calls) == 1
            calls = _flaky(engine.stores, "create", monkeypatch)
            _assert_retryable_503(
                await http.post("/v1/memory_stores", json={"name": "t"}), "database_unreachable"
            )
            assert len(calls) == 1
        assert engine.memories.get(store.id, memory.id).content == "two"
        assert list(engine.iter_fsck_findings()) == []
