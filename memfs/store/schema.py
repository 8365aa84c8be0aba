"""The canonical schema of the store database (SQLAlchemy Core; SQLite and PostgreSQL).

Every table and column is commented with its meaning, sentinel values and invariants;
``memfs/store/fsck.py`` has one check per invariant stated here. A fresh database is
built from this metadata and stamped at the Alembic head; every later change to it
comes with a migration under ``memfs/store/migrations/versions/`` and a test.

Timestamps are stored as ISO-8601 UTC text with microseconds (``2026-01-02T03:04:05.123456Z``)
on both dialects, so that they compare as strings and round-trip exactly.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)

__all__ = [
    "ERASED_FROM",
    "api_keys",
    "audit_log",
    "blobs",
    "changes",
    "console_sign_ins",
    "dreams",
    "identity_mounts",
    "memories",
    "metadata",
    "record_grants",
    "record_relations",
    "record_tags",
    "records",
    "search_docs",
    "search_pending",
    "search_queue",
    "search_vectors",
    "session_events",
    "session_resources",
    "sessions",
    "snapshots",
    "stores",
    "versions",
]

metadata = MetaData()

# Paths compare byte-wise (memcmp) on both dialects: SQLite's default BINARY collation
# does that for UTF-8 text; PostgreSQL needs COLLATE "C". Prefix range scans
# (``path >= '/a/' AND path < '/a0'``) depend on it.
PathText = Text().with_variant(Text(collation="C"), "postgresql")
# Big autoincrement keys: INTEGER on SQLite (so it is the rowid), BIGINT on PostgreSQL.
SeqInteger = BigInteger().with_variant(Integer(), "sqlite")
# Index.info key of a partial index's predicate (SQL text), see _partial_index.
PARTIAL_WHERE = "memfs_where"


def _partial_index(name: str, *columns: Column[Any], where: str, unique: bool) -> Index:
    """An index of the rows where the SQL predicate ``where`` holds, on both dialects.

    SQLite's predicate is declared here (``sqlite_where``); PostgreSQL's is attached by
    :func:`_postgresql_partial_indexes` just before the metadata creates its tables on
    PostgreSQL. Declaring ``postgresql_where`` here would make SQLAlchemy import its
    whole PostgreSQL dialect (every driver's module) into each process that imports this
    schema, SQLite ones too: about 6 % of what ``memfs store list`` costs to start
    (README "Performance", CLI start). The predicate itself is kept once, in
    ``Index.info[PARTIAL_WHERE]``.
    """
    index = Index(name, *columns, unique=unique, sqlite_where=text(where))
    index.info[PARTIAL_WHERE] = where
    return index


@event.listens_for(metadata, "before_create")
def _postgresql_partial_indexes(target: MetaData, connection: Connection, **_kw: Any) -> None:
    """Gives every partial index its predicate on PostgreSQL before ``create_all`` emits
    DDL (its dialect is loaded by then). Idempotent."""
    if connection.dialect.name != "postgresql":
        return
    for table in target.tables.values():
        for index in table.indexes:
            where = index.info.get(PARTIAL_WHERE)
            if where is not None:
                index.dialect_kwargs["postgresql_where"] = text(where)

stores = Table(
    "stores",
    metadata,
    Column("id", String(40), primary_key=True, comment="memstore_… id, time-sortable"),
    Column("name", Text, nullable=False, comment="1–255 chars, no control chars"),
    Column("description", Text, nullable=False, comment="≤1,024 chars; '' when unset"),
    Column("metadata_json", Text, nullable=False, comment="JSON object str→str, ≤16 keys"),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False, comment="bumped by store edits only"),
    Column("archived_at", String(32), nullable=True, comment="NULL = not archived; one-way"),
    Column(
        "entry_count",
        Integer,
        nullable=False,
        comment="number of live memories (deleted_at IS NULL); fsck recounts it",
    ),
    Column(
        "total_size_bytes",
        BigInteger,
        nullable=False,
        comment="sum of size_bytes of live memories; fsck recounts it",
    ),
    Column(
        "last_change_seq",
        BigInteger,
        nullable=False,
        comment="seq of the newest row in changes for this store; 0 = none yet",
    ),
    Column(
        "identity_id",
        String(80),
        nullable=True,
        comment=(
            "SPEC §8: the idn_… whose default store this is; NULL = a store a user created. "
            "Set iff the store is system-managed, iff it has the one system_managed row of "
            "identity_mounts (its pair's default mount)"
        ),
    ),
    Column(
        "template_id",
        String(80),
        nullable=True,
        comment="SPEC §8: the tmpl_… of the default store's pair; NULL iff identity_id is",
    ),
    Column(
        "identity_template_count",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment=(
            "SPEC §8 binding_info: how many (identity, template) pairs mount the store "
            "(= its rows in identity_mounts); moved with the store row locked; fsck recounts"
        ),
    ),
    Column(
        "version_retention_s",
        BigInteger,
        nullable=True,
        comment=(
            "SPEC §2 retention: versions older than this many seconds may be pruned "
            "(never a live memory's head, nor what a restore needs); NULL = keep forever"
        ),
    ),
    Column(
        "forked_from",
        String(40),
        nullable=True,
        comment=(
            "SPEC §10 fork: the memstore_… this store was forked from (no FK: the fork "
            "outlives its origin); NULL = not a fork. Set iff fork_base_seq is"
        ),
    ),
    Column(
        "fork_base_seq",
        BigInteger,
        nullable=True,
        comment=(
            "the point of the origin the fork was made at: the origin's state then is, per "
            "memory, its newest version with versions.seq <= this (0 = empty). While the "
            "origin lives, retention keeps every version this needs (memfs.store.forks)"
        ),
    ),
    Column(
        "fork_base_version_id",
        String(40),
        nullable=True,
        comment="versions.id of the origin's version whose seq is fork_base_seq; NULL iff "
        "fork_base_seq is NULL or 0",
    ),
    Column(
        "fork_merged_seq",
        BigInteger,
        nullable=True,
        comment=(
            "the fork's own seq when it was last merged into its origin: its state then is "
            "what the two agreed on, the base of the next merge (SPEC §10 merge). NULL = "
            "never merged (the next merge's base is fork_base_seq in the origin). Retention "
            "keeps every version of the fork this needs"
        ),
    ),
    Column(
        "fork_created_seq",
        BigInteger,
        nullable=True,
        comment=(
            "the fork's own seq when its making committed (its last copied version; 0 = "
            "it copied none), set only when the fork copied every unredacted memory of "
            "the origin's state at fork_base_seq (an unrestricted caller's fork): until "
            "one of them has a version after it, a forked memory equals its origin "
            "memory then, which lets a diff or merge of the two read only what changed "
            "(memfs.store.forkdiff). NULL = not a fork, a restricted caller's, or made "
            "before this column: both sides are read whole"
        ),
    ),
)
Index("ix_stores_forked_from", stores.c.forked_from)

blobs = Table(
    "blobs",
    metadata,
    Column(
        "key",
        String(32),
        primary_key=True,
        comment="content address: xxh3-128 of the bytes, 32 lowercase hex",
    ),
    Column("sha256", String(64), nullable=False, comment="lowercase hex SHA-256 of data"),
    Column("size_bytes", Integer, nullable=False, comment="len(data), ≤102,400"),
    Column("data", LargeBinary, nullable=False, comment="the UTF-8 content, exact bytes"),
    comment=(
        "Content-addressed, deduplicated bytes. Invariant: a row exists iff some "
        "memories.blob_key or versions.blob_key references it (no orphans, no dangling "
        "references); it is written in the same transaction as the reference."
    ),
)

memories = Table(
    "memories",
    metadata,
    Column("id", String(40), primary_key=True, comment="mem_… id; stable across renames"),
    Column(
        "store_id",
        String(40),
        ForeignKey("stores.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # A redacted tombstone's path is '/.redacted': its own is erased (SPEC §2, fsck
    # check_memory_states); its deleted version is born redacted (path NULL).
    Column("path", PathText, nullable=False, comment="SPEC §1 path; current path"),
    Column(
        "blob_key",
        String(32),
        ForeignKey("blobs.key"),
        nullable=True,
        comment=(
            "current content. Live: NOT NULL. Soft-deleted tombstone: NULL (restore takes the "
            "content of the newest content version, so redacting that version also makes "
            "the memory unrestorable). Redacted tombstone: the replacement text"
        ),
    ),
    Column(
        "content_sha256",
        String(64),
        nullable=False,
        comment="= blobs.sha256 of blob_key when blob_key is set; last known digest otherwise",
    ),
    Column("size_bytes", Integer, nullable=False, comment="= blobs.size_bytes likewise"),
    Column(
        "head_version_id",
        String(40),
        nullable=False,
        comment="versions.id of the newest version of this memory (the head version)",
    ),
    Column("metadata_json", Text, nullable=False, comment="JSON object str→str (extension)"),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
    Column(
        "origin_memory_id",
        String(40),
        nullable=True,
        comment=(
            "SPEC §10 fork: in a fork, the mem_… of the origin store this memory was "
            "forked from (diff and merge match the two by it); NULL = made in this store"
        ),
    ),
    Column(
        "deleted_at",
        String(32),
        nullable=True,
        comment="NULL = live; set = tombstone (soft-deleted or redacted)",
    ),
    Column(
        "delete_mode",
        String(16),
        nullable=True,
        comment="NULL when live; 'soft_delete' (restorable) or 'redact' (not restorable)",
    ),
    comment="One row per memory, live or tombstoned. Hard delete removes the row.",
)
# Unique live path per store: SPEC §1 "unique per store". Tombstones may share paths.
_partial_index(
    "ix_memories_live_path",
    memories.c.store_id,
    memories.c.path,
    where="deleted_at IS NULL",
    unique=True,
)
Index("ix_memories_blob", memories.c.blob_key)
# A fork's memories by the origin memory they copy (SPEC §10 diff and merge across a
# fork: the origin's changed memories find their fork counterparts by it). The origin
# first: led by store_id, SQLite would take it for every "memories of a store whose id
# is one of these" and read the whole store.
Index("ix_memories_origin", memories.c.origin_memory_id, memories.c.store_id)

versions = Table(
    "versions",
    metadata,
    Column(
        "seq",
        SeqInteger,
        primary_key=True,
        autoincrement=True,
        comment="global write order; newest-first listings sort by it",
    ),
    Column("id", String(40), nullable=False, unique=True, comment="memver_… id"),
    Column(
        "store_id",
        String(40),
        ForeignKey("stores.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("memory_id", String(40), nullable=False, comment="survives the memory's deletion"),
    Column("operation", String(16), nullable=False, comment="created | modified | deleted"),
    Column(
        "path",
        PathText,
        nullable=True,
        comment="path at the time of the write; NULL iff redacted_at is set",
    ),
    Column(
        "blob_key",
        String(32),
        ForeignKey("blobs.key"),
        nullable=True,
        comment="content; NULL for 'deleted' versions and after redaction",
    ),
    Column("content_sha256", String(64), nullable=True, comment="NULL iff blob_key is NULL"),
    Column("size_bytes", Integer, nullable=True, comment="NULL iff blob_key is NULL"),
    Column("created_at", String(32), nullable=False),
    Column(
        "actor_type",
        String(32),
        nullable=True,
        comment="session_actor | api_actor | user_actor | service_account_actor; NULL = unknown",
    ),
    Column("actor_id", String(64), nullable=True, comment="sesn_…, apikey_…, user_…, svac_…"),
    Column("reason", Text, nullable=True, comment="audited reason of a deletion, if given"),
    Column("redacted_at", String(32), nullable=True, comment="NULL = not redacted"),
    Column("redacted_by_type", String(32), nullable=True),
    Column("redacted_by_id", String(64), nullable=True),
    comment="Immutable snapshots; only redaction (and retention pruning) changes them.",
    # SPEC §10: a seq is never reused (a point "seq <= N" must not take in later
    # writes after the newest version was erased): AUTOINCREMENT on SQLite.
    sqlite_autoincrement=True,
)
Index("ix_versions_store_seq", versions.c.store_id, versions.c.seq)
# "The newest version of each memory at or before seq N" (SPEC §10 as-of reads): the
# state of a store at a point is read by id through ix_versions_memory_seq, and in path
# order through ix_versions_store_path_seq (a page of an as-of listing walks the paths
# from its cursor, as a listing now walks ix_memories_live_path: no replay of history).
# memory_id and operation ride along so that the versions a page passes over (older,
# deleted) are refused from the index without reading their rows: scripts/bench-asof
# measured 1.5x a listing now without them, 1.3x with.
Index("ix_versions_memory_seq", versions.c.memory_id, versions.c.seq)
Index(
    "ix_versions_store_path_seq",
    versions.c.store_id,
    versions.c.path,
    versions.c.seq,
    versions.c.memory_id,
    versions.c.operation,
)
Index("ix_versions_blob", versions.c.blob_key)

snapshots = Table(
    "snapshots",
    metadata,
    Column("id", String(40), primary_key=True, comment="snap_… id, time-sortable"),
    Column(
        "store_id",
        String(40),
        ForeignKey("stores.id", ondelete="CASCADE"),
        nullable=False,
        comment="the store it names a moment of; deleted with it",
    ),
    Column(
        "name",
        PathText,
        nullable=False,
        comment=(
            "unique per store; SPEC §1 path-segment rules and never read as another "
            "kind of point (memfs.core.points.validate_snapshot_name)"
        ),
    ),
    Column(
        "seq",
        BigInteger,
        nullable=False,
        comment=(
            "the point: the store's state is, per memory, its newest version with "
            "versions.seq <= this (SPEC §10); 0 = before the store's first version. "
            "Retention never prunes a version this needs (memfs.store.retention)"
        ),
    ),
    Column(
        "memory_version_id",
        String(40),
        nullable=True,
        comment="versions.id of the version whose seq is seq; NULL iff seq = 0",
    ),
    Column("description", Text, nullable=False, comment="≤1,024 chars; '' when unset"),
    Column("created_at", String(32), nullable=False),
    Column("actor_type", String(32), nullable=True, comment="who took it; NULL = unknown"),
    Column("actor_id", String(64), nullable=True),
    UniqueConstraint("store_id", "name", name="uq_snapshots_store_name"),
    comment=(
        "Named, read-only points of a store's history (SPEC §10), like ZFS snapshots: "
        "a name for one seq, copying nothing; never rewritten, only deleted."
    ),
)

changes = Table(
    "changes",
    metadata,
    Column("store_id", String(40), primary_key=True, comment="no FK: survives store deletion"),
    Column(
        "seq",
        BigInteger,
        primary_key=True,
        comment="1, 2, 3 … per store with no gaps; = stores.last_change_seq of the newest",
    ),
    Column(
        "kind",
        String(24),
        nullable=False,
        comment="memory_written | memory_deleted | version_redacted | store_*",
    ),
    Column("memory_id", String(40), nullable=True),
    Column("path", PathText, nullable=True, comment="path after the change"),
    Column("old_path", PathText, nullable=True, comment="path before a rename"),
    Column("blob_key", String(32), nullable=True, comment="blob_purged: the erased blob"),
    Column(
        "content_sha256",
        String(64),
        nullable=True,
        comment="memory_written: the new head's digest; blob_purged: the erased bytes' digest",
    ),
    Column(
        "memory_version_id",
        String(40),
        nullable=True,
        comment="memory_written: the memory's new head version",
    ),
    Column("created_at", String(32), nullable=False),
    comment="The change feed mounts follow to invalidate exactly what changed.",
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("seq", SeqInteger, primary_key=True, autoincrement=True),
    Column("store_id", String(40), nullable=False, comment="no FK: outlives hard deletes"),
    Column("memory_id", String(40), nullable=True),
    Column(
        "action",
        String(32),
        nullable=False,
        comment=(
            "soft_delete | redact | hard_delete | restore | redact_version | "
            "prune_versions | snapshot_create | snapshot_delete | store_restore | store_*"
        ),
    ),
    Column("reason", Text, nullable=True),
    Column("actor_type", String(32), nullable=True),
    Column("actor_id", String(64), nullable=True),
    Column("created_at", String(32), nullable=False),
    Column(
        "metadata_json",
        Text,
        nullable=True,
        comment=(
            "JSON object str→str given with the request (seed 004 forget/restore "
            "metadata; SPEC §1 metadata rules), or facts of a prune; NULL = none"
        ),
    ),
    comment="Who deleted, redacted or restored what, and why (SPEC §2 'audited').",
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(40), primary_key=True, comment="sesn_… id"),
    Column("title", Text, nullable=True),
    Column(
        "token_hash",
        String(64),
        nullable=True,
        unique=True,
        comment="SHA-256 hex of the session token; NULL for embedded mounts (no token)",
    ),
    Column("created_at", String(32), nullable=False),
    Column(
        "expires_at",
        String(32),
        nullable=True,
        comment=(
            "when the token stops working: created_at + ttl, at most 30 days later (SPEC §3). "
            "NULL iff token_hash is NULL (a session without a token has nothing to expire)"
        ),
    ),
    Column(
        "revoked_at",
        String(32),
        nullable=True,
        comment="NULL = not revoked; set by revoke_session or when api_key_id is revoked",
    ),
    Column(
        "archived_at",
        String(32),
        nullable=True,
        comment="NULL = not archived; an archived session is ended: its token is refused",
    ),
    Column(
        "layout",
        String(16),
        nullable=True,
        comment="'flat' (SPEC §4: every resource at the mount root); NULL = per-store",
    ),
    Column(
        "api_key_id",
        String(40),
        nullable=True,
        comment=(
            "the apikey_… that created the session (no FK: keys are revoked, never deleted); "
            "NULL = created locally (CLI, embedded mount). Invariant: a session whose key is "
            "revoked is revoked"
        ),
    ),
    Column(
        "principal_user_id",
        String(128),
        nullable=True,
        comment="the user it speaks for (SPEC §6 visibility); NULL = no principal; immutable",
    ),
    Column(
        "principal_roles_json",
        Text,
        nullable=True,
        comment="JSON list of the principal's roles, sorted; NULL iff principal_user_id is NULL",
    ),
)
Index("ix_sessions_api_key", sessions.c.api_key_id)

identity_mounts = Table(
    "identity_mounts",
    metadata,
    Column("identity_id", String(80), primary_key=True, comment="idn_…, chosen by the caller"),
    Column("template_id", String(80), primary_key=True, comment="tmpl_…, chosen by the caller"),
    Column(
        "store_id",
        String(40),
        ForeignKey("stores.id", ondelete="CASCADE"),
        primary_key=True,
        comment="the mounted store; a store is mounted on a pair at most once",
    ),
    Column(
        "access",
        String(16),
        nullable=False,
        comment="read_write for the default store, read_only for every explicit mount",
    ),
    Column(
        "system_managed",
        Boolean,
        nullable=False,
        comment="true for the pair's default store (at most one per pair), false otherwise",
    ),
    Column("created_at", String(32), nullable=False, comment="orders the explicit mounts"),
    comment=(
        "SPEC §8 mounts of stores on (identity, template) pairs, owned by "
        "memfs/store/identities.py. Invariants: at most one system_managed row per pair "
        "(the unique index below: two requests racing to create a pair's default store "
        "can't both win); at most 10 rows that are not; a system_managed row's store has "
        "this identity_id and template_id."
    ),
)
# Exactly one default store per pair, even when two requests race (SPEC §8).
_partial_index(
    "ix_identity_mounts_default",
    identity_mounts.c.identity_id,
    identity_mounts.c.template_id,
    where="system_managed",
    unique=True,
)
Index("ix_identity_mounts_store", identity_mounts.c.store_id)

session_resources = Table(
    "session_resources",
    metadata,
    Column(
        "session_id",
        String(40),
        ForeignKey("sessions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("position", Integer, primary_key=True, comment="attachment order, 0-based"),
    Column("store_id", String(40), nullable=False, comment="no FK: snapshot survives deletion"),
    Column("access", String(16), nullable=False, comment="read_write | read_only"),
    Column("instructions", Text, nullable=True, comment="≤4,096 chars"),
    Column("name", Text, nullable=False, comment="store name snapshotted at attach time"),
    Column("description", Text, nullable=False, comment="snapshotted at attach time"),
    Column(
        "mount_path",
        Text,
        nullable=False,
        comment="e.g. /mnt/memory/user-preferences; the mount root itself in the flat layout",
    ),
    UniqueConstraint("session_id", "store_id", name="uq_session_store"),
)
Index("ix_session_resources_store", session_resources.c.store_id)

session_events = Table(
    "session_events",
    metadata,
    Column("id", String(40), primary_key=True, comment="sevt_… id"),
    Column(
        "session_id",
        String(40),
        ForeignKey("sessions.id", ondelete="CASCADE"),
        nullable=False,
        comment="the session whose transcript holds it; deleting the session erases it",
    ),
    Column(
        "seq",
        Integer,
        nullable=False,
        comment="1, 2, … within the session, gap-free, in the order memfs stored them",
    ),
    Column("type", String(64), nullable=False, comment="the SDK's event type, e.g. user.message"),
    Column(
        "body_json",
        Text,
        nullable=False,
        comment="the event's other fields as sent (content, …), JSON; never id/type/processed_at",
    ),
    Column("processed_at", String(32), nullable=False, comment="when memfs stored it"),
    UniqueConstraint("session_id", "seq", name="uq_session_events_seq"),
    comment=(
        "SPEC §11 transcripts: a session's events (POST /v1/sessions/{id}/events, memfs "
        "transcript import, a dream's own session), owned by memfs/store/transcripts.py. "
        "Invariant: seq runs 1..n without gaps per session."
    ),
)

dreams = Table(
    "dreams",
    metadata,
    Column("id", String(40), primary_key=True, comment="drm_… id"),
    Column(
        "status",
        String(16),
        nullable=False,
        comment="pending | running | completed | failed | canceled (the last three final)",
    ),
    Column(
        "input_store_id",
        String(40),
        nullable=False,
        comment="the store it reads (no FK: a dream outlives a deleted store as a record)",
    ),
    Column(
        "session_ids_json",
        Text,
        nullable=True,
        comment="JSON sorted list of the sessions whose transcripts it reads; NULL = none given",
    ),
    Column("model_id", Text, nullable=False, comment="1..256 chars; memfs-consolidate or a model"),
    Column("model_speed", String(16), nullable=False, comment="always standard"),
    Column("instructions", Text, nullable=True, comment="1..4,096 chars; NULL = none"),
    Column(
        "output_behavior",
        String(16),
        nullable=False,
        comment="create_new (a fork of the input) | update_existing (the input itself)",
    ),
    Column(
        "output_store_id",
        String(40),
        nullable=True,
        comment="the store holding the result, once it exists; the input for update_existing",
    ),
    Column(
        "session_id",
        String(40),
        nullable=True,
        comment="the dream's own session (no FK): every version it writes names it",
    ),
    Column("error_type", String(64), nullable=True, comment="NULL unless status = failed"),
    Column("error_message", Text, nullable=True, comment="NULL iff error_type is NULL"),
    Column(
        "usage_json",
        Text,
        nullable=False,
        comment="JSON {input_tokens, output_tokens, cache_creation_input_tokens, "
        "cache_read_input_tokens}",
    ),
    Column("result_json", Text, nullable=True, comment="what it did (JSON); NULL until it ends"),
    Column("created_at", String(32), nullable=False),
    Column("started_at", String(32), nullable=True, comment="NULL while pending"),
    Column("ended_at", String(32), nullable=True, comment="NULL iff status is not final"),
    Column("archived_at", String(32), nullable=True, comment="NULL = not archived"),
    Column(
        "heartbeat_at",
        String(32),
        nullable=True,
        comment="when its job last said it was alive; a running dream whose heartbeat is "
        "older than DREAM_STALE_S has lost its job and is marked failed",
    ),
    Column("runner_id", String(64), nullable=True, comment="the job runner that claimed it"),
    Column(
        "created_by",
        String(40),
        nullable=True,
        comment="the apikey_… that created it; NULL = local (CLI)",
    ),
    Column(
        "viewer_json",
        Text,
        nullable=True,
        comment="whose view of records it has (SPEC §6, §11), its creator's: JSON "
        "{user_id (null: no principal), roles (sorted)}; NULL = unrestricted (admin, local)",
    ),
    comment=(
        "SPEC §11 dreams, owned by memfs/store/dreams.py. Invariants: at most one pending "
        "or running dream per input store (the unique index below); ended_at is set iff "
        "the status is final; error_type iff failed."
    ),
)
# One active dream per input store, even when two requests race (SPEC §11: 409).
_partial_index(
    "ix_dreams_active_input",
    dreams.c.input_store_id,
    where="status IN ('pending', 'running')",
    unique=True,
)
Index("ix_dreams_created", dreams.c.created_at, dreams.c.id)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(40), primary_key=True, comment="apikey_… id (recorded as api_actor)"),
    Column("name", Text, nullable=False),
    Column(
        "secret_hash",
        String(64),
        nullable=False,
        unique=True,
        comment="SHA-256 hex of the secret; the secret itself is never stored",
    ),
    Column("scopes_json", Text, nullable=False, comment="JSON list of scope strings"),
    Column("store_ids_json", Text, nullable=False, comment="JSON list; [] = all stores"),
    Column("created_at", String(32), nullable=False),
    Column("revoked_at", String(32), nullable=True, comment="NULL = active"),
    Column(
        "principal_user_id",
        String(128),
        nullable=True,
        comment="the user it speaks for (SPEC §6 visibility); NULL = no principal; immutable",
    ),
    Column(
        "principal_roles_json",
        Text,
        nullable=True,
        comment="JSON list of the principal's roles, sorted; NULL iff principal_user_id is NULL",
    ),
)

console_sign_ins = Table(
    "console_sign_ins",
    metadata,
    Column(
        "id_hash",
        String(64),
        primary_key=True,
        comment=(
            "SHA-256 hex of the random sign-in id the browser's cookie holds; the id itself "
            "is never stored (a copy of this table signs nobody in)"
        ),
    ),
    Column(
        "api_key_id",
        String(40),
        nullable=True,
        comment=(
            "the apikey_… signed in with (no FK: keys are revoked, never deleted); exactly "
            "one of api_key_id and session_id is set"
        ),
    ),
    Column(
        "session_id",
        String(40),
        nullable=True,
        comment=(
            "the sesn_… whose token signed in (no FK: a deleted session ends the sign-in at "
            "its next request, which finds no session)"
        ),
    ),
    Column("created_at", String(32), nullable=False),
    Column(
        "expires_at",
        String(32),
        nullable=False,
        comment=(
            "when the sign-in ends, after created_at (CONSOLE_SIGN_IN_TTL_S at most, never "
            "past its session token's own expiry); expired rows are deleted at sign-ins"
        ),
    ),
    comment=(
        "SPEC §12 console sign-ins, owned by memfs/store/sign_ins.py. The credential is "
        "checked again at every request, so revoking it ends the sign-in at once."
    ),
)
Index("ix_console_sign_ins_expires", console_sign_ins.c.expires_at)

search_docs = Table(
    "search_docs",
    metadata,
    Column(
        "doc_id",
        SeqInteger,
        primary_key=True,
        autoincrement=True,
        comment="the FTS5 rowid of this document (SQLite external-content tables)",
    ),
    Column(
        "memory_id",
        String(40),
        nullable=False,
        unique=True,
        comment="the live memory indexed; one document per live memory, none otherwise",
    ),
    Column("store_id", String(40), nullable=False, comment="= memories.store_id"),
    Column("path", PathText, nullable=False, comment="= memories.path (the current path)"),
    Column(
        "body",
        Text,
        nullable=False,
        comment=(
            "= the head content as text, once the indexer has taken the memory's "
            "search_pending row (a query takes them first, so a search never lags a "
            "head committed before it began); erased with the head in the transaction "
            "of a redaction, hard delete or store deletion"
        ),
    ),
    comment=(
        "The full-text search documents (SPEC §7), maintained by memfs/store/search.py: "
        "exactly the live memories, with their current path and content, except the "
        "memories search_pending holds (fsck checks it). Indexed beside it, per "
        "dialect: SQLite FTS5 tables search_fts_words "
        "(unicode61) and search_fts_trigram (trigram, for text without spaces), both "
        "external-content over this table; PostgreSQL a GIN tsvector index and a "
        "pg_trgm GIN index on body."
    ),
)
Index("ix_search_docs_store_path", search_docs.c.store_id, search_docs.c.path)

search_pending = Table(
    "search_pending",
    metadata,
    Column(
        "memory_id",
        String(40),
        primary_key=True,
        comment="a memory whose search document may not be its head yet (new content, "
        "a new path, a soft delete or restore); the memory row exists (fsck)",
    ),
    Column(
        "queued_at",
        Float,
        nullable=False,
        comment="Unix seconds of the oldest write not indexed yet (the index lag shown)",
    ),
    comment=(
        "The full-text index's durable queue (SPEC §7): one row, written in the "
        "transaction of each write that changes a live memory's head, path or "
        "liveness; memfs/store/indexer.py indexes the memory's head then and removes "
        "the row in a transaction of its own, and every search does so first for the "
        "rows it finds. A redaction, hard delete or store deletion removes the row and "
        "the document in its own transaction instead."
    ),
    sqlite_with_rowid=False,  # one b-tree: the row is the key
)

search_queue = Table(
    "search_queue",
    metadata,
    Column("memory_id", String(40), primary_key=True, comment="a live memory to (re)embed"),
    Column(
        "content_sha256",
        String(64),
        nullable=False,
        comment="the content to embed (= its search document's); the embedder removes the "
        "row only while it still names the content it embedded",
    ),
    Column("queued_at", Float, nullable=False, comment="Unix seconds (the lag shown)"),
    comment=(
        "Semantic search's durable queue (SPEC §7), written by memfs/store/search.py "
        "where it writes a memory's new document (the full-text indexer's transaction); "
        "drained by the embedder (Engine.start_embedder). Rows are removed with their "
        "memory's document (deletion, redaction)."
    ),
)
Index("ix_search_queue_queued_at", search_queue.c.queued_at)

search_vectors = Table(
    "search_vectors",
    metadata,
    Column(
        "vec_id",
        SeqInteger,
        primary_key=True,
        autoincrement=True,
        comment="grows with every vector written (a new vector is a new row), so "
        "(count, max) tells a cached matrix it is stale",
    ),
    Column("memory_id", String(40), nullable=False, unique=True, comment="a live memory"),
    Column("store_id", String(40), nullable=False, comment="= memories.store_id"),
    Column("model", String(16), nullable=False, comment="the embedding model's fingerprint"),
    Column("content_sha256", String(64), nullable=False, comment="the content embedded"),
    Column(
        "vector",
        LargeBinary,
        nullable=False,
        comment="float32 little-endian unit vector (sqlite-vec's float32 BLOB format)",
    ),
    comment=(
        "Semantic search vectors (SPEC §7), one per live memory whose current content "
        "is embedded; removed with the memory's document (deletion, redaction) and "
        "when its content changes."
    ),
)
# A query's staleness check, count(*) and max(vec_id) of one model, reads this index
# only, not the vectors' pages (a full scan of them was 26 ms at 10,000 memories).
Index("ix_search_vectors_model", search_vectors.c.model, search_vectors.c.vec_id)

# ------------------------------------------------------------------ records (SPEC §6)
# The record index, maintained by memfs/store/records.py in the transaction of every
# write that changes a live memory's head content (create, update, restore) or ends it
# (soft delete, redaction, hard delete, store deletion): exactly the live memories whose
# head content is a record (memfs/records.py), fsck checks it. Derived data only: the
# content itself (the header included) is the blob, byte for byte.

records = Table(
    "records",
    metadata,
    Column("memory_id", String(40), primary_key=True, comment="the live memory (mem_…)"),
    Column("store_id", String(40), nullable=False, comment="= memories.store_id"),
    Column(
        "type",
        String(16),
        nullable=False,
        comment="episodic | semantic | procedural | preference | profile",
    ),
    Column(
        "scope",
        String(16),
        nullable=False,
        comment="private | share | public; 'private' when the header names none",
    ),
    Column("importance", Float, nullable=True, comment="0–1; NULL = not stated"),
    Column("confidence", Float, nullable=True, comment="0–1; NULL = not stated"),
    Column("source", String(32), nullable=True, comment="explicit_user_input | …; NULL = none"),
    Column("summary", Text, nullable=True, comment="≤1,024 chars; NULL = none"),
    Column("structured_json", Text, nullable=True, comment="JSON of `structured`; NULL = none"),
    Column("user_id", Text, nullable=True, comment="1–128 chars; NULL = none"),
    Column("agent_id", Text, nullable=True),
    Column("tenant_id", Text, nullable=True),
    Column(
        "last_accessed",
        String(32),
        nullable=False,
        comment=(
            "when the record was last read (SPEC §6), written without a version by the "
            "engine's batched access log; the write time of the first indexing until then. "
            "Kept when the record is rewritten"
        ),
    ),
    comment="One row per live memory whose head content is a record (SPEC §6).",
)
Index("ix_records_store_type", records.c.store_id, records.c.type)
Index("ix_records_user", records.c.store_id, records.c.user_id)

record_tags = Table(
    "record_tags",
    metadata,
    Column("memory_id", String(40), primary_key=True, comment="= records.memory_id"),
    Column("tag", Text, primary_key=True, comment="one tag of the header (deduplicated)"),
    Column("store_id", String(40), nullable=False, comment="= records.store_id"),
    comment="The tags of each record; rows exist iff their record does.",
)
Index("ix_record_tags_tag", record_tags.c.store_id, record_tags.c.tag)

record_relations = Table(
    "record_relations",
    metadata,
    Column("memory_id", String(40), primary_key=True, comment="the record that relates"),
    Column("position", Integer, primary_key=True, comment="index in its `relations` list"),
    Column("store_id", String(40), nullable=False, comment="= records.store_id"),
    Column(
        "type",
        String(16),
        nullable=False,
        comment="related_to | derived_from | contradicts | supersedes",
    ),
    Column("target_text", PathText, nullable=False, comment="the target as written"),
    Column(
        "target_memory_id",
        String(40),
        nullable=True,
        comment=(
            "the memory the target resolved to: the mem_ id written, or the live memory at "
            "the path written when the record was indexed (or when a memory later came "
            "to that path). NULL = unresolved. By id, so renaming the target keeps it; a "
            "target that is not live is dangling (fsck --records reports it)"
        ),
    ),
    comment="The relations of each record; rows exist iff their record does.",
)
Index("ix_record_relations_target", record_relations.c.target_memory_id)
Index("ix_record_relations_text", record_relations.c.store_id, record_relations.c.target_text)

record_grants = Table(
    "record_grants",
    metadata,
    Column("memory_id", String(40), primary_key=True, comment="= records.memory_id"),
    Column("kind", String(8), primary_key=True, comment="'user' (allowed_users) | 'role'"),
    Column("principal", Text, primary_key=True, comment="the user id or role name"),
    Column("store_id", String(40), nullable=False, comment="= records.store_id"),
    comment=(
        "allowed_users and allowed_roles of each record (SPEC §6 visibility: who may see "
        "a private record besides its user_id); rows exist iff their record does."
    ),
)
Index("ix_record_grants_principal", record_grants.c.kind, record_grants.c.principal)

# Every table whose rows hold memory content or paths, or data derived from content
# (the full-text documents and their indexes, the embeddings, the record index): the
# rows a redaction, hard delete, store deletion or version prune updates or deletes
# (SPEC §2: erased). On PostgreSQL their old row versions stay in the table's and its
# indexes' files until VACUUM FULL rewrites them (Engine.vacuum_erased; README,
# "Redaction on PostgreSQL"). Not here: stores, sessions, keys and the audit log, which
# an erasure leaves alone; search_queue and search_pending, which hold only ids.
ERASED_FROM = (
    blobs,
    memories,
    versions,
    changes,
    search_docs,
    search_vectors,
    records,
    record_tags,
    record_relations,
    record_grants,
    session_events,
)
