"""Identities, templates and default stores (SPEC §8, seed 000): stores mounted on
(identity, template) pairs, each pair's one system-managed default store, and the
resources of a pair's session.

Owns the ``identity_mounts`` table and the pair columns of ``stores``
(``identity_id``, ``template_id``, ``identity_template_count``).

* A pair's **default store** is created the first time it is needed
  (:func:`ensure_default_store`: a session for the pair, or an explicit call). It is
  named :func:`default_store_name` (``default:<identity_id>:<template_id>``), carries
  the pair, and is mounted on it ``read_write`` with ``system_managed`` true. At most
  one such mount per pair is the unique index ``ix_identity_mounts_default``: of two
  transactions racing to create it, the second fails on the index (PostgreSQL) or waits
  for the first and then finds it (SQLite's one writer), never a second store. The
  engine retries a transaction that lost that race (:data:`DEFAULT_STORE_ATTEMPTS`).
* **Explicit mounts** are always ``read_only``, at most
  :data:`memfs.core.config.MAX_EXPLICIT_MOUNTS` per pair (counted with the pair locked, see
  :func:`_lock_pair`); a store is mounted on a pair at most once (mounting it again
  returns the mount); an archived store or another pair's default store can't be
  mounted.
* Listing order: the default first, then explicit mounts by creation time.
* A store still mounted on a pair can't be archived or deleted unless forced, and a
  default store can't be deleted while its pair has explicit mounts, forced or not
  (:func:`check_unbound`, called by :mod:`memfs.store.stores`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, delete, func, insert, select, text, update

from memfs.core import rules
from memfs.core.config import MAX_EXPLICIT_MOUNTS
from memfs.core.errors import Conflict, InvalidInput, NotFound, StoreArchived, StoreBound
from memfs.core.model import Access, IdentityMount, MemoryStore
from memfs.store import stores as store_rows
from memfs.store._common import lock_store, now, store_model, store_row
from memfs.store.access import ResourceSpec
from memfs.store.schema import identity_mounts, stores

__all__ = [
    "DEFAULT_STORE_ATTEMPTS",
    "check_mount_counts",
    "check_unbound",
    "default_store_name",
    "ensure_default_store",
    "list_pair_mounts",
    "list_store_mounts",
    "mount_store",
    "pair_resources",
    "unmount_store",
]

DEFAULT_STORE_ATTEMPTS = 3
"""How often the engine runs a transaction that creates a default store: a loss of the
race on ``ix_identity_mounts_default`` is followed by a retry, which finds the winner's."""

# Bindings named in a StoreBound message before "and N more".
_BINDINGS_NAMED = 10


def default_store_name(identity_id: str, template_id: str) -> str:
    """The name of a pair's default store: ``default:<identity_id>:<template_id>``
    (stable: the same pair always gives the same name; SPEC §8)."""
    return f"default:{identity_id}:{template_id}"


def _mount_model(row: Row[Any]) -> IdentityMount:
    return IdentityMount(
        memory_store_id=row.store_id,
        identity_id=row.identity_id,
        template_id=row.template_id,
        access=Access(row.access),
        system_managed=bool(row.system_managed),
        name=row.name,
        status="archived" if row.archived_at is not None else "active",
        entry_count=row.entry_count,
        created_at=datetime.fromisoformat(row.created_at),
    )


def _mounts_query() -> Any:
    return select(
        identity_mounts,
        stores.c.name,
        stores.c.archived_at,
        stores.c.entry_count,
    ).join(stores, stores.c.id == identity_mounts.c.store_id)


def _of_pair(identity_id: str, template_id: str) -> Any:
    return and_(
        identity_mounts.c.identity_id == identity_id,
        identity_mounts.c.template_id == template_id,
    )


def _lock_pair(conn: Connection, identity_id: str, template_id: str) -> None:
    """Serializes the writers of one pair's mounts until commit, so that two mounts
    racing can't both pass the limit. PostgreSQL: a transaction-level advisory lock on
    a 63-bit digest of the pair; SQLite: its one writer already serializes them."""
    if conn.dialect.name != "postgresql":
        return
    digest = hashlib.sha256(f"{identity_id}\0{template_id}".encode()).digest()
    key = int.from_bytes(digest[:8], "big", signed=True)
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _default_mount(conn: Connection, identity_id: str, template_id: str) -> Row[Any] | None:
    return conn.execute(
        _mounts_query().where(
            _of_pair(identity_id, template_id), identity_mounts.c.system_managed.is_(True)
        )
    ).first()


def ensure_default_store(
    conn: Connection, identity_id: str, template_id: str
) -> tuple[MemoryStore, bool]:
    """The pair's default store, created (with its ``read_write`` system-managed mount)
    when it has none yet. Returns ``(store, created)``.

    Raises:
        InvalidInput: a malformed identity or template id.
        sqlalchemy.exc.IntegrityError: another transaction created it meanwhile
            (PostgreSQL); the caller retries in a new transaction.
    """
    rules.validate_pair(identity_id, template_id)
    existing = _default_mount(conn, identity_id, template_id)
    if existing is not None:
        return store_model(store_row(conn, existing.store_id)), False
    store = store_rows.create_store(
        conn,
        default_store_name(identity_id, template_id),
        f"Default memory of identity {identity_id} with template {template_id} "
        "(system-managed, SPEC §8)",
        {},
    )
    conn.execute(
        update(stores)
        .where(stores.c.id == store.id)
        .values(identity_id=identity_id, template_id=template_id, identity_template_count=1)
    )
    conn.execute(
        insert(identity_mounts).values(
            identity_id=identity_id,
            template_id=template_id,
            store_id=store.id,
            access=Access.READ_WRITE.value,
            system_managed=True,
            created_at=now(),
        )
    )
    return store_model(store_row(conn, store.id)), True


def _pair_mount(
    conn: Connection, identity_id: str, template_id: str, store_id: str
) -> Row[Any] | None:
    return conn.execute(
        _mounts_query().where(
            _of_pair(identity_id, template_id), identity_mounts.c.store_id == store_id
        )
    ).first()


def mount_store(
    conn: Connection,
    identity_id: str,
    template_id: str,
    store_id: str,
    access: Access = Access.READ_ONLY,
) -> tuple[IdentityMount, bool]:
    """Mounts a store on a pair, read-only (SPEC §8 explicit mounts). Returns
    ``(mount, created)``; a store already mounted on the pair gives its mount unchanged.

    Raises:
        InvalidInput: a malformed pair; ``access`` not ``read_only``; the pair has
            :data:`~memfs.core.config.MAX_EXPLICIT_MOUNTS` explicit mounts already
            (``error_code: mount_limit_reached``).
        Conflict: the store is a default store, this pair's or another's
            (``default_store_not_mountable``).
        NotFound: an unknown store.
        StoreArchived: an archived store.
    """
    rules.validate_pair(identity_id, template_id)
    if Access(access) is not Access.READ_ONLY:
        raise InvalidInput(
            "explicit mounts are always read_only: the pair's system-managed default store "
            "is its only writable one (SPEC §8)"
        )
    _lock_pair(conn, identity_id, template_id)
    row = lock_store(conn, store_id)
    if row.identity_id is not None:
        raise Conflict(
            f"memory store {store_id!r} is the system-managed default store of "
            f"{row.identity_id}/{row.template_id}; default stores can't be mounted explicitly",
            code="default_store_not_mountable",
        )
    existing = _pair_mount(conn, identity_id, template_id, store_id)
    if existing is not None:
        return _mount_model(existing), False
    if row.archived_at is not None:
        raise StoreArchived(f"memory store {store_id!r} is archived and can't be mounted")
    explicit = conn.execute(
        select(func.count())
        .select_from(identity_mounts)
        .where(_of_pair(identity_id, template_id), identity_mounts.c.system_managed.is_(False))
    ).scalar_one()
    if explicit >= MAX_EXPLICIT_MOUNTS:
        raise InvalidInput(
            f"{identity_id}/{template_id} already has {explicit} explicit mounts: at most "
            f"{MAX_EXPLICIT_MOUNTS} stores can be mounted on an (identity, template) pair "
            "besides its default store; unmount one first",
            code="mount_limit_reached",
        )
    conn.execute(
        insert(identity_mounts).values(
            identity_id=identity_id,
            template_id=template_id,
            store_id=store_id,
            access=Access.READ_ONLY.value,
            system_managed=False,
            created_at=now(),
        )
    )
    conn.execute(
        update(stores)
        .where(stores.c.id == store_id)
        .values(identity_template_count=stores.c.identity_template_count + 1)
    )
    mount = _pair_mount(conn, identity_id, template_id, store_id)
    assert mount is not None
    return _mount_model(mount), True


def unmount_store(conn: Connection, identity_id: str, template_id: str, store_id: str) -> None:
    """Removes an explicit mount (the store itself is untouched).

    Raises:
        InvalidInput: a malformed pair.
        Conflict: the pair's default store (it can't be unmounted; delete it when the
            pair has no mounts left).
        NotFound: the store is not mounted on the pair.
    """
    rules.validate_pair(identity_id, template_id)
    _lock_pair(conn, identity_id, template_id)
    existing = _pair_mount(conn, identity_id, template_id, store_id)
    if existing is None:
        raise NotFound(f"memory store {store_id!r} is not mounted on {identity_id}/{template_id}")
    if existing.system_managed:
        raise Conflict(
            f"memory store {store_id!r} is the default store of {identity_id}/{template_id} "
            "and can't be unmounted",
            code="default_store_not_mountable",
        )
    lock_store(conn, store_id)
    conn.execute(
        delete(identity_mounts).where(
            _of_pair(identity_id, template_id), identity_mounts.c.store_id == store_id
        )
    )
    conn.execute(
        update(stores)
        .where(stores.c.id == store_id)
        .values(identity_template_count=stores.c.identity_template_count - 1)
    )


def _pair_order() -> tuple[Any, ...]:
    """Default first, then explicit mounts by creation time (SPEC §8 listing order)."""
    return (
        identity_mounts.c.system_managed.desc(),
        identity_mounts.c.created_at,
        identity_mounts.c.store_id,
    )


def list_pair_mounts(conn: Connection, identity_id: str, template_id: str) -> list[IdentityMount]:
    """Every mount of a pair, the default first, then by creation time (at most 1 + 10;
    an unknown pair has none). Raises InvalidInput (a malformed pair)."""
    rules.validate_pair(identity_id, template_id)
    rows = conn.execute(
        _mounts_query().where(_of_pair(identity_id, template_id)).order_by(*_pair_order())
    ).all()
    return [_mount_model(row) for row in rows]


def list_store_mounts(conn: Connection, store_id: str) -> list[IdentityMount]:
    """Every pair a store is mounted on, oldest mount first. Raises NotFound."""
    store_row(conn, store_id)
    rows = conn.execute(
        _mounts_query()
        .where(identity_mounts.c.store_id == store_id)
        .order_by(identity_mounts.c.created_at, identity_mounts.c.identity_id)
    ).all()
    return [_mount_model(row) for row in rows]


def _describe(mounts: list[IdentityMount]) -> str:
    named = [
        f"{m.identity_id}/{m.template_id}" + (" (its default store)" if m.system_managed else "")
        for m in mounts[:_BINDINGS_NAMED]
    ]
    more = len(mounts) - len(named)
    return ", ".join(named) + (f" and {more} more" if more else "")


def check_unbound(conn: Connection, store_id: str, *, deleting: bool, force: bool) -> None:
    """Refuses to archive or delete a store still mounted on a pair (SPEC §8).

    With ``force`` a bound store may be archived or deleted (its mounts then show it
    archived, or go with it), except that a system-managed default store is never
    deleted while its pair has explicit mounts. Call it with the store row locked.

    Raises:
        StoreBound: the store is bound; the message names the bindings.
    """
    row = store_row(conn, store_id)
    if deleting and row.identity_id is not None:
        explicit = [
            m
            for m in list_pair_mounts(conn, row.identity_id, row.template_id)
            if not m.system_managed
        ]
        if explicit:
            raise StoreBound(
                f"memory store {store_id!r} is the default store of "
                f"{row.identity_id}/{row.template_id}, which still has {len(explicit)} "
                f"mounts ({', '.join(m.memory_store_id for m in explicit)}); unmount them "
                "before deleting it"
            )
    if force:
        return
    mounts = list_store_mounts(conn, store_id)
    if mounts:
        what = "deleted" if deleting else "archived"
        raise StoreBound(
            f"memory store {store_id!r} is mounted on {len(mounts)} (identity, template) "
            f"pair(s): {_describe(mounts)}; it can't be {what} while mounted (unmount it "
            "first, or force it)"
        )


def pair_resources(conn: Connection, identity_id: str, template_id: str) -> list[ResourceSpec]:
    """The stores of a new session for a pair (SPEC §8): its default store (created if
    needed) ``read_write``, then every explicit mount of an active store ``read_only``,
    by mount creation time.

    Raises:
        InvalidInput: a malformed pair.
        StoreArchived: the pair's default store was archived (forced): nothing is
            writable for the pair.
        sqlalchemy.exc.IntegrityError: see :func:`ensure_default_store`.
    """
    default, _ = ensure_default_store(conn, identity_id, template_id)
    if default.archived:
        raise StoreArchived(
            f"the default store {default.id!r} of {identity_id}/{template_id} is archived; "
            "a session for the pair needs it writable"
        )
    specs = [ResourceSpec(default.id, Access.READ_WRITE)]
    for mount in list_pair_mounts(conn, identity_id, template_id):
        if not mount.system_managed and mount.status == "active":
            specs.append(ResourceSpec(mount.memory_store_id, Access.READ_ONLY))
    return specs


def check_mount_counts(conn: Connection) -> Iterator[str]:
    """fsck (schema.py invariants of ``identity_mounts``): every store's
    ``identity_template_count`` is its number of mounts; a store has a pair iff it has
    that pair's system-managed mount; explicit mounts are read-only, at most 10 a pair."""
    counts: dict[str, int] = {
        store_id: count
        for store_id, count in conn.execute(
            select(identity_mounts.c.store_id, func.count()).group_by(identity_mounts.c.store_id)
        )
    }
    defaults = {
        r.store_id: (r.identity_id, r.template_id)
        for r in conn.execute(
            select(identity_mounts).where(identity_mounts.c.system_managed.is_(True))
        )
    }
    for row in conn.execute(select(stores)):
        if row.identity_template_count != counts.get(row.id, 0):
            yield (
                f"store {row.id}: identity_template_count {row.identity_template_count} but "
                f"{counts.get(row.id, 0)} mounts"
            )
        pair = None if row.identity_id is None else (row.identity_id, row.template_id)
        if defaults.get(row.id) != pair:
            yield f"store {row.id}: pair {pair} but default mount of {defaults.get(row.id)}"
    for mount in conn.execute(
        select(identity_mounts).where(identity_mounts.c.system_managed.is_(False))
    ):
        if mount.access != Access.READ_ONLY.value:
            yield (
                f"mount of {mount.store_id} on {mount.identity_id}/{mount.template_id}: "
                f"explicit but {mount.access}"
            )
    for identity_id, template_id, count in conn.execute(
        select(identity_mounts.c.identity_id, identity_mounts.c.template_id, func.count())
        .where(identity_mounts.c.system_managed.is_(False))
        .group_by(identity_mounts.c.identity_id, identity_mounts.c.template_id)
    ):
        if count > MAX_EXPLICIT_MOUNTS:
            yield f"pair {identity_id}/{template_id}: {count} explicit mounts (at most 10)"
