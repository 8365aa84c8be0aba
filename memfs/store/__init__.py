"""The store: the only package with SQL. Use it through this face only.

:class:`Engine` is one open database; its calls are per-aggregate facades (one
transaction per call), the unrestricted caller's on the engine itself
(``engine.memories.get(…)``) and a bound caller's on :meth:`Engine.for_caller`
(a :class:`Caller`; see :mod:`memfs.store.engine`). Nothing outside ``memfs/store``
imports the modules behind them (tests/test_layers.py checks it).
"""

from typing import TYPE_CHECKING, Any

from memfs.store.caller import Caller
from memfs.store.engine import Engine

if TYPE_CHECKING:
    from memfs.store.credentials import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, ResourceSpec
    from memfs.store.retention import PruneResult

# The rest of the face, imported at first use (a command loads only what it runs:
# README "Performance").
_LATER = {
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
    "PruneResult",
    "ResourceSpec",
    "fsck_database",
    "open_engine",
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

    return Engine(
        database_url(database), memory_limit=memory_limit, create=create, read_only=read_only
    )


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
