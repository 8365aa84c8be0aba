"""(identity, template) pairs on the wire (SPEC §8, memfs extension): the ids a caller
chooses, the mount body and the ``memory_store_mount`` object."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memfs.wire.common import RequestBody, Timestamp, WireObject

__all__ = [
    "IDENTITY_ID_PATTERN",
    "IdentityMountCreate",
    "IdentityMountDeleted",
    "IdentityMountList",
    "IdentityMountOut",
    "TEMPLATE_ID_PATTERN",
]


# SPEC §8: ids of (identity, template) pairs, chosen by the caller (memfs.core.rules).
IDENTITY_ID_PATTERN = r"^idn_[A-Za-z0-9_-]{1,64}$"
TEMPLATE_ID_PATTERN = r"^tmpl_[A-Za-z0-9_-]{1,64}$"


class IdentityMountCreate(RequestBody):
    """Body of mounting a store on a pair (SPEC §8): explicit mounts are read-only."""

    memory_store_id: str
    access: Literal["read_only"] | None = Field(
        default=None, description="Always read_only (the default store is the only writable)."
    )


class IdentityMountOut(WireObject):
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


class IdentityMountList(WireObject):
    """A pair's mounts (the default first, then by creation time; at most 1 + 10) or a
    store's (oldest first); one page holds them all."""

    data: list[IdentityMountOut]
    next_page: None = None


class IdentityMountDeleted(WireObject):
    """Answer of removing a mount."""

    type: Literal["memory_store_mount_deleted"]
    memory_store_id: str
    identity_id: str
    template_id: str
