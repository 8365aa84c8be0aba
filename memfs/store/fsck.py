"""One check per storage invariant stated in ``schema.py``; the oracle of the tests.

Each ``check_*`` function takes a connection inside one read transaction and yields one
line per finding; :func:`run_checks` runs them all. :func:`sqlite_findings` adds
SQLite's own page-level check (``PRAGMA integrity_check`` or ``quick_check``: a
damaged page is found before the invariants are read from it). ``memfs fsck`` prints
the findings (:func:`memfs.store.fsck_database`) and exits non-zero if there is any.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, and_, func, select
from sqlalchemy.exc import DBAPIError

from memfs.core import rules
from memfs.core.config import DREAM_STALE_S, MAX_SESSION_TTL_S
from memfs.core.errors import InvalidInput
from memfs.core.ids import blob_key_of, sha256_of
from memfs.core.model import ChangeKind
from memfs.core.points import validate_snapshot_name
from memfs.store.blobs import EMPTY_BLOB_KEY
from memfs.store.identities import check_mount_counts
from memfs.store.memory_rows import REDACTED_PATH
from memfs.store.records import check_index as check_record_index
from memfs.store.schema import (
    api_keys,
    audit_log,
    blobs,
    changes,
    console_sign_ins,
    dreams,
    memories,
    sessions,
    snapshots,
    stores,
    versions,
)
from memfs.store.search import check_index

__all__ = ["CHECKS", "SQLITE_CHECKS", "run_checks", "sqlite_findings"]

# The SQLite checks fsck can run: ``integrity`` reads every page and index (O(N log N));
# ``quick`` skips the index-content comparison (O(N)); None runs neither.
SQLITE_CHECKS = {"integrity": "integrity_check", "quick": "quick_check"}
# integrity_check stops after this many problems (its own default is 100).
_MAX_SQLITE_FINDINGS = 100


def check_blob_integrity(conn: Connection) -> Iterator[str]:
    """Every blob's bytes hash to its key (xxh3-128) and to its sha256, and match its size."""
    for key, sha, size, data in conn.execute(
        select(blobs.c.key, blobs.c.sha256, blobs.c.size_bytes, blobs.c.data)
    ):
        data = bytes(data)
        if blob_key_of(data) != key:
            yield f"blob {key}: bytes do not hash to the key"
        if sha256_of(data) != sha:
            yield f"blob {key}: bytes do not match the recorded sha256"
        if len(data) != size:
            yield f"blob {key}: size_bytes {size} but {len(data)} bytes stored"


def check_no_orphan_blobs(conn: Connection) -> Iterator[str]:
    """Every blob is referenced by a memory or a version, except the empty blob, which
    the fold of an ``O_EXCL`` claim keeps for the next one (memfs/store/blobs.py)."""
    referenced = (
        select(memories.c.blob_key)
        .where(memories.c.blob_key.is_not(None))
        .union(select(versions.c.blob_key).where(versions.c.blob_key.is_not(None)))
    )
    unreferenced = select(blobs.c.key).where(
        blobs.c.key.not_in(referenced), blobs.c.key != EMPTY_BLOB_KEY
    )
    for (key,) in conn.execute(unreferenced):
        yield f"blob {key}: orphan (no memory or version references it)"


def check_no_dangling_blob_refs(conn: Connection) -> Iterator[str]:
    """Every blob_key of a memory or a version exists in blobs."""
    for table, label in ((memories, "memory"), (versions, "version")):
        id_column = table.c.id
        rows = conn.execute(
            select(id_column, table.c.blob_key).where(
                table.c.blob_key.is_not(None), table.c.blob_key.not_in(select(blobs.c.key))
            )
        )
        for row_id, key in rows:
            yield f"{label} {row_id}: references missing blob {key}"


def check_memory_digests(conn: Connection) -> Iterator[str]:
    """A memory's content_sha256 and size_bytes equal those of its blob."""
    rows = conn.execute(
        select(
            memories.c.id,
            memories.c.content_sha256,
            memories.c.size_bytes,
            blobs.c.sha256,
            blobs.c.size_bytes.label("blob_size"),
        ).join(blobs, blobs.c.key == memories.c.blob_key)
    )
    for memory_id, sha, size, blob_sha, blob_size in rows:
        if sha != blob_sha or size != blob_size:
            yield f"memory {memory_id}: content_sha256/size differ from its blob"


def check_memory_states(conn: Connection) -> Iterator[str]:
    """Live memories have content; soft-deleted tombstones have none; redacted ones have
    their replacement and the placeholder path; delete_mode is set exactly when
    deleted_at is."""
    for memory_id, blob_key, deleted_at, mode, path in conn.execute(
        select(
            memories.c.id,
            memories.c.blob_key,
            memories.c.deleted_at,
            memories.c.delete_mode,
            memories.c.path,
        )
    ):
        if (deleted_at is None) != (mode is None):
            yield f"memory {memory_id}: deleted_at and delete_mode disagree"
        elif deleted_at is None and blob_key is None:
            yield f"memory {memory_id}: live but has no content"
        elif mode == "soft_delete" and blob_key is not None:
            yield f"memory {memory_id}: soft-deleted tombstone still references content"
        elif mode == "redact" and blob_key is None:
            yield f"memory {memory_id}: redacted tombstone has no replacement content"
        elif mode == "redact" and path != REDACTED_PATH:
            yield f"memory {memory_id}: redacted tombstone still holds its path"
        elif mode not in (None, "soft_delete", "redact"):
            yield f"memory {memory_id}: unknown delete_mode {mode!r}"


def check_heads(conn: Connection) -> Iterator[str]:
    """Every memory's head version exists, belongs to it, is its newest version, and for
    a live memory records its current path and content."""
    newest = (
        select(versions.c.memory_id, func.max(versions.c.seq).label("seq"))
        .group_by(versions.c.memory_id)
        .subquery()
    )
    rows = conn.execute(
        select(
            memories.c.id,
            memories.c.head_version_id,
            memories.c.path,
            memories.c.blob_key,
            memories.c.deleted_at,
            versions.c.memory_id.label("version_memory"),
            versions.c.seq,
            versions.c.path.label("version_path"),
            versions.c.blob_key.label("version_blob"),
            newest.c.seq.label("newest_seq"),
        )
        .select_from(memories)
        .outerjoin(versions, versions.c.id == memories.c.head_version_id)
        .outerjoin(newest, newest.c.memory_id == memories.c.id)
    )
    for r in rows:
        if r.seq is None:
            yield f"memory {r.id}: head version {r.head_version_id} does not exist"
            continue
        if r.version_memory != r.id:
            yield f"memory {r.id}: head version {r.head_version_id} belongs to {r.version_memory}"
        if r.seq != r.newest_seq:
            yield f"memory {r.id}: head version {r.head_version_id} is not its newest version"
        if r.deleted_at is None and (r.version_path != r.path or r.version_blob != r.blob_key):
            yield f"memory {r.id}: head version does not record its current path and content"


def check_version_shapes(conn: Connection) -> Iterator[str]:
    """Version columns obey the nullability rules of api-contract §4.6."""
    for r in conn.execute(select(versions)):
        has_content = r.blob_key is not None
        if (r.content_sha256 is not None) != has_content or (
            r.size_bytes is not None
        ) != has_content:
            yield f"version {r.id}: blob_key, content_sha256 and size_bytes disagree on nullness"
        if r.operation not in ("created", "modified", "deleted"):
            yield f"version {r.id}: unknown operation {r.operation!r}"
        if r.redacted_at is not None and (r.path is not None or has_content):
            yield f"version {r.id}: redacted but still holds its path or content"
        if r.redacted_at is None and r.path is None:
            yield f"version {r.id}: not redacted but has no path"
        if r.operation == "deleted" and has_content:
            yield f"version {r.id}: a deleted version holds content"
        if r.operation != "deleted" and r.redacted_at is None and not has_content:
            yield f"version {r.id}: a {r.operation} version holds no content"


def check_owners(conn: Connection) -> Iterator[str]:
    """Memories and versions belong to existing stores; versions to existing memories
    unless they were hard-deleted together (then neither exists)."""
    for table, label in ((memories, "memory"), (versions, "version")):
        for row_id, store_id in conn.execute(
            select(table.c.id, table.c.store_id).where(table.c.store_id.not_in(select(stores.c.id)))
        ):
            yield f"{label} {row_id}: its store {store_id} does not exist"
    for version_id, version_store, memory_store in conn.execute(
        select(versions.c.id, versions.c.store_id, memories.c.store_id)
        .join(memories, memories.c.id == versions.c.memory_id)
        .where(versions.c.store_id != memories.c.store_id)
    ):
        yield (
            f"version {version_id}: belongs to store {version_store} but its memory "
            f"to {memory_store}"
        )
    for version_id, memory_id in conn.execute(
        select(versions.c.id, versions.c.memory_id).where(
            versions.c.memory_id.not_in(select(memories.c.id))
        )
    ):
        yield f"version {version_id}: its memory {memory_id} does not exist"


def check_counters(conn: Connection) -> Iterator[str]:
    """stores.entry_count and total_size_bytes equal the live memories' count and sum."""
    actual = (
        select(
            memories.c.store_id,
            func.count().label("n"),
            func.coalesce(func.sum(memories.c.size_bytes), 0).label("size"),
        )
        .where(memories.c.deleted_at.is_(None))
        .group_by(memories.c.store_id)
        .subquery()
    )
    rows = conn.execute(
        select(
            stores.c.id, stores.c.entry_count, stores.c.total_size_bytes, actual.c.n, actual.c.size
        )
        .select_from(stores)
        .outerjoin(actual, actual.c.store_id == stores.c.id)
    )
    for store_id, count, size, n, real_size in rows:
        if count != (n or 0):
            yield f"store {store_id}: entry_count {count} but {n or 0} live memories"
        if size != (real_size or 0):
            yield f"store {store_id}: total_size_bytes {size} but live content is {real_size or 0}"


def check_paths(conn: Connection) -> Iterator[str]:
    """Live paths are valid (SPEC §1), unique per store, and never both a memory and a
    directory prefix of another live memory."""
    previous: tuple[str, str] | None = None
    rows = conn.execute(
        select(memories.c.store_id, memories.c.id, memories.c.path)
        .where(memories.c.deleted_at.is_(None))
        .order_by(memories.c.store_id, memories.c.path)
    )
    live_by_store: dict[str, set[str]] = {}
    for store_id, memory_id, path in rows:
        try:
            rules.validate_path(path)
        except InvalidInput as exc:
            yield f"memory {memory_id}: invalid path {path!r}: {exc}"
        if previous == (store_id, path):
            yield f"store {store_id}: several live memories at {path!r}"
        previous = (store_id, path)
        live_by_store.setdefault(store_id, set()).add(path)
    for store_id, paths in live_by_store.items():
        for path in paths:
            parts = path.split("/")[1:-1]
            for i in range(len(parts)):
                ancestor = "/" + "/".join(parts[: i + 1])
                if ancestor in paths:
                    yield f"store {store_id}: {ancestor!r} is both a memory and a directory"


def check_change_feed(conn: Connection) -> Iterator[str]:
    """Each store's change seqs run 1..last_change_seq with no gap or excess."""
    rows = conn.execute(
        select(
            stores.c.id,
            stores.c.last_change_seq,
            func.count(changes.c.seq),
            func.coalesce(func.max(changes.c.seq), 0),
        )
        .select_from(stores)
        .outerjoin(changes, and_(changes.c.store_id == stores.c.id))
        .group_by(stores.c.id, stores.c.last_change_seq)
    )
    for store_id, last, count, highest in rows:
        if highest != last:
            yield f"store {store_id}: last_change_seq {last} but newest change is {highest}"
        if count != highest:
            yield f"store {store_id}: change feed has gaps ({count} entries up to seq {highest})"


def check_metadata_json(conn: Connection) -> Iterator[str]:
    """Stored metadata is a JSON object that passes SPEC §1 metadata rules."""
    for table, label in ((stores, "store"), (memories, "memory")):
        for row_id, raw in conn.execute(select(table.c.id, table.c.metadata_json)):
            try:
                rules.validate_metadata(json.loads(raw))
            except (ValueError, InvalidInput) as exc:
                yield f"{label} {row_id}: invalid metadata: {exc}"


def check_retention_and_audit(conn: Connection) -> Iterator[str]:
    """A store's version retention period is NULL or 1 s to 100 years (SPEC §2); an
    audit entry's metadata is NULL or a JSON object passing SPEC §1 metadata rules."""
    for store_id, retention_s in conn.execute(
        select(stores.c.id, stores.c.version_retention_s).where(
            stores.c.version_retention_s.is_not(None)
        )
    ):
        try:
            rules.validate_retention_s(retention_s)
        except InvalidInput as exc:
            yield f"store {store_id}: {exc}"
    for seq, raw in conn.execute(
        select(audit_log.c.seq, audit_log.c.metadata_json).where(
            audit_log.c.metadata_json.is_not(None)
        )
    ):
        try:
            rules.validate_metadata(json.loads(raw))
        except (ValueError, InvalidInput) as exc:
            yield f"audit entry {seq}: invalid metadata: {exc}"


def check_snapshots(conn: Connection) -> Iterator[str]:
    """A snapshot's name passes the snapshot-name rules, its ``memory_version_id`` is
    set iff its seq is not 0 and names the version of that seq in its store (while that
    version exists); and what it needs of the history is kept (SPEC §10): every memory
    of its store created before its point still has a version at or before it (a
    prune that dropped the version a snapshot needs drops the older ones too, so the
    memory has none left there), also when the point's own version is gone ("dangling":
    its time is bounded by the newest version left before it, :func:`_lost_at`)."""
    version = versions.alias("point_version")
    rows = conn.execute(
        select(
            snapshots.c.id,
            snapshots.c.store_id,
            snapshots.c.name,
            snapshots.c.seq,
            snapshots.c.memory_version_id,
            version.c.seq.label("version_seq"),
            version.c.store_id.label("version_store_id"),
            version.c.created_at.label("point_at"),
        )
        .select_from(snapshots.outerjoin(version, version.c.id == snapshots.c.memory_version_id))
        .order_by(snapshots.c.id)
    ).all()
    for row in rows:
        try:
            validate_snapshot_name(row.name)
        except InvalidInput as exc:
            yield f"snapshot {row.id}: {exc}"
        if (row.memory_version_id is None) != (row.seq == 0):
            yield f"snapshot {row.id}: memory_version_id must be set iff seq ({row.seq}) is not 0"
        if row.seq == 0:
            continue  # the empty store needs nothing
        if row.version_seq is not None and (
            row.version_seq != row.seq or row.version_store_id != row.store_id
        ):
            yield (
                f"snapshot {row.id}: memory_version_id {row.memory_version_id} is not "
                f"the version of seq {row.seq} in its store"
            )
            continue
        gone = "" if row.version_seq is not None else f"its point {row.memory_version_id} is gone "
        for memory_id in _lost_at(conn, row.store_id, row.seq, row.point_at):
            yield (
                f"snapshot {row.id} ({row.name}): {gone and 'dangling: ' + gone + 'and '}"
                f"memory {memory_id} has no version left at or before its point (retention "
                "pruned what it needs)"
            )


def _lost_at(conn: Connection, store_id: str, seq: int, point_at: str | None) -> list[str]:
    """The memories of the store that existed at point ``seq`` (created at or before its
    time ``point_at``) yet have no version at or before it: what a point needs, pruned (a
    prune that drops the version a point needs drops the older ones too). When the
    point's own version is gone (``point_at`` None: a hard delete erased it, or a bad
    prune), the newest version left at or before the point gives a lower bound of its
    time (what it can't bound is not reported: a hard delete leaves no memory row)."""
    if point_at is None:
        point_at = conn.execute(
            select(func.max(versions.c.created_at)).where(
                versions.c.store_id == store_id, versions.c.seq <= seq
            )
        ).scalar()
        if point_at is None:
            return []
    has_version = (
        select(versions.c.seq)
        .where(versions.c.memory_id == memories.c.id, versions.c.seq <= seq)
        .exists()
    )
    return list(
        conn.execute(
            select(memories.c.id)
            .where(
                memories.c.store_id == store_id,
                # At or before: the point may be a memory's creation (a fork creates
                # all of its memories at one instant).
                memories.c.created_at <= point_at,
                ~has_version,
            )
            .order_by(memories.c.id)
        ).scalars()
    )


def check_forks(conn: Connection) -> Iterator[str]:
    """A fork (SPEC §10) has a base iff it has an origin; its ``fork_base_version_id`` is
    set iff its base seq is not 0 and names the origin's version of that seq (while that
    version exists); only a fork's memories name an origin memory, and one that still
    exists is in the fork's origin; and while the origin lives, what the fork's base needs
    of its history is kept: every origin memory created before the base still has a
    version at or before it (retention keeps them, :mod:`memfs.store.snapshots`), also
    when the base version itself is gone ("dangling"); and, once merged, every memory of
    the fork created before its last merge still has a version at or before it (the
    next merge's base). ``fork_merged_seq`` and ``fork_created_seq`` are a fork's only."""
    origin = stores.alias("origin")
    version = versions.alias("base_version")
    rows = conn.execute(
        select(
            stores.c.id,
            stores.c.forked_from,
            stores.c.fork_base_seq,
            stores.c.fork_base_version_id,
            stores.c.fork_merged_seq,
            stores.c.fork_created_seq,
            origin.c.id.label("origin_id"),
            version.c.seq.label("version_seq"),
            version.c.store_id.label("version_store_id"),
            version.c.created_at.label("base_at"),
        )
        .select_from(
            stores.outerjoin(origin, origin.c.id == stores.c.forked_from).outerjoin(
                version, version.c.id == stores.c.fork_base_version_id
            )
        )
        .where(
            stores.c.forked_from.is_not(None)
            | stores.c.fork_base_seq.is_not(None)
            | stores.c.fork_merged_seq.is_not(None)
            | stores.c.fork_created_seq.is_not(None)
        )
        .order_by(stores.c.id)
    ).all()
    for row in rows:
        if (row.forked_from is None) != (row.fork_base_seq is None):
            yield f"store {row.id}: forked_from and fork_base_seq must be set together"
            continue
        if row.forked_from is None and row.fork_merged_seq is not None:
            yield f"store {row.id}: fork_merged_seq is set but the store is no fork"
            continue
        if row.forked_from is None and row.fork_created_seq is not None:
            # A diff with another store would skip what it takes as forked unchanged.
            yield f"store {row.id}: fork_created_seq is set but the store is no fork"
            continue
        if (row.fork_base_version_id is None) != (row.fork_base_seq == 0):
            yield (
                f"store {row.id}: fork_base_version_id must be set iff fork_base_seq "
                f"({row.fork_base_seq}) is not 0"
            )
        yield from _fork_history_kept(conn, row)
    forked = memories.alias("forked")
    origin_memory = memories.alias("origin_memory")
    for memory_id, fork_of, origin_store in conn.execute(
        select(forked.c.id, stores.c.forked_from, origin_memory.c.store_id)
        .select_from(
            forked.join(stores, stores.c.id == forked.c.store_id).outerjoin(
                origin_memory, origin_memory.c.id == forked.c.origin_memory_id
            )
        )
        .where(forked.c.origin_memory_id.is_not(None))
        .order_by(forked.c.id)
    ):
        if fork_of is None:
            yield f"memory {memory_id}: names an origin memory but its store is no fork"
        elif origin_store is not None and origin_store != fork_of:
            yield f"memory {memory_id}: its origin memory is not in its store's origin {fork_of}"


def _fork_history_kept(conn: Connection, row: Row[Any]) -> Iterator[str]:
    """What one fork's points need is kept (:func:`check_forks`): its base in the origin
    (while the origin lives) and, once merged, its own state at its last merge."""
    if row.fork_merged_seq is not None:
        point_at = conn.execute(
            select(versions.c.created_at).where(versions.c.seq == row.fork_merged_seq)
        ).scalar()
        for memory_id in _lost_at(conn, row.id, int(row.fork_merged_seq), point_at):
            yield (
                f"fork {row.id}: memory {memory_id} has no version left at or before "
                "its last merge, the next merge's base (retention pruned what it needs)"
            )
    if row.origin_id is None or row.fork_base_seq == 0:
        return  # the origin is gone (a fork outlives it), or the base is seq 0
    if row.version_seq is not None and (
        row.version_seq != row.fork_base_seq or row.version_store_id != row.forked_from
    ):
        yield (
            f"store {row.id}: fork_base_version_id {row.fork_base_version_id} is not "
            f"the version of seq {row.fork_base_seq} in its origin {row.forked_from}"
        )
        return
    gone = "" if row.version_seq is not None else f"its base {row.fork_base_version_id} is gone "
    for memory_id in _lost_at(conn, row.forked_from, int(row.fork_base_seq), row.base_at):
        yield (
            f"fork {row.id}: {gone and 'dangling: ' + gone + 'and '}origin memory "
            f"{memory_id} has no version left at or before the fork's base (retention "
            "pruned what it needs)"
        )


def check_sessions(conn: Connection) -> Iterator[str]:
    """A session has an expiry iff it has a token, expiring after its creation and at
    most 30 days later; its creating API key exists, and if that key is revoked, so is
    the session (SPEC §3 credential lifecycle)."""
    rows = conn.execute(
        select(
            sessions.c.id,
            sessions.c.token_hash,
            sessions.c.created_at,
            sessions.c.expires_at,
            sessions.c.revoked_at,
            sessions.c.api_key_id,
            api_keys.c.id.label("key_id"),
            api_keys.c.revoked_at.label("key_revoked_at"),
        ).outerjoin(api_keys, api_keys.c.id == sessions.c.api_key_id)
    )
    longest = timedelta(seconds=MAX_SESSION_TTL_S)
    for r in rows:
        if (r.token_hash is None) != (r.expires_at is None):
            yield f"session {r.id}: has a token but no expiry, or an expiry but no token"
        elif r.expires_at is not None:
            lifetime = datetime.fromisoformat(r.expires_at) - datetime.fromisoformat(r.created_at)
            if not timedelta(0) < lifetime <= longest:
                yield f"session {r.id}: expires {lifetime} after its creation (1 s to 30 days)"
        if r.api_key_id is not None and r.key_id is None:
            yield f"session {r.id}: its API key {r.api_key_id} does not exist"
        elif r.key_revoked_at is not None and r.revoked_at is None:
            yield f"session {r.id}: its API key {r.api_key_id} is revoked but it is not"


def check_console_sign_ins(conn: Connection) -> Iterator[str]:
    """A console sign-in names exactly one credential and expires after it was made
    (SPEC §12, schema.py)."""
    rows = conn.execute(
        select(
            console_sign_ins.c.id_hash,
            console_sign_ins.c.api_key_id,
            console_sign_ins.c.session_id,
            console_sign_ins.c.created_at,
            console_sign_ins.c.expires_at,
        )
    )
    for r in rows:
        name = f"console sign-in {r.id_hash[:12]}…"
        if (r.api_key_id is None) == (r.session_id is None):
            yield f"{name}: names {'both' if r.api_key_id else 'neither'} an API key and a session"
        if r.expires_at <= r.created_at:
            yield f"{name}: expires at {r.expires_at}, not after its creation {r.created_at}"


def check_dreams(conn: Connection, *, at: datetime | None = None) -> Iterator[str]:
    """A completed dream has an output store that exists, or whose deletion the change
    feed records (discarding a dream's output is a user's right); an ended dream has an
    end time and a failed one its error; a running dream's job is alive: its heartbeat
    is at most :data:`memfs.core.config.DREAM_STALE_S` old at ``at`` (default now),
    else no runner has it (its server stopped: the next ``memfs serve`` marks it
    failed, SPEC §11)."""
    moment = datetime.now(tz=UTC) if at is None else at
    stale = timedelta(seconds=DREAM_STALE_S)
    live = set(conn.execute(select(stores.c.id)).scalars())
    rows = conn.execute(
        select(dreams.c.id, dreams.c.status, dreams.c.output_store_id, dreams.c.ended_at,
               dreams.c.error_type, dreams.c.heartbeat_at, dreams.c.created_at)
    ).all()
    outputs = {r.output_store_id for r in rows if r.status == "completed" and r.output_store_id}
    deleted = set(
        conn.execute(
            select(changes.c.store_id).where(
                changes.c.store_id.in_(sorted(outputs - live)),
                changes.c.kind == ChangeKind.STORE_DELETED.value,
            )
        ).scalars()
    ) if outputs - live else set()
    for r in rows:
        if r.status == "completed":
            if r.output_store_id is None:
                yield f"dream {r.id}: completed without an output store"
            elif r.output_store_id not in live and r.output_store_id not in deleted:
                yield f"dream {r.id}: its output store {r.output_store_id} does not exist"
        if r.status in ("completed", "failed", "canceled") and r.ended_at is None:
            yield f"dream {r.id}: {r.status} without an end time"
        if r.status == "failed" and not r.error_type:
            yield f"dream {r.id}: failed without an error type"
        if r.status == "running":
            beat = datetime.fromisoformat(r.heartbeat_at or r.created_at)
            if moment - beat > stale:
                yield (
                    f"dream {r.id}: running, but its job's last heartbeat was "
                    f"{int((moment - beat).total_seconds())} s ago: no runner has it (its "
                    "server stopped; the next memfs serve marks it failed)"
                )


def check_principals(conn: Connection) -> Iterator[str]:
    """A key's or session's principal is whole (SPEC §6, schema.py): roles iff a user
    id, and the roles a JSON list of strings."""
    for table in (api_keys, sessions):
        rows = conn.execute(
            select(table.c.id, table.c.principal_user_id, table.c.principal_roles_json)
        )
        for r in rows:
            if (r.principal_user_id is None) != (r.principal_roles_json is None):
                yield f"{table.name} {r.id}: principal_user_id and principal_roles_json " \
                    "must be both set or both NULL"
                continue
            if r.principal_roles_json is None:
                continue
            try:
                roles = json.loads(r.principal_roles_json)
            except ValueError:
                roles = None
            if not isinstance(roles, list) or not all(isinstance(x, str) for x in roles):
                yield f"{table.name} {r.id}: principal_roles_json is not a JSON list of strings"


def check_search_index(conn: Connection) -> Iterator[str]:
    """The search documents are exactly the live memories at their current path and head
    content, and the dialect's index agrees with them (memfs/store/search.py)."""
    yield from check_index(conn)


def check_records(conn: Connection) -> Iterator[str]:
    """The record index holds exactly the live records with their headers' fields (SPEC
    §6, memfs/store/records.py); dangling relations are no finding (``--records``)."""
    yield from check_record_index(conn)


CHECKS: tuple[Callable[[Connection], Iterator[str]], ...] = (
    check_blob_integrity,
    check_no_orphan_blobs,
    check_no_dangling_blob_refs,
    check_memory_digests,
    check_memory_states,
    check_heads,
    check_version_shapes,
    check_owners,
    check_counters,
    check_paths,
    check_change_feed,
    check_metadata_json,
    check_retention_and_audit,
    check_snapshots,
    check_forks,
    check_sessions,
    check_dreams,
    check_console_sign_ins,
    check_principals,
    check_search_index,
    check_mount_counts,
    check_records,
)


def sqlite_findings(conn: Connection, check: str) -> Iterator[str]:
    """SQLite's verdict on its own file: one line per problem ``PRAGMA integrity_check``
    (``check="integrity"``) or ``quick_check`` (``"quick"``) reports, or the error that
    stopped it (a page too damaged to read). Nothing for a sound file.

    Raises:
        InvalidInput: ``check`` is not a key of :data:`SQLITE_CHECKS`.
    """
    pragma = SQLITE_CHECKS.get(check)
    if pragma is None:
        raise InvalidInput(f"the SQLite check is one of {sorted(SQLITE_CHECKS)}, not {check!r}")
    try:
        rows = conn.exec_driver_sql(f"PRAGMA {pragma}({_MAX_SQLITE_FINDINGS})").all()
    except DBAPIError as exc:
        yield f"sqlite {pragma}: could not run: {exc.orig}"
        return
    for (line,) in rows:
        if line != "ok":
            yield f"sqlite {pragma}: {line}"


def run_checks(conn: Connection) -> Iterator[str]:
    """Every finding of every check, in the order of :data:`CHECKS`. A check the database
    can't answer (a damaged file) is itself a finding, and the others still run."""
    for check in CHECKS:
        try:
            found = list(check(conn))
        except DBAPIError as exc:
            found = [f"{check.__name__}: could not run: {exc.orig}"]
        yield from found
