"""Dreams and session events on the wire (api-contract §7.4, SPEC §11): the bodies of
``POST /v1/dreams`` and ``POST /v1/sessions/{id}/events``, the ``dream`` object and
the events, in the shapes the SDK's ``client.beta.dreams`` and
``client.beta.sessions.events`` read.

The limits the engine names itself (``instructions_too_long``, ``too_many_sessions``)
are not repeated here, so that the refusal is the named one, not a schema error.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from memfs.core.config import MAX_DREAM_MODEL_ID_CHARS
from memfs.core.dreams import Dream, SessionEvent
from memfs.wire.common import NoNul, RequestBody, Timestamp, WireObject

__all__ = [
    "DreamCreate",
    "DreamOut",
    "DreamPage",
    "EventPage",
    "EventsSend",
    "EventsSent",
    "dream_to_wire",
    "event_to_wire",
]


def _ts(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


class MemoryStoreInput(RequestBody):
    type: Literal["memory_store"]
    memory_store_id: str


class SessionsInput(RequestBody):
    type: Literal["sessions"]
    session_ids: list[str] = Field(min_length=1)  # more than 100: too_many_sessions


DreamInput = Annotated[MemoryStoreInput | SessionsInput, Field(discriminator="type")]


ModelId = Annotated[str, Field(min_length=1, max_length=MAX_DREAM_MODEL_ID_CHARS)]


class ModelConfig(RequestBody):
    id: ModelId
    speed: Literal["standard"] | None = None


class CreateNew(RequestBody):
    type: Literal["create_new"]


class UpdateExisting(RequestBody):
    type: Literal["update_existing"]
    memory_store_id: str


OutputBehaviorParam = Annotated[CreateNew | UpdateExisting, Field(discriminator="type")]


class DreamCreate(RequestBody):
    """``POST /v1/dreams`` (api-contract §7.4): exactly one ``memory_store`` input and
    at most one ``sessions`` input."""

    inputs: list[DreamInput] = Field(min_length=1, max_length=2)
    model: ModelId | ModelConfig
    instructions: str | None = Field(
        default=None, min_length=1, description="1 to 4,096 characters (else 400 "
        "instructions_too_long)."
    )
    output_behavior: OutputBehaviorParam | None = None


class DreamOut(WireObject):
    """The ``dream`` object (the SDK's ``BetaDream``), with memfs's ``result``."""

    id: str
    type: Literal["dream"] = "dream"
    status: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    output_behavior: dict[str, Any]
    model: dict[str, Any]
    instructions: str | None
    session_id: str | None
    error: dict[str, str] | None
    usage: dict[str, int]
    created_at: Timestamp
    ended_at: Timestamp | None
    archived_at: Timestamp | None
    result: dict[str, Any] | None = Field(
        default=None, description="memfs extension: what the dream did (counts, changes)."
    )


class DreamPage(WireObject):
    data: list[DreamOut]
    next_page: str | None


def dream_to_wire(dream: Dream) -> dict[str, Any]:
    """A dream as ``client.beta.dreams`` reads it."""
    inputs: list[dict[str, Any]] = [
        {"type": "memory_store", "memory_store_id": dream.input_store_id}
    ]
    if dream.session_ids is not None:
        inputs.append({"type": "sessions", "session_ids": list(dream.session_ids)})
    behavior: dict[str, Any] = {"type": dream.output_behavior.value}
    if dream.output_behavior.value == "update_existing":
        behavior["memory_store_id"] = dream.input_store_id
    return {
        "id": dream.id,
        "type": "dream",
        "status": dream.status.value,
        "inputs": inputs,
        "outputs": (
            []
            if dream.output_store_id is None
            else [{"type": "memory_store", "memory_store_id": dream.output_store_id}]
        ),
        "output_behavior": behavior,
        "model": {"id": dream.model_id, "speed": dream.model_speed},
        "instructions": dream.instructions,
        "session_id": dream.session_id,
        "error": (
            None
            if dream.error_type is None
            else {"type": dream.error_type, "message": dream.error_message or ""}
        ),
        "usage": dict(dream.usage),
        "created_at": _ts(dream.created_at),
        "ended_at": _ts(dream.ended_at),
        "archived_at": _ts(dream.archived_at),
        "result": None if dream.result is None else dict(dream.result),
    }


class EventParam(NoNul):
    """One event as sent: its ``type`` and any other fields, kept as sent."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1, max_length=64)


class EventsSend(RequestBody):
    """``POST /v1/sessions/{id}/events`` (``events.send``): the SDK's user events, and
    (memfs extension) the agent's own, e.g. ``agent.message``; each kept as sent."""

    events: list[EventParam] = Field(min_length=1, max_length=1000)


class EventOut(WireObject):
    id: str
    type: str
    processed_at: Timestamp


class EventsSent(WireObject):
    data: list[EventOut]


class EventPage(WireObject):
    data: list[EventOut]
    next_page: str | None


def event_to_wire(event: SessionEvent) -> dict[str, Any]:
    """An event as the SDK's event models read it: its fields as sent, with ``id``,
    ``type`` and ``processed_at``."""
    stamp = _ts(event.processed_at)
    return {**event.body, "id": event.id, "type": event.type, "processed_at": stamp}
