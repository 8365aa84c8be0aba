"""Identities, templates and default stores (SPEC §8, seed 000): stores mounted on
(identity, template) pairs, each pair's one system-managed default store, and the
resources of a pair's session; :class:`Identities` is their facade
(``engine.identities``).

Owns the ``identity_mounts`` table and the pair columns of ``stores``
(``identity_id``, ``template_id``, ``identity_template_count``).

* A pair's **default store** is created the first time it is needed
  (:func:`ensure_default_store`: a session for the pair, or an explicit call). It is
  named :func:`default_store_name` (``default:<identity_id>:<template_id>``), carries
  the pair, and is mounted on it ``read_write`` with ``system_managed`` true. At most
  one such mount per pair is the unique index ``ix_identity_mounts_default``: of two
  transactions racing to create it, the second fails on the index (PostgreSQL) or waits
  for the first and then finds it (SQLite's one writer), never a second store. The
  facade retries a transaction that lost that race (:data:`DEFAULT_STORE_ATTEMPTS`).
* **Explicit mounts** are always ``read_only``, at most
  :data:`memfs.core.config.MAX_EXPLICIT_MOUNTS` per pair (counted with the pair locked, see
  :func:`_lock_pair`); a store is mounted on a pair at most once (mounting it again
  returns the mount); an archived store or another pair's default store can't be
  mounted.
* Listing order: the default first, then explicit mounts by creation time.
* A store still mounted on a pair can't be archived or deleted unless forced, and a
  default store can't be deleted while its pair has explicit mounts, forced or not
  (:func:`memfs.store.bindings.check_unbound`, called by :mod:`memfs.store.stores`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from memfs.core import config, rules
from memfs.core.config import MAX_EXPLICIT_MOUNTS
from memfs.core.errors import Conflict, InvalidInput, NotFound, StoreArchived
from memfs.core.model import Access, IdentityMount, Layout, MemoryStore, Session
from memfs.core.visibility import UserPrincipal
from memfs.store import credentials
from memfs.store import stores as store_rows
from memfs.store._common import lock_store, now, store_model, store_row
from memfs.store._facade import Facade
from memfs.store.bindings import (
    check_unbound,
    list_pair_mounts,
    list_store_mounts,
    mount_model,
    mounts_query,
    of_pair,
)
from memfs.store.credentials import ResourceSpec
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

T = TypeVar("T")
"""How often the engine runs a transaction that creates a default store: a loss of the
race on ``ix_identity_mounts_default`` is followed by a retry, which finds the winner's."""

def default_store_name(identity_id: str, template_id: str) -> str:
    """The name of a pair's default store: ``default:<identity_id>:<template_id>``
    (stable: the same pair always gives the same name; SPEC §8)."""
    return f"default:{identity_id}:{template_id}"


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
        mounts_query().where(
            of_pair(identity_id, template_id), identity_mounts.c.system_managed.is_(True)
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
        mounts_query().where(
            of_pair(identity_id, template_id), identity_mounts.c.store_id == store_id
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
        return mount_model(existing), False
    if row.archived_at is not None:
        raise StoreArchived(f"memory store {store_id!r} is archived and can't be mounted")
    explicit = conn.execute(
        select(func.count())
        .select_from(identity_mounts)
        .where(of_pair(identity_id, template_id), identity_mounts.c.system_managed.is_(False))
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
    return mount_model(mount), True


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
            of_pair(identity_id, template_id), identity_mounts.c.store_id == store_id
        )
    )
    conn.execute(
        update(stores)
        .where(stores.c.id == store_id)
        .values(identity_template_count=stores.c.identity_template_count - 1)
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


class Identities(Facade):
    """Mounts of stores on (identity, template) pairs, default stores and pair sessions
    (SPEC §8)."""

    def _write_racing_default(self, work: Callable[[Connection], T]) -> T:
        """Runs ``work`` in a write transaction, again when it lost the race to create a
        pair's default store (the unique index ``ix_identity_mounts_default``: the other
        transaction committed one, which the next attempt finds)."""
        for attempt in range(DEFAULT_STORE_ATTEMPTS):
            try:
                with self._write() as conn:
                    return work(conn)
            except IntegrityError:
                if attempt + 1 == DEFAULT_STORE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def ensure_default_store(self, identity_id: str, template_id: str) -> tuple[MemoryStore, bool]:
        """The (identity, template) pair's system-managed default store, created on the
        first call (named ``default:<identity_id>:<template_id>``); returns it and
        whether this call created it. Two callers racing get the same one store.

        Raises:
            InvalidInput: an identity id not ``idn_…`` or a template id not ``tmpl_…``.
        """
        return self._write_racing_default(
            lambda conn: ensure_default_store(conn, identity_id, template_id)
        )

    def mount(
        self,
        identity_id: str,
        template_id: str,
        store_id: str,
        access: Access = Access.READ_ONLY,
    ) -> tuple[IdentityMount, bool]:
        """Mounts a store on a pair, read-only; returns the mount and whether it is new
        (mounting it again gives the same mount).

        Raises:
            InvalidInput: a malformed pair, ``read_write`` access, or the pair's 10
                explicit mounts taken (``mount_limit_reached``).
            Conflict: a default store (``default_store_not_mountable``).
            NotFound: unknown store. StoreArchived: an archived store.
        """
        with self._write() as conn:
            return mount_store(conn, identity_id, template_id, store_id, access)

    def unmount(self, identity_id: str, template_id: str, store_id: str) -> None:
        """Removes a pair's explicit mount of a store.

        Raises:
            InvalidInput: a malformed pair. Conflict: the pair's default store.
            NotFound: the store is not mounted on the pair.
        """
        with self._write() as conn:
            unmount_store(conn, identity_id, template_id, store_id)

    def pair_mounts(self, identity_id: str, template_id: str) -> list[IdentityMount]:
        """A pair's mounts: the default store first, then by mount creation time.
        Raises InvalidInput (a malformed pair)."""
        with self._read() as conn:
            return list_pair_mounts(conn, identity_id, template_id)

    def store_mounts(self, store_id: str) -> list[IdentityMount]:
        """The pairs a store is mounted on, oldest mount first. Raises NotFound."""
        with self._read() as conn:
            return list_store_mounts(conn, store_id)

    def create_session(
        self,
        identity_id: str,
        template_id: str,
        *,
        mount_root: str = config.DEFAULT_PAIR_MOUNT_ROOT,
        with_token: bool = True,
        title: str | None = None,
        ttl_s: int | None = None,
        api_key_id: str | None = None,
        principal: UserPrincipal | None = None,
    ) -> tuple[Session, str | None]:
        """A session for an (identity, template) pair (SPEC §8), in one transaction: its
        default store (created if needed) ``read_write``, then every explicit mount of an
        active store ``read_only`` by mount time, in the flat layout at ``mount_root``.

        Raises:
            InvalidInput: a malformed pair; and what
                :meth:`memfs.store.credentials.Sessions.create` raises.
            StoreArchived: the pair's default store is archived.
        """

        def work(conn: Connection) -> tuple[Session, str | None]:
            resources = pair_resources(conn, identity_id, template_id)
            return credentials.create_session(
                conn,
                resources,
                mount_root=mount_root,
                with_token=with_token,
                title=title,
                ttl_s=ttl_s,
                api_key_id=api_key_id,
                layout=Layout.FLAT,
                max_stores=config.MAX_STORES_PER_PAIR_SESSION,
                principal=principal,
            )

        return self._write_racing_default(work)
