"""Fixtures of the CLI tests: the real ``memfs`` command in a subprocess.

``cli`` is a :class:`_support.cli.Cli` on a fresh ``$MEMFS_HOME``; every run is checked
for a traceback, and at teardown ``fsck`` must find nothing in the database the test
wrote. ``store`` is a store named "Project Notes", created in-process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.cli import Cli, fsck_findings


@pytest.fixture
def cli(memfs_home: Path) -> Iterator[Cli]:
    runner = Cli(memfs_home)
    yield runner
    if runner.database.exists():
        findings = fsck_findings(runner.database)
        assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)


@pytest.fixture
def store(cli: Cli) -> dict[str, Any]:
    """A store named "Project Notes" (its wire object), created in-process."""
    return cli.create_store("Project Notes", "Notes on the project")
