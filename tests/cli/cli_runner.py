"""Fixtures of the CLI tests: the real ``memfs`` command in a subprocess.

``cli`` runs ``python -m memfs.cli`` (the console script's entry point) with a fresh
``$MEMFS_HOME``; every run is checked for a traceback, and at teardown ``fsck`` must find
nothing in the database the test wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memfs.store import open_engine

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 60


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
    """A store named "Project Notes" (its wire object)."""
    return cli.run(
        "store", "create", "Project Notes", "--description", "Notes on the project", "--json"
    ).json()
