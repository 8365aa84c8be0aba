"""``memfs`` starts fast because each command loads only what it uses (SPEC §5).

Not a timed test (timing on a busy CI box is noise): each run records which libraries
the real command imported, in a fresh interpreter, and the heavy ones must be absent
where they are not needed. ``memfs --help`` lists every command from the table in
``memfs/cli/__init__.py`` without importing any command module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support.cli import RUN_TIMEOUT_S, Cli, memfs_env
from _support.scripts import SCRIPTS_DIR

# What the API server, the mount daemon and the remote client need; no store command.
_SERVING = {"fastapi", "starlette", "hypercorn", "pyfuse3", "trio", "httpx", "alembic", "mcp"}


def _probe(home: Path, *args: str) -> dict[str, object]:
    """The probe's record of ``memfs ARGS`` run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS_DIR / "cli_imports.py"), *args],
        env=memfs_env(home),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=True,
    )
    probe: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    assert probe["status"] in (0, None), done.stderr
    return probe


def _imported(home: Path, *args: str) -> tuple[str, set[str]]:
    """(stdout, top-level packages imported) of ``memfs ARGS`` in a fresh interpreter."""
    probe = _probe(home, *args)
    return str(probe["out"]), set(probe["modules"])  # type: ignore[call-overload]


# The store's modules that listing stores does not run (README "Performance": a command
# imports only the aggregates it uses).
_NOT_FOR_STORE_LIST = {
    "memfs.store.search",
    "memfs.store.folds",
    "memfs.store.memories",
    "memfs.store.records",
    "memfs.store.identities",
    "memfs.store.credentials",
    "memfs.store.retention",
    "memfs.store.fsck",
    "memfs.store.embedder",
    "memfs.store.indexer",
    # History's objects and the search query language: only the commands that print a
    # diff, a restore or merge plan, or a search hit import them (cli.stores, wire).
    "memfs.core.history",
    "memfs.core.query",
}


def test_store_list_imports_only_the_aggregates_it_runs(
    cli: Cli, store: dict[str, object]
) -> None:
    probe = _probe(cli.home, "store", "list")
    assert "Project Notes" in str(probe["out"])
    loaded = set(probe["memfs_modules"]) & _NOT_FOR_STORE_LIST  # type: ignore[call-overload]
    assert loaded == set(), f"memfs store list imported {sorted(loaded)}"


# Modules that reading a store in the embedded SQLite home does not run, and what each
# cost every start before it was left out (README "Performance", CLI start).
_NOT_FOR_READING = {
    # SQLAlchemy itself, half of such a command's start: these commands peek at the
    # SQLite file through the standard library's sqlite3 (memfs/store/peek.py).
    "sqlalchemy",
    # SQLAlchemy's PostgreSQL dialect with every driver's module: postgresql_where on the
    # schema's partial indexes loaded it (schema._partial_index).
    "sqlalchemy.dialects.postgresql",
    # YAML, for record headers only (core.records imports it on first use).
    "yaml",
}


@pytest.mark.parametrize(
    ("args", "printed"),
    [
        (("store", "list"), "Project Notes"),
        (("store", "list", "--archived", "--json"), "Project Notes"),
        (("store", "show", "project-notes"), "Project Notes"),
        (("memory", "cat", "Project Notes", "/notes.md"), "hello"),
    ],
)
def test_reading_a_sqlite_home_imports_only_what_it_runs(
    cli: Cli, store: dict[str, object], args: tuple[str, ...], printed: str
) -> None:
    cli.put("Project Notes", "/notes.md", "hello")
    probe = _probe(cli.home, *args)
    assert printed in str(probe["out"])
    loaded = set(probe["all_modules"]) & _NOT_FOR_READING  # type: ignore[call-overload]
    assert loaded == set(), f"memfs {' '.join(args)} imported {sorted(loaded)}"
    # The store builds its models from its own rows without validating them, so no
    # model's validator is built (core.model's defer_build; store._common).
    assert probe["built_models"] == [], f"memfs {' '.join(args)} built validators"


def test_help_lists_every_command_and_imports_no_heavy_library(memfs_home: Path) -> None:
    from memfs.cli import COMMANDS

    out, modules = _imported(memfs_home, "--help")
    for name in COMMANDS:
        assert f"  {name} " in out, f"{name} missing from memfs --help"
    heavy = modules & {"sqlalchemy", "pydantic", "rich", *_SERVING}
    assert heavy == set(), f"memfs --help imported {sorted(heavy)}"


@pytest.mark.parametrize(
    "args",
    [("store", "list"), ("memory", "ls", "Project Notes"), ("version", "ls", "Project Notes")],
)
def test_store_commands_load_no_server_daemon_or_client(
    cli: Cli, store: dict[str, object], args: tuple[str, ...]
) -> None:
    cli.put("Project Notes", "/notes.md", "hello")
    out, modules = _imported(cli.home, *args)
    assert out, f"memfs {' '.join(args)} printed nothing"
    loaded = modules & _SERVING
    assert loaded == set(), f"memfs {' '.join(args)} imported {sorted(loaded)}"


def test_version_prints_the_package_version_and_imports_no_heavy_library(
    memfs_home: Path,
) -> None:
    from memfs import __version__

    out, modules = _imported(memfs_home, "--version")
    assert out == f"memfs {__version__}\n"
    heavy = modules & {"sqlalchemy", "pydantic", "rich", *_SERVING}
    assert heavy == set(), f"memfs --version imported {sorted(heavy)}"


def test_a_home_only_the_engine_can_read_is_read_by_the_engine(
    cli: Cli, store: dict[str, object]
) -> None:
    """While an erasure is pending (SPEC §2) the peek stands aside: the engine answers
    (and its close completes the erasure), with the same output."""
    cli.put("Project Notes", "/notes.md", "hello")
    peeked = _probe(cli.home, "memory", "cat", "Project Notes", "/notes.md")
    marker = cli.home / "memfs.db-erase-pending"
    marker.write_text("2026-12-06T00:00:00+00:00\n")
    read = _probe(cli.home, "memory", "cat", "Project Notes", "/notes.md")
    assert read["out"] == peeked["out"] == "hello"
    assert "sqlalchemy" in read["modules"]  # type: ignore[operator]
    assert "sqlalchemy" not in peeked["modules"]  # type: ignore[operator]


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("MEMFS_MEMORY_LIMIT", "abc", "memfs: error: cannot open the store database: invalid"),
        ("MEMFS_SQLITE_SYNC", "bogus", "memfs: error: MEMFS_SQLITE_SYNC must be"),
    ],
)
def test_a_bad_setting_fails_a_read_whichever_path_answers_it(
    cli: Cli, store: dict[str, object], variable: str, value: str, message: str
) -> None:
    """The peek reads the engine's settings as the engine does (a trial found it
    answering where the engine refused): the same line and status with and without it."""
    cli.put("Project Notes", "/notes.md", "hello")
    env = memfs_env(cli.home, **{variable: value})
    args = ("memory", "cat", "Project Notes", "/notes.md")
    peeked = subprocess.run(
        [sys.executable, "-m", "memfs.cli", *args],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    marker = cli.home / "memfs.db-erase-pending"
    marker.write_text("2026-12-06T00:00:00+00:00\n")
    marker.chmod(0o600)  # private, as memfs makes it (else the command reports it)
    engine = subprocess.run(
        [sys.executable, "-m", "memfs.cli", *args],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    assert (peeked.returncode, peeked.stdout, peeked.stderr) == (
        engine.returncode, engine.stdout, engine.stderr
    )
    assert peeked.returncode == 1
    assert peeked.stderr.startswith(message), peeked.stderr
