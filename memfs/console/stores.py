"""The stores list and a store's pages: its memories as a tree with full-text search,
its deleted memories, its audit trail (SPEC §12, §2, §7).

Each handler checks the scope as the API route for the same operation does
(:mod:`memfs.api.routes.stores`, ``memories``, ``search``), then makes one facade call
as the signed-in credential. Every list is one page of :data:`PAGE_SIZE` with a link to
the next (keyset cursors of the engine), so a 10,000-memory store is as fast as a small
one.
"""

from __future__ import annotations

from starlette.responses import Response

from memfs.console.guard import CONSOLE_PATH
from memfs.console.view import Page
from memfs.core import config
from memfs.core.errors import InvalidInput, InvalidStoreField
from memfs.core.model import Memory, MemoryPrefix, MemoryStatus, Scope
from memfs.core.query import HIGHLIGHT_END, HIGHLIGHT_START
from memfs.core.records import RecordFilter, RecordScope, RecordType

__all__ = [
    "AUDIT_PAGE_SIZE",
    "PAGE_SIZE",
    "SEARCH_MODES",
    "archive_store",
    "audit_page",
    "create_store",
    "crumbs_of",
    "delete_store",
    "delete_store_form",
    "deleted_page",
    "parent_of",
    "restore_memory",
    "snippet_parts",
    "store_page",
    "stores_page",
]

# Items on one page of a tree, a listing of deleted memories, search hits, stores.
PAGE_SIZE = 50
# Audit events on one page.
AUDIT_PAGE_SIZE = 50


def _store_url(store_id: str, tail: str = "") -> str:
    return f"{CONSOLE_PATH}/stores/{store_id}{tail}"


def stores_page(current: Page) -> Response:
    """GET /console/: the stores the credential may read, newest first, archived ones
    with ``?archived=1``; a create form for a credential that may create stores."""
    principal = current.principal
    if not principal.is_session:
        principal.require(Scope.READ)
    include_archived = current.query.get("archived") == "1"
    result = current.caller.stores.list(
        include_archived=include_archived, limit=PAGE_SIZE, cursor=current.query.get("page") or None
    )
    may_create = not principal.is_session and current.may(Scope.WRITE) and not (
        principal.api_key is not None and principal.api_key.store_ids
    )
    return current.render(
        "stores.html",
        title="Stores",
        stores=[s for s in result.items if principal.can_see(s.id)],
        next_page=result.next_cursor,
        include_archived=include_archived,
        may_create=may_create,
    )


def create_store(current: Page) -> Response:
    """POST /console/stores: a new store (as ``POST /v1/memory_stores``)."""
    current.principal.require_unlimited(Scope.WRITE)
    name = current.form.get("name", "").strip()
    if not name:
        raise InvalidStoreField("a store needs a name")
    store = current.caller.stores.create(name, description=current.form.get("description", ""))
    return current.redirect(_store_url(store.id))


def archive_store(current: Page) -> Response:
    """POST /console/stores/{id}/archive (as the API's archive: one-way)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.WRITE, store_id, agents=False)
    current.caller.stores.archive(store_id)
    return current.redirect(_store_url(store_id))


def delete_store_form(current: Page) -> Response:
    """GET /console/stores/{id}/delete: the typed confirmation (the store's name)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.HARD_DELETE, store_id, agents=False)
    store = current.caller.stores.get(store_id)
    return current.render("delete_store.html", title=f"Delete {store.name}", store=store,
                          mismatch=False)


def delete_store(current: Page) -> Response:
    """POST /console/stores/{id}/delete: erases the store with every memory and version
    (as ``DELETE /v1/memory_stores/{id}``), only when the typed name is the store's."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.HARD_DELETE, store_id, agents=False)
    store = current.caller.stores.get(store_id)
    if current.form.get("confirm_name") != store.name:
        return current.render("delete_store.html", status=400, title=f"Delete {store.name}",
                              store=store, mismatch=True)
    current.caller.stores.delete(store_id)
    return current.redirect(f"{CONSOLE_PATH}/")


def parent_of(prefix: str) -> str | None:
    """The directory above ``prefix`` (``/a/b/`` → ``/a/``), None at the root."""
    if prefix == "/":
        return None
    return prefix[: prefix.rstrip("/").rfind("/") + 1]


def crumbs_of(prefix: str) -> list[tuple[str, str]]:
    """(segment, its prefix) for each directory of ``prefix``, the root first."""
    crumbs = [("/", "/")]
    so_far = "/"
    for segment in [s for s in prefix.split("/") if s]:
        so_far += segment + "/"
        crumbs.append((segment, so_far))
    return crumbs


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A search snippet as (text, highlighted) runs, so the template escapes every run
    and marks the matches with ``<mark>`` of its own (never markup from content)."""
    parts: list[tuple[str, bool]] = []
    rest = snippet
    while True:
        start = rest.find(HIGHLIGHT_START)
        end = rest.find(HIGHLIGHT_END, start + len(HIGHLIGHT_START)) if start >= 0 else -1
        if start < 0 or end < 0:
            parts.append((rest, False))
            return parts
        parts.append((rest[:start], False))
        parts.append((rest[start + len(HIGHLIGHT_START) : end], True))
        rest = rest[end + len(HIGHLIGHT_END) :]


# The search modes the tree offers (SPEC §7): full text always; by meaning and both
# only with an embedding model configured (``$MEMFS_SEARCH_MODEL_DIR``).
SEARCH_MODES = (("text", "full text"), ("semantic", "by meaning"), ("hybrid", "both"))
_RECORD_FILTERS = ("record_type", "tag", "min_importance", "user_id", "scope")


def _record_filter(current: Page) -> tuple[dict[str, str], RecordFilter]:
    """The record filters of the query string (SPEC §6: type, tag, minimum importance,
    user, scope), as typed and as the engine's filter.

    Raises:
        InvalidInput: an unknown type or scope, an importance that is no number in 0–1,
            a bad tag.
    """
    typed = {name: (current.query.get(name) or "").strip() for name in _RECORD_FILTERS}
    importance = None
    if typed["min_importance"]:
        try:
            importance = float(typed["min_importance"])
        except ValueError:
            raise InvalidInput("min_importance must be a number from 0 to 1") from None
    record_filter = RecordFilter.of(
        record_type=typed["record_type"] or None,
        tag=typed["tag"] or None,
        min_importance=importance,
        user_id=typed["user_id"] or None,
        scope=typed["scope"] or None,
    )
    return typed, record_filter


def store_page(current: Page) -> Response:
    """GET /console/stores/{id}: one directory of the store (``?prefix=/a/``) as a page
    of sub-directories and memories in path order (``?page=`` the next); with ``?q=``
    the ranked hits under that directory (SPEC §7), full text or (``?mode=semantic``,
    ``hybrid``, with an embedding model configured) by meaning; with record filters
    (``?record_type=``, ``tag``, ``min_importance``, ``user_id``, ``scope``: SPEC §6)
    only the records they keep, at any depth below the directory."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    prefix = current.query.get("prefix") or "/"
    if not prefix.startswith("/") or not prefix.endswith("/"):
        raise InvalidInput("prefix must start and end with /")
    query = (current.query.get("q") or "").strip()
    semantic_available = config.search_model_dir() is not None
    mode = current.query.get("mode") or "text"
    if mode not in {m for m, _ in SEARCH_MODES}:
        raise InvalidInput("mode must be text, semantic or hybrid")
    filters, record_filter = _record_filter(current)
    dirs: list[str] = []
    memories: list[Memory] = []
    hits: list[tuple[str, str, list[tuple[str, bool]]]] = []
    next_page = None
    if query:
        found = current.caller.search.query(
            query, [store_id], path_prefix=prefix, limit=PAGE_SIZE, mode=mode,
            record_filter=None if record_filter.empty else record_filter,
        )
        hits = [(h.memory_id, h.path, snippet_parts(h.snippet)) for h in found]
    else:
        result = current.caller.memories.list(
            store_id, path_prefix=prefix, depth=1 if record_filter.empty else 0,
            limit=PAGE_SIZE, cursor=current.query.get("page") or None,
            record_filter=record_filter,
        )
        for item in result.items:
            if isinstance(item, MemoryPrefix):
                dirs.append(item.path)
            else:
                memories.append(item)
        next_page = result.next_cursor
    return current.render(
        "store.html",
        title=store.name,
        store=store,
        prefix=prefix,
        parent=parent_of(prefix),
        crumbs=crumbs_of(prefix),
        dirs=dirs,
        memories=memories,
        query=query,
        mode=mode,
        modes=SEARCH_MODES,
        semantic_available=semantic_available,
        filters=filters,
        filtering=not record_filter.empty,
        record_types=[t.value for t in RecordType],
        record_scopes=[t.value for t in RecordScope],
        hits=hits,
        next_page=next_page,
        may_archive=store.archived_at is None and current.may(Scope.WRITE, store_id, agents=False),
        may_delete=current.may(Scope.HARD_DELETE, store_id, agents=False),
        may_audit=current.may(Scope.ADMIN, store_id, agents=False),
    )


def deleted_page(current: Page) -> Response:
    """GET /console/stores/{id}/deleted: soft-deleted memories (restorable), in path
    order, a page at a time, each with restore."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    result = current.caller.memories.list(
        store_id, limit=PAGE_SIZE, cursor=current.query.get("page") or None,
        status=MemoryStatus.DELETED,
    )
    return current.render(
        "deleted.html",
        title=f"Deleted memories of {store.name}",
        store=store,
        memories=[m for m in result.items if isinstance(m, Memory)],
        next_page=result.next_cursor,
        may_restore=store.archived_at is None and current.may(Scope.WRITE, store_id),
    )


def restore_memory(current: Page) -> Response:
    """POST /console/stores/{id}/memories/{memory_id}/restore (as the API's restore)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.WRITE, store_id)
    memory = current.caller.memories.restore(
        store_id, current.params["memory_id"], reason=current.form.get("reason") or None
    )
    return current.redirect(_store_url(store_id, f"/memories/{memory.id}"))


_AUDIT_FILTERS = ("memory_id", "action", "actor_id")


def audit_page(current: Page) -> Response:
    """GET /console/stores/{id}/audit: the audit trail, newest first (``admin``, as the
    API), filtered by memory id (in the engine), action and actor (``?action=``,
    ``?actor_id=``), :data:`AUDIT_PAGE_SIZE` a page (``?page=2``…)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.ADMIN, store_id, agents=False)
    store = current.caller.stores.get(store_id)
    filters = {name: (current.query.get(name) or "").strip() for name in _AUDIT_FILTERS}
    try:
        page_number = max(1, int(current.query.get("page") or "1"))
    except ValueError:
        raise InvalidInput("page must be a number") from None
    wanted = page_number * AUDIT_PAGE_SIZE + 1
    events = current.engine.feed.audit_events(
        store_id, memory_id=filters["memory_id"] or None,
        limit=None if filters["action"] or filters["actor_id"] else wanted,
    )
    events = [
        e for e in events
        if (not filters["action"] or e["action"] == filters["action"])
        and (not filters["actor_id"] or e["actor_id"] == filters["actor_id"])
    ]
    shown = events[(page_number - 1) * AUDIT_PAGE_SIZE : page_number * AUDIT_PAGE_SIZE]
    return current.render(
        "audit.html",
        title=f"Audit trail of {store.name}",
        store=store,
        events=shown,
        filters=filters,
        page_number=page_number,
        has_next=len(events) > page_number * AUDIT_PAGE_SIZE,
    )
