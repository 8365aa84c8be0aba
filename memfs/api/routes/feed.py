"""A store's change feed, ``GET …/changes``: a long poll that remote mounts follow
(SPEC §4; wire shape in :mod:`memfs.wire.changes`, waiting in :mod:`memfs.api.changes`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from memfs.api.auth import Principal
from memfs.api.changes import (
    MAX_CHANGES_LIMIT,
    MAX_LONG_POLL_TIMEOUT_S,
    run_until_disconnected,
)
from memfs.api.routes._common import doc, json_response, notifier, run
from memfs.core.errors import NotFound
from memfs.core.model import Change, ChangeKind, Scope
from memfs.store import Caller, Engine
from memfs.wire import change_to_wire
from memfs.wire.changes import ChangePage

__all__ = ["router"]

router = APIRouter()

# SQLite integers are signed 64-bit; a larger ``after`` could not even be compared.
MAX_SEQ = 2**63 - 1


def _read_changes(
    caller: Caller, store_id: str, after: int, limit: int
) -> tuple[list[Change], int, bool]:
    """The changes after ``after`` (at most ``limit``), the store's newest seq, and
    whether the store still exists.

    A deleted store answers until its final ``store_deleted`` entry has been read; its
    newest seq is then that entry's.

    Entries about memories hidden from ``caller``'s viewer keep only their seq, kind and
    memory id (SPEC §6; :meth:`memfs.store.feed.Feed.changes_since`).

    Raises:
        NotFound: an unknown store, or a deleted one whose feed was read to the end.
    """
    # Changes first: the newest seq read after them is never below the last one returned.
    changes = caller.feed.changes_since(store_id, after, limit=limit)
    try:
        return changes, caller.feed.last_seq(store_id), True
    except NotFound:
        pass
    # Gone: read again (it may have been deleted between the two reads), then find the
    # final entry, reading on past a truncated batch.
    changes = caller.feed.changes_since(store_id, after, limit=limit)
    if not changes:
        raise NotFound(f"memory store {store_id!r} not found")
    final = changes[-1]
    while final.kind is not ChangeKind.STORE_DELETED:
        more = caller.feed.changes_since(store_id, final.seq, limit=MAX_CHANGES_LIMIT)
        if not more:
            break
        final = more[-1]
    return changes, final.seq, False


@router.get("/v1/memory_stores/{memory_store_id}/changes", responses=doc(ChangePage))
async def list_changes(
    request: Request,
    memory_store_id: str,
    after: Annotated[
        int, Query(ge=0, le=MAX_SEQ, description="The last seq the caller has seen.")
    ] = 0,
    timeout_s: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_LONG_POLL_TIMEOUT_S,
            allow_inf_nan=False,
            description="Seconds to wait for a change when there is none yet (0 to 30).",
        ),
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_CHANGES_LIMIT)] = MAX_CHANGES_LIMIT,
) -> JSONResponse:
    """The store's change feed, a long poll (SPEC §4; wire shape in
    :mod:`memfs.wire.changes`): changes with ``seq > after``, oldest first, at once if
    there are any; else it waits up to ``timeout_s`` for one, and answers ``data: []``
    if none came. It never waits when ``after > last_seq`` (the feed was reset: the
    caller must resynchronize) or when the store is deleted. A deleted store answers
    until its ``store_deleted`` entry has been read, then 404. Readable with
    ``memory:read``, or by a session the store is attached to."""

    def read(engine: Engine, principal: Principal) -> tuple[list[dict[str, Any]], int, bool]:
        principal.require(Scope.READ, memory_store_id)
        changes, last_seq, alive = _read_changes(
            principal.caller(engine), memory_store_id, after, limit
        )
        return [change_to_wire(c) for c in changes], last_seq, alive

    data, last_seq, alive = await run(request, read)
    if not data and alive and timeout_s > 0 and after <= last_seq:
        change_notifier = notifier(request)

        async def wait() -> None:
            await change_notifier.wait(memory_store_id, after, timeout_s)

        if await run_until_disconnected(request.receive, wait):
            data, last_seq, _ = await run(request, read, reauthenticate=True)
    return json_response({"data": data, "last_seq": last_seq})
