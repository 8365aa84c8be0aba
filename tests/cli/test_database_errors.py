"""Opening a database, the CLI side: a missing database is an error naming the file and
creates nothing, except for the commands that make something; a reader without write
access to the database reads it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _support.cli import Cli, memfs_command, memfs_env


@pytest.mark.parametrize(
    "command",
    [
        ("store", "list"),
        ("memory", "cat", "notes", "/a.md"),
        ("session", "create", "--store", "notes"),
        ("key", "list"),
        ("prompt", "--store", "notes"),
        ("export", "notes", "-", "--format", "jsonl"),
    ],
)
def test_a_missing_database_is_an_error_naming_it(
    cli: Cli, tmp_path: Path, command: tuple[str, ...]
) -> None:
    missing = tmp_path / "nonexistent" / "x.db"
    error = cli.error(*command, "--database", str(missing))
    assert error.startswith(f"no memfs database at {missing} "), error
    assert not missing.exists()
    assert not missing.parent.exists()


def test_the_default_database_missing_is_an_error_too(cli: Cli) -> None:
    error = cli.error("store", "list")
    assert error.startswith(f"no memfs database at {cli.database} "), error
    assert not cli.database.exists()


@pytest.mark.parametrize(
    "command",
    [
        ("store", "create", "notes"),
        ("key", "create", "--scope", "admin"),
    ],
)
def test_commands_that_make_something_create_the_database(
    cli: Cli, tmp_path: Path, command: tuple[str, ...]
) -> None:
    database = tmp_path / "new" / "memfs.db"
    cli.run(*command, "--database", str(database))
    assert database.exists()


def test_import_creates_the_database_only_with_create(cli: Cli, tmp_path: Path) -> None:
    source = tmp_path / "docs"
    source.mkdir()
    (source / "a.md").write_text("a\n")
    assert cli.error("import", str(source), "--store", "docs").startswith("no memfs database")
    assert not cli.database.exists()
    cli.run("import", str(source), "--store", "docs", "--create")
    assert cli.paths("docs") == ["/a.md"]


def _as_nobody(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs ``memfs ARGS`` as uid/gid 65534 that may read (and search) every file but
    write only where others may: a local user without write access to the database."""
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
         *memfs_command(*args)],
        capture_output=True, text=True, env=env, cwd="/", timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.skipif(
    shutil.which("setpriv") is None or os.geteuid() != 0,
    reason="needs root and setpriv to run as another user",
)
def test_a_reader_without_write_access_reads(cli: Cli, store: dict[str, Any]) -> None:
    cli.put("Project Notes", "/a.md", "shared words\n")
    # The database readable, not writable, by the other user; its directory is shared
    # (sticky, like /tmp), so SQLite can make the reader's shared-memory file (a WAL
    # database can't be read without one).
    for path in cli.home.iterdir():
        os.chmod(path, 0o644)
    os.chmod(cli.home, 0o1777)
    os.chmod(cli.home.parent, 0o755)
    env = memfs_env(cli.home)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    result = _as_nobody("memory", "cat", "Project Notes", "/a.md", env=env)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stdout == "shared words\n"


def test_fsck_of_a_missing_database_names_it_and_creates_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    missing = tmp_path / "nonexistent" / "x.db"
    result = cli.run("fsck", "--database", str(missing), expect=1)
    [finding] = result.lines
    assert finding.startswith(f"fsck: database: no memfs database at {missing} "), finding
    assert result.stderr == "memfs: error: fsck found 1 problem\n"
    assert not missing.parent.exists()


def test_fsck_reports_a_database_it_cannot_open_as_a_finding(cli: Cli, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not a SQLite database, only text\n" * 200)
    before = damaged.read_bytes()
    result = cli.run("fsck", "--database", str(damaged), expect=1)
    [finding] = result.lines
    assert finding == f"fsck: database: {damaged} is not a SQLite database; memfs left it alone"
    assert result.stderr == "memfs: error: fsck found 1 problem\n"
    assert damaged.read_bytes() == before  # looked at, not changed


@pytest.mark.parametrize("option", [(), ("--quick",)])
def test_fsck_runs_sqlite_integrity_checks(
    cli: Cli, store: dict[str, Any], option: tuple[str, ...]
) -> None:
    cli.put("Project Notes", "/a.md", "a\n")
    assert cli.run("fsck", *option).stdout.startswith("fsck: clean (1 stores, 1 memories")
