"""Fixtures shared by every layer's tests.

- ``memfs_home``: a fresh, private (0700) ``$MEMFS_HOME`` (and no ``$MEMFS_DATABASE``)
  for the test.
- ``pg_database_url``: factory of fresh PostgreSQL databases (schema only, cloned from a
  session-wide template) on the server named by
  ``$MEMFS_TEST_PG_URL`` (``scripts/test`` starts one); each is dropped at teardown.
- ``engine``: an :class:`memfs.store.Engine`, once on SQLite and once on PostgreSQL.
  At teardown it asserts that ``fsck`` finds nothing, unless the test is marked
  ``corrupts_store`` (tests that damage a database on purpose).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from memfs.core.config import database_url
from memfs.store import Engine

PG_URL_ENV = "MEMFS_TEST_PG_URL"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "corrupts_store: damages the database; skip the fsck check")
    config.addinivalue_line(
        "markers", "empty_database: the database fixture must not hold the schema yet"
    )


@pytest.fixture
def memfs_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "memfs-home"
    home.mkdir(mode=0o700)  # as memfs makes it: a 0755 home would be fixed, and said so
    home.chmod(0o700)
    monkeypatch.setenv("MEMFS_HOME", str(home))
    monkeypatch.delenv("MEMFS_DATABASE", raising=False)
    monkeypatch.delenv("MEMFS_MEMORY_LIMIT", raising=False)
    return home


@pytest.fixture(scope="session")
def _pg_template() -> Iterator[str | None]:
    """A database holding the memfs schema, copied by every PostgreSQL test: cloning a
    template is several times faster than creating the schema in each new database."""
    base = os.environ.get(PG_URL_ENV)
    if not base:
        yield None
        return
    admin = create_engine(database_url(base), isolation_level="AUTOCOMMIT")
    name = f"memfs_tmpl_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    Engine(database_url(base.rsplit("/", 1)[0] + "/" + name)).close()
    yield name
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def pg_database_url(_pg_template: str | None) -> Iterator[Callable[..., str]]:
    base = os.environ.get(PG_URL_ENV)
    if not base or _pg_template is None:
        pytest.skip(
            f"${PG_URL_ENV} is not set; scripts/test starts a PostgreSQL server and sets it"
        )
    admin = create_engine(database_url(base), isolation_level="AUTOCOMMIT")
    created: list[str] = []

    def make(empty: bool = False) -> str:
        name = f"memfs_t_{uuid.uuid4().hex[:12]}"
        template = "template0" if empty else _pg_template
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
        created.append(name)
        return base.rsplit("/", 1)[0] + "/" + name

    yield make
    with admin.connect() as conn:
        for name in created:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLAlchemy URL of a fresh, empty database of each dialect."""
    if request.param == "sqlite":
        return database_url(str(tmp_path / "store.db"))
    make = request.getfixturevalue("pg_database_url")
    empty = request.node.get_closest_marker("empty_database") is not None
    return database_url(make(empty=empty))


@pytest.fixture
def engine(database: str, request: pytest.FixtureRequest) -> Iterator[Engine]:
    eng = Engine(database)
    try:
        yield eng
        if request.node.get_closest_marker("corrupts_store") is None:
            findings = list(eng.iter_fsck_findings())
            assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)
    finally:
        eng.close()
