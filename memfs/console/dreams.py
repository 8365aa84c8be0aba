"""Dreams in the console (SPEC §11, §12): start one on a store, list a store's dreams,
follow one while it runs, review its output's diff against the input, apply it (merge
the output fork into the input, the plan shown first) or discard it (archive), cancel
one that runs.

The calls and scopes are the API's (:mod:`memfs.api.routes.dreams`): starting needs an
API key (a session token can't) with ``memory:read`` on the store and ``memory:write``
where the dream writes (stores at large for ``create_new``: the output is a new store;
the store itself for ``update_existing``); cancel and discard need the same; applying
is a merge of the output into the input (``memory:write`` and ``memory:delete`` on the
input, as ``memfs dream apply``). A dream of a store the credential can't see is the
404 of an unknown id.

Following a dream needs no script: its page reloads itself every
:data:`REFRESH_S` seconds (``<meta http-equiv="refresh">``, which the
Content-Security-Policy does not govern) while the dream is pending or running.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.responses import Response

from memfs.api.routes.dreams import check_dream_sessions
from memfs.console.guard import CONSOLE_PATH
from memfs.console.history import DIFF_PAGE_SIZE, DiffItem, diff_items, page_number
from memfs.console.view import Page
from memfs.core import config
from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.errors import InvalidInput, NotFound, PermissionDenied
from memfs.core.model import Scope

__all__ = [
    "DREAMS_PAGE_SIZE",
    "REFRESH_S",
    "apply_dream",
    "apply_plan_page",
    "cancel_dream",
    "discard_dream",
    "dream_page",
    "start_dream",
    "store_dreams_page",
]

DREAMS_PAGE_SIZE = 50
# How often a pending or running dream's page reloads itself, in seconds.
REFRESH_S = 2


def _dream_url(dream_id: str, tail: str = "") -> str:
    return f"{CONSOLE_PATH}/dreams/{dream_id}{tail}"


def _require_dreaming(current: Page, store_id: str, behavior: OutputBehavior) -> None:
    """Read on the input, write where the dream writes (the API's rule)."""
    principal = current.principal
    if behavior is OutputBehavior.CREATE_NEW:
        principal.require_unlimited(Scope.WRITE)
    principal.require(Scope.READ, store_id, agents=False)
    if behavior is OutputBehavior.UPDATE_EXISTING:
        principal.require(Scope.WRITE, store_id, agents=False)


def _may_dream(current: Page, store_id: str, behavior: OutputBehavior) -> bool:
    if current.principal.api_key is None:
        return False
    try:
        _require_dreaming(current, store_id, behavior)
    except (PermissionDenied, NotFound):
        return False
    return True


def _visible(current: Page, dream_id: str) -> Dream:
    """The dream, if the credential may see its input store (else 404)."""
    if current.principal.session is None:
        current.principal.require(Scope.READ)
    dream = current.engine.dreams.get(dream_id)
    if not current.principal.can_see(dream.input_store_id):
        raise NotFound(f"dream {dream_id!r} not found", code="dream_not_found")
    return dream


def store_dreams_page(current: Page) -> Response:
    """GET /console/stores/{id}/dreams: the store's dreams, newest first (a page of the
    dreams list holds those of this store: it may show fewer than a page), archived
    ones with ``?archived=1``; the start form for a key that may dream."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    include_archived = current.query.get("archived") == "1"
    result = current.engine.dreams.list(
        include_archived=include_archived, limit=DREAMS_PAGE_SIZE,
        cursor=current.query.get("page") or None,
    )
    dreams = [d for d in result.items if d.input_store_id == store_id]
    return current.render(
        "dreams.html",
        title=f"Dreams of {store.name}",
        store=store,
        dreams=dreams,
        next_page=result.next_cursor,
        include_archived=include_archived,
        may_start=store.archived_at is None
        and _may_dream(current, store_id, OutputBehavior.CREATE_NEW),
        may_update=store.archived_at is None
        and _may_dream(current, store_id, OutputBehavior.UPDATE_EXISTING),
        default_model=config.CONSOLIDATE_MODEL,
        session_only=current.principal.api_key is None,
    )


def start_dream(current: Page) -> Response:
    """POST /console/stores/{id}/dreams: a ``pending`` dream (as ``POST /v1/dreams``:
    model, instructions, optional session ids, output behaviour); the server's dream
    job runs it. Then its page, which follows it."""
    store_id = current.params["store_id"]
    try:
        behavior = OutputBehavior(current.form.get("output_behavior") or "create_new")
    except ValueError:
        raise InvalidInput("output_behavior must be create_new or update_existing",
                           code="invalid_inputs") from None
    if current.principal.api_key is None:
        raise PermissionDenied("a session token can't start a dream; sign in with an API key",
                               code="session_not_allowed")
    _require_dreaming(current, store_id, behavior)
    sessions = [s for s in (current.form.get("session_ids") or "").replace(",", " ").split() if s]
    check_dream_sessions(current.engine, current.principal, sessions)
    # Bound to the credential's viewer: the dream keeps it and runs every step with it.
    dream = current.caller.dreams.create(
        store_id,
        session_ids=sessions or None,
        model_id=(current.form.get("model") or config.CONSOLIDATE_MODEL).strip(),
        instructions=current.form.get("instructions") or None,
        output_behavior=behavior,
        created_by=current.principal.api_key.id,
    )
    return current.redirect(_dream_url(dream.id))


def dream_page(current: Page) -> Response:
    """GET /console/dreams/{id}: the dream's status, times, error, result and usage;
    reloading itself while it is pending or running; once completed (``create_new``)
    the diff of its output against the input it read (from the fork's base), a page at
    a time (``?page=``), with apply and discard."""
    dream = _visible(current, current.params["dream_id"])
    store = current.caller.stores.get(dream.input_store_id)
    output = None
    items: list[DiffItem] = []
    total = 0
    base = "now"
    number = page_number(current)
    if dream.output_store_id is not None and dream.output_behavior is OutputBehavior.CREATE_NEW:
        try:
            output = current.caller.stores.get(dream.output_store_id)
        except NotFound:
            output = None
    if output is not None and dream.status is DreamStatus.COMPLETED:
        base = output.fork_base or "now"
        # Without what the output never had (hidden from the dream's creator, SPEC §6).
        diff = current.caller.history.diff(store.id, base, output.id, "now", forked_only=True)
        total = len(diff.entries)
        start = (number - 1) * DIFF_PAGE_SIZE
        items = diff_items(current, diff.entries[start : start + DIFF_PAGE_SIZE],
                            store.id, output.id, "inline")
    ended = dream.status.final
    return current.render(
        "dream.html",
        title=f"Dream {dream.id}",
        store=store,
        # Its result names paths: only for a credential seeing what it saw (SPEC §6).
        dream=replace(dream, result=dream.result_for(current.principal.viewer)),
        output=output,
        base=base,
        items=items,
        total=total,
        page_number=number,
        has_next=total > number * DIFF_PAGE_SIZE,
        refresh_s=None if ended else REFRESH_S,
        may_act=_may_dream(current, store.id, dream.output_behavior),
        may_apply=output is not None and dream.status is DreamStatus.COMPLETED
        and dream.archived_at is None and current.may(Scope.WRITE, store.id)
        and current.may(Scope.DELETE, store.id),
    )


def cancel_dream(current: Page) -> Response:
    """POST /console/dreams/{id}/cancel (as the API's cancel: 409 ``dream_ended`` once
    it completed or failed)."""
    dream = _visible(current, current.params["dream_id"])
    _require_dreaming(current, dream.input_store_id, dream.output_behavior)
    current.engine.dreams.cancel(dream.id)
    return current.redirect(_dream_url(dream.id))


def discard_dream(current: Page) -> Response:
    """POST /console/dreams/{id}/discard: archives an ended dream (as the API's archive;
    409 ``dream_active`` while it runs): its output store is left as it is, unmerged."""
    dream = _visible(current, current.params["dream_id"])
    _require_dreaming(current, dream.input_store_id, dream.output_behavior)
    current.engine.dreams.archive(dream.id)
    return current.redirect(_dream_url(dream.id))


def _output_to_apply(current: Page, dream: Dream) -> str:
    if dream.status is not DreamStatus.COMPLETED:
        raise InvalidInput(f"dream {dream.id} is {dream.status.value}, not completed: "
                           "nothing to apply")
    if dream.output_behavior is OutputBehavior.UPDATE_EXISTING or dream.output_store_id is None:
        raise InvalidInput(f"dream {dream.id} wrote into its input store already "
                           "(update_existing): there is nothing to apply")
    current.principal.require(Scope.READ, dream.output_store_id)
    return dream.output_store_id


def apply_plan_page(current: Page) -> Response:
    """GET /console/dreams/{id}/apply: the merge plan of the dream's output into its
    input (dry run), with the confirm form."""
    dream = _visible(current, current.params["dream_id"])
    output_id = _output_to_apply(current, dream)
    output = current.caller.stores.get(output_id)
    origin = current.caller.stores.get(dream.input_store_id)
    plan = current.caller.history.plan_merge(output_id, into=dream.input_store_id)
    return current.render(
        "merge_plan.html",
        title=f"Apply dream {dream.id}",
        store=output,
        origin=origin,
        plan=plan,
        may_merge=origin.archived_at is None and current.may(Scope.WRITE, origin.id)
        and current.may(Scope.DELETE, origin.id),
        action=_dream_url(dream.id, "/apply"),
    )


def apply_dream(current: Page) -> Response:
    """POST /console/dreams/{id}/apply: merges the output into the input (three-way,
    after an automatic snapshot of the input: SPEC §10, §11), then shows what was done."""
    dream = _visible(current, current.params["dream_id"])
    output_id = _output_to_apply(current, dream)
    current.principal.require(Scope.WRITE, dream.input_store_id)
    current.principal.require(Scope.DELETE, dream.input_store_id)
    plan = current.caller.history.merge(
        output_id, into=dream.input_store_id, reason=f"apply dream {dream.id}"
    )
    output = current.caller.stores.get(output_id)
    origin = current.caller.stores.get(dream.input_store_id)
    return current.render("merge_plan.html", title=f"Applied dream {dream.id}", store=output,
                          origin=origin, plan=plan, may_merge=False,
                          action=_dream_url(dream.id, "/apply"))
