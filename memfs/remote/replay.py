"""Applying a mount's writes to the server, once, in order, losing nothing.

:func:`apply_write` sends one :class:`~memfs.remote.outbox.PendingWrite` and resolves
what the server says into an outcome; the mount uses it for a ``close()`` while the
server is reachable, and :func:`replay_outbox` uses it for the queued entries, oldest
first, stopping at the first one the server can't take yet.

Rules (SPEC §4 "Concurrent writers", "A write rejected at close is never silently
dropped": conflicts and faults lose nothing):

=================  ===============================  ====================================
operation          server says                      outcome
=================  ===============================  ====================================
create             created                          applied
create             path taken, same content there   already applied (a replay after a
                                                    crash, or an identical write)
create             path taken, other content        conflict: ours is created as
                                                    ``<name>.conflict-<ts>-<session>.<ext>``
update             updated                          applied
update             precondition failed, head has    already applied
                   our content
update             precondition failed, a version   already applied (a replay after a
                   after the base by this session   crash, merged or not)
update             precondition failed, other       merged three-way (base: the queued
                   content, edits apart             ``expected_sha256``'s version) and
                                                    applied as one version (SPEC §4)
update             precondition failed, edits       conflict: head keeps theirs, ours is
                   overlap (or no base)             created beside it (conflict copy)
update             memory gone (deleted elsewhere)  re-created at its path (as create)
delete             deleted / already gone           applied / already applied
delete             precondition failed              conflict: their newer content stays
rename             renamed (or already there)       applied
rename             memory gone / destination taken  conflict: nothing moves, nothing lost
                   (taken without ``replace``, or
                   by an ancestor/descendant)
rename_prefix      moved (nothing left to move)     applied
rename_prefix      a destination is taken           conflict: nothing moves
any                server unreachable, 5xx          raises ServerUnavailable: keep queued
any                token refused (401)              raises AuthenticationFailed: keep
any                other refusal (400, 403, 404     raises that error: the caller keeps
                   store, 413, archived, full)      the content (outbox: ``reject``)
=================  ===============================  ====================================

The conflict copy is named from the write's ``created_at`` and the session, so a replay
after a crash finds its own earlier copy (same name, same digest) instead of making a
second one. A replay is safe after a crash at any point because entries are applied
strictly one at a time and only the head entry can be "applied but not yet marked
done".
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import trio

from memfs.backend import conflict_name
from memfs.core.errors import (
    AuthenticationFailed,
    MemfsError,
    NotFound,
    PathConflict,
    PreconditionFailed,
)
from memfs.core.merging import MERGE_ATTEMPTS, merge_texts
from memfs.remote.client import MemfsClient, ServerUnavailable
from memfs.remote.outbox import (
    Outbox,
    OutboxEntry,
    PendingWrite,
    WriteOperation,
    WriteOutcome,
)
from memfs.wire.memories import MemoryOut

__all__ = [
    "ApplyResult",
    "ReplayReport",
    "apply_write",
    "conflict_path",
    "replay_outbox",
]

log = logging.getLogger(__name__)

# Errors that say "not now" rather than "never": the write stays queued.
RETRYABLE_ERRORS: tuple[type[MemfsError], ...] = (ServerUnavailable, AuthenticationFailed)


@dataclass(frozen=True)
class ApplyResult:
    """What became of one write.

    Attributes:
        outcome: applied, already applied, or conflict (never rejected: refusals raise).
        memory: the memory now holding the write's content or path, when there is one
            (for a conflict: the conflict copy); None after a delete and for
            ``rename_prefix``.
        conflict_path: the path of the conflict copy, if one was made.
        moved: the memories a ``rename_prefix`` moved.
        detail: one line for the log and ``memfs status`` (conflicts).
        discarded: the write's content was dropped, not kept anywhere: it was an edit
            of content redacted elsewhere meanwhile (SPEC §2).
    """

    outcome: WriteOutcome
    memory: MemoryOut | None = None
    conflict_path: str | None = None
    moved: list[MemoryOut] = field(default_factory=list)
    discarded: bool = False
    detail: str = ""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def conflict_path(path: str, when: datetime, session_id: str) -> str:
    """Where the losing content of a concurrent write to ``path`` goes (SPEC §4):
    ``/d/notes.md`` → ``/d/notes.conflict-20260102T030405.123456Z-sesn_….md``, named by
    :func:`memfs.backend.conflict_name` (the same rule the FUSE layer uses for
    conflicts found at close; 255-byte NAME_MAX kept).
    """
    parent, _, name = path.rpartition("/")
    return f"{parent}/{conflict_name(name, when, session_id)}"


async def _memory_at(client: MemfsClient, store_id: str, path: str) -> MemoryOut | None:
    return await client.find_memory_by_path(store_id, path)


async def _holds(client: MemfsClient, store_id: str, path: str, sha256: str) -> MemoryOut | None:
    """The memory at ``path`` if its content has digest ``sha256``."""
    memory = await _memory_at(client, store_id, path)
    return memory if memory is not None and memory.content_sha256 == sha256 else None


async def _create_conflict_copy(
    client: MemfsClient, write: PendingWrite, *, session_id: str, reason: str
) -> ApplyResult:
    assert write.content is not None
    target = conflict_path(write.path, write.created_at, session_id)
    digest = _sha256(write.content)
    memory: MemoryOut | None
    try:
        memory = await client.create_memory(write.store_id, target, write.content)
    except PathConflict:
        # Our own copy from before a crash (same name, same digest), or a real clash.
        memory = await _holds(client, write.store_id, target, digest)
        if memory is None:
            raise
    detail = f"{reason}; this mount's content was saved as {target}"
    log.warning("conflict on %s in %s: %s", write.path, write.store_id, detail)
    return ApplyResult(WriteOutcome.CONFLICT, memory=memory, conflict_path=target, detail=detail)


async def _create(client: MemfsClient, write: PendingWrite, *, session_id: str) -> ApplyResult:
    assert write.content is not None
    try:
        memory = await client.create_memory(write.store_id, write.path, write.content)
    except PathConflict as exc:
        existing = await _holds(client, write.store_id, write.path, _sha256(write.content))
        if existing is not None:
            return ApplyResult(WriteOutcome.ALREADY_APPLIED, memory=existing)
        blocker = exc.conflicting_path or write.path
        return await _create_conflict_copy(
            client, write, session_id=session_id, reason=f"{blocker} was created elsewhere"
        )
    return ApplyResult(WriteOutcome.APPLIED, memory=memory)


async def _update(client: MemfsClient, write: PendingWrite, *, session_id: str) -> ApplyResult:
    assert write.content is not None
    memory_id = write.memory_id
    if memory_id is None:
        found = await _memory_at(client, write.store_id, write.path)
        if found is None:
            return await _create(client, write, session_id=session_id)
        memory_id = found.id
    try:
        memory = await client.update_memory(
            write.store_id,
            memory_id,
            content=write.content,
            expected_sha256=write.expected_sha256,
        )
    except PreconditionFailed:
        head = await client.retrieve_memory(write.store_id, memory_id)
        if head.content_sha256 == _sha256(write.content):
            return ApplyResult(WriteOutcome.ALREADY_APPLIED, memory=head)
        merged = await _merge(client, write, memory_id, head, session_id=session_id)
        if merged is not None:
            return merged
        return await _create_conflict_copy(
            client, write, session_id=session_id, reason=f"{head.path} was changed elsewhere"
        )
    except NotFound:
        if await _was_redacted(client, write.store_id, memory_id):
            # SPEC §2: after a redaction the bytes must be gone everywhere. This edit was
            # made on the redacted content, so it is not written back, nor kept.
            detail = (
                f"{write.path} was redacted elsewhere; this mount's queued edit of the "
                "redacted content is discarded"
            )
            log.warning("%s in %s: %s", write.path, write.store_id, detail)
            return ApplyResult(WriteOutcome.CONFLICT, detail=detail, discarded=True)
        # Deleted elsewhere while this mount edited it: keep the edit by re-creating the
        # memory at its path (what the SDK's own sync helper does on 404, api-contract
        # §7.6). A 404 for the store itself fails again in create and is raised.
        log.warning(
            "%s in %s was deleted elsewhere; re-creating it with this mount's content",
            write.path,
            write.store_id,
        )
        return await _create(client, write, session_id=session_id)
    return ApplyResult(WriteOutcome.APPLIED, memory=memory)


async def _merge(
    client: MemfsClient, write: PendingWrite, memory_id: str, head: MemoryOut, *, session_id: str
) -> ApplyResult | None:
    """A queued update whose memory changed on the server since it was queued: merged
    three-way with the head (SPEC §4 concurrent writers; the rule is
    :func:`memfs.core.merging.merge_texts`), the base being the version whose digest the
    write expected, and applied as one version with the head's digest as precondition.

    A version after the base made by this session is this write, applied before a crash
    or a lost answer (entries are applied strictly in order, and a write to a memory with
    queued writes is queued behind them): already applied, never merged twice.

    Returns:
        The outcome, or None when both must be kept (the edits overlap, the base version
        is gone or redacted, or the head kept moving).
    """
    assert write.content is not None
    if write.expected_sha256 is None:
        return None
    base: str | None = None
    for version in await client.list_versions(write.store_id, memory_id):  # newest first
        if version.content_sha256 == write.expected_sha256:
            base = (await client.retrieve_version(write.store_id, version.id)).content
            break
        actor = version.created_by
        if actor is not None and actor.session_id == session_id:
            return ApplyResult(WriteOutcome.ALREADY_APPLIED, memory=head)
    if base is None:
        return None
    for _ in range(MERGE_ATTEMPTS):
        theirs = head.content or ""
        merged = merge_texts(base, write.content, theirs)
        if merged is None:
            return None
        if merged == theirs:
            return ApplyResult(WriteOutcome.ALREADY_APPLIED, memory=head)
        try:
            memory = await client.update_memory(
                write.store_id, memory_id, content=merged, expected_sha256=head.content_sha256
            )
        except PreconditionFailed:
            head = await client.retrieve_memory(write.store_id, memory_id)
            continue
        detail = f"{write.path} was changed elsewhere; merged with this mount's queued write"
        log.info("%s in %s (version %s)", detail, write.store_id, memory.memory_version_id)
        return ApplyResult(WriteOutcome.APPLIED, memory=memory, detail=detail)
    return None


async def _was_redacted(client: MemfsClient, store_id: str, memory_id: str) -> bool:
    """Whether a memory that is gone was redacted (``redact`` mode scrubs every earlier
    version), as opposed to deleted: its versions show ``redacted_at``."""
    try:
        versions = await client.list_versions(store_id, memory_id)
    except NotFound:
        return False
    return any(version.redacted_at is not None for version in versions)


async def _delete(client: MemfsClient, write: PendingWrite) -> ApplyResult:
    memory_id = write.memory_id
    if memory_id is None:
        found = await _memory_at(client, write.store_id, write.path)
        if found is None:
            return ApplyResult(WriteOutcome.ALREADY_APPLIED)
        memory_id = found.id
    try:
        await client.delete_memory(write.store_id, memory_id, expected_sha256=write.expected_sha256)
    except NotFound:
        return ApplyResult(WriteOutcome.ALREADY_APPLIED)
    except PreconditionFailed:
        detail = f"{write.path} was changed elsewhere; its newer content is kept, not deleted"
        log.warning("conflict on %s in %s: %s", write.path, write.store_id, detail)
        return ApplyResult(WriteOutcome.CONFLICT, detail=detail)
    return ApplyResult(WriteOutcome.APPLIED)


async def _rename(client: MemfsClient, write: PendingWrite) -> ApplyResult:
    assert write.new_path is not None
    memory_id = write.memory_id
    if memory_id is None:
        found = await _memory_at(client, write.store_id, write.path)
        if found is None:
            moved = await _memory_at(client, write.store_id, write.new_path)
            if moved is not None:
                return ApplyResult(WriteOutcome.ALREADY_APPLIED, memory=moved)
            return _rename_conflict(write, f"{write.path} no longer exists")
        memory_id = found.id
    try:
        memory = await client.update_memory(
            write.store_id, memory_id, path=write.new_path, replace=write.replace
        )
    except NotFound:
        return _rename_conflict(write, f"{write.path} was deleted elsewhere")
    except PathConflict as exc:
        blocker = exc.conflicting_path or write.new_path
        return _rename_conflict(write, f"{blocker} is taken")
    return ApplyResult(WriteOutcome.APPLIED, memory=memory)


def _rename_conflict(write: PendingWrite, reason: str) -> ApplyResult:
    detail = f"rename {write.path} → {write.new_path} not done: {reason}; nothing was lost"
    log.warning("conflict in %s: %s", write.store_id, detail)
    return ApplyResult(WriteOutcome.CONFLICT, detail=detail)


async def _rename_prefix(client: MemfsClient, write: PendingWrite) -> ApplyResult:
    assert write.new_path is not None
    try:
        moved = await client.rename_prefix(write.store_id, write.path, write.new_path)
    except PathConflict as exc:
        blocker = exc.conflicting_path or write.new_path
        return _rename_conflict(write, f"{blocker} is taken")
    return ApplyResult(WriteOutcome.APPLIED, moved=moved)


async def apply_write(client: MemfsClient, write: PendingWrite, *, session_id: str) -> ApplyResult:
    """Sends ``write`` to the server and resolves conflicts as the module table says.

    Args:
        client: the mount's client.
        write: the write; ``created_at`` names a conflict copy.
        session_id: the mount's session, named in conflict copies.

    Returns:
        The outcome; never :attr:`WriteOutcome.REJECTED`.

    Raises:
        ServerUnavailable, AuthenticationFailed: try again later; the write may or may
            not have been applied (a later call recognises it).
        MemfsError: any other refusal (StoreArchived, PermissionDenied, InvalidPath,
            ContentTooLarge, StoreFull, NotFound for the store, …): final; the caller
            must keep the content (outbox: :meth:`Outbox.reject`; ``close()``: the errno).
    """
    match write.operation:
        case WriteOperation.CREATE:
            return await _create(client, write, session_id=session_id)
        case WriteOperation.UPDATE:
            return await _update(client, write, session_id=session_id)
        case WriteOperation.DELETE:
            return await _delete(client, write)
        case WriteOperation.RENAME:
            return await _rename(client, write)
        case WriteOperation.RENAME_PREFIX:
            return await _rename_prefix(client, write)
    raise AssertionError(write.operation)  # pragma: no cover


@dataclass
class ReplayReport:
    """What one :func:`replay_outbox` run did.

    Attributes:
        results: each entry that left the outbox, with its result (None if rejected).
        rejected: the entries the server refused, with the error.
        stopped_by: the retryable error that stopped the run, or None if the outbox
            was emptied.
    """

    results: list[tuple[OutboxEntry, ApplyResult]] = field(default_factory=list)
    rejected: list[tuple[OutboxEntry, MemfsError]] = field(default_factory=list)
    stopped_by: MemfsError | None = None

    def count(self, outcome: WriteOutcome) -> int:
        if outcome is WriteOutcome.REJECTED:
            return len(self.rejected)
        return sum(1 for _, result in self.results if result.outcome is outcome)


async def replay_outbox(
    outbox: Outbox,
    client: MemfsClient,
    *,
    session_id: str,
    on_result: Callable[[OutboxEntry, ApplyResult | MemfsError], None] | None = None,
    lock: trio.Lock | None = None,
) -> ReplayReport:
    """Applies the outbox's entries strictly in order until it is empty or the server
    can't take the next one.

    Each entry is removed (fsync'd ``done`` line) only after :func:`apply_write`
    returned for it; a final refusal moves it to the rejected directory
    (:meth:`Outbox.reject`). A retryable error stops the run with the entry still
    queued. Run at most one replay per outbox at a time.

    Args:
        on_result: called after each entry leaves the outbox, with its result or the
            refusal (e.g. to invalidate kernel caches or record status).
        lock: held around each entry (read, apply, mark done, ``on_result``), never
            across two: writers that take it between entries queue behind the rest
            instead of waiting for the whole drain (SPEC §4 close-to-open: a close
            does not wait on other writers' backlog).

    Returns:
        The report; ``stopped_by`` is None when the outbox is empty.
    """
    report = ReplayReport()
    entry_lock = lock if lock is not None else trio.Lock()
    while True:
        async with entry_lock:
            entry = await trio.to_thread.run_sync(outbox.first)
            if entry is None:
                return report
            outcome: ApplyResult | MemfsError
            try:
                applied = await apply_write(client, entry.write, session_id=session_id)
            except RETRYABLE_ERRORS as exc:
                report.stopped_by = exc
                log.debug("outbox replay paused at seq %d: %s", entry.seq, exc)
                return report
            except MemfsError as exc:
                reason = f"{type(exc).__name__} ({exc.code}): {exc.message}"
                await trio.to_thread.run_sync(outbox.reject, entry, reason)
                report.rejected.append((entry, exc))
                outcome = exc
            else:
                await trio.to_thread.run_sync(outbox.mark_done, entry.seq, applied.outcome)
                report.results.append((entry, applied))
                outcome = applied
            if on_result is not None:
                on_result(entry, outcome)
