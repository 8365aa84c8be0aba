"""``memfs watch STORE…``: the change feed as JSON lines, from a real ``memfs watch``
subprocess, while other processes write (the ``memfs`` CLI, this test's engine, a
``memfs serve``'s API).

Every line is compared whole with what the feed says (``change_to_wire`` of
``Engine.changes_since`` plus the store's name); the watcher is waited on through its
output with a deadline, never with a sleep.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support.cli import SETUP_ACTOR, Cli, memfs_command, memfs_env
from _support.serve import ServeProcess

from memfs.core.config import database_url
from memfs.core.model import Scope
from memfs.core.visibility import UserPrincipal
from memfs.remote.client import BETA_HEADER
from memfs.store import Engine, ResourceSpec
from memfs.wire import change_to_wire

DEADLINE_S = 30.0  # a bound only a broken build reaches
CTRL_C_STATUS = 130  # memfs watch at SIGINT: 128 + SIGINT, the shell's convention


class Watcher:
    """A running ``memfs watch``: its stdout lines (parsed) and stderr, read with a
    deadline."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            memfs_command("watch", *args), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self._out, self._err = self.process.stdout.fileno(), self.process.stderr.fileno()
        self._buffers = {self._out: b"", self._err: b""}
        self._selector = selectors.DefaultSelector()
        for fd in self._buffers:
            os.set_blocking(fd, False)
            self._selector.register(fd, selectors.EVENT_READ)
        self.lines: list[dict[str, Any]] = []

    @property
    def stderr(self) -> str:
        return self._buffers[self._err].decode()

    def _pump(self, deadline: float) -> bool:
        """Reads what either pipe has, waiting until ``deadline``; False once both ended."""
        if not self._selector.get_map():
            return False
        for key, _ in self._selector.select(timeout=max(0.0, deadline - time.monotonic())):
            fd = key.fd
            data = os.read(fd, 65536)
            if data:
                self._buffers[fd] += data
            else:
                self._selector.unregister(fd)
        *complete, rest = self._buffers[self._out].split(b"\n")
        self.lines += [json.loads(line) for line in complete]
        self._buffers[self._out] = rest
        return True

    def close_stdout(self) -> None:
        """Closes the reading end of its stdout (as ``| head -1`` does once done)."""
        assert self.process.stdout is not None
        self._selector.unregister(self._out)
        self.process.stdout.close()

    def wait_ready(self, stores: int = 1) -> None:
        """Until it said it watches ``stores`` stores (it follows them from then on)."""
        deadline = time.monotonic() + DEADLINE_S
        while self.stderr.count("memfs: watching ") < stores:
            assert self._pump(deadline) or self.stderr.count("memfs: watching ") >= stores, (
                f"memfs watch ended: {self.stderr}"
            )
            assert time.monotonic() < deadline, f"memfs watch is not ready: {self.stderr}"

    def read(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` lines (waits for them)."""
        deadline = time.monotonic() + DEADLINE_S
        while len(self.lines) < count:
            assert self._pump(deadline), f"memfs watch ended early: {self.lines} {self.stderr}"
            assert time.monotonic() < deadline, f"only {self.lines} after {DEADLINE_S} s"
        return self.lines[:count]

    def finish(self) -> int:
        """Waits for the exit (reading the rest of its output); its exit status."""
        deadline = time.monotonic() + DEADLINE_S
        while self._pump(deadline):
            assert time.monotonic() < deadline, f"memfs watch did not end: {self.stderr}"
        status = self.process.wait(timeout=DEADLINE_S)
        assert "Traceback" not in self.stderr, self.stderr
        return status

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._selector.close()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def watch(cli: Cli) -> Iterator[Any]:
    """``watch(*args, env=…)``: starts ``memfs watch ARGS`` on the test's home."""
    started: list[Watcher] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Watcher:
        watcher = Watcher(list(args), env or cli.env)
        started.append(watcher)
        return watcher

    yield start
    for watcher in started:
        watcher.close()


def feed(cli: Cli, store_id: str, after: int, name: str) -> list[dict[str, Any]]:
    """What the lines must be: the store's feed after ``after``, with its name."""
    with cli.engine() as engine:
        changes = engine.feed.changes_since(store_id, after)
    return [{**change_to_wire(c), "memory_store_name": name} for c in changes]


def summary(lines: list[dict[str, Any]]) -> list[tuple[int, str, str | None, str | None]]:
    return [(line["seq"], line["kind"], line["path"], line["old_path"]) for line in lines]


# ----------------------------------------------------------------- embedded


def test_watch_prints_writes_renames_and_deletes_of_other_processes(
    cli: Cli, store: dict[str, Any], watch: Any
) -> None:
    cli.put("Project Notes", "/before.md", "made before the watch\n")  # seq 1: not shown
    watcher = watch("Project Notes", "--count", "3")
    watcher.wait_ready()
    cli.run("memory", "put", "Project Notes", "/todo.md", "--content", "buy milk\n")
    cli.run("memory", "mv", "Project Notes", "/todo.md", "/done.md")
    cli.run("memory", "rm", "Project Notes", "/done.md")
    lines = watcher.read(3)
    assert summary(lines) == [
        (2, "memory_written", "/todo.md", None),
        (3, "memory_written", "/done.md", "/todo.md"),
        (4, "memory_deleted", "/done.md", None),
    ]
    assert lines == feed(cli, store["id"], 1, "Project Notes")
    assert watcher.finish() == 0  # --count 3
    assert len(watcher.lines) == 3
    assert watcher.stderr == f"memfs: watching Project Notes ({store['id']}) after seq 1\n"


def test_since_prints_the_feed_after_that_seq_first(
    cli: Cli, store: dict[str, Any], watch: Any
) -> None:
    for n in range(3):
        cli.put("Project Notes", f"/n{n}.md", f"note {n}\n")
    watcher = watch("project-notes", "--since", "1", "--count", "3")
    assert summary(watcher.read(2)) == [
        (2, "memory_written", "/n1.md", None),
        (3, "memory_written", "/n2.md", None),
    ]
    cli.put("Project Notes", "/n0.md", "note 0, again\n")
    assert summary(watcher.read(3))[2] == (4, "memory_written", "/n0.md", None)
    assert watcher.finish() == 0
    assert watcher.lines == feed(cli, store["id"], 1, "Project Notes")


def test_several_stores_by_name_and_id_each_in_seq_order(
    cli: Cli, store: dict[str, Any], watch: Any
) -> None:
    other = cli.create_store("Other")
    watcher = watch("Project Notes", other["id"], "--count", "4")
    watcher.wait_ready(2)
    with cli.engine() as engine:
        a = engine.for_caller(actor=SETUP_ACTOR).memories.create(store["id"], "/a.md", "a\n")
        engine.for_caller(actor=SETUP_ACTOR).memories.create(other["id"], "/b.md", "b\n")
        engine.for_caller(actor=SETUP_ACTOR).memories.update(store["id"], a.id, path="/c.md")
        engine.stores.update(other["id"], description="changed")
    watcher.read(4)
    assert watcher.finish() == 0
    mine = [line for line in watcher.lines if line["memory_store_id"] == store["id"]]
    theirs = [line for line in watcher.lines if line["memory_store_id"] == other["id"]]
    assert mine == feed(cli, store["id"], 0, "Project Notes")
    assert theirs == feed(cli, other["id"], 0, "Other")
    assert summary(mine) == [(1, "memory_written", "/a.md", None),
                             (2, "memory_written", "/c.md", "/a.md")]  # fmt: skip
    assert summary(theirs) == [
        (1, "memory_written", "/b.md", None),
        (2, "store_updated", None, None),
    ]


def test_a_deleted_store_ends_its_watch_after_its_last_entry(
    cli: Cli, store: dict[str, Any], watch: Any
) -> None:
    watcher = watch("Project Notes")
    watcher.wait_ready()
    cli.run("store", "delete", "Project Notes", "--yes")
    assert watcher.finish() == 0
    assert [line["kind"] for line in watcher.lines][-1] == "store_deleted"


def test_unknown_store_is_one_error_line(cli: Cli, store: dict[str, Any]) -> None:
    assert cli.error("watch", "Project Notes", "nope") == (
        "no memory store is named or has the id 'nope'"
    )
    assert cli.error("watch", "Project Notes", "--since", "5") == (
        "--since 5 is beyond the newest change of 'Project Notes' (seq 0)"
    )


def test_timeout_ends_the_watch_with_status_0(cli: Cli, store: dict[str, Any]) -> None:
    result = cli.run("watch", "Project Notes", "--timeout", "0.2")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 0), (signal.SIGINT, CTRL_C_STATUS)]
)
def test_signals_end_the_watch_quietly(
    store: dict[str, Any], watch: Any, signum: int, status: int
) -> None:
    watcher = watch("Project Notes")
    watcher.wait_ready()
    watcher.process.send_signal(signum)
    assert watcher.finish() == status
    assert watcher.stderr.count("\n") == 1, watcher.stderr  # only the "watching" line


def test_a_closed_pipe_ends_the_watch_quietly(cli: Cli, store: dict[str, Any], watch: Any) -> None:
    watcher = watch("Project Notes")
    watcher.wait_ready()
    watcher.close_stdout()
    cli.put("Project Notes", "/a.md", "a\n")
    assert watcher.finish() == 0
    assert watcher.stderr.count("\n") == 1, watcher.stderr


# ----------------------------------------------------------------- remote


@pytest.fixture
def server(cli: Cli, tmp_path: Path) -> Iterator[ServeProcess]:
    server = ServeProcess(cli.database, tmp_path, env=memfs_env(cli.home))
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log_text()
    assert server.tracebacks() == []


def api(server: ServeProcess, token: str) -> httpx.Client:
    headers = {"authorization": f"Bearer {token}", "anthropic-beta": BETA_HEADER}
    return httpx.Client(base_url=server.url, headers=headers, timeout=DEADLINE_S)


def test_remote_watch_follows_the_long_poll_with_a_session_token(
    cli: Cli, store: dict[str, Any], server: ServeProcess, watch: Any
) -> None:
    with cli.engine() as engine:
        session, token = engine.sessions.create([ResourceSpec(store["id"])])
    assert token is not None
    env = {**cli.env, "MEMFS_TOKEN": token}
    watcher = watch("project-notes", "--api", server.url, "--count", "3", env=env)
    watcher.wait_ready()
    memories = f"/v1/memory_stores/{store['id']}/memories"
    with api(server, token) as client:
        created = client.post(memories, json={"path": "/todo.md", "content": "milk\n"})
        assert created.status_code == 200, created.text
        memory_id = created.json()["id"]
        moved = client.post(f"{memories}/{memory_id}", json={"path": "/done.md"})
        assert moved.status_code == 200, moved.text
        assert client.delete(f"{memories}/{memory_id}").status_code == 200
    lines = watcher.read(3)
    assert watcher.finish() == 0
    assert summary(lines) == [
        (1, "memory_written", "/todo.md", None),
        (2, "memory_written", "/done.md", "/todo.md"),
        (3, "memory_deleted", "/done.md", None),
    ]
    assert lines == feed(cli, store["id"], 0, "Project Notes")

    # A store the session does not have: one error line.
    cli.create_store("Elsewhere")
    assert cli.run("watch", "Elsewhere", "--api", server.url, env=env, expect=1).stderr == (
        f"memfs: error: no memory store attached to session {session.id} is named 'Elsewhere'\n"
    )


def test_remote_watch_shows_what_the_key_may_see(
    cli: Cli, store: dict[str, Any], server: ServeProcess, watch: Any
) -> None:
    with cli.engine() as engine:
        _, plain = engine.api_keys.create("plain", [Scope.READ])
        _, bob = engine.api_keys.create(
            "bob", [Scope.READ, Scope.WRITE], principal=UserPrincipal(user_id="bob")
        )
    private = "---\ntype: preference\nscope: private\nuser_id: bob\n---\nbob likes tea\n"
    remote = watch(store["id"], "--api", server.url, "--count", "2",
                   env={**cli.env, "MEMFS_TOKEN": plain})  # fmt: skip
    local = watch("Project Notes", "--count", "2")
    remote.wait_ready()
    local.wait_ready()
    with api(server, bob) as client:
        memories = f"/v1/memory_stores/{store['id']}/memories"
        for path, content in (("/bob/prefs.md", private), ("/notes.md", "tea for all\n")):
            created = client.post(memories, json={"path": path, "content": content})
            assert created.status_code == 200, created.text
    remote.read(2)
    local.read(2)
    assert remote.finish() == 0
    assert local.finish() == 0
    # The CLI reads as an admin; the key without a principal sees no private record.
    assert local.lines == feed(cli, store["id"], 0, "Project Notes")
    assert summary(local.lines) == [(1, "memory_written", "/bob/prefs.md", None),
                                    (2, "memory_written", "/notes.md", None)]  # fmt: skip
    hidden = {**local.lines[0], "path": None, "content_sha256": None, "memory_version_id": None}
    assert remote.lines == [hidden, local.lines[1]]

    # An API key names stores by id.
    assert cli.run(
        "watch",
        "Project Notes",
        "--api",
        server.url,
        env={**cli.env, "MEMFS_TOKEN": plain},
        expect=1,
    ).stderr == (
        "memfs: error: no memory store has the id 'Project Notes' (with an API key, name "
        "stores by their memstore_ id)\n"
    )


def test_watch_follows_a_postgresql_database(
    cli: Cli, pg_database_url: Callable[..., str], watch: Any
) -> None:
    url = pg_database_url()
    with Engine(database_url(url)) as engine:
        store = engine.stores.create("Shared")
        watcher = watch("Shared", "--database", url, "--count", "2")
        watcher.wait_ready()  # woken by LISTEN/NOTIFY from here on
        memory = engine.for_caller(actor=SETUP_ACTOR).memories.create(store.id, "/a.md", "a\n")
        engine.for_caller(actor=SETUP_ACTOR).memories.delete(store.id, memory.id)
        watcher.read(2)
        assert watcher.finish() == 0
        expected = [change_to_wire(c) for c in engine.feed.changes_since(store.id, 0)]
    assert watcher.lines == [{**line, "memory_store_name": "Shared"} for line in expected]
    assert summary(watcher.lines) == [(1, "memory_written", "/a.md", None),
                                      (2, "memory_deleted", "/a.md", None)]  # fmt: skip
