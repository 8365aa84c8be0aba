"""Transcripts: a session's events (SPEC §11); :class:`Transcripts` is its facade
(``engine.transcripts``, ``engine.for_caller(…).transcripts``).

Events are appended as sent (``client.beta.sessions.events.send``, the agent's own
messages too, ``memfs transcript import``, a dream's account of what it read and wrote)
and numbered 1, 2, … per session in the order stored; they are data memfs keeps, erased
with their session (``sessions.delete``: the foreign key cascades, and the delete names
them too). Who may read them is the caller's rule (the API's: whoever may read the
session, and a principal only the sessions speaking for its own user).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select

from memfs.core.dreams import SessionEvent
from memfs.core.errors import InvalidInput
from memfs.core.ids import new_id
from memfs.core.model import Page
from memfs.store._common import Cursor, check_limit, now, parse_ts, ts
from memfs.store._facade import Facade
from memfs.store.credentials import get_session
from memfs.store.schema import session_events, sessions

__all__ = ["Transcripts", "append_events", "delete_events"]

# Fields memfs sets itself on a stored event; a sent event's own values are replaced.
_OWN_FIELDS = ("id", "type", "processed_at")


def _event(row: Row[Any]) -> SessionEvent:
    processed = parse_ts(row.processed_at)
    assert processed is not None
    return SessionEvent(
        id=row.id,
        session_id=row.session_id,
        seq=row.seq,
        type=row.type,
        body=json.loads(row.body_json),
        processed_at=processed,
    )


def append_events(
    conn: Connection, session_id: str, events: Sequence[Mapping[str, Any]]
) -> list[SessionEvent]:
    """See :meth:`Transcripts.append`; in the caller's write transaction."""
    # Locks the session row: two appends to one session number their events in turn.
    conn.execute(
        select(sessions.c.id).where(sessions.c.id == session_id).with_for_update()
    ).first()
    get_session(conn, session_id)
    last = conn.execute(
        select(func.max(session_events.c.seq)).where(session_events.c.session_id == session_id)
    ).scalar()
    seq = int(last or 0)
    stamp = now()
    ids = []
    for event in events:
        kind = event.get("type")
        if not isinstance(kind, str) or not kind or len(kind) > 64:
            raise InvalidInput("every event needs a type (e.g. user.message), 1 to 64 characters")
        seq += 1
        event_id = new_id("event")
        ids.append(event_id)
        body = {k: v for k, v in event.items() if k not in _OWN_FIELDS}
        conn.execute(
            insert(session_events).values(
                id=event_id,
                session_id=session_id,
                seq=seq,
                type=kind,
                body_json=json.dumps(body, ensure_ascii=False, sort_keys=True),
                processed_at=stamp,
            )
        )
    rows = conn.execute(select(session_events).where(session_events.c.id.in_(ids))).all()
    return sorted((_event(r) for r in rows), key=lambda e: e.seq)


def delete_events(conn: Connection, session_id: str) -> int:
    """Erases a session's events (its deletion); returns how many."""
    result = conn.execute(delete(session_events).where(session_events.c.session_id == session_id))
    return int(result.rowcount or 0)


class Transcripts(Facade):
    """Sessions' transcripts, for one caller."""

    def append(
        self, session_id: str, events: Iterable[Mapping[str, Any]]
    ) -> builtins.list[SessionEvent]:
        """Stores ``events`` (each a mapping with a ``type``; the rest is kept as sent)
        at the end of the session's transcript, in one transaction; returns them as
        stored, with their ids and ``processed_at``.

        Raises:
            NotFound: no such session.
            InvalidInput: an event without a type, or no event.
        """
        batch = list(events)
        if not batch:
            raise InvalidInput("send at least one event")
        with self._write() as conn:
            return append_events(conn, session_id, batch)

    def list(
        self,
        session_id: str,
        *,
        limit: int = 20,
        cursor: str | None = None,
        order: str = "asc",
        types: Sequence[str] = (),
        after: datetime | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
        until: datetime | None = None,
    ) -> Page[SessionEvent]:
        """A page of the session's events in the order stored (``order="desc"``: newest
        first), optionally only of ``types`` and within ``processed_at`` bounds
        (``after``/``before`` exclusive, ``since``/``until`` inclusive).

        Raises:
            NotFound: no such session. InvalidInput: a bad limit or order.
            InvalidCursor: a cursor of another query.
        """
        check_limit(limit)
        if order not in ("asc", "desc"):
            raise InvalidInput("order must be asc or desc")
        fingerprint = Cursor.fingerprint(
            "events", session_id, order, sorted(types), after, since, before, until
        )
        query = select(session_events).where(session_events.c.session_id == session_id)
        if types:
            query = query.where(session_events.c.type.in_(list(types)))
        if after is not None:
            query = query.where(session_events.c.processed_at > ts(after))
        if since is not None:
            query = query.where(session_events.c.processed_at >= ts(since))
        if before is not None:
            query = query.where(session_events.c.processed_at < ts(before))
        if until is not None:
            query = query.where(session_events.c.processed_at <= ts(until))
        if cursor is not None:
            key = int(Cursor.decode(cursor, fingerprint))
            query = query.where(
                session_events.c.seq > key if order == "asc" else session_events.c.seq < key
            )
        sort = session_events.c.seq.asc() if order == "asc" else session_events.c.seq.desc()
        with self._read() as conn:
            get_session(conn, session_id)
            rows = conn.execute(query.order_by(sort).limit(limit + 1)).all()
        items = [_event(r) for r in rows[:limit]]
        more = len(rows) > limit and items
        return Page[SessionEvent](
            items=items, next_cursor=Cursor.encode(fingerprint, items[-1].seq) if more else None
        )

    def all(self, session_id: str) -> builtins.list[SessionEvent]:
        """Every event of the session, in order. Raises NotFound."""
        with self._read() as conn:
            get_session(conn, session_id)
            rows = conn.execute(
                select(session_events)
                .where(session_events.c.session_id == session_id)
                .order_by(session_events.c.seq)
            ).all()
        return [_event(r) for r in rows]

    def after(self, session_id: str, seq: int, *, limit: int = 100) -> builtins.list[SessionEvent]:
        """The session's events numbered above ``seq``, in order, at most ``limit`` (an
        event stream's next read). Raises NotFound."""
        with self._read() as conn:
            get_session(conn, session_id)
            rows = conn.execute(
                select(session_events)
                .where(session_events.c.session_id == session_id, session_events.c.seq > seq)
                .order_by(session_events.c.seq)
                .limit(limit)
            ).all()
        return [_event(r) for r in rows]

    def count(self, session_ids: Sequence[str]) -> dict[str, int]:
        """How many events each of ``session_ids`` holds (absent: none)."""
        with self._read() as conn:
            return {
                sid: int(n)
                for sid, n in conn.execute(
                    select(session_events.c.session_id, func.count())
                    .where(session_events.c.session_id.in_(list(session_ids)))
                    .group_by(session_events.c.session_id)
                ).tuples()
            }
