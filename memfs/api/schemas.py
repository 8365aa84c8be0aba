"""Wire schemas: request bodies (validated) and response shapes (documented).

Request models follow api-contract §5 field for field. They are strict (no coercion:
``"name": 5`` is a 400, not ``"5"``) and refuse unknown fields, so a typo never passes
silently; the SPEC §1 value rules (path, content, metadata limits, name length) are
checked by :mod:`memfs.core.rules` inside the engine, which names the broken rule.

Response models only document the objects :mod:`memfs.wire` produces (the routes return
those dicts directly), so ``/openapi.json`` describes what the server really sends;
schemathesis checks that in ``tests/api``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    WithJsonSchema,
    model_validator,
)

from memfs.core.config import (
    DEFAULT_PAIR_MOUNT_ROOT,
    MAX_SESSION_TTL_S,
    MAX_STORES_PER_SESSION,
    MAX_VERSION_RETENTION_S,
)
from memfs.core.model import MAX_PRINCIPAL_ROLES, MAX_PRINCIPAL_TEXT_CHARS

__all__ = [
    "ChangeOut",
    "ChangePage",
    "DeletedObject",
    "ErrorEnvelope",
    "IDENTITY_ID_PATTERN",
    "IdentityMountCreate",
    "IdentityMountDeleted",
    "IdentityMountList",
    "IdentityMountOut",
    "TEMPLATE_ID_PATTERN",
    "RECORD_NAME_PATTERN",
    "MemoryCreate",
    "MemoryForget",
    "MemoryList",
    "MemoryOut",
    "MemoryPage",
    "MemoryRestore",
    "MemoryStoreCreate",
    "MemoryStoreOut",
    "MemoryStorePage",
    "RecordTypeName",
    "MemoryStoreUpdate",
    "MemoryUpdate",
    "MemoryVersionOut",
    "MemoryVersionPage",
    "Precondition",
    "RenamePrefix",
    "SearchHitOut",
    "SearchRequest",
    "SearchResults",
    "DeletedSession",
    "PrincipalOut",
    "PrincipalParam",
    "SessionCreate",
    "SessionOut",
    "SessionPage",
]

SHA256_PATTERN = r"^[0-9a-f]{64}$"
Sha256 = Annotated[str, Field(pattern=SHA256_PATTERN, description="64 lowercase hex digits")]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]

# The SPEC §1 value rules as /openapi.json states them. The server checks with
# memfs.core.rules, which names the broken rule, so these are documentation, not the check;
# they must describe exactly what the server accepts (schemathesis tries both sides in
# tests/api/test_schemathesis.py). What JSON Schema can't state is said in the
# descriptions: limits are in UTF-8 bytes where these count characters, path segments
# must be in Unicode NFC and hold no format character (category Cf).
_FORBIDDEN = r"/\\\x00-\x1f\x7f-\x9f\u2028\u2029"  # slash, backslash, controls
_EDGE = rf"[^{_FORBIDDEN}\s]"  # a segment's first or last character: no whitespace
_INNER = rf"[^{_FORBIDDEN}]"
# One segment of 1 to 255 characters without leading or trailing whitespace, neither
# "." nor ".." (JSON Schema has no lookahead: the first character decides).
_SEGMENT = (
    rf"(?:[^{_FORBIDDEN}\s.](?:{_INNER}{{0,253}}{_EDGE})?"
    rf"|\.(?:[^{_FORBIDDEN}\s.]|[^{_FORBIDDEN}.]{_INNER}{{0,252}}{_EDGE}|\.{_INNER}{{0,252}}{_EDGE}))"
)
_PATH_SCHEMA: dict[str, JsonValue] = {
    "pattern": rf"^(?:/{_SEGMENT}){{1,20}}$",
    "maxLength": 1024,
}
_PREFIX_SCHEMA: dict[str, JsonValue] = {"pattern": rf"^(?:/{_SEGMENT}){{1,20}}/$"}
LISTING_PREFIX_PATTERN = rf"^(?:/{_SEGMENT}){{0,20}}/$"
# The record filters (SPEC §6): a record type; a tag (1–64) or user id (1–128) without
# control characters, as the header rules say (memfs/records.py).
RecordTypeName = Literal["episodic", "semantic", "procedural", "preference", "profile"]
RECORD_NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"
_CONTENT_SCHEMA: dict[str, JsonValue] = {
    "pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$",
    "maxLength": 102_400,
}
_NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"
_NO_NUL = r"^[^\x00]*$"
_NAME_SCHEMA: dict[str, JsonValue] = {"minLength": 1, "maxLength": 255, "pattern": _NO_CONTROL}
StoreName = Annotated[
    str,
    WithJsonSchema({"type": "string", **_NAME_SCHEMA}),
    Field(description="1 to 255 characters, no control characters."),
]
StoreDescription = Annotated[
    str,
    WithJsonSchema({"type": "string", "maxLength": 1024, "pattern": _NO_NUL}),
    Field(description="Up to 1,024 characters."),
]
_METADATA_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "maxProperties": 16,
    "propertyNames": {"minLength": 1, "maxLength": 64, "pattern": _NO_NUL},
    "additionalProperties": {"type": "string", "maxLength": 512, "pattern": _NO_NUL},
}
Metadata = Annotated[
    dict[str, str],
    WithJsonSchema(_METADATA_SCHEMA),
    Field(description="At most 16 pairs; keys 1–64 characters, values at most 512."),
]
# A patch: a null value removes its key; the store keeps at most 16 keys after it.
MetadataPatch = Annotated[
    dict[str, str | None],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": _METADATA_SCHEMA["propertyNames"],
            "additionalProperties": {
                "anyOf": [_METADATA_SCHEMA["additionalProperties"], {"type": "null"}]
            },
        }
    ),
]


NUL_MESSAGE = "strings can't contain the NUL character (U+0000)"


def contains_nul(value: object) -> bool:
    """True when a string anywhere in ``value`` (JSON data) holds U+0000."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(v) for v in value)
    return False


class _NoNul(BaseModel):
    """Refuses U+0000 in any string of the body: no field may hold it (SPEC §1 forbids
    control characters in paths, content and names), and PostgreSQL text can't store it,
    so the engine must never see one."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_nul(cls, data: Any) -> Any:
        if contains_nul(data):
            raise ValueError(NUL_MESSAGE)
        return data


class _Request(_NoNul):
    model_config = ConfigDict(strict=True, extra="forbid")


# ------------------------------------------------------------------ requests


def _integral_number(value: object) -> object:
    """A JSON number with no fraction (``86400.0``) is the integer JSON Schema says it
    is; strict validation would refuse it as a float."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A JSON Schema integer in a strict body: ``86400`` or ``86400.0``, never ``"86400"``.
WholeNumber = Annotated[int, BeforeValidator(_integral_number)]
# SPEC §2 retention on the wire (memfs extension): seconds; 0 keeps versions forever.
# (The bounds come first: after the validator they would not reach the JSON Schema.)
VersionRetention = Annotated[
    int, Field(ge=0, le=MAX_VERSION_RETENTION_S), BeforeValidator(_integral_number)
]


class MemoryStoreCreate(_Request):
    """api-contract §5.1, plus ``version_retention_seconds`` (memfs extension)."""

    name: StoreName
    description: StoreDescription | None = None
    metadata: Metadata | None = None
    version_retention_seconds: VersionRetention | None = Field(
        default=None,
        description="SPEC §2 retention: versions older than this many seconds may be "
        "pruned (never a live memory's head, nor what a restore needs); null or 0 keeps "
        "every version forever (the default).",
    )


class MemoryStoreUpdate(_Request):
    """api-contract §5.3: a patch; a top-level ``null`` means "no change"."""

    name: StoreName | None = None
    description: StoreDescription | None = None
    metadata: MetadataPatch | None = Field(
        default=None, description="A string adds or replaces a key; null removes it."
    )
    version_retention_seconds: VersionRetention | None = Field(
        default=None,
        description="memfs extension (SPEC §2 retention): the new period in seconds; 0 "
        "keeps every version forever; null leaves it unchanged.",
    )


class Precondition(_Request):
    """api-contract §4.8."""

    type: Literal["content_sha256"]
    # Typed nullable so that a null gets the route's precise error; documented as what
    # it must be: a digest (api-contract §4.8).
    content_sha256: Annotated[
        Sha256 | None,
        WithJsonSchema({"type": "string", "pattern": SHA256_PATTERN}),
        Field(description="64 lowercase hex digits: the head's digest the update expects."),
    ]


class MemoryCreate(_Request):
    """api-contract §5.7; ``content`` is required (``""`` makes an empty memory).

    ``metadata`` is the memfs extension of SPEC §1.
    """

    path: str = Field(
        description="Absolute memory path, e.g. /projects/foo/notes.md.",
        json_schema_extra=_PATH_SCHEMA,
    )
    # Typed nullable like the SDK's, so that null gets the precise error of the route;
    # documented as what it must be: a string.
    content: Annotated[str | None, WithJsonSchema({"type": "string", **_CONTENT_SCHEMA})] = Field(
        description="UTF-8 text, at most 102,400 bytes; null is refused."
    )
    metadata: Metadata | None = None


class MemoryUpdate(_Request):
    """api-contract §5.9; ``null`` for ``content`` or ``path`` means unchanged.

    ``metadata`` and ``replace`` are memfs extensions.
    """

    content: Annotated[str, WithJsonSchema({"type": "string", **_CONTENT_SCHEMA})] | None = None
    path: Annotated[str, WithJsonSchema({"type": "string", **_PATH_SCHEMA})] | None = None
    precondition: Precondition | None = None
    metadata: Metadata | None = Field(
        default=None, description="memfs extension: replaces the memory's metadata."
    )
    replace: bool = Field(
        default=False,
        description=(
            "memfs extension: with a new path, a live memory already at that path is "
            "soft-deleted in the same transaction (rename(2) over an existing file); "
            "otherwise an occupied path is a 409 memory_path_conflict_error."
        ),
    )


class RenamePrefix(_Request):
    """Body of ``POST …/memories/rename_prefix`` (directory rename, SPEC §4)."""

    old_prefix: str = Field(
        description="The directory to move: starts and ends with '/', not '/' itself.",
        json_schema_extra=_PREFIX_SCHEMA,
    )
    new_prefix: str = Field(
        description="Where it goes: starts and ends with '/', not '/', not inside old_prefix.",
        json_schema_extra=_PREFIX_SCHEMA,
    )


class MemoryForget(_Request):
    """Body of ``POST …/memories/{id}/forget`` (SPEC §2 deletion modes).

    Every field may also be given as a query parameter of the same name (as on
    ``DELETE``); a field given both ways must have the same value. ``mode`` defaults to
    ``redact``: forgetting is the user wanting the content gone, not restorable.
    Unknown fields are refused (400).
    """

    # replacement_content belongs to a redaction: with another mode it is refused.
    model_config = ConfigDict(
        json_schema_extra={
            "if": {
                "properties": {"mode": {"enum": ["soft_delete", "hard_delete"]}},
                "required": ["mode"],
            },
            "then": {"properties": {"replacement_content": {"type": "null"}}},
        }
    )

    mode: Literal["soft_delete", "redact", "hard_delete"] | None = Field(
        default=None,
        description="redact (default: content replaced, history redacted, not restorable), "
        "soft_delete (restorable) or hard_delete (erased; needs memory:hard_delete).",
    )
    reason: str | None = Field(default=None, description="Recorded in the audit trail.")
    replacement_content: str | None = Field(
        default=None, description="mode=redact only: the tombstone's text ([REDACTED] by default)."
    )
    expected_content_sha256: Sha256 | None = None
    metadata: Metadata | None = Field(
        default=None,
        description="Kept with the audit event (seed 004 MemoryForgetRequest); the "
        "memory's own metadata is not changed by it.",
    )


class MemoryRestore(_Request):
    """Body of ``POST …/memories/{id}/restore`` (SPEC §2, seed 004 MemoryRestoreRequest)."""

    reason: str | None = Field(default=None, description="Recorded in the audit trail.")
    metadata: Metadata | None = Field(
        default=None, description="Kept with the audit event (seed 004)."
    )


class SessionResourceParam(_Request):
    """api-contract §7.1 ``BetaManagedAgentsMemoryStoreResourceParam``."""

    type: Literal["memory_store"]
    memory_store_id: str
    access: Literal["read_write", "read_only"] | None = None
    instructions: (
        Annotated[str, WithJsonSchema({"type": "string", "maxLength": 4096, "pattern": _NO_NUL})]
        | None
    ) = Field(default=None, description="At most 4,096 characters.")


class IdentityMountCreate(_Request):
    """Body of mounting a store on a pair (SPEC §8): explicit mounts are read-only."""

    memory_store_id: str
    access: Literal["read_only"] | None = Field(
        default=None, description="Always read_only (the default store is the only writable)."
    )


class SearchRequest(_Request):
    """``POST /v1/search`` (memfs extension, SPEC §7): full-text search over several
    stores; the query language is documented in the README (memfs/query.py)."""

    query: str = Field(
        description='Words, "phrases", prefix*, -excluded; every term must match.',
        min_length=1,
        max_length=1000,
    )
    memory_store_ids: list[str] | None = Field(
        default=None,
        description="The stores to search (each readable by the caller); null or absent "
        "means every store the caller can read.",
        max_length=100,
    )
    path_prefix: str = Field(
        default="/",
        description="Only memories below this prefix.",
        json_schema_extra={"pattern": LISTING_PREFIX_PATTERN},
    )
    limit: int = Field(default=20, ge=1, le=100, description="At most this many hits.")
    semantic: bool = Field(
        default=False,
        description="By meaning only (as mode 'semantic'); 400 search_unavailable while "
        "no embedding model is configured.",
    )
    mode: Literal["auto", "text", "semantic", "hybrid"] = Field(
        default="auto",
        description="auto: hybrid (words and meaning fused) when the server has an "
        "embedding model, else text; semantic and hybrid need the model.",
    )
    record_type: RecordTypeName | None = Field(
        default=None, description="Only records of this type (SPEC §6 record header)."
    )
    tag: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=RECORD_NAME_PATTERN,
        description="Only records with this tag.",
    )
    min_importance: float | None = Field(
        default=None, ge=0, le=1, description="Only records of at least this importance."
    )


# SPEC §8: ids of (identity, template) pairs, chosen by the caller (memfs.core.rules).
IDENTITY_ID_PATTERN = r"^idn_[A-Za-z0-9_-]{1,64}$"
TEMPLATE_ID_PATTERN = r"^tmpl_[A-Za-z0-9_-]{1,64}$"
# An absolute directory of at most 1,000 characters without control characters.
MOUNT_ROOT_PATTERN = r"^/[^\x00-\x1f\x7f]{0,999}$"


PrincipalText = Annotated[
    str,
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": MAX_PRINCIPAL_TEXT_CHARS,
         "pattern": _NO_CONTROL}
    ),
    Field(description="1 to 128 characters, no control characters."),
]
PrincipalRoles = Annotated[
    list[PrincipalText],
    Field(max_length=MAX_PRINCIPAL_ROLES, description="At most 32 roles (needs a user_id)."),
]


class PrincipalParam(_Request):
    """memfs extension (SPEC §6 visibility): the user a new session speaks for."""

    user_id: PrincipalText
    roles: PrincipalRoles = Field(default_factory=list)


class SessionCreate(_NoNul):
    """Body of ``POST /v1/sessions``.

    Only ``resources`` of type ``memory_store`` (1 to 8), ``title`` and the memfs
    extensions below mean something to memfs. The other fields of the SDK's
    ``sessions.create`` (``agent``, ``environment_id``, ``metadata`` …) are accepted
    and ignored, so that the SDK call works unmodified.

    A session for an (identity, template) pair (SPEC §8, memfs extension) gives
    ``identity_id`` and ``template_id`` instead of ``resources``: memfs attaches the
    pair's default store (created if needed) ``read_write`` and every active explicit
    mount ``read_only`` (at most 1 + 10), in the ``flat`` layout at
    ``/data/.qoder/awareness`` unless ``mount_root`` says otherwise. Exactly one of
    ``resources`` and the pair must be given.
    """

    model_config = ConfigDict(strict=True, extra="ignore")

    resources: list[SessionResourceParam] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_STORES_PER_SESSION,
        description="The stores to attach; absent for an (identity, template) pair's session.",
    )
    identity_id: str | None = Field(
        default=None,
        description="memfs extension (SPEC §8): with template_id, a session for the pair.",
        json_schema_extra={"pattern": IDENTITY_ID_PATTERN},
    )
    template_id: str | None = Field(
        default=None,
        description="memfs extension (SPEC §8): with identity_id, a session for the pair.",
        json_schema_extra={"pattern": TEMPLATE_ID_PATTERN},
    )
    layout: Literal["per-store", "flat"] | None = Field(
        default=None,
        description=(
            "memfs extension (SPEC §4): how a mount lays the stores out; default "
            "per-store (flat for a pair's session, which is always flat). A flat session "
            "has at most one read_write store, its default."
        ),
    )
    mount_root: str | None = Field(
        default=None,
        description=(
            "memfs extension: where the resources are mounted (their mount_path); default "
            f"/mnt/memory, {DEFAULT_PAIR_MOUNT_ROOT} for a pair's session."
        ),
        pattern=MOUNT_ROOT_PATTERN,
    )
    title: str | None = None
    ttl_s: WholeNumber | None = Field(
        default=None,
        description=(
            "memfs extension: seconds until the token expires, 1 to 2,592,000 (30 days); "
            "default 86,400 (24 h)."
        ),
        json_schema_extra={"minimum": 1, "maximum": MAX_SESSION_TTL_S},
    )
    # memfs extension (issue 15, SPEC §6): the principal, either as one object or as
    # the two flat fields; a key with a principal hands its own when none is given.
    principal: PrincipalParam | None = None
    user_id: PrincipalText | None = None
    roles: PrincipalRoles | None = None


# ----------------------------------------------------------------- responses


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class BindingInfo(_Response):
    """SPEC §8: how many (identity, template) pairs mount the store."""

    identity_template_count: int


class MemoryStoreOut(_Response):
    """api-contract §4.1, plus the counters ``entry_count`` and ``total_size`` and the
    SPEC §8 extensions ``status``, ``system_managed``, ``identity_id``, ``binding_info``."""

    id: str
    type: Literal["memory_store"]
    name: str
    description: str
    metadata: dict[str, str]
    created_at: Timestamp
    updated_at: Timestamp
    archived_at: Timestamp | None
    entry_count: int
    total_size: int
    version_retention_seconds: int | None = Field(
        description="memfs extension (SPEC §2): null keeps every version forever."
    )
    status: Literal["active", "archived"]
    system_managed: bool
    identity_id: str | None
    binding_info: BindingInfo


class IdentityMountOut(_Response):
    """A store mounted on an (identity, template) pair (SPEC §8, memfs extension).
    ``access`` is ``read_write`` only for the pair's system-managed default store."""

    type: Literal["memory_store_mount"]
    memory_store_id: str
    identity_id: str
    template_id: str
    access: Literal["read_write", "read_only"]
    system_managed: bool
    name: str
    status: Literal["active", "archived"]
    entry_count: int
    created_at: Timestamp


class IdentityMountList(_Response):
    """A pair's mounts (the default first, then by creation time; at most 1 + 10) or a
    store's (oldest first); one page holds them all."""

    data: list[IdentityMountOut]
    next_page: None = None


class IdentityMountDeleted(_Response):
    """Answer of removing a mount."""

    type: Literal["memory_store_mount_deleted"]
    memory_store_id: str
    identity_id: str
    template_id: str


class DeletedObject(_Response):
    """api-contract §4.2 / §4.5 (``memory_store_deleted`` or ``memory_deleted``)."""

    id: str
    type: Literal["memory_store_deleted", "memory_deleted"]


class RecordRelationOut(_Response):
    """One relation of a record, resolved (SPEC §6)."""

    type: Literal["related_to", "derived_from", "contradicts", "supersedes"]
    target: str
    target_memory_id: str | None
    target_path: str | None
    dangling: bool


class RecordOut(_Response):
    """The ``record`` object of a memory whose header makes it a record (SPEC §6; a
    memfs extension the SDK ignores): the typed header fields, ``version`` (the
    memory's number of versions), ``last_accessed`` and ``decay_score``."""

    type: Literal["episodic", "semantic", "procedural", "preference", "profile"]
    scope: Literal["private", "share", "public"]
    importance: float | None
    confidence: float | None
    tags: list[str]
    source: str | None
    summary: str | None
    structured: dict[str, Any] | None
    user_id: str | None
    agent_id: str | None
    tenant_id: str | None
    relations: list[RecordRelationOut]
    allowed_users: list[str]
    allowed_roles: list[str]
    version: int
    last_accessed: Timestamp
    decay_score: float


class MemoryOut(_Response):
    """api-contract §4.3 (``content`` null unless ``view=full``); ``record`` (memfs
    extension, SPEC §6) only on memories that are records."""

    id: str
    type: Literal["memory"]
    memory_store_id: str
    memory_version_id: str
    path: str
    content: str | None
    content_sha256: str
    content_size_bytes: int
    created_at: Timestamp
    updated_at: Timestamp
    metadata: dict[str, str]
    status: Literal["active", "deleted"] = Field(
        description="memfs extension (seed 004): deleted for a soft-deleted memory, "
        "listed with include_deleted=true or status=deleted; restorable."
    )
    record: RecordOut | None = None


class MemoryPrefixOut(_Response):
    """api-contract §4.4."""

    type: Literal["memory_prefix"]
    path: str


class Actor(_Response):
    """api-contract §4.7 (one of the four id fields, by ``type``)."""

    type: Literal["session_actor", "api_actor", "user_actor", "service_account_actor"]
    session_id: str | None = None
    api_key_id: str | None = None
    user_id: str | None = None
    service_account_id: str | None = None


class MemoryVersionOut(_Response):
    """api-contract §4.6, plus ``reason`` (audited reason of a deletion)."""

    id: str
    type: Literal["memory_version"]
    memory_id: str
    memory_store_id: str
    operation: Literal["created", "modified", "deleted"]
    created_at: Timestamp
    content: str | None
    content_sha256: str | None
    content_size_bytes: int | None
    path: str | None
    created_by: Actor | None
    redacted_at: Timestamp | None
    redacted_by: Actor | None
    reason: str | None = None


class SearchHitOut(_Response):
    """One ranked hit (memfs extension, SPEC §7)."""

    type: Literal["search_hit"]
    memory_store_id: str
    memory_id: str
    path: str
    score: float = Field(description="Higher is better; comparable within one answer.")
    snippet: str = Field(description="Excerpt around the first match, matches in **…**.")


class SemanticIndexOut(_Response):
    """How far semantic search is behind the heads (memfs extension)."""

    model: str | None = Field(description="The embedding model's fingerprint; null: none.")
    pending: int = Field(description="Live memories waiting for their vector.")
    lag_seconds: float = Field(description="How long the oldest of them has waited.")


class SearchResults(_Response):
    """Hits best first (no pagination: ``limit`` bounds the answer)."""

    data: list[SearchHitOut]
    semantic_index: SemanticIndexOut


class MemoryStorePage(_Response):
    """api-contract §3: ``next_page`` is null on the last page."""

    data: list[MemoryStoreOut]
    next_page: str | None


class MemoryPage(_Response):
    data: list[Annotated[MemoryOut | MemoryPrefixOut, Field(discriminator="type")]]
    next_page: str | None


class MemoryList(_Response):
    """Memories answered in one piece (``next_page`` is always null)."""

    data: list[MemoryOut]
    next_page: None = None


class MemoryVersionPage(_Response):
    data: list[MemoryVersionOut]
    next_page: str | None


class PrincipalOut(_Response):
    """memfs extension (SPEC §6): the user a key or session speaks for."""

    user_id: str
    roles: list[str]


class SessionResourceOut(_Response):
    """api-contract §7.2."""

    type: Literal["memory_store"]
    memory_store_id: str
    access: Literal["read_write", "read_only"]
    instructions: str | None
    name: str
    description: str
    mount_path: str


class SessionOut(_Response):
    """A session; ``token`` only in the response that created it. Its token works until
    ``expires_at``, unless the session is revoked or archived first (SPEC §3)."""

    id: str
    type: Literal["session"]
    title: str | None
    created_at: Timestamp
    resources: list[SessionResourceOut]
    layout: Literal["per-store", "flat"]
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    archived_at: Timestamp | None
    token: str | None = None
    principal: PrincipalOut | None = None


class SessionPage(_Response):
    """Answer of ``GET /v1/sessions`` (the SDK's ``BidirectionalPageCursor``)."""

    data: list[SessionOut]
    next_page: str | None
    prev_page: None = None


class DeletedSession(_Response):
    """The SDK's ``BetaManagedAgentsDeletedSession``."""

    id: str
    type: Literal["session_deleted"]


class AuditEvent(_Response):
    """One audit-log entry (SPEC §2 "audited"); ``metadata`` is what the forget or
    restore request carried (seed 004), ``{}`` when none."""

    action: str
    memory_store_id: str
    memory_id: str | None
    reason: str | None
    metadata: dict[str, str]
    actor_type: str | None
    actor_id: str | None
    created_at: Timestamp


class AuditEventList(_Response):
    data: list[AuditEvent]
    next_page: None = None


class ChangeOut(_Response):
    """One entry of a store's change feed (issue 4; ``seq`` 1, 2, 3 … without gaps)."""

    type: Literal["memory_store_change"]
    seq: int
    memory_store_id: str
    kind: Literal[
        "memory_written",
        "memory_deleted",
        "version_redacted",
        "store_updated",
        "store_archived",
        "store_deleted",
        "blob_purged",
    ]
    memory_id: str | None
    path: str | None
    old_path: str | None = Field(description="Set when a memory_written entry is a rename.")
    content_sha256: str | None = Field(
        description="memory_written: the new head's digest; blob_purged: the erased bytes'."
    )
    memory_version_id: str | None = Field(description="memory_written: the new head version.")
    created_at: Timestamp


class ChangePage(_Response):
    """Answer of ``GET …/changes``: entries after ``after``, oldest first."""

    data: list[ChangeOut]
    last_seq: int = Field(description="The store's newest seq when the answer was made.")


class ErrorObject(_Response):
    """api-contract §2.1; ``conflicting_*`` on memory_path_conflict_error only,
    ``actual_content_sha256`` on memory_precondition_failed_error only."""

    type: str
    message: str
    details: dict[str, Any] | None = None
    conflicting_memory_id: str | None = None
    conflicting_path: str | None = None
    actual_content_sha256: str | None = None


class ErrorEnvelope(_Response):
    """api-contract §2.1."""

    type: Literal["error"]
    error: ErrorObject
    request_id: str | None = None
