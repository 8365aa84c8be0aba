"""Migration 0006_principals (SPEC §6): keys and sessions made before it keep working
and carry no principal; new ones can carry one; the schema matches the metadata."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from memfs.core.model import Scope
from memfs.core.visibility import UserPrincipal
from memfs.store import Engine, ResourceSpec, _db
from memfs.store._db import alembic_config


@pytest.mark.empty_database
def test_upgrading_0005_gives_keys_and_sessions_no_principal(database: str) -> None:
    with Engine(database) as engine:
        store = engine.stores.create("s")
        _, secret = engine.api_keys.create("k", [Scope.READ])
        _, token = engine.sessions.create([ResourceSpec(store.id)])
    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "0005_records")
        with raw.connect() as conn:
            for table in ("api_keys", "sessions"):
                columns = {c["name"] for c in inspect(conn).get_columns(table)}
                assert "principal_user_id" not in columns
    finally:
        raw.dispose()
    with Engine(database) as engine:
        assert engine.api_keys.authenticate(secret).principal is None
        assert token is not None
        assert engine.sessions.authenticate(token).principal is None
        principal = UserPrincipal(user_id="alice")
        key, _ = engine.api_keys.create("new", [Scope.READ], principal=principal)
        assert key.principal == principal
        assert list(engine.iter_fsck_findings()) == []
    raw = create_engine(database)
    try:
        with raw.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == _db.SCHEMA_HEAD
    finally:
        raw.dispose()
