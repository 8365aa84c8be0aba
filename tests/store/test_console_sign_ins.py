"""Console sign-ins (SPEC §12, memfs/store/sign_ins.py): only the id's hash is kept, the
sign-in ends with its credential, its expiry, or signing out; the 0012 migration."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, inspect, select

from memfs.core.errors import AuthenticationFailed, CredentialRevoked, InvalidTtl
from memfs.core.ids import sha256_of
from memfs.core.model import Scope
from memfs.store import Engine, ResourceSpec
from memfs.store._db import alembic_config
from memfs.store.schema import console_sign_ins


class FakeClock:
    """The engine's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def timed(database: str, clock: FakeClock) -> Iterator[Engine]:
    """An engine on the fake clock (fsck at teardown)."""
    eng = Engine(database, clock=clock)
    try:
        yield eng
        assert list(eng.iter_fsck_findings()) == []
    finally:
        eng.close()


def test_a_key_s_sign_in_resolves_to_the_key_and_keeps_only_a_hash(timed: Engine) -> None:
    key, _secret = timed.api_keys.create("console", [Scope.READ])
    made, sign_in_id = timed.console_sign_ins.create(api_key=key)
    assert made.api_key is not None
    assert made.api_key.id == key.id
    resolved = timed.console_sign_ins.resolve(sign_in_id)
    assert resolved.api_key == made.api_key
    assert resolved.session is None
    with timed._db.read() as conn:
        stored = conn.execute(select(console_sign_ins.c.id_hash)).scalars().all()
    assert stored == [sha256_of(sign_in_id)]


def test_revoking_the_key_ends_its_sign_in(timed: Engine) -> None:
    key, _secret = timed.api_keys.create("console", [Scope.READ])
    _, sign_in_id = timed.console_sign_ins.create(api_key=key)
    timed.api_keys.revoke(key.id)
    with pytest.raises(CredentialRevoked):
        timed.console_sign_ins.resolve(sign_in_id)


def test_a_session_s_sign_in_ends_with_the_session_and_never_outlives_its_token(
    timed: Engine, clock: FakeClock
) -> None:
    store = timed.stores.create("s")
    session, _token = timed.sessions.create([ResourceSpec(store.id)], ttl_s=60)
    made, sign_in_id = timed.console_sign_ins.create(session=session)
    assert made.expires_at == session.expires_at
    assert timed.console_sign_ins.resolve(sign_in_id).session == session
    timed.sessions.revoke(session.id)
    with pytest.raises(CredentialRevoked):
        timed.console_sign_ins.resolve(sign_in_id)


def test_a_sign_in_expires_and_signing_out_ends_it(timed: Engine, clock: FakeClock) -> None:
    key, _secret = timed.api_keys.create("console", [Scope.READ])
    _, expiring = timed.console_sign_ins.create(api_key=key, ttl_s=60)
    _, signed_out = timed.console_sign_ins.create(api_key=key)
    timed.console_sign_ins.delete(signed_out)
    with pytest.raises(AuthenticationFailed, match="unknown or ended"):
        timed.console_sign_ins.resolve(signed_out)
    clock.now += timedelta(seconds=61)
    with pytest.raises(AuthenticationFailed, match="expired"):
        timed.console_sign_ins.resolve(expiring)
    # The next sign-in deletes the expired rows.
    timed.console_sign_ins.create(api_key=key)
    with timed._db.read() as conn:
        assert len(conn.execute(select(console_sign_ins.c.id_hash)).all()) == 1


def test_a_sign_in_needs_exactly_one_credential_and_a_lifetime(timed: Engine) -> None:
    key, _secret = timed.api_keys.create("console", [Scope.READ])
    with pytest.raises(ValueError, match="exactly one"):
        timed.console_sign_ins.create()
    with pytest.raises(InvalidTtl):
        timed.console_sign_ins.create(api_key=key, ttl_s=0)


@pytest.mark.empty_database
def test_migration_0012_adds_and_removes_the_table(database: str) -> None:
    from alembic import command

    Engine(database).close()
    raw = create_engine(database)
    try:
        with raw.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, "0011_snapshots")
        with raw.connect() as conn:
            assert "console_sign_ins" not in inspect(conn).get_table_names()
    finally:
        raw.dispose()
    with Engine(database) as engine:
        key, _secret = engine.api_keys.create("console", [Scope.READ])
        _, sign_in_id = engine.console_sign_ins.create(api_key=key)
        assert engine.console_sign_ins.resolve(sign_in_id).api_key is not None
        assert list(engine.iter_fsck_findings()) == []
