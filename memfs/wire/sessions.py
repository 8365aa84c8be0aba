"""Sessions on the wire: the body of ``POST /v1/sessions`` (api-contract §7.1, with the
memfs extensions of SPEC §3, §4, §6 and §8) and the ``session`` object (§7.2)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, WithJsonSchema

from memfs.core.config import DEFAULT_PAIR_MOUNT_ROOT, MAX_SESSION_TTL_S, MAX_STORES_PER_SESSION
from memfs.core.model import MAX_PRINCIPAL_ROLES, MAX_PRINCIPAL_TEXT_CHARS
from memfs.wire.common import (
    NO_CONTROL,
    NO_NUL,
    NoNul,
    RequestBody,
    Timestamp,
    WholeNumber,
    WireObject,
)
from memfs.wire.identities import IDENTITY_ID_PATTERN, TEMPLATE_ID_PATTERN

__all__ = [
    "DeletedSession",
    "MOUNT_ROOT_PATTERN",
    "PrincipalOut",
    "PrincipalParam",
    "PrincipalRoles",
    "PrincipalText",
    "SessionCreate",
    "SessionOut",
    "SessionPage",
    "SessionResourceOut",
    "SessionResourceParam",
]


class SessionResourceParam(RequestBody):
    """api-contract §7.1 ``BetaManagedAgentsMemoryStoreResourceParam``."""

    type: Literal["memory_store"]
    memory_store_id: str
    access: Literal["read_write", "read_only"] | None = None
    instructions: (
        Annotated[str, WithJsonSchema({"type": "string", "maxLength": 4096, "pattern": NO_NUL})]
        | None
    ) = Field(default=None, description="At most 4,096 characters.")


# An absolute directory of at most 1,000 characters without control characters.
MOUNT_ROOT_PATTERN = r"^/[^\x00-\x1f\x7f]{0,999}$"
PrincipalText = Annotated[
    str,
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": MAX_PRINCIPAL_TEXT_CHARS,
         "pattern": NO_CONTROL}
    ),
    Field(description="1 to 128 characters, no control characters."),
]
PrincipalRoles = Annotated[
    list[PrincipalText],
    Field(max_length=MAX_PRINCIPAL_ROLES, description="At most 32 roles (needs a user_id)."),
]


class PrincipalParam(RequestBody):
    """memfs extension (SPEC §6 visibility): the user a new session speaks for."""

    user_id: PrincipalText
    roles: PrincipalRoles = Field(default_factory=list)


class SessionCreate(NoNul):
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
    # memfs extension (SPEC §6 visibility): the principal, either as one object or as
    # the two flat fields; a key with a principal hands its own when none is given.
    principal: PrincipalParam | None = None
    user_id: PrincipalText | None = None
    roles: PrincipalRoles | None = None


class PrincipalOut(WireObject):
    """memfs extension (SPEC §6): the user a key or session speaks for."""

    user_id: str
    roles: list[str]


class SessionResourceOut(WireObject):
    """api-contract §7.2."""

    type: Literal["memory_store"]
    memory_store_id: str
    access: Literal["read_write", "read_only"]
    instructions: str | None
    name: str
    description: str
    mount_path: str


class SessionOut(WireObject):
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


class SessionPage(WireObject):
    """Answer of ``GET /v1/sessions`` (the SDK's ``BidirectionalPageCursor``)."""

    data: list[SessionOut]
    next_page: str | None
    prev_page: None = None


class DeletedSession(WireObject):
    """The SDK's ``BetaManagedAgentsDeletedSession``."""

    id: str
    type: Literal["session_deleted"]
