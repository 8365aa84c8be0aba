"""Dreams (SPEC §11, api-contract §7.4): their rows and status transitions;
:class:`Dreams` is the facade (``engine.dreams``, ``engine.for_caller(…).dreams``).

The status machine is :class:`memfs.core.dreams.DreamStatus`'s; every transition here is
one conditional UPDATE (``… WHERE status = <from>``), so a cancel and the job finishing
can race and exactly one wins. One pending or running dream per input store is kept by a
unique partial index (two creates racing: one gets the 409). The job that runs a dream
(``memfs.dreams``) claims it (``pending → running``), beats a heartbeat while it runs,
checks :meth:`Dreams.still_running` before each step, and ends it; a running dream whose
heartbeat went stale lost its job (its server stopped) and :meth:`Dreams.fail_stale`
marks it ``failed`` with ``dream_interrupted``: memfs never resumes a half-run dream.

The refusals of :meth:`Dreams.create` are named (``error_code`` on the wire):
``store_archived`` (400), ``session_not_found`` (404), ``session_without_transcript``
(400), ``too_many_sessions`` (400), ``duplicate_session`` (400),
``instructions_too_long`` (400), ``invalid_model`` (400), ``dream_already_active``
(409).

Whose view a dream has (SPEC §6, §11): its creator's. :meth:`Dreams.create` records the
viewer of the caller it is bound to (``engine.for_caller(viewer=…).dreams``; the HTTP
API binds the request's key) in ``viewer_json``, and :attr:`Dream.viewer` gives it back
to the job, which runs every step with it, after a restart too. A restricted creator
naming a session whose transcript it may not read (one speaking for another user,
:func:`memfs.core.visibility.sees_transcript`) gets ``session_not_found``, as for a
session that does not exist.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from memfs.core.config import (
    MAX_DREAM_INSTRUCTIONS_CHARS,
    MAX_DREAM_MODEL_ID_CHARS,
    MAX_DREAM_SESSIONS,
)
from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.errors import Conflict, InvalidInput, NotFound, StoreArchived
from memfs.core.ids import new_id
from memfs.core.model import Page, utcnow
from memfs.core.visibility import Viewer, sees_transcript
from memfs.store._common import Cursor, check_limit, lock_store, now, parse_ts, ts
from memfs.store._facade import Facade
from memfs.store.schema import dreams, session_events, sessions
from memfs.store.transcripts import append_events

__all__ = ["Dreams", "ZERO_USAGE"]

ZERO_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
_ACTIVE = (DreamStatus.PENDING.value, DreamStatus.RUNNING.value)


def count_by_status(conn: Connection) -> dict[str, int]:
    """How many dreams are in each status (SPEC §11), every status named, 0 for none:
    the ``memfs_dreams{status}`` gauge of ``memfs serve``."""
    counts = dict.fromkeys((status.value for status in DreamStatus), 0)
    for status, count in conn.execute(
        select(dreams.c.status, func.count()).group_by(dreams.c.status)
    ):
        counts[str(status)] = int(count)
    return counts


def _dream(row: Row[Any]) -> Dream:
    created = parse_ts(row.created_at)
    assert created is not None
    return Dream(
        id=row.id,
        status=DreamStatus(row.status),
        input_store_id=row.input_store_id,
        session_ids=(
            None if row.session_ids_json is None else tuple(json.loads(row.session_ids_json))
        ),
        model_id=row.model_id,
        model_speed=row.model_speed,
        instructions=row.instructions,
        output_behavior=OutputBehavior(row.output_behavior),
        output_store_id=row.output_store_id,
        session_id=row.session_id,
        error_type=row.error_type,
        error_message=row.error_message,
        usage=json.loads(row.usage_json),
        result=None if row.result_json is None else json.loads(row.result_json),
        created_at=created,
        started_at=parse_ts(row.started_at),
        ended_at=parse_ts(row.ended_at),
        archived_at=parse_ts(row.archived_at),
        heartbeat_at=parse_ts(row.heartbeat_at),
        viewer=_viewer(row.viewer_json),
    )


def _viewer_json(viewer: Viewer | None) -> str | None:
    if viewer is None:
        return None
    return json.dumps({"user_id": viewer.user_id, "roles": sorted(viewer.roles)})


def _viewer(text: str | None) -> Viewer | None:
    if text is None:
        return None
    data = json.loads(text)
    return Viewer(user_id=data["user_id"], roles=frozenset(data["roles"]))


def _row(conn: Connection, dream_id: str) -> Row[Any]:
    row = conn.execute(select(dreams).where(dreams.c.id == dream_id)).first()
    if row is None:
        raise NotFound(f"dream {dream_id!r} not found", code="dream_not_found")
    return row


def _check_request(
    session_ids: Sequence[str] | None, model_id: str, instructions: str | None
) -> tuple[str, ...] | None:
    if not 1 <= len(model_id) <= MAX_DREAM_MODEL_ID_CHARS:
        raise InvalidInput(
            f"model must be 1 to {MAX_DREAM_MODEL_ID_CHARS} characters", code="invalid_model"
        )
    if instructions is not None and not 1 <= len(instructions) <= MAX_DREAM_INSTRUCTIONS_CHARS:
        raise InvalidInput(
            f"instructions must be 1 to {MAX_DREAM_INSTRUCTIONS_CHARS} characters, "
            f"not {len(instructions)}",
            code="instructions_too_long",
        )
    if session_ids is None:
        return None
    if not 1 <= len(session_ids) <= MAX_DREAM_SESSIONS:
        raise InvalidInput(
            f"a dream reads 1 to {MAX_DREAM_SESSIONS} sessions, not {len(session_ids)}",
            code="too_many_sessions",
        )
    if len(set(session_ids)) != len(session_ids):
        raise InvalidInput("a session is given twice", code="duplicate_session")
    return tuple(sorted(session_ids))


def _check_sessions(
    conn: Connection, session_ids: Sequence[str], viewer: Viewer | None
) -> None:
    """Refuses a session that does not exist, or whose transcript ``viewer`` may not
    read (the same ``session_not_found``: a restricted caller can't tell the two
    apart), or that has no transcript."""
    speaks_for = {
        row.id: row.principal_user_id
        for row in conn.execute(
            select(sessions.c.id, sessions.c.principal_user_id).where(
                sessions.c.id.in_(list(session_ids))
            )
        )
    }
    for session_id in session_ids:
        if session_id not in speaks_for or not sees_transcript(viewer, speaks_for[session_id]):
            raise NotFound(f"session {session_id!r} not found", code="session_not_found")
    with_events = set(
        conn.execute(
            select(session_events.c.session_id)
            .where(session_events.c.session_id.in_(list(session_ids)))
            .distinct()
        ).scalars()
    )
    for session_id in session_ids:
        if session_id not in with_events:
            raise InvalidInput(
                f"session {session_id!r} has no transcript: send its events first "
                "(POST /v1/sessions/{id}/events, memfs transcript import)",
                code="session_without_transcript",
            )


def _active_conflict(store_id: str, dream_id: str | None) -> Conflict:
    named = f" ({dream_id})" if dream_id else ""
    return Conflict(
        f"memory store {store_id!r} already has a pending or running dream{named}; "
        "cancel it or wait for it to end",
        code="dream_already_active",
    )


def _transition(
    conn: Connection, dream_id: str, frm: Iterable[DreamStatus], values: Mapping[str, Any]
) -> bool:
    result = conn.execute(
        update(dreams)
        .where(dreams.c.id == dream_id, dreams.c.status.in_([s.value for s in frm]))
        .values(**values)
    )
    return bool(result.rowcount)


def _say(conn: Connection, dream_id: str, line: str) -> None:
    """Appends ``line`` as an ``agent.message`` to the dream's session, if it has one."""
    session_id = conn.execute(
        select(dreams.c.session_id).where(dreams.c.id == dream_id)
    ).scalar()
    if session_id is not None:
        append_events(
            conn, session_id,
            [{"type": "agent.message", "content": [{"type": "text", "text": line}]}],
        )


class Dreams(Facade):
    """Dreams and their lifecycle, for one caller."""

    def create(
        self,
        input_store_id: str,
        *,
        session_ids: Sequence[str] | None,
        model_id: str,
        model_speed: str = "standard",
        instructions: str | None = None,
        output_behavior: OutputBehavior = OutputBehavior.CREATE_NEW,
        created_by: str | None = None,
    ) -> Dream:
        """A new ``pending`` dream of ``input_store_id`` (a job runs it) with this
        caller's viewer (module docstring: every step of it sees what the caller sees).

        Raises:
            NotFound: no such store; ``session_not_found`` (also a session whose
                transcript the caller's viewer may not read).
            StoreArchived: ``store_archived``, the input is archived.
            InvalidInput: ``too_many_sessions``, ``duplicate_session``,
                ``session_without_transcript``, ``instructions_too_long``,
                ``invalid_model``.
            Conflict: ``dream_already_active``, the store has a pending or running dream.
        """
        ordered = _check_request(session_ids, model_id, instructions)
        dream_id = new_id("dream")
        try:
            with self._write() as conn:
                row = lock_store(conn, input_store_id)
                if row.archived_at is not None:
                    raise StoreArchived(
                        f"memory store {input_store_id!r} is archived: a dream needs a store "
                        "that is not",
                        code="store_archived",
                    )
                if ordered is not None:
                    _check_sessions(conn, ordered, self.viewer)
                active = conn.execute(
                    select(dreams.c.id).where(
                        dreams.c.input_store_id == input_store_id, dreams.c.status.in_(_ACTIVE)
                    )
                ).scalar()
                if active is not None:
                    raise _active_conflict(input_store_id, active)
                conn.execute(
                    insert(dreams).values(
                        id=dream_id,
                        status=DreamStatus.PENDING.value,
                        input_store_id=input_store_id,
                        session_ids_json=None if ordered is None else json.dumps(list(ordered)),
                        model_id=model_id,
                        model_speed=model_speed,
                        instructions=instructions,
                        output_behavior=OutputBehavior(output_behavior).value,
                        output_store_id=(
                            input_store_id
                            if output_behavior is OutputBehavior.UPDATE_EXISTING
                            else None
                        ),
                        usage_json=json.dumps(ZERO_USAGE),
                        created_at=now(),
                        created_by=created_by,
                        viewer_json=_viewer_json(self.viewer),
                    )
                )
                return _dream(_row(conn, dream_id))
        except IntegrityError:  # another create won the race for this store
            raise _active_conflict(input_store_id, None) from None

    def get(self, dream_id: str) -> Dream:
        """Raises NotFound ``dream_not_found``."""
        with self._read() as conn:
            return _dream(_row(conn, dream_id))

    def list(
        self,
        *,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        include_archived: bool = False,
        statuses: Sequence[DreamStatus] = (),
        limit: int = 20,
        cursor: str | None = None,
    ) -> Page[Dream]:
        """Newest first (``created_at``, then id); ``created_*`` bounds exclusive.

        Raises:
            InvalidInput: a bad limit. InvalidCursor: a cursor of another query.
        """
        check_limit(limit)
        wanted = sorted({DreamStatus(s).value for s in statuses})
        fingerprint = Cursor.fingerprint(
            "dreams", created_after, created_before, include_archived, wanted
        )
        query = select(dreams)
        if created_after is not None:
            query = query.where(dreams.c.created_at > ts(created_after))
        if created_before is not None:
            query = query.where(dreams.c.created_at < ts(created_before))
        if not include_archived:
            query = query.where(dreams.c.archived_at.is_(None))
        if wanted:
            query = query.where(dreams.c.status.in_(wanted))
        if cursor is not None:
            created, last_id = Cursor.decode(cursor, fingerprint)
            query = query.where(
                (dreams.c.created_at < created)
                | ((dreams.c.created_at == created) & (dreams.c.id < last_id))
            )
        with self._read() as conn:
            rows = conn.execute(
                query.order_by(dreams.c.created_at.desc(), dreams.c.id.desc()).limit(limit + 1)
            ).all()
        page = rows[:limit]
        next_cursor = (
            Cursor.encode(fingerprint, [page[-1].created_at, page[-1].id])
            if len(rows) > limit and page
            else None
        )
        return Page[Dream](items=[_dream(r) for r in page], next_cursor=next_cursor)

    def cancel(self, dream_id: str) -> Dream:
        """Cancels a pending or running dream: ``canceled`` at once; its job stops at its
        next step, leaving the output store as far as it got. Canceling a canceled dream
        returns it unchanged.

        Raises:
            NotFound. Conflict ``dream_ended``: it completed or failed.
        """
        with self._write() as conn:
            stamp = now()
            if not _transition(
                conn, dream_id, (DreamStatus.PENDING, DreamStatus.RUNNING),
                {"status": DreamStatus.CANCELED.value, "ended_at": stamp},
            ):
                dream = _dream(_row(conn, dream_id))
                if dream.status is not DreamStatus.CANCELED:
                    raise Conflict(
                        f"dream {dream_id!r} is {dream.status.value}: only a pending or "
                        "running dream can be canceled",
                        code="dream_ended",
                    )
            return _dream(_row(conn, dream_id))

    def archive(self, dream_id: str) -> Dream:
        """Archives an ended dream (left out of listings unless ``include_archived``);
        idempotent.

        Raises:
            NotFound. Conflict ``dream_active``: it is still pending or running.
        """
        with self._write() as conn:
            dream = _dream(_row(conn, dream_id))
            if not dream.status.final:
                raise Conflict(
                    f"dream {dream_id!r} is {dream.status.value}: cancel it or let it end "
                    "before archiving it",
                    code="dream_active",
                )
            if dream.archived_at is None:
                conn.execute(
                    update(dreams).where(dreams.c.id == dream_id).values(archived_at=now())
                )
            return _dream(_row(conn, dream_id))

    # --- the job's side (memfs.dreams.runner)

    def has_work(self, stale_after_s: float) -> bool:
        """Whether a runner has anything to do: a pending dream, or a running one whose
        heartbeat is older than ``stale_after_s`` seconds. One read: an idle runner
        looks with it and writes nothing (SPEC §4: an idle server costs close to
        nothing, and takes no write lock from the mounts)."""
        limit = ts(utcnow() - timedelta(seconds=stale_after_s))
        with self._read() as conn:
            found = conn.execute(
                select(dreams.c.id).where(
                    (dreams.c.status == DreamStatus.PENDING.value)
                    | (
                        (dreams.c.status == DreamStatus.RUNNING.value)
                        & (func.coalesce(dreams.c.heartbeat_at, dreams.c.created_at) < limit)
                    )
                ).limit(1)
            ).first()
        return found is not None

    def claim(self, runner_id: str) -> Dream | None:
        """The oldest pending dream, now ``running`` and claimed by ``runner_id``; None
        when none is pending (or another runner claimed it first)."""
        with self._write() as conn:
            row = conn.execute(
                select(dreams.c.id)
                .where(dreams.c.status == DreamStatus.PENDING.value)
                .order_by(dreams.c.created_at, dreams.c.id)
                .limit(1)
            ).first()
            if row is None:
                return None
            stamp = now()
            if not _transition(
                conn, row.id, (DreamStatus.PENDING,),
                {"status": DreamStatus.RUNNING.value, "started_at": stamp,
                 "heartbeat_at": stamp, "runner_id": runner_id},
            ):
                return None
            return _dream(_row(conn, row.id))

    def record(
        self,
        dream_id: str,
        *,
        session_id: str | None = None,
        output_store_id: str | None = None,
        usage: Mapping[str, int] | None = None,
    ) -> bool:
        """Records the dream's session, output store or usage and beats its heartbeat,
        if it is still running; returns whether it is."""
        values: dict[str, Any] = {"heartbeat_at": now()}
        if session_id is not None:
            values["session_id"] = session_id
        if output_store_id is not None:
            values["output_store_id"] = output_store_id
        if usage is not None:
            values["usage_json"] = json.dumps(dict(usage))
        with self._write() as conn:
            return _transition(conn, dream_id, (DreamStatus.RUNNING,), values)

    def set_usage(self, dream_id: str, usage: Mapping[str, int]) -> None:
        """Records the dream's token ``usage`` whatever its status: a model turn in
        flight when the dream was canceled was used all the same (the SDK's
        ``BetaDreamUsage``: counts can keep changing after a cancel)."""
        with self._write() as conn:
            conn.execute(
                update(dreams).where(dreams.c.id == dream_id)
                .values(usage_json=json.dumps(dict(usage)))
            )

    def still_running(self, dream_id: str) -> bool:
        """Whether the dream is still ``running`` (not canceled meanwhile)."""
        with self._read() as conn:
            status = conn.execute(select(dreams.c.status).where(dreams.c.id == dream_id)).scalar()
        return status == DreamStatus.RUNNING.value

    def of_session(self, session_id: str) -> Dream | None:
        """The dream whose own session ``session_id`` is, or None."""
        with self._read() as conn:
            row = conn.execute(select(dreams).where(dreams.c.session_id == session_id)).first()
        return None if row is None else _dream(row)

    def complete(
        self, dream_id: str, result: Mapping[str, Any], *, say: str | None = None
    ) -> bool:
        """``running → completed`` with its result; False when it was canceled first.
        ``say``: an ``agent.message`` appended to the dream's session in the same
        transaction (an event stream that sees the dream ended has seen it too)."""
        with self._write() as conn:
            done = _transition(
                conn, dream_id, (DreamStatus.RUNNING,),
                {"status": DreamStatus.COMPLETED.value, "ended_at": now(),
                 "result_json": json.dumps(dict(result), sort_keys=True)},
            )
            if done and say is not None:
                _say(conn, dream_id, say)
            return done

    def fail(
        self, dream_id: str, error_type: str, message: str,
        result: Mapping[str, Any] | None = None, *, say: str | None = None,
    ) -> bool:
        """``pending|running → failed`` naming why; False when it had ended already.
        ``say``: as :meth:`complete` (when the dream has a session)."""
        values: dict[str, Any] = {
            "status": DreamStatus.FAILED.value,
            "ended_at": now(),
            "error_type": error_type,
            "error_message": message,
        }
        if result is not None:
            values["result_json"] = json.dumps(dict(result), sort_keys=True)
        with self._write() as conn:
            done = _transition(
                conn, dream_id, (DreamStatus.PENDING, DreamStatus.RUNNING), values
            )
            if done and say is not None:
                _say(conn, dream_id, say)
            return done

    def fail_stale(self, older_than_s: float, *, at: datetime | None = None) -> builtins.list[str]:
        """Marks ``failed`` (``dream_interrupted``) every running dream whose heartbeat is
        older than ``older_than_s`` seconds: its job's server stopped (memfs does not
        resume a half-run dream). Returns their ids."""
        moment = utcnow() if at is None else at  # heartbeats are wall-clock times
        limit = ts(moment - timedelta(seconds=older_than_s))
        with self._write() as conn:
            ids = list(
                conn.execute(
                    select(dreams.c.id).where(
                        dreams.c.status == DreamStatus.RUNNING.value,
                        func.coalesce(dreams.c.heartbeat_at, dreams.c.created_at) < limit,
                    )
                ).scalars()
            )
            for dream_id in ids:
                _transition(
                    conn, dream_id, (DreamStatus.RUNNING,),
                    {"status": DreamStatus.FAILED.value, "ended_at": now(),
                     "error_type": "dream_interrupted",
                     "error_message": "the server running this dream stopped before it "
                     "ended; memfs does not resume a half-run dream: create it again"},
                )
        return ids
