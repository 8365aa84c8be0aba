"""The driver's error codes the store turns into typed errors (memfs/store/_db.py
``driver_error``), read from the code, never from the message."""

from __future__ import annotations

import sqlite3

import psycopg
import psycopg.errors
import pytest
from sqlalchemy.exc import OperationalError

from memfs.core.errors import (
    DatabaseReadOnly,
    DatabaseUnreachable,
    MemfsError,
    StorageFull,
    StoreBusy,
)
from memfs.store._db import driver_error


def _sqlite(code: int) -> OperationalError:
    orig = sqlite3.OperationalError("whatever the message says")
    orig.sqlite_errorcode = code
    return OperationalError("COMMIT", None, orig)


def _postgresql(orig: psycopg.Error) -> OperationalError:
    return OperationalError("COMMIT", None, orig)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_sqlite(13), StorageFull),  # SQLITE_FULL
        (_sqlite(5), StoreBusy),  # SQLITE_BUSY
        (_sqlite(517), StoreBusy),  # SQLITE_BUSY_SNAPSHOT
        (_sqlite(8), DatabaseReadOnly),  # SQLITE_READONLY
        (_sqlite(778), None),  # SQLITE_IOERR_WRITE: a real I/O error stays one
        (_sqlite(11), None),  # SQLITE_CORRUPT
        (_postgresql(psycopg.errors.DiskFull("full")), StorageFull),  # 53100
        (_postgresql(psycopg.errors.LockNotAvailable("lock")), StoreBusy),  # 55P03
        (_postgresql(psycopg.errors.AdminShutdown("terminating")), DatabaseUnreachable),
        (_postgresql(psycopg.errors.CannotConnectNow("starting up")), DatabaseUnreachable),
        (_postgresql(psycopg.errors.TooManyConnections("no slot")), DatabaseUnreachable),
        (_postgresql(psycopg.errors.ConnectionFailure("08006")), DatabaseUnreachable),
        # libpq's own failures carry no SQLSTATE: refused, closed, lost.
        (_postgresql(psycopg.OperationalError("connection refused")), DatabaseUnreachable),
        (_postgresql(psycopg.errors.QueryCanceled("statement timeout")), None),  # 57014
    ],
)
def test_driver_errors_become_typed_errors(
    exc: OperationalError, expected: type[MemfsError] | None
) -> None:
    typed = driver_error(exc, 30.0, where="/var/lib/memfs/memfs.db")
    if expected is None:
        assert typed is None
    else:
        assert type(typed) is expected


def test_a_full_disk_names_the_database() -> None:
    typed = driver_error(_sqlite(13), 30.0, where="/var/lib/memfs/memfs.db")
    assert isinstance(typed, StorageFull)
    assert typed.path == "/var/lib/memfs/memfs.db"
    assert typed.message == (
        "disk full: no space left under /var/lib/memfs/memfs.db; nothing was changed, try "
        "again once space is freed"
    )
