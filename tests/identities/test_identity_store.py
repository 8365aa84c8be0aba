"""SPEC §8 in the store engine, on SQLite and PostgreSQL: mounts on (identity, template)
pairs (limit, order, access), the default store created exactly once (also when
requests race), a pair's session, and stores that can't be archived or deleted while
bound. fsck runs at the teardown of every test (the ``engine`` fixture)."""

from __future__ import annotations

import threading

import pytest
from _support.polling import wait_until
from sqlalchemy import Connection, create_engine, text

from memfs.core.config import MAX_EXPLICIT_MOUNTS
from memfs.core.errors import Conflict, InvalidInput, NotFound, StoreArchived, StoreBound
from memfs.core.model import Access, Layout, format_timestamp, utcnow
from memfs.store import Engine

IDN, TMPL = "idn_63ee28747a35cff93771c491", "tmpl_eb3377fb74ad413e17b3d755"
RACERS = 8
JOIN_TIMEOUT_S = 60.0
LOCK_WAIT_DEADLINE_S = 30.0


def default_store_count(database: str) -> int:
    raw = create_engine(database)
    try:
        with raw.connect() as conn:
            return conn.execute(
                text("SELECT count(*) FROM stores WHERE identity_id IS NOT NULL")
            ).scalar_one()
    finally:
        raw.dispose()


def insert_default_store(conn: Connection, identity_id: str, template_id: str) -> str:
    """What another server's transaction writes for a pair's new default store."""
    store_id, created = "memstore_01winner0000000000000000000", format_timestamp(utcnow())
    conn.execute(
        text(
            "INSERT INTO stores (id, name, description, metadata_json, created_at, updated_at,"
            " entry_count, total_size_bytes, last_change_seq, identity_id, template_id,"
            " identity_template_count) VALUES (:id, :name, '', '{}', :at, :at, 0, 0, 0,"
            " :idn, :tmpl, 1)"
        ),
        {
            "id": store_id,
            "name": f"default:{identity_id}:{template_id}",
            "at": created,
            "idn": identity_id,
            "tmpl": template_id,
        },
    )
    conn.execute(
        text(
            "INSERT INTO identity_mounts (identity_id, template_id, store_id, access,"
            " system_managed, created_at) VALUES (:idn, :tmpl, :id, 'read_write', true, :at)"
        ),
        {"id": store_id, "at": created, "idn": identity_id, "tmpl": template_id},
    )
    return store_id


def test_the_default_store_is_created_once_and_named_after_the_pair(engine: Engine) -> None:
    store, created = engine.identities.ensure_default_store(IDN, TMPL)
    assert created
    assert store.name == f"default:{IDN}:{TMPL}"
    assert (store.system_managed, store.identity_id, store.template_id) == (True, IDN, TMPL)
    assert store.identity_template_count == 1
    again, created_again = engine.identities.ensure_default_store(IDN, TMPL)
    assert (again.id, created_again) == (store.id, False)
    other, _ = engine.identities.ensure_default_store(IDN, "tmpl_other")
    assert other.id != store.id
    [mount] = engine.identities.pair_mounts(IDN, TMPL)
    assert (mount.memory_store_id, mount.access, mount.system_managed) == (
        store.id,
        Access.READ_WRITE,
        True,
    )
    assert engine.stores.create("user store").system_managed is False


@pytest.mark.parametrize(
    ("identity_id", "template_id", "named"),
    [("user-1", TMPL, "identity_id"), (IDN, "tmpl_", "template_id"), (IDN, 7, "template_id")],
)
def test_a_malformed_pair_is_refused_by_name(
    engine: Engine, identity_id: str, template_id: str, named: str
) -> None:
    with pytest.raises(InvalidInput, match=f"^{named} must be "):
        engine.identities.ensure_default_store(identity_id, template_id)
    assert engine.stores.list().items == []


def test_racing_requests_create_one_default_store(engine: Engine, database: str) -> None:
    """Eight engines (eight API servers) ask for the same pair's default store at once."""
    engines = [Engine(database) for _ in range(RACERS)]
    barrier = threading.Barrier(RACERS)
    results: list[object] = []

    def ask(eng: Engine) -> None:
        barrier.wait(JOIN_TIMEOUT_S)
        try:
            results.append(eng.identities.ensure_default_store(IDN, TMPL))
        except Exception as exc:  # reported by the assertion below
            results.append(exc)

    threads = [threading.Thread(target=ask, args=(eng,)) for eng in engines]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
    finally:
        for eng in engines:
            eng.close()
    assert all(isinstance(r, tuple) for r in results), results
    ids = {r[0].id for r in results if isinstance(r, tuple)}
    created = [r for r in results if isinstance(r, tuple) and r[1]]
    assert len(results) == RACERS
    assert len(ids) == 1
    assert len(created) == 1
    assert default_store_count(database) == 1


def test_the_loser_of_a_default_store_race_retries_and_gets_the_winners(
    engine: Engine, database: str
) -> None:
    """PostgreSQL: the winner's transaction is held open until the engine's insert
    waits on the unique index; then it commits, the engine's transaction fails on the
    index, and its retry returns the winner's store (not a check-then-insert)."""
    if engine.dialect != "postgresql":
        pytest.skip("SQLite's one writer serializes the two transactions: no loser")
    raw = create_engine(database)
    outcome: list[object] = []
    try:
        with raw.connect() as winner_conn, raw.connect() as observer:
            transaction = winner_conn.begin()
            winner_id = insert_default_store(winner_conn, IDN, TMPL)
            loser = threading.Thread(
                target=lambda: outcome.append(engine.identities.ensure_default_store(IDN, TMPL))
            )
            loser.start()

            def waiting() -> int:
                count: int = observer.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE wait_event_type = 'Lock' AND datname = current_database()"
                    )
                ).scalar_one()
                observer.rollback()
                return count

            wait_until(waiting, "the second transaction to wait on the unique index",
                       LOCK_WAIT_DEADLINE_S)
            transaction.commit()
            loser.join(JOIN_TIMEOUT_S)
    finally:
        raw.dispose()
    [(store, created_by_loser)] = outcome  # type: ignore[misc]
    assert (store.id, created_by_loser) == (winner_id, False)
    assert default_store_count(database) == 1


def test_mounts_are_read_only_at_most_ten_and_listed_default_first(engine: Engine) -> None:
    shared = [engine.stores.create(f"shared {i}") for i in range(MAX_EXPLICIT_MOUNTS + 1)]
    for store in shared[:3]:
        mount, created = engine.identities.mount(IDN, TMPL, store.id)
        assert created
        assert mount.access is Access.READ_ONLY
        assert not mount.system_managed
    default, _ = engine.identities.ensure_default_store(IDN, TMPL)  # created after three mounts
    for store in shared[3:MAX_EXPLICIT_MOUNTS]:
        engine.identities.mount(IDN, TMPL, store.id)
    listed = engine.identities.pair_mounts(IDN, TMPL)
    assert [m.memory_store_id for m in listed] == [default.id] + [
        s.id for s in shared[:MAX_EXPLICIT_MOUNTS]
    ]
    assert [m.name for m in listed[1:3]] == ["shared 0", "shared 1"]
    with pytest.raises(InvalidInput, match="at most 10 stores can be mounted") as refused:
        engine.identities.mount(IDN, TMPL, shared[-1].id)
    assert refused.value.code == "mount_limit_reached"
    again, created = engine.identities.mount(IDN, TMPL, shared[0].id)  # already mounted: same
    assert (again, created) == (listed[1], False)
    engine.identities.mount(IDN, "tmpl_other", shared[-1].id)  # the limit is per pair
    assert engine.stores.get(shared[-1].id).identity_template_count == 1
    engine.identities.unmount(IDN, TMPL, shared[5].id)
    engine.identities.mount(IDN, TMPL, shared[-1].id)
    listed = engine.identities.pair_mounts(IDN, TMPL)
    assert listed[-1].memory_store_id == shared[-1].id
    assert len(listed) == 1 + 10
    assert engine.stores.get(shared[5].id).identity_template_count == 0
    assert [m.identity_id + m.template_id for m in engine.identities.store_mounts(
        shared[-1].id
    )] == [
        IDN + "tmpl_other",
        IDN + TMPL,
    ]


def test_racing_mounts_never_pass_the_limit(engine: Engine, database: str) -> None:
    """Twelve engines mount twelve stores on one pair at once: ten win, two are refused
    naming the limit (the pair is locked while its mounts are counted)."""
    stores = [engine.stores.create(f"racer {i}") for i in range(MAX_EXPLICIT_MOUNTS + 2)]
    engines = [Engine(database) for _ in stores]
    barrier = threading.Barrier(len(stores))
    outcomes: list[object] = []

    def mount(eng: Engine, store_id: str) -> None:
        barrier.wait(JOIN_TIMEOUT_S)
        try:
            outcomes.append(eng.identities.mount(IDN, TMPL, store_id))
        except InvalidInput as exc:
            outcomes.append(exc.code)

    threads = [
        threading.Thread(target=mount, args=(eng, store.id))
        for eng, store in zip(engines, stores, strict=True)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
    finally:
        for eng in engines:
            eng.close()
    assert sorted(o for o in outcomes if isinstance(o, str)) == ["mount_limit_reached"] * 2
    assert len(engine.identities.pair_mounts(IDN, TMPL)) == MAX_EXPLICIT_MOUNTS


def test_what_can_not_be_mounted_or_unmounted(engine: Engine) -> None:
    store = engine.stores.create("team")
    with pytest.raises(InvalidInput, match="explicit mounts are always read_only"):
        engine.identities.mount(IDN, TMPL, store.id, Access.READ_WRITE)
    default, _ = engine.identities.ensure_default_store(IDN, TMPL)
    other_default, _ = engine.identities.ensure_default_store("idn_other", TMPL)
    for system_managed in (default, other_default):
        with pytest.raises(Conflict, match="default stores can't be mounted"):
            engine.identities.mount(IDN, TMPL, system_managed.id)
    with pytest.raises(Conflict, match="can't be unmounted"):
        engine.identities.unmount(IDN, TMPL, default.id)
    with pytest.raises(NotFound, match="is not mounted on"):
        engine.identities.unmount(IDN, TMPL, store.id)
    with pytest.raises(NotFound):
        engine.identities.mount(IDN, TMPL, "memstore_nope")
    engine.stores.archive(store.id)
    with pytest.raises(StoreArchived):
        engine.identities.mount(IDN, TMPL, store.id)
    assert [m.memory_store_id for m in engine.identities.pair_mounts(IDN, TMPL)] == [default.id]


def test_a_pair_session_is_flat_default_first_and_skips_archived_mounts(engine: Engine) -> None:
    first, second, archived = (engine.stores.create(n) for n in ("first", "second", "old"))
    for store in (first, second, archived):
        engine.identities.mount(IDN, TMPL, store.id)
    engine.stores.archive(archived.id, force=True)
    session, token = engine.identities.create_session(IDN, TMPL, title="agent run")
    assert token is not None
    assert session.layout is Layout.FLAT
    default, created = engine.identities.ensure_default_store(IDN, TMPL)
    assert not created  # the session created it
    assert [(r.memory_store_id, r.access) for r in session.resources] == [
        (default.id, Access.READ_WRITE),
        (first.id, Access.READ_ONLY),
        (second.id, Access.READ_ONLY),
    ]
    assert {r.mount_path for r in session.resources} == {"/data/.qoder/awareness"}
    elsewhere, _ = engine.identities.create_session(IDN, TMPL, mount_root="/srv/memory/")
    assert {r.mount_path for r in elsewhere.resources} == {"/srv/memory"}
    assert engine.sessions.get(session.id).layout is Layout.FLAT


def test_eleven_stores_fit_a_pair_session(engine: Engine) -> None:
    for i in range(MAX_EXPLICIT_MOUNTS):
        engine.identities.mount(IDN, TMPL, engine.stores.create(f"s{i}").id)
    session, _ = engine.identities.create_session(IDN, TMPL)
    assert len(session.resources) == 1 + MAX_EXPLICIT_MOUNTS


def test_a_bound_store_is_neither_archived_nor_deleted_unless_forced(engine: Engine) -> None:
    store = engine.stores.create("team")
    engine.identities.mount(IDN, TMPL, store.id)
    engine.identities.mount("idn_b", TMPL, store.id)
    for refused in (engine.stores.archive, engine.stores.delete):
        with pytest.raises(StoreBound, match=f"mounted on 2 .*{IDN}/{TMPL}, idn_b/{TMPL}"):
            refused(store.id)
    assert engine.stores.get(store.id).identity_template_count == 2
    archived = engine.stores.archive(store.id, force=True)
    assert archived.archived
    assert engine.identities.pair_mounts(IDN, TMPL)[0].status == "archived"
    engine.stores.delete(store.id, force=True)
    assert engine.identities.pair_mounts(IDN, TMPL) == []
    with pytest.raises(NotFound):
        engine.identities.store_mounts(store.id)


def test_a_default_store_is_not_deleted_while_its_pair_has_mounts(engine: Engine) -> None:
    default, _ = engine.identities.ensure_default_store(IDN, TMPL)
    shared = engine.stores.create("shared")
    engine.identities.mount(IDN, TMPL, shared.id)
    with pytest.raises(StoreBound, match=f"still has 1 mounts \\({shared.id}\\)"):
        engine.stores.delete(default.id, force=True)
    engine.identities.unmount(IDN, TMPL, shared.id)
    with pytest.raises(StoreBound, match="its default store"):
        engine.stores.delete(default.id)  # still bound to its own pair
    engine.stores.delete(default.id, force=True)
    fresh, created = engine.identities.ensure_default_store(IDN, TMPL)
    assert created
    assert fresh.id != default.id
