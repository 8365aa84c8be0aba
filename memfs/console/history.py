"""A store's history in the console (SPEC §10, §12): its snapshots (list, create,
delete), the store as of a point (read only), the diff of two points, restoring the
store to a point, forking it and merging a fork back.

A point is typed as the CLI and the API take it (:mod:`memfs.core.points`): ``now``, an
RFC 3339 time, a ``memver_`` version id or a snapshot name. Every change is shown as a
plan first (the engine's dry run: :meth:`~memfs.store.restores.Restores.plan`,
:meth:`~memfs.store.forks.ForkingHistory.plan_merge`) and made by a second, confirming
POST; the scopes are the API's for the same call (:mod:`memfs.api.routes.history`).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import Response

from memfs.console.guard import CONSOLE_PATH
from memfs.console.memories import DiffLine, SideBySideRow, side_by_side
from memfs.console.stores import PAGE_SIZE, crumbs_of, parent_of
from memfs.console.view import Page
from memfs.core.errors import InvalidInput
from memfs.core.history import DiffEntry
from memfs.core.model import Memory, MemoryPrefix, MemoryStore, Scope

__all__ = [
    "DIFF_PAGE_SIZE",
    "SNAPSHOTS_PAGE_SIZE",
    "DiffItem",
    "as_of_memory_page",
    "as_of_page",
    "create_snapshot",
    "delete_snapshot",
    "delete_snapshot_form",
    "diff_items",
    "fork_store",
    "history_page",
    "merge_fork",
    "merge_plan_page",
    "page_number",
    "restore_plan_page",
    "restore_store",
    "store_diff_page",
    "unified_lines",
]

SNAPSHOTS_PAGE_SIZE = 50
# Memories of a store diff shown on one page (each with its text diff).
DIFF_PAGE_SIZE = 25


def _store_url(store_id: str, tail: str = "") -> str:
    return f"{CONSOLE_PATH}/stores/{store_id}{tail}"


def _point(text: str | None, what: str = "point") -> str:
    """A point as typed, trimmed; ``now`` when empty."""
    point = (text or "").strip()
    if len(point) > 1024:
        raise InvalidInput(f"the {what} is longer than 1,024 characters")
    return point or "now"


def page_number(current: Page) -> int:
    """The ``?page=`` number of a numbered listing (1 when absent)."""
    try:
        return max(1, int(current.query.get("page") or "1"))
    except ValueError:
        raise InvalidInput("page must be a number") from None


def history_page(current: Page) -> Response:
    """GET /console/stores/{id}/history: the snapshots, newest first, a page at a time;
    forms for browsing as of a point, diffing two points, a restore plan, a snapshot
    (a writer), a fork (a key that may create stores); a fork's origin and base with
    its merge plan."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    result = current.caller.snapshots.list(
        store_id, limit=SNAPSHOTS_PAGE_SIZE, cursor=current.query.get("page") or None
    )
    writable = store.archived_at is None
    return current.render(
        "history.html",
        title=f"History of {store.name}",
        store=store,
        origin=_origin(current, store),
        snapshots=result.items,
        next_page=result.next_cursor,
        may_snapshot=writable and current.may(Scope.WRITE, store_id),
        may_delete_snapshot=current.may(Scope.DELETE, store_id),
        may_restore=writable and current.may(Scope.WRITE, store_id)
        and current.may(Scope.DELETE, store_id),
        may_fork=_may_create_stores(current),
    )


def _origin(current: Page, store: MemoryStore) -> MemoryStore | None:
    """The store's origin when it is a fork the credential may read (else None)."""
    if store.forked_from is None or not current.principal.can_see(store.forked_from):
        return None
    if not current.may(Scope.READ, store.forked_from):
        return None
    return current.caller.stores.get(store.forked_from)


def _may_create_stores(current: Page) -> bool:
    principal = current.principal
    return not principal.is_session and current.may(Scope.WRITE) and not (
        principal.api_key is not None and principal.api_key.store_ids
    )


def create_snapshot(current: Page) -> Response:
    """POST /console/stores/{id}/snapshots: names a point (as the API's create;
    ``memory:write``)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.WRITE, store_id)
    current.caller.snapshots.create(
        store_id,
        current.form.get("name", "").strip(),
        description=current.form.get("description", ""),
        at=_point(current.form.get("at")),
    )
    return current.redirect(_store_url(store_id, "/history"))


def delete_snapshot_form(current: Page) -> Response:
    """GET …/snapshots/{snapshot_id}/delete: the typed confirmation (its name)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.DELETE, store_id)
    store = current.caller.stores.get(store_id)
    snapshot = current.caller.snapshots.get(store_id, current.params["snapshot_id"])
    return current.render("delete_snapshot.html", title=f"Delete snapshot {snapshot.name}",
                          store=store, snapshot=snapshot, mismatch=False)


def delete_snapshot(current: Page) -> Response:
    """POST …/snapshots/{snapshot_id}/delete (``memory:delete``, as the API), only when
    the typed name is the snapshot's."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.DELETE, store_id)
    store = current.caller.stores.get(store_id)
    snapshot = current.caller.snapshots.get(store_id, current.params["snapshot_id"])
    if current.form.get("confirm_name") != snapshot.name:
        return current.render("delete_snapshot.html", status=400,
                              title=f"Delete snapshot {snapshot.name}", store=store,
                              snapshot=snapshot, mismatch=True)
    current.caller.snapshots.delete(store_id, snapshot.id)
    return current.redirect(_store_url(store_id, "/history"))


def as_of_page(current: Page) -> Response:
    """GET /console/stores/{id}/as-of?at=POINT&prefix=/a/: one directory of the store
    as it was at the point, read only, a page at a time (``?page=`` the next)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    at = _point(current.query.get("at"))
    prefix = current.query.get("prefix") or "/"
    if not prefix.startswith("/") or not prefix.endswith("/"):
        raise InvalidInput("prefix must start and end with /")
    resolved = current.caller.history.resolve(store_id, at)
    result = current.caller.history.list(
        store_id, resolved, path_prefix=prefix, depth=1, limit=PAGE_SIZE,
        cursor=current.query.get("page") or None,
    )
    dirs = [i.path for i in result.items if isinstance(i, MemoryPrefix)]
    memories = [i for i in result.items if isinstance(i, Memory)]
    return current.render(
        "as_of.html",
        title=f"{store.name} as of {at}",
        store=store,
        at=at,
        prefix=prefix,
        parent=parent_of(prefix),
        crumbs=crumbs_of(prefix),
        dirs=dirs,
        memories=memories,
        next_page=result.next_cursor,
    )


def as_of_memory_page(current: Page) -> Response:
    """GET /console/stores/{id}/as-of/memories/{memory_id}?at=POINT: the memory as it
    was then (read only; 409 ``redacted_content`` when its version then is redacted)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    at = _point(current.query.get("at"))
    memory = current.caller.history.get(store_id, current.params["memory_id"], at)
    return current.render("as_of_memory.html", title=f"{memory.path} as of {at}",
                          store=store, at=at, memory=memory)


def unified_lines(diff: str | None) -> list[DiffLine]:
    """A unified diff's text (:attr:`DiffEntry.diff`) as rendered lines, its two file
    headers left out (the page names both sides)."""
    lines: list[DiffLine] = []
    for index, line in enumerate((diff or "").splitlines()):
        if index < 2 and line.startswith(("--- ", "+++ ")):
            continue
        if line.startswith(("@@", "\\")):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            lines.append(DiffLine("added", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("removed", line[1:]))
        else:
            lines.append(DiffLine("same", line[1:]))
    return lines


@dataclass(frozen=True)
class DiffItem:
    """One memory of a store diff as the page shows it."""

    entry: DiffEntry
    inline: list[DiffLine]
    rows: list[SideBySideRow]


def _version_text(current: Page, store_id: str, version_id: str | None) -> str:
    if version_id is None:
        return ""
    return current.caller.versions.get(store_id, version_id).content or ""


def diff_items(
    current: Page, diff_entries: list[DiffEntry], from_store: str, to_store: str, layout: str
) -> list[DiffItem]:
    """The entries of a store diff as the page shows them: each text diff inline, or
    side by side (both versions read, only for the entries of the page)."""
    items = []
    for entry in diff_entries:
        rows: list[SideBySideRow] = []
        if layout == "side" and entry.content_changed and not entry.redacted:
            rows = side_by_side(
                _version_text(current, from_store, entry.old_version_id),
                _version_text(current, to_store, entry.new_version_id),
            )
        inline = unified_lines(entry.diff) if layout == "inline" else []
        items.append(DiffItem(entry, inline, rows))
    return items


def store_diff_page(current: Page) -> Response:
    """GET /console/stores/{id}/diff?from=A&to=B&layout=inline|side&other=STORE: what
    changed from point A to point B (of this store, or of ``other`` for B: a fork and
    its origin), memories added, removed, modified and renamed, each text diff inline or
    side by side, :data:`DIFF_PAGE_SIZE` memories a page (``?page=2``…)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    other_id = (current.query.get("other") or "").strip() or store_id
    current.principal.require(Scope.READ, other_id)
    store = current.caller.stores.get(store_id)
    other = current.caller.stores.get(other_id) if other_id != store_id else store
    old_at = _point(current.query.get("from"), "from point")
    new_at = _point(current.query.get("to"), "to point")
    layout = "side" if current.query.get("layout") == "side" else "inline"
    number = page_number(current)
    diff = current.caller.history.diff(store_id, old_at, other_id, new_at)
    start = (number - 1) * DIFF_PAGE_SIZE
    shown = diff.entries[start : start + DIFF_PAGE_SIZE]
    counts: dict[str, int] = {}
    for entry in diff.entries:
        counts[entry.status.value] = counts.get(entry.status.value, 0) + 1
    return current.render(
        "store_diff.html",
        title=f"Diff of {store.name}",
        store=store,
        other=other,
        old_at=old_at,
        new_at=new_at,
        layout=layout,
        diff=diff,
        counts=sorted(counts.items()),
        items=diff_items(current, shown, store_id, other_id, layout),
        page_number=number,
        has_next=len(diff.entries) > start + DIFF_PAGE_SIZE,
        total=len(diff.entries),
    )


def restore_plan_page(current: Page) -> Response:
    """GET /console/stores/{id}/restore?to=POINT: what restoring the store to the point
    would do (the engine's dry run; changes nothing), with the confirm form for a
    credential that may restore (``memory:write`` and ``memory:delete``)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    to = _point(current.query.get("to"))
    plan = current.caller.restores.plan(store_id, to)
    return current.render(
        "restore_plan.html",
        title=f"Restore {store.name} to {to}",
        store=store,
        plan=plan,
        to=to,
        may_restore=store.archived_at is None and current.may(Scope.WRITE, store_id)
        and current.may(Scope.DELETE, store_id),
    )


def restore_store(current: Page) -> Response:
    """POST /console/stores/{id}/restore: makes the store what it was at ``to`` (SPEC
    §10: new versions, all or nothing, after an automatic snapshot), then shows what was
    done and the snapshot that undoes it."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.WRITE, store_id)
    current.principal.require(Scope.DELETE, store_id)
    to = _point(current.form.get("to"))
    plan = current.caller.restores.restore(
        store_id, to, reason=current.form.get("reason") or "restored in the console"
    )
    store = current.caller.stores.get(store_id)
    return current.render("restore_plan.html", title=f"Restored {store.name} to {to}",
                          store=store, plan=plan, to=to, may_restore=False)


def fork_store(current: Page) -> Response:
    """POST /console/stores/{id}/fork: a new store holding this one's memories at
    ``at`` (as the API's fork: ``memory:read`` here, creating stores at large)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    current.principal.require_unlimited(Scope.WRITE)
    fork = current.caller.history.fork(
        store_id,
        at=_point(current.form.get("at")),
        name=current.form.get("name", "").strip(),
        description=current.form.get("description") or None,
    )
    return current.redirect(_store_url(fork.id, "/history"))


def _merge_scopes(current: Page, fork_id: str, *, apply: bool) -> MemoryStore:
    current.principal.require(Scope.READ, fork_id)
    fork = current.caller.stores.get(fork_id)
    if fork.forked_from is None:
        raise InvalidInput(f"store {fork.name!r} is no fork: there is nothing to merge")
    current.principal.require(Scope.READ, fork.forked_from)
    if apply:
        current.principal.require(Scope.WRITE, fork.forked_from)
        current.principal.require(Scope.DELETE, fork.forked_from)
    return fork


def merge_plan_page(current: Page) -> Response:
    """GET /console/stores/{id}/merge: what merging this fork into its origin would do
    (the engine's dry run), with the confirm form for a credential that may write and
    delete in the origin."""
    fork = _merge_scopes(current, current.params["store_id"], apply=False)
    assert fork.forked_from is not None
    origin = current.caller.stores.get(fork.forked_from)
    plan = current.caller.history.plan_merge(fork.id)
    return current.render(
        "merge_plan.html",
        title=f"Merge {fork.name} into {origin.name}",
        store=fork,
        origin=origin,
        plan=plan,
        may_merge=origin.archived_at is None and current.may(Scope.WRITE, origin.id)
        and current.may(Scope.DELETE, origin.id),
        action=_store_url(fork.id, "/merge"),
    )


def merge_fork(current: Page) -> Response:
    """POST /console/stores/{id}/merge: merges the fork into its origin (three-way,
    after an automatic snapshot of the origin, SPEC §10), then shows what was done."""
    fork = _merge_scopes(current, current.params["store_id"], apply=True)
    assert fork.forked_from is not None
    plan = current.caller.history.merge(
        fork.id, reason=current.form.get("reason") or "merged in the console"
    )
    origin = current.caller.stores.get(fork.forked_from)
    return current.render("merge_plan.html", title=f"Merged {fork.name} into {origin.name}",
                          store=fork, origin=origin, plan=plan, may_merge=False,
                          action=_store_url(fork.id, "/merge"))
