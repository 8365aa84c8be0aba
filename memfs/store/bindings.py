"""Which (identity, template) pairs a store is mounted on (SPEC §8), read side: the
queries of ``identity_mounts`` shared by :mod:`memfs.store.identities` (which writes the
table) and :mod:`memfs.store.stores` (which refuses to archive or delete a bound store,
:func:`check_unbound`). Its own module so that neither of those imports the other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, select

from memfs.core import rules
from memfs.core.errors import StoreBound
from memfs.core.model import Access, IdentityMount
from memfs.store._common import store_row
from memfs.store.schema import identity_mounts, stores

__all__ = ["check_unbound", "list_pair_mounts", "list_store_mounts", "mount_model",
           "mounts_query", "of_pair", "pair_order"]

# Bindings named in a StoreBound message before "and N more".
_BINDINGS_NAMED = 10


def mount_model(row: Row[Any]) -> IdentityMount:
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


def mounts_query() -> Any:
    return select(
        identity_mounts,
        stores.c.name,
        stores.c.archived_at,
        stores.c.entry_count,
    ).join(stores, stores.c.id == identity_mounts.c.store_id)


def of_pair(identity_id: str, template_id: str) -> Any:
    return and_(
        identity_mounts.c.identity_id == identity_id,
        identity_mounts.c.template_id == template_id,
    )


def pair_order() -> tuple[Any, ...]:
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
        mounts_query().where(of_pair(identity_id, template_id)).order_by(*pair_order())
    ).all()
    return [mount_model(row) for row in rows]


def list_store_mounts(conn: Connection, store_id: str) -> list[IdentityMount]:
    """Every pair a store is mounted on, oldest mount first. Raises NotFound."""
    store_row(conn, store_id)
    rows = conn.execute(
        mounts_query()
        .where(identity_mounts.c.store_id == store_id)
        .order_by(identity_mounts.c.created_at, identity_mounts.c.identity_id)
    ).all()
    return [mount_model(row) for row in rows]


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
