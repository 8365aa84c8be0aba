"""Fixtures of the CLI tests: the real ``memfs`` command in a subprocess.

``cli`` runs ``python -m memfs.cli`` (the console script's entry point) with a fresh
``$MEMFS_HOME``; every run is checked for a traceback, and at teardown ``fsck`` must find
nothing in the database the test wrote.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memfs.errors import NotFound
from memfs.model import Actor
from memfs.store import Engine, open_engine
from memfs.wire import memory_to_wire, store_to_wire, version_to_wire

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 180  # a bound for a hung command, not a performance target
# Author of the writes tests make in-process to set the scene (not under test).
SETUP_ACTOR = Actor.user("test-setup")


@dataclass
class Result:
    """One finished ``memfs`` run."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes

    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


class Cli:
    """Runs ``memfs ARGS…`` against one ``$MEMFS_HOME``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("MEMFS_DATABASE", "MEMFS_MEMORY_LIMIT")
        }
        self.env["MEMFS_HOME"] = str(home)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        self.env["COLUMNS"] = "200"

    def run(
        self,
        *args: str,
        input: bytes | str | None = None,
        expect: int = 0,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Result:
        """Runs the command; asserts its exit status is ``expect`` and there's no traceback."""
        data = input.encode("utf-8") if isinstance(input, str) else input
        completed = subprocess.run(
            [sys.executable, "-m", "memfs.cli", *args],
            input=data if data is not None else b"",
            capture_output=True,
            env={**self.env, **(env or {})},
            cwd=cwd,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        result = Result(
            args=args,
            returncode=completed.returncode,
            stdout=completed.stdout.decode("utf-8"),
            stderr=completed.stderr.decode("utf-8"),
            stdout_bytes=completed.stdout,
        )
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == expect, (
            f"memfs {' '.join(args)} exited {result.returncode}, expected {expect}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
        return result

    # In-process helpers: setting the scene and inspecting the result through the engine
    # directly, so that each test runs a subprocess only for the commands it is about.

    @contextlib.contextmanager
    def engine(self) -> Iterator[Engine]:
        """The engine on this ``$MEMFS_HOME``'s database."""
        engine = open_engine(f"sqlite:///{self.home / 'memfs.db'}")
        try:
            yield engine
        finally:
            engine.close()

    def create_store(self, name: str, description: str = "") -> dict[str, Any]:
        with self.engine() as engine:
            return store_to_wire(engine.create_store(name, description))

    def put(self, store: str, path: str, content: str) -> dict[str, Any]:
        """Creates or replaces a memory in-process; returns its wire object."""
        with self.engine() as engine:
            store_id = engine.find_store(store).id
            try:
                current = engine.get_memory_by_path(store_id, path, with_content=False)
            except NotFound:
                memory = engine.create_memory(store_id, path, content, actor=SETUP_ACTOR)
            else:
                memory = engine.update_memory(
                    store_id, current.id, content=content, actor=SETUP_ACTOR
                )
            return memory_to_wire(memory, full=False)

    def versions(self, store: str, *, memory_id: str | None = None) -> list[dict[str, Any]]:
        """Every version of a store, newest first, as wire objects (with content)."""
        with self.engine() as engine:
            store_id = engine.find_store(store).id
            found: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                page = engine.list_versions(
                    store_id, memory_id=memory_id, limit=100, cursor=cursor, with_content=True
                )
                found += [version_to_wire(v, full=True) for v in page.items]
                cursor = page.next_cursor
                if cursor is None:
                    return found

    def paths(self, store: str) -> list[str]:
        with self.engine() as engine:
            return [m.path for m in engine.all_memories(engine.find_store(store).id)]

    def content(self, store: str, path: str) -> str:
        with self.engine() as engine:
            memory = engine.get_memory_by_path(engine.find_store(store).id, path)
            assert memory.content is not None
            return memory.content

    def error(self, *args: str, input: bytes | str | None = None) -> str:
        """Runs a command that must fail with one ``memfs: error:`` line; returns the line."""
        result = self.run(*args, input=input, expect=1)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("memfs: error: "), result.stderr
        return lines[0].removeprefix("memfs: error: ")


@pytest.fixture
def cli(memfs_home: Path) -> Iterator[Cli]:
    runner = Cli(memfs_home)
    yield runner
    if (memfs_home / "memfs.db").exists():
        engine = open_engine(f"sqlite:///{memfs_home / 'memfs.db'}")
        try:
            findings = list(engine.iter_fsck_findings())
        finally:
            engine.close()
        assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)


@pytest.fixture
def store(cli: Cli) -> dict[str, Any]:
    """A store named "Project Notes" (its wire object), created in-process."""
    return cli.create_store("Project Notes", "Notes on the project")
