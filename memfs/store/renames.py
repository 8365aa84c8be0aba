"""Directory renames (SPEC §4 "a directory rename moves every memory below, atomically"),
linear in the number of memories moved (a tree of 10,000 moves in one transaction).

Writes the ``memories`` rows of the moved memories, one ``modified`` version each
(:mod:`memfs.store.versions`), one change each (:mod:`memfs.store.feed`) and their
search documents' paths (:mod:`memfs.store.search`), all with bulk statements; the
path rules are those of :mod:`memfs.store.memories`.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, literal, select, update

from memfs.core import rules
from memfs.core.errors import InvalidInput
from memfs.core.model import Actor, ChangeKind, Memory, Operation
from memfs.store import feed, search
from memfs.store import records as record_index
from memfs.store._common import (
    ancestors,
    descendant_upper_bound,
    execute_many,
    lock_store,
    memory_model,
    now,
    require_writable,
)
from memfs.store.memory_rows import path_conflict
from memfs.store.schema import memories
from memfs.store.versions import insert_versions

__all__ = ["as_memories", "rename_prefix"]


def rename_prefix(
    conn: Connection, store_id: str, old_prefix: str, new_prefix: str, *, actor: Actor | None
) -> list[SimpleNamespace]:
    """See :meth:`memfs.store.memories.Memories.rename_prefix`; returns the moved memories' columns
    as written, in their new path order (:func:`as_memories` makes the values).

    Linear in the number of memories moved (a per-memory check made it quadratic): one range
    scan reads the moving memories, one range scan and one ``IN`` query find every
    memory in the way (:func:`_rename_blocker`, set lookups), and the writes are
    set-based: one UPDATE parks the moving paths, then one executemany each for the
    versions, the memories' new paths and the change-feed entries.
    """
    rules.validate_path_prefix(old_prefix)
    rules.validate_path_prefix(new_prefix)
    if old_prefix == "/" or new_prefix == "/":
        raise InvalidInput("the root can't be renamed")
    if new_prefix.startswith(old_prefix):
        raise InvalidInput(f"can't move {old_prefix!r} into itself ({new_prefix!r})")
    store = lock_store(conn, store_id)
    require_writable(store)
    rows = conn.execute(
        select(memories).where(*_live_under(store_id, old_prefix)).order_by(memories.c.path)
    ).all()
    if not rows:
        return []
    targets = {row.id: new_prefix + row.path[len(old_prefix) :] for row in rows}
    # Every segment of a target is one of new_prefix's or of a stored (valid) path, so
    # only the rules over a whole path can break: its size and its number of segments.
    # The deepest and the longest target are the ones to check (SPEC §1 path rules).
    rules.validate_path(max(targets.values(), key=lambda target: target.count("/")))
    rules.validate_path(max(targets.values(), key=lambda target: len(target.encode())))
    blocker = _rename_blocker(conn, store_id, old_prefix, new_prefix, set(targets.values()))
    if blocker is not None:
        target, blocker_id, blocker_path = blocker
        raise path_conflict(target, blocker_id, blocker_path)
    moved_at = now()
    # Park the moving paths first, so the new paths never meet an old one in the unique
    # index of live paths mid-statement (moving /a/b/ to /a/ turns /a/b/b/x into /a/b/x).
    conn.execute(
        update(memories)
        .where(*_live_under(store_id, old_prefix))
        .values(path=literal("\x01moving/") + memories.c.id)
    )
    version_ids = insert_versions(
        conn,
        [
            (
                store_id,
                row.id,
                Operation.MODIFIED.value,
                targets[row.id],
                row.blob_key,
                row.content_sha256,
                row.size_bytes,
            )
            for row in rows
        ],
        actor=actor,
        now=moved_at,
    )
    execute_many(
        conn,
        "UPDATE memories SET path = ?, head_version_id = ?, updated_at = ? WHERE id = ?",
        [
            (targets[row.id], head, moved_at, row.id)
            for row, head in zip(rows, version_ids, strict=True)
        ],
    )
    search.queue_many(conn, [row.id for row in rows])
    record_index.memories_arrived(conn, store_id, [(row.id, targets[row.id]) for row in rows])
    feed.emit_many(
        conn,
        store_id,
        ChangeKind.MEMORY_WRITTEN,
        [
            (row.id, targets[row.id], row.path, row.content_sha256, head)
            for row, head in zip(rows, version_ids, strict=True)
        ],
    )
    moved = [
        SimpleNamespace(
            **{
                **row._mapping,
                "path": targets[row.id],
                "head_version_id": head,
                "updated_at": moved_at,
            }
        )
        for row, head in zip(rows, version_ids, strict=True)
    ]
    return sorted(moved, key=lambda memory: memory.path)


def as_memories(rows: list[SimpleNamespace]) -> list[Memory]:
    """The Memory values (without content) of rows :func:`rename_prefix` returned; built
    by the caller after commit, so the write lock is not held for it."""
    return [memory_model(row) for row in rows]


def _live_under(store_id: str, prefix: str) -> tuple[Any, ...]:
    """WHERE terms: the live memories of ``store_id`` below the directory ``prefix``."""
    return (
        memories.c.store_id == store_id,
        memories.c.deleted_at.is_(None),
        memories.c.path >= prefix,
        memories.c.path < descendant_upper_bound(prefix),
    )


def _rename_blocker(
    conn: Connection, store_id: str, old_prefix: str, new_prefix: str, targets: set[str]
) -> tuple[str, str, str] | None:
    """The first memory outside the move that is in the way of a target path, as
    ``(target, blocker id, blocker path)``, or None (SPEC §1 path rules).

    A memory blocks when it is at a target, at a directory of a target (a file where a
    directory is needed: ``new_prefix`` or below, or one of its ancestors) or below a
    target (a directory where a file is wanted). Everything in the way lies under
    ``new_prefix`` or is one of its ancestors, so two indexed queries and set lookups
    find it, whatever the number of memories moved.
    """
    directories: dict[str, str] = {}  # a directory of some target -> that target
    for target in sorted(targets):
        for directory in ancestors(target):
            if len(directory) < len(new_prefix) - 1:
                continue  # above new_prefix: checked by the IN query below
            directories.setdefault(directory, target)
    above = [new_prefix[:-1], *ancestors(new_prefix[:-1])]
    for memory_id, path in conn.execute(
        select(memories.c.id, memories.c.path)
        .where(
            memories.c.store_id == store_id,
            memories.c.deleted_at.is_(None),
            memories.c.path.in_(above),
        )
        .order_by(memories.c.path)
    ):
        return min(targets), memory_id, path
    for memory_id, path in conn.execute(
        select(memories.c.id, memories.c.path)
        .where(*_live_under(store_id, new_prefix))
        .order_by(memories.c.path)
    ):
        if path.startswith(old_prefix):
            continue  # moving itself (old_prefix below new_prefix)
        if path in targets:
            return path, memory_id, path
        if path in directories:
            return directories[path], memory_id, path
        for directory in ancestors(path):
            if directory in targets:
                return directory, memory_id, path
    return None
