"""The error envelope of api-contract §2.1."""

from __future__ import annotations

from typing import Any, Literal

from memfs.wire.common import (
    WireObject,
)

__all__ = [
    "ErrorEnvelope",
    "ErrorObject",
]


class ErrorObject(WireObject):
    """api-contract §2.1; ``conflicting_*`` on memory_path_conflict_error only,
    ``actual_content_sha256`` on memory_precondition_failed_error only."""

    type: str
    message: str
    details: dict[str, Any] | None = None
    conflicting_memory_id: str | None = None
    conflicting_path: str | None = None
    actual_content_sha256: str | None = None


class ErrorEnvelope(WireObject):
    """api-contract §2.1."""

    type: Literal["error"]
    error: ErrorObject
    request_id: str | None = None
