"""The store: the only package with SQL. Use it through this face only.

:class:`Engine` is one open database; its calls are per-aggregate facades (one
transaction per call), the unrestricted caller's on the engine itself
(``engine.memories.get(…)``) and a bound caller's on :meth:`Engine.for_caller`
(a :class:`Caller`; see :mod:`memfs.store.engine`). Nothing outside ``memfs/store``
imports the modules behind them (tests/test_layers.py checks it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memfs.store._connections import WouldWait
    from memfs.store.caller import Caller
    from memfs.store.credentials import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, ResourceSpec
    from memfs.store.engine import Engine
    from memfs.store.peek import Peek
    from memfs.store.retention import PruneResult

# The face, imported at first use (a command loads only what it runs, and one that
# only peeks never loads SQLAlchemy: README "Performance").
_LATER = {
    "Caller": "memfs.store.caller",
    "Engine": "memfs.store.engine",
    "WouldWait": "memfs.store._connections",
    "Peek": "memfs.store.peek",
    "API_KEY_SECRET_PREFIX": "memfs.store.credentials",
    "SESSION_TOKEN_PREFIX": "memfs.store.credentials",
    "ResourceSpec": "memfs.store.credentials",
    "PruneResult": "memfs.store.retention",
}


def __getattr__(name: str) -> Any:
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module 'memfs.store' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "API_KEY_SECRET_PREFIX",
    "Caller",
    "SESSION_TOKEN_PREFIX",
    "Engine",
    "Peek",
    "PruneResult",
    "ResourceSpec",
    "WouldWait",
    "fsck_database",
    "open_engine",
    "open_peek",
    "restore_database",
]


def open_engine(
    database: str | None = None,
    *,
    memory_limit: int | None = None,
    create: bool = True,
    read_only: bool | None = None,
) -> Engine:
    """Opens the configured database (see :func:`memfs.core.config.database_url`).

    ``create`` and ``read_only`` are :class:`Engine`'s: commands that only read or check
    pass ``create=False`` (a missing database is then DatabaseNotFound, not a new file).
    """
    from memfs.core.config import database_url
    from memfs.store.engine import Engine

    return Engine(
        database_url(database), memory_limit=memory_limit, create=create, read_only=read_only
    )


def open_peek(database: str | None = None) -> Peek | None:
    """A read-only :class:`~memfs.store.peek.Peek` at the configured database through
    the standard library's ``sqlite3`` (no SQLAlchemy: README "Performance", CLI start),
    or None when only the engine can answer (not a SQLite file at the schema head, an
    erasure pending, …; see :mod:`memfs.store.peek`): then :func:`open_engine`, whose
    answers are the same. ``database`` is as for :func:`open_engine`.

    The engine's settings are read first, as :func:`open_engine` reads them, so that a
    bad one fails a command the same way whichever answers it.

    Raises:
        ValueError: ``$MEMFS_MEMORY_LIMIT`` is not an integer.
        InvalidInput: ``$MEMFS_SQLITE_SYNC`` is neither ``full`` nor ``normal``.
        DatabaseUnavailable: the file stayed locked (:func:`memfs.store.peek.open_peek`).
    """
    from memfs.core import config
    from memfs.store.peek import open_peek as open_sqlite_peek

    config.memory_limit()
    config.sqlite_synchronous_full()
    return open_sqlite_peek(config.database_url(database))


def fsck_database(
    database: str | None = None, *, sqlite_check: str | None = "integrity"
) -> list[str]:
    """Everything ``memfs fsck`` reports about a database, one line per finding; [] when
    sound (SPEC §2: an erasure that may not have reached the disk is reported too).

    Opens the database read-only and never creates it: a database that can't be opened
    (missing, foreign, unreadable, needing an upgrade) is itself the one finding
    ``database: <why>``. Then SQLite's ``integrity_check`` (``sqlite_check="quick"``:
    ``quick_check``; None: neither), every memfs invariant (memfs/store/fsck.py), and a
    pending erasure (:meth:`Engine.erasure_pending`).

    Raises:
        InvalidInput: an unknown ``sqlite_check``.
    """
    from memfs.core.errors import DatabaseUnavailable

    try:
        engine = open_engine(database, create=False, read_only=True)
    except DatabaseUnavailable as exc:
        return [f"database: {exc}"]
    with engine:
        findings = list(engine.iter_fsck_findings(sqlite_check=sqlite_check))
        pending = engine.erasure_pending()
    if pending is not None:
        findings.append(
            f"database: an erasure is pending since {pending.isoformat()}: bytes a redaction "
            "or deletion erased may still be in the database file and its WAL, because a "
            "reader held an older snapshot; the next write or close completes it"
        )
    return findings


def restore_database(
    source: str, target: str | None = None, *, replace: bool = False
) -> tuple[Path, dict[str, int]]:
    """Makes the SQLite database ``target`` a copy of the memfs database ``source`` (a
    backup made by ``memfs backup``, or any SQLite memfs database), checked as ``memfs
    fsck`` checks, ``0600``.

    The copy is made beside ``target`` (:meth:`Engine.backup_to`), then renamed over it
    once no process has ``target`` open (:mod:`memfs.store.backup`); the old file's WAL
    and shared index go with it. A missing ``target`` (a new home) is created, its
    directory ``0700``.

    Args:
        source: a SQLite file path or ``sqlite:///`` URL; opened read-only.
        target: as ``--database`` (None: ``$MEMFS_DATABASE``, else
            ``$MEMFS_HOME/memfs.db``); a SQLite file.
        replace: replace an existing ``target``; False refuses it.

    Returns:
        The restored file, and its row counts (:meth:`Engine.statistics`) and ``size_bytes``.

    Raises:
        DatabaseNotFound, ForeignDatabase, DatabaseUnavailable: ``source`` can't be
            opened as a memfs database.
        InvalidInput: ``source`` or ``target`` is not a SQLite database (PostgreSQL is
            restored with ``pg_restore``).
        Conflict: ``target`` exists and ``replace`` is False.
        StoreBusy: a process has ``target`` open (its pid is named); nothing changed.
        CorruptedStore: the copy of ``source`` failed its check; nothing changed.
    """
    import os

    from memfs.core.config import database_url
    from memfs.core.errors import Conflict, InvalidInput
    from memfs.home import private_directory
    from memfs.store import backup
    from memfs.store._db import sqlite_path

    path = sqlite_path(database_url(target))
    if path is None:
        raise InvalidInput(
            "memfs restore writes an embedded SQLite database; restore PostgreSQL with "
            "pg_restore (README: Backup and restore)"
        )
    if path.exists() and not replace:
        raise Conflict(f"a database exists at {path}; give --force to replace it")
    backup.refuse_in_use(path)  # early: before a copy is made for nothing
    private_directory(path.parent)
    with open_engine(source, create=False, read_only=True) as engine:
        prepared = path.with_name(f".{path.name}.restore-{os.getpid()}")
        prepared.unlink(missing_ok=True)
        counts = engine.backup_to(prepared)
    try:
        backup.replace_database(prepared, path)
    finally:
        prepared.unlink(missing_ok=True)
    return path, counts
