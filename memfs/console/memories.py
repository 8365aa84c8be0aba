"""A memory's pages: its text, metadata and record fields with an editor; rename and
delete; its versions, any version, any two diffed, redaction and revert (SPEC §12, §2).

Saving never overwrites a change made elsewhere: the editor posts the
``content_sha256`` the person started from, and the engine refuses the write when the
head moved (:class:`~memfs.core.errors.PreconditionFailed`, as the API's
``precondition``). The person then sees both texts and chooses: keep the other
version, or save theirs (or a merge of both) over it — a second, explicit save with
the other version's digest as its precondition, which is refused again if the memory
moved once more. Revert is a save of an old version's content with the same
precondition: a new version, history kept.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from starlette.responses import Response

from memfs.console.guard import CONSOLE_PATH
from memfs.console.view import Page
from memfs.core.errors import InvalidInput, NotFound, PreconditionFailed
from memfs.core.ids import sha256_of
from memfs.core.model import DeleteMode, Memory, MemoryVersion, Scope
from memfs.core.records import record_to_wire

__all__ = [
    "DiffLine",
    "SideBySideRow",
    "VERSIONS_PAGE_SIZE",
    "delete_memory",
    "diff_page",
    "memory_page",
    "redact_version",
    "redact_version_form",
    "rename_memory",
    "revert_to_version",
    "save_memory",
    "side_by_side",
    "version_page",
    "versions_page",
]

VERSIONS_PAGE_SIZE = 50


def _memory_url(store_id: str, memory_id: str, tail: str = "") -> str:
    return f"{CONSOLE_PATH}/stores/{store_id}/memories/{memory_id}{tail}"


def _read(current: Page) -> tuple[str, str]:
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    return store_id, current.params["memory_id"]


def _controls(current: Page, store_id: str, archived: bool) -> dict[str, bool]:
    """Which edit controls the page shows (each action is checked again when posted)."""
    return {
        "may_write": not archived and current.may(Scope.WRITE, store_id),
        "may_delete": not archived and current.may(Scope.DELETE, store_id),
        "may_redact": current.may(Scope.DELETE, store_id, agents=False),
    }


def _memory_view(current: Page, store_id: str, memory: Memory) -> Response:
    store = current.caller.stores.get(store_id)
    records = current.caller.records.get([memory.id])
    record = records.get(memory.id)
    return current.render(
        "memory.html",
        title=memory.path,
        store=store,
        memory=memory,
        record=record_to_wire(record) if record is not None else None,
        **_controls(current, store_id, store.archived_at is not None),
    )


def memory_page(current: Page) -> Response:
    """GET …/memories/{id}: the text (escaped), metadata, record fields and decay, and
    for a writer the editor, rename and delete. A full read of a record moves its
    ``last_accessed``, as the API's full retrieve (SPEC §6)."""
    store_id, memory_id = _read(current)
    memory = current.caller.memories.get(store_id, memory_id)
    current.engine.records.note_access([memory.id])
    return _memory_view(current, store_id, memory)


def save_memory(current: Page) -> Response:
    """POST …/memories/{id}: saves the editor's text if the memory still has the digest
    the editor started from; else the conflict page (both texts, nothing written)."""
    store_id, memory_id = current.params["store_id"], current.params["memory_id"]
    current.principal.require(Scope.WRITE, store_id)
    content = _form_text(current, "content")
    expected = current.form.get("expected_sha256", "")
    try:
        current.caller.memories.update(
            store_id, memory_id, content=content, expected_sha256=expected
        )
    except PreconditionFailed:
        theirs = current.caller.memories.get(store_id, memory_id)
        store = current.caller.stores.get(store_id)
        return current.render(
            "conflict.html",
            status=409,
            title=f"Conflict: {theirs.path}",
            store=store,
            memory=theirs,
            mine=content,
            diff=_inline_diff(theirs.content or "", content),
        )
    return current.redirect(_memory_url(store_id, memory_id))


def _form_text(current: Page, name: str) -> str:
    """A textarea's text with the browser's CRLF line ends made LF again (HTML forms
    send CRLF whatever was typed)."""
    return current.form.get(name, "").replace("\r\n", "\n")


def rename_memory(current: Page) -> Response:
    """POST …/memories/{id}/rename: a new path (as the API's update with ``path``), with
    the digest shown as precondition."""
    store_id, memory_id = current.params["store_id"], current.params["memory_id"]
    current.principal.require(Scope.WRITE, store_id)
    path = current.form.get("path", "").strip()
    current.caller.memories.update(
        store_id, memory_id, path=path, expected_sha256=current.form.get("expected_sha256")
    )
    return current.redirect(_memory_url(store_id, memory_id))


def delete_memory(current: Page) -> Response:
    """POST …/memories/{id}/delete: a soft delete (restorable from the deleted page)."""
    store_id, memory_id = current.params["store_id"], current.params["memory_id"]
    current.principal.require(Scope.DELETE, store_id)
    current.caller.memories.delete(
        store_id, memory_id, mode=DeleteMode.SOFT_DELETE,
        expected_sha256=current.form.get("expected_sha256") or None,
        reason=current.form.get("reason") or "deleted in the console",
    )
    return current.redirect(f"{CONSOLE_PATH}/stores/{store_id}/deleted")


def versions_page(current: Page) -> Response:
    """GET …/memories/{id}/versions: newest first, a page at a time: who (actor), when,
    what (operation, path, size); two radio columns choose a pair to diff."""
    store_id, memory_id = _read(current)
    store = current.caller.stores.get(store_id)
    result = current.caller.versions.list(
        store_id, memory_id=memory_id, limit=VERSIONS_PAGE_SIZE,
        cursor=current.query.get("page") or None, with_content=False,
    )
    return current.render(
        "versions.html",
        title=f"Versions of {memory_id}",
        store=store,
        memory_id=memory_id,
        versions=result.items,
        next_page=result.next_cursor,
    )


def version_page(current: Page) -> Response:
    """GET /console/stores/{id}/versions/{version_id}: one version's content (escaped);
    revert (a writer) and redact (a key with ``memory:delete``)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    version = current.caller.versions.get(store_id, current.params["version_id"])
    store = current.caller.stores.get(store_id)
    head = _head_or_none(current, store_id, version.memory_id)
    return current.render(
        "version.html",
        title=f"Version {version.id}",
        store=store,
        version=version,
        head=head,
        **_controls(current, store_id, store.archived_at is not None),
    )


def _head_or_none(current: Page, store_id: str, memory_id: str) -> Memory | None:
    """The live memory, or None when it is deleted (its versions stay readable)."""
    try:
        return current.caller.memories.get(store_id, memory_id, with_content=False)
    except NotFound:
        return None


def redact_version_form(current: Page) -> Response:
    """GET …/versions/{version_id}/redact: the confirmation (redaction erases the
    content for good, SPEC §2)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.DELETE, store_id, agents=False)
    version = current.caller.versions.get(store_id, current.params["version_id"])
    store = current.caller.stores.get(store_id)
    return current.render("redact.html", title="Redact a version", store=store, version=version)


def redact_version(current: Page) -> Response:
    """POST …/versions/{version_id}/redact (as the API's redact: not the head of a
    live memory; needs ``memory:delete`` on a key). Needs ``confirm=yes``."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.DELETE, store_id, agents=False)
    if current.form.get("confirm") != "yes":
        raise InvalidInput("tick the confirmation to redact this version")
    version = current.caller.versions.redact(store_id, current.params["version_id"])
    return current.redirect(f"{CONSOLE_PATH}/stores/{store_id}/versions/{version.id}")


def revert_to_version(current: Page) -> Response:
    """POST …/versions/{version_id}/revert: a new version of the memory with this
    version's content, if the memory is still at the digest the page showed."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.WRITE, store_id)
    version = current.caller.versions.get(store_id, current.params["version_id"])
    if version.content is None:
        raise InvalidInput("this version has no content (deleted or redacted); pick another")
    current.caller.memories.update(
        store_id, version.memory_id, content=version.content,
        expected_sha256=current.form.get("expected_sha256") or None,
    )
    return current.redirect(_memory_url(store_id, version.memory_id))


@dataclass(frozen=True)
class DiffLine:
    """One line of a rendered diff: ``kind`` is ``same``, ``added``, ``removed`` or
    ``hunk``; the texts are escaped by the template."""

    kind: str
    text: str


@dataclass(frozen=True)
class SideBySideRow:
    """One row of a side-by-side diff: the old line and the new (None: no line there)."""

    kind: str
    old: str | None
    new: str | None


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _inline_diff(old: str, new: str) -> list[DiffLine]:
    """A unified diff of ``old`` to ``new`` (three lines of context), as lines."""
    rendered: list[DiffLine] = []
    for line in list(difflib.unified_diff(_lines(old), _lines(new), lineterm="", n=3))[2:]:
        if line.startswith("@@"):
            rendered.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            rendered.append(DiffLine("added", line[1:]))
        elif line.startswith("-"):
            rendered.append(DiffLine("removed", line[1:]))
        else:
            rendered.append(DiffLine("same", line[1:]))
    return rendered


def side_by_side(old: str, new: str) -> list[SideBySideRow]:
    """``old`` and ``new`` aligned line by line (difflib's opcodes)."""
    a, b = _lines(old), _lines(new)
    rows: list[SideBySideRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs = zip(a[i1:i2], b[j1:j2], strict=True)
            rows.extend(SideBySideRow("same", x, y) for x, y in pairs)
            continue
        old_part, new_part = a[i1:i2], b[j1:j2]
        for k in range(max(len(old_part), len(new_part))):
            rows.append(SideBySideRow(
                "changed",
                old_part[k] if k < len(old_part) else None,
                new_part[k] if k < len(new_part) else None,
            ))
    return rows


def _version_text(version: MemoryVersion) -> str:
    return version.content or ""


def diff_page(current: Page) -> Response:
    """GET …/memories/{id}/diff?a=…&b=…&layout=inline|side: two versions of the memory
    compared (``a`` the older), inline (unified) or side by side."""
    store_id, memory_id = _read(current)
    first, second = current.query.get("a"), current.query.get("b")
    if not first or not second:
        raise InvalidInput("choose two versions to compare (a and b)")
    old = current.caller.versions.get(store_id, first)
    new = current.caller.versions.get(store_id, second)
    if old.memory_id != memory_id or new.memory_id != memory_id:
        raise InvalidInput("both versions must be versions of this memory")
    if old.created_at > new.created_at:
        old, new = new, old
    layout = "side" if current.query.get("layout") == "side" else "inline"
    store = current.caller.stores.get(store_id)
    return current.render(
        "diff.html",
        title=f"Diff of {memory_id}",
        store=store,
        memory_id=memory_id,
        old=old,
        new=new,
        layout=layout,
        same=sha256_of(_version_text(old)) == sha256_of(_version_text(new)),
        inline=_inline_diff(_version_text(old), _version_text(new)) if layout == "inline" else [],
        rows=side_by_side(_version_text(old), _version_text(new)) if layout == "side" else [],
    )
