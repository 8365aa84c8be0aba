"""The real ``memfs`` command in a subprocess: one runner for every test directory.

- :func:`memfs_command`, :func:`run_memfs`: ``python -m memfs.cli ARGS`` of this
  interpreter (the console script's entry point), returning the finished process.
- :func:`memfs_env`: an environment with its own ``$MEMFS_HOME`` and none of the
  variables that would make a run depend on the caller's shell.
- :class:`Cli`: runs commands against one ``$MEMFS_HOME`` and checks each run (exit
  status, no traceback); in-process helpers set the scene through the engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfs.core.errors import NotFound
from memfs.core.model import Actor
from memfs.store import Engine, open_engine
from memfs.wire import memory_to_wire, store_to_wire, version_to_wire

__all__ = [
    "MEMFS",
    "REPO_ROOT",
    "RUN_TIMEOUT_S",
    "SETUP_ACTOR",
    "Cli",
    "Result",
    "fsck_findings",
    "memfs_command",
    "memfs_env",
    "run_memfs",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
# The console script of this environment (what users run; `memfs mount` re-executes it).
MEMFS = str(Path(sys.executable).with_name("memfs"))
RUN_TIMEOUT_S = 180  # a bound for a hung command, not a performance target
# Author of the writes tests make in-process to set the scene (not under test).
SETUP_ACTOR = Actor.user("test-setup")
# Variables of the caller's shell that would change what a command does.
_SCRUBBED = ("MEMFS_DATABASE", "MEMFS_MEMORY_LIMIT", "MEMFS_TOKEN")


def memfs_command(*args: str) -> list[str]:
    """``python -m memfs.cli ARGS`` of this interpreter's environment."""
    return [sys.executable, "-m", "memfs.cli", *args]


def memfs_env(home: Path | None = None, **extra: str) -> dict[str, str]:
    """This process's environment with ``$MEMFS_HOME=home`` (if given), without the
    variables in ``_SCRUBBED``, the repository on ``PYTHONPATH``, plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    if home is not None:
        env["MEMFS_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env.update(extra)
    return env


def run_memfs(
    *args: str,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    cwd: Path | None = None,
    timeout_s: float = RUN_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """Runs ``memfs ARGS`` and returns the finished process (text; never raises on the
    exit status)."""
    data = input.encode("utf-8") if isinstance(input, str) else input
    completed = subprocess.run(
        memfs_command(*args),
        input=data if data is not None else b"",
        capture_output=True,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        timeout=timeout_s,
        check=False,
    )
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8", errors="replace"),
        completed.stderr.decode("utf-8", errors="replace"),
    )


def fsck_findings(database: str | Path) -> list[str]:
    """What the store's fsck finds in ``database`` (a file path or URL), in-process."""
    engine = open_engine(str(database) if "://" in str(database) else f"sqlite:///{database}")
    try:
        return list(engine.iter_fsck_findings())
    finally:
        engine.close()


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
        self.env = memfs_env(home, COLUMNS="200")

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
            memfs_command(*args),
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

    def error(self, *args: str, input: bytes | str | None = None) -> str:
        """Runs a command that must fail with one ``memfs: error:`` line; returns the line."""
        result = self.run(*args, input=input, expect=1)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("memfs: error: "), result.stderr
        return lines[0].removeprefix("memfs: error: ")

    # In-process helpers: setting the scene and inspecting the result through the engine
    # directly, so that each test runs a subprocess only for the commands it is about.

    @property
    def database(self) -> Path:
        return self.home / "memfs.db"

    @contextlib.contextmanager
    def engine(self) -> Iterator[Engine]:
        """The engine on this ``$MEMFS_HOME``'s database."""
        engine = open_engine(f"sqlite:///{self.database}")
        try:
            yield engine
        finally:
            engine.close()

    def create_store(self, name: str, description: str = "") -> dict[str, Any]:
        with self.engine() as engine:
            return store_to_wire(engine.stores.create(name, description))

    def put(self, store: str, path: str, content: str) -> dict[str, Any]:
        """Creates or replaces a memory in-process; returns its wire object."""
        with self.engine() as engine:
            store_id = engine.stores.find(store).id
            try:
                current = engine.memories.get_by_path(store_id, path, with_content=False)
            except NotFound:
                memory = engine.for_caller(actor=SETUP_ACTOR).memories.create(
                    store_id, path, content
                )
            else:
                memory = engine.for_caller(actor=SETUP_ACTOR).memories.update(
                    store_id,
                    current.id,
                    content=content,
                )
            return memory_to_wire(memory, full=False)

    def versions(self, store: str, *, memory_id: str | None = None) -> list[dict[str, Any]]:
        """Every version of a store, newest first, as wire objects (with content)."""
        with self.engine() as engine:
            store_id = engine.stores.find(store).id
            found: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                page = engine.versions.list(
                    store_id, memory_id=memory_id, limit=100, cursor=cursor, with_content=True
                )
                found += [version_to_wire(v, full=True) for v in page.items]
                cursor = page.next_cursor
                if cursor is None:
                    return found

    def paths(self, store: str) -> list[str]:
        with self.engine() as engine:
            return [m.path for m in engine.memories.all(engine.stores.find(store).id)]

    def content(self, store: str, path: str) -> str:
        with self.engine() as engine:
            memory = engine.memories.get_by_path(engine.stores.find(store).id, path)
            assert memory.content is not None
            return memory.content
