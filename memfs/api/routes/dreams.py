"""Dreams (api-contract §7.4, SPEC §11) in the SDK's shapes (``client.beta.dreams``), and
sessions' transcripts (``client.beta.sessions.events``).

Who may do what:

* create a dream: an API key (a session token can't: 403 ``session_not_allowed``)
  with ``memory:read`` on the input store, and ``memory:write`` where the dream writes:
  on the input for ``update_existing``, on stores at large for ``create_new`` (it makes
  a store; a key limited to listed stores can't: 403 ``store_not_allowed``). Cancel and
  archive need the same; list and retrieve ``memory:read`` on the input store (another
  dream is the 404 of an unknown id). A dream has its creator's view of records (SPEC
  §6, §11: a key with a principal, or a non-admin key without one, is restricted): it
  reads, copies and writes only what that key may see, and may name only sessions whose
  transcripts that key may read (another's: 404 ``session_not_found``). Its
  ``result`` (the paths it read and changed) is shown only to a caller that sees what
  it saw: an unrestricted key, or one with the creator's very view; others get null.
* a session's events: listed and streamed by whoever may read the session (its own token, a key
  that may read its every store), and a key with a principal only for a session that
  speaks for the same user (SPEC §11: visibility by ``user_id``); sent by the session's
  own token or a key that could have created the session.

The job that runs a dream is :mod:`memfs.dreams` (started with the app).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BeforeValidator

from memfs.api.auth import Principal
from memfs.api.routes._common import (
    CreatedGte,
    CreatedLte,
    LimitQuery,
    PageQuery,
    _rfc3339,
    doc,
    json_response,
    run,
)
from memfs.api.routes.sessions import _require_handing, _visible_session
from memfs.core.config import (
    DEFAULT_PAGE_LIMIT,
    EVENT_STREAM_IDLE_S,
    EVENT_STREAM_PING_S,
    EVENT_STREAM_POLL_S,
    MAX_DREAM_SESSIONS,
    MAX_EVENT_STREAM_IDLE_S,
)
from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.errors import InvalidInput, MemfsError, NotFound
from memfs.core.model import Scope, Session
from memfs.store import Engine
from memfs.wire.dreams import (
    DreamCreate,
    DreamOut,
    DreamPage,
    EventPage,
    EventsSend,
    EventsSent,
    MemoryStoreInput,
    ModelConfig,
    SessionsInput,
    UpdateExisting,
    dream_to_wire,
    event_to_wire,
)

__all__ = ["check_dream_sessions", "router"]

router = APIRouter()

_CreatedGt = Annotated[datetime | None, BeforeValidator(_rfc3339), Query(alias="created_at[gt]")]
_CreatedLt = Annotated[datetime | None, BeforeValidator(_rfc3339), Query(alias="created_at[lt]")]


def _wake(request: Request) -> None:
    runner = getattr(request.app.state, "dream_runner", None)
    if runner is not None:
        runner.wake()


def _require_dreaming(principal: Principal, store_id: str, behavior: OutputBehavior) -> None:
    """Read on the input, write where the dream writes (module docstring)."""
    if behavior is OutputBehavior.CREATE_NEW:
        principal.require_unlimited(Scope.WRITE)
    principal.require(Scope.READ, store_id, agents=False)
    if behavior is OutputBehavior.UPDATE_EXISTING:
        principal.require(Scope.WRITE, store_id, agents=False)


def _out(principal: Principal, dream: Dream) -> dict[str, Any]:
    """The dream on the wire for ``principal``: its ``result`` names the paths it read
    and changed, shown only to a caller that sees what the dream saw
    (:meth:`memfs.core.dreams.Dream.result_for`, SPEC §6)."""
    return dream_to_wire(replace(dream, result=dream.result_for(principal.viewer)))


def _visible_dream(engine: Engine, principal: Principal, dream_id: str) -> Dream:
    if principal.session is None:
        principal.require(Scope.READ)
    dream = engine.dreams.get(dream_id)
    if not principal.can_see(dream.input_store_id):
        raise NotFound(f"dream {dream_id!r} not found", code="dream_not_found")
    return dream


def check_dream_sessions(
    engine: Engine, principal: Principal, session_ids: Sequence[str] | None
) -> None:
    """Refuses a session whose transcript ``principal`` may not read (as ``GET
    /v1/sessions/{id}/events`` decides): 404 ``session_not_found``, as for one that does
    not exist. Also used by the console's dream form. A list of the wrong length is
    left to the store's named refusal (``too_many_sessions``)."""
    if session_ids is None or not 1 <= len(session_ids) <= MAX_DREAM_SESSIONS:
        return
    for session_id in session_ids:
        try:
            _readable_transcript(engine, principal, session_id)
        except NotFound:
            raise NotFound(
                f"session {session_id!r} not found", code="session_not_found"
            ) from None


@router.post("/v1/dreams", responses=doc(DreamOut))
async def create_dream(request: Request, body: DreamCreate) -> JSONResponse:
    """``client.beta.dreams.create``: a ``pending`` dream of one memory store (not
    archived), reading up to 100 sessions' transcripts; the server's job runs it.
    Named refusals: 400 ``store_archived``, ``too_many_sessions``,
    ``duplicate_session``, ``session_without_transcript``, ``instructions_too_long``,
    ``invalid_inputs``; 404 ``session_not_found`` (also a session whose transcript
    the key may not read); 409 ``dream_already_active``. The dream sees as the key does
    (module docstring)."""
    stores = [i for i in body.inputs if isinstance(i, MemoryStoreInput)]
    session_inputs = [i for i in body.inputs if isinstance(i, SessionsInput)]
    if len(stores) != 1 or len(session_inputs) > 1:
        raise InvalidInput(
            "inputs must hold exactly one memory_store entry and at most one sessions entry",
            code="invalid_inputs",
        )
    store_id = stores[0].memory_store_id
    behavior = OutputBehavior.CREATE_NEW
    if isinstance(body.output_behavior, UpdateExisting):
        if body.output_behavior.memory_store_id != store_id:
            raise InvalidInput(
                "output_behavior update_existing must name the input memory store",
                code="invalid_inputs",
            )
        behavior = OutputBehavior.UPDATE_EXISTING
    model = body.model if isinstance(body.model, ModelConfig) else ModelConfig(id=body.model)

    session_ids = None if not session_inputs else session_inputs[0].session_ids

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        _require_dreaming(principal, store_id, behavior)
        check_dream_sessions(engine, principal, session_ids)
        # Bound to the key's viewer: the dream keeps it, and every step runs with it.
        dream = principal.caller(engine).dreams.create(
            store_id,
            session_ids=session_ids,
            model_id=model.id,
            model_speed=model.speed or "standard",
            instructions=body.instructions,
            output_behavior=behavior,
            created_by=None if principal.api_key is None else principal.api_key.id,
        )
        return _out(principal, dream)

    result = await run(request, op)
    _wake(request)
    return json_response(result)


@router.get("/v1/dreams", responses=doc(DreamPage))
async def list_dreams(
    request: Request,
    created_at_gt: _CreatedGt = None,
    created_at_lt: _CreatedLt = None,
    include_archived: bool = False,
    statuses: Annotated[list[DreamStatus] | None, Query(alias="statuses[]")] = None,
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """``client.beta.dreams.list``: newest first; ``created_at[gt]``/``[lt]``
    exclusive; archived dreams only with ``include_archived``; ``statuses[]`` keeps
    those statuses. A key sees the dreams of the stores it may read (a page may then
    hold fewer than ``limit``)."""
    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        principal.require(Scope.READ)
        result = engine.dreams.list(
            created_after=created_at_gt,
            created_before=created_at_lt,
            include_archived=include_archived,
            statuses=statuses or (),
            limit=limit,
            cursor=page,
        )
        return {
            "data": [
                _out(principal, d) for d in result.items if principal.can_see(d.input_store_id)
            ],
            "next_page": result.next_cursor,
        }

    return json_response(await run(request, op))


@router.get("/v1/dreams/{dream_id}", responses=doc(DreamOut))
async def retrieve_dream(request: Request, dream_id: str) -> JSONResponse:
    """``client.beta.dreams.retrieve``."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        return _out(principal, _visible_dream(engine, principal, dream_id))

    return json_response(await run(request, op))


@router.post("/v1/dreams/{dream_id}/cancel", responses=doc(DreamOut))
async def cancel_dream(request: Request, dream_id: str) -> JSONResponse:
    """``client.beta.dreams.cancel``: ``canceled`` at once; the job stops at its next
    step and the output store stays as far as it got. 409 ``dream_ended`` for a dream
    that completed or failed; canceling a canceled dream returns it."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        dream = _visible_dream(engine, principal, dream_id)
        _require_dreaming(principal, dream.input_store_id, dream.output_behavior)
        return _out(principal, engine.dreams.cancel(dream_id))

    return json_response(await run(request, op))


@router.post("/v1/dreams/{dream_id}/archive", responses=doc(DreamOut))
async def archive_dream(request: Request, dream_id: str) -> JSONResponse:
    """``client.beta.dreams.archive``: an ended dream leaves listings unless
    ``include_archived``; 409 ``dream_active`` while it is pending or running."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        dream = _visible_dream(engine, principal, dream_id)
        _require_dreaming(principal, dream.input_store_id, dream.output_behavior)
        return _out(principal, engine.dreams.archive(dream_id))

    return json_response(await run(request, op))


# --- transcripts


def _readable_transcript(engine: Engine, principal: Principal, session_id: str) -> Session:
    session = _visible_session(engine, principal, session_id)
    key = principal.api_key
    if (
        key is not None
        and principal.viewer is not None
        and session.principal is not None
        and (key.principal is None or key.principal.user_id != session.principal.user_id)
    ):
        raise NotFound(f"session {session_id!r} not found")
    return session


@router.post("/v1/sessions/{session_id}/events", responses=doc(EventsSent))
async def send_events(request: Request, session_id: str, body: EventsSend) -> JSONResponse:
    """``client.beta.sessions.events.send``: appends the events to the session's
    transcript as sent (the SDK's user events and, memfs extension, the agent's own
    such as ``agent.message``); answers them with their ``id`` and ``processed_at``."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        session = _readable_transcript(engine, principal, session_id)
        if principal.session is None:
            _require_handing(principal, session)
        events = engine.transcripts.append(session_id, [e.model_dump() for e in body.events])
        return {"data": [event_to_wire(e) for e in events]}

    return json_response(await run(request, op))


@router.get("/v1/sessions/{session_id}/events", responses=doc(EventPage))
async def list_events(
    request: Request,
    session_id: str,
    created_at_gt: _CreatedGt = None,
    created_at_gte: CreatedGte = None,
    created_at_lt: _CreatedLt = None,
    created_at_lte: CreatedLte = None,
    order: str = "asc",
    types: Annotated[list[str] | None, Query(alias="types[]")] = None,
    limit: LimitQuery = DEFAULT_PAGE_LIMIT,
    page: PageQuery = None,
) -> JSONResponse:
    """``client.beta.sessions.events.list``: the transcript in the order stored
    (``order=desc``: newest first), filtered by ``types[]`` and ``processed_at``."""

    def op(engine: Engine, principal: Principal) -> dict[str, Any]:
        _readable_transcript(engine, principal, session_id)
        result = engine.transcripts.list(
            session_id,
            limit=limit,
            cursor=page,
            order=order,
            types=types or (),
            after=created_at_gt,
            since=created_at_gte,
            before=created_at_lt,
            until=created_at_lte,
        )
        return {
            "data": [event_to_wire(e) for e in result.items],
            "next_page": result.next_cursor,
        }

    return json_response(await run(request, op))


_STREAM_BATCH = 100


def _sse(event_type: str, data: dict[str, Any]) -> bytes:
    return f"event: {event_type}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _follow(
    engine: Engine, session_id: str, dream_id: str | None, timeout_s: float
) -> AsyncIterator[bytes]:
    """The event stream's body (:func:`stream_events`)."""

    def dream_ended() -> bool:
        return dream_id is not None and engine.dreams.get(dream_id).status.final

    seq = 0
    quiet_since = pinged = time.monotonic()
    while True:  # StreamingResponse cancels it when the client goes away
        ended = await anyio.to_thread.run_sync(dream_ended)
        # Read after looking at the status: a dream ends with its last event in the
        # same transaction, so this read holds it.
        batch = await anyio.to_thread.run_sync(
            functools.partial(engine.transcripts.after, session_id, seq, limit=_STREAM_BATCH)
        )
        for event in batch:
            seq = event.seq
            yield _sse(event.type, event_to_wire(event))
        now_s = time.monotonic()
        if batch:
            quiet_since = pinged = now_s
            if len(batch) == _STREAM_BATCH:
                continue
        if ended or now_s - quiet_since >= timeout_s:
            return
        if now_s - pinged >= EVENT_STREAM_PING_S:
            pinged = now_s
            yield _sse("ping", {"type": "ping"})
        await anyio.sleep(EVENT_STREAM_POLL_S)


@router.get(
    "/v1/sessions/{session_id}/events/stream",
    response_class=StreamingResponse,
    responses={200: {
        "description": "Server-sent events: each event of the session as ``event: TYPE`` "
        "and ``data: {the event as events.list gives it}``, and ``ping`` events.",
        # Each server-sent event: its type, and the event object as JSON text.
        "content": {"text/event-stream": {"schema": {
            "type": "object",
            "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
            "required": ["event", "data"],
        }}},
    }},
)
async def stream_events(
    request: Request,
    session_id: str,
    timeout_s: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_EVENT_STREAM_IDLE_S,
            allow_inf_nan=False,
            description="End the stream after this many seconds without a new event "
            "(0 to 3600; default 300).",
        ),
    ] = EVENT_STREAM_IDLE_S,
) -> StreamingResponse:
    """``client.beta.sessions.events.stream``: the session's events as server-sent
    events, from its first (as ``events.list`` gives them, each under its own ``event:``
    type, which the SDK parses), then each new one as it is stored. It ends when the
    session is a dream's (SPEC §11) and that dream has ended (its last event, e.g.
    ``completed: …``, sent first; a canceled dream's stream ends at the cancel), or
    after ``timeout_s`` seconds without a new event, or when the client goes away;
    a ``ping`` event (which the SDK skips) every 15 quiet seconds. Who may: as
    ``events.list``."""

    def first(engine: Engine, principal: Principal) -> str | None:
        _readable_transcript(engine, principal, session_id)
        dream = engine.dreams.of_session(session_id)
        return None if dream is None else dream.id

    dream_id = await run(request, first)
    engine: Engine = request.app.state.engine

    async def events() -> AsyncIterator[bytes]:
        try:
            async for chunk in _follow(engine, session_id, dream_id, timeout_s):
                yield chunk
        except MemfsError as exc:  # e.g. the database away: the SDK raises an error event
            yield _sse("error", {"type": "error", "error": {"type": exc.code,
                                                            "message": exc.message}})

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )
