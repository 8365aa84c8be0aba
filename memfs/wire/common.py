"""The vocabulary every resource's shapes share (api-contract §1-§3): digests,
timestamps, the SPEC §1 value rules as JSON Schema states them, metadata, the record
filters of SPEC §6, and the two bases: :class:`RequestBody` (strict, unknown fields
refused, no U+0000 anywhere) and :class:`WireObject` (a documented response object).

Request models follow api-contract §5 field for field. They are strict (no coercion:
``"name": 5`` is a 400, not ``"5"``) and refuse unknown fields, so a typo never passes
silently; the SPEC §1 value rules (path, content, metadata limits, name length) are
checked by :mod:`memfs.core.rules` inside the engine, which names the broken rule.

Response models document the objects :mod:`memfs.wire.serialize` produces (the routes
return those dicts directly), so ``/openapi.json`` describes what the server really
sends; schemathesis checks that in ``tests/api``.
"""

from __future__ import annotations

import enum
import re
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
    model_validator,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "nests_too_deep",
    "CONTENT_SCHEMA",
    "DeletedObject",
    "LISTING_PREFIX_PATTERN",
    "METADATA_SCHEMA",
    "Metadata",
    "MetadataPatch",
    "NO_CONTROL",
    "NO_NUL",
    "NUL_MESSAGE",
    "NoNul",
    "PATH_SCHEMA",
    "PREFIX_SCHEMA",
    "RECORD_NAME_PATTERN",
    "RecordTypeName",
    "RequestBody",
    "SHA256_PATTERN",
    "Sha256",
    "Timestamp",
    "WholeNumber",
    "WireObject",
    "contains_nul",
    "integral_number",
]

SHA256_PATTERN = r"^[0-9a-f]{64}$"
Sha256 = Annotated[str, Field(pattern=SHA256_PATTERN, description="64 lowercase hex digits")]
# An RFC 3339 timestamp on the wire (api-contract §1.2), a datetime once read.
Timestamp = Annotated[datetime, WithJsonSchema({"type": "string", "format": "date-time"})]



def enum_field(values: type[enum.StrEnum]) -> tuple[Any, ...]:
    """The metadata of a field holding a member of ``values`` (an enum of the core
    model): read as the member itself, sent as its string, documented with the values
    inline as a ``Literal`` would be. Put it on a ``NewType`` of the enum, so that
    FastAPI does not add a component of its own for the enum to ``/openapi.json``."""
    return (
        PlainValidator(values),
        PlainSerializer(str),
        WithJsonSchema({"enum": [member.value for member in values], "type": "string"}),
    )


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
PATH_SCHEMA: dict[str, JsonValue] = {
    "pattern": rf"^(?:/{_SEGMENT}){{1,20}}$",
    "maxLength": 1024,
}
PREFIX_SCHEMA: dict[str, JsonValue] = {"pattern": rf"^(?:/{_SEGMENT}){{1,20}}/$"}
LISTING_PREFIX_PATTERN = rf"^(?:/{_SEGMENT}){{0,20}}/$"


# The record filters (SPEC §6): a record type; a tag (1–64) or user id (1–128) without
# control characters, as the header rules say (memfs/records.py).
RecordTypeName = Literal["episodic", "semantic", "procedural", "preference", "profile"]
RECORD_NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"
CONTENT_SCHEMA: dict[str, JsonValue] = {
    "pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$",
    "maxLength": 102_400,
}
NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"
NO_NUL = r"^[^\x00]*$"
METADATA_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "maxProperties": 16,
    "propertyNames": {"minLength": 1, "maxLength": 64, "pattern": NO_NUL},
    "additionalProperties": {"type": "string", "maxLength": 512, "pattern": NO_NUL},
}
Metadata = Annotated[
    dict[str, str],
    WithJsonSchema(METADATA_SCHEMA),
    Field(description="At most 16 pairs; keys 1–64 characters, values at most 512."),
]


# A patch: a null value removes its key; the store keeps at most 16 keys after it.
MetadataPatch = Annotated[
    dict[str, str | None],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": METADATA_SCHEMA["propertyNames"],
            "additionalProperties": {
                "anyOf": [METADATA_SCHEMA["additionalProperties"], {"type": "null"}]
            },
        }
    ),
]


# How deep a request body may nest JSON objects and arrays (the body itself is level 1).
# The deepest valid body nests 4 levels (a session's resources; metadata values are
# strings, SPEC §1): 32 refuses nothing valid, and keeps every recursive step after it
# (the JSON parser, validation, the NUL check below) far from Python's recursion limit.
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def nests_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text ``body`` nests objects and arrays more than ``limit``
    levels deep, or opens more than ``limit`` that it never closes. Reads the bytes
    without parsing or recursing, in time linear in ``len(body)`` times ``limit``:
    strings are cut out, the brackets left are peeled one innermost level per pass.
    A body that is not JSON at all is left for the parser to refuse."""
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_A_BRACKET)
    brackets = brackets.replace(b"{", b"[").replace(b"}", b"]")
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return b"[]" in brackets or brackets.count(b"[") > limit


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


class NoNul(BaseModel):
    """Refuses U+0000 in any string of the body: no field may hold it (SPEC §1 forbids
    control characters in paths, content and names), and PostgreSQL text can't store it,
    so the engine must never see one."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_nul(cls, data: Any) -> Any:
        if contains_nul(data):
            raise ValueError(NUL_MESSAGE)
        return data


class RequestBody(NoNul):
    """A request body of api-contract §5: strict (no coercion), unknown fields refused."""

    model_config = ConfigDict(strict=True, extra="forbid")


def integral_number(value: object) -> object:
    """A JSON number with no fraction (``86400.0``) is the integer JSON Schema says it
    is; strict validation would refuse it as a float."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A JSON Schema integer in a strict body: ``86400`` or ``86400.0``, never ``"86400"``.
WholeNumber = Annotated[int, BeforeValidator(integral_number)]


def _document_read_defaults(schema: dict[str, Any], cls: type[Any]) -> None:
    """``json_schema_extra`` of :class:`WireObject`: the fields named in
    ``cls.read_defaults`` are documented as always sent (required, no default)."""
    names = getattr(cls, "read_defaults", ())
    if not names:
        return
    properties = schema["properties"]
    for name in names:
        properties[name].pop("default", None)
    required = set(schema.get("required", ())) | set(names)
    schema["required"] = [name for name in properties if name in required]


class WireObject(BaseModel):
    """An object the server sends (api-contract §4), one description for both ends: the
    server documents its answers with it (``/openapi.json``; the routes send the dicts
    of :mod:`memfs.wire.serialize`), the remote client reads the answers with it.

    Reading is tolerant (api-contract §1.3): fields it does not name are kept, not
    refused, and the fields named in :attr:`read_defaults` take their default when an
    older server leaves them out. The server always sends those, so ``/openapi.json``
    documents them as required all the same. Read objects are frozen.
    """

    model_config = ConfigDict(extra="allow", frozen=True, json_schema_extra=_document_read_defaults)

    # Fields the server always sends that a reader still accepts without (their default).
    read_defaults: ClassVar[tuple[str, ...]] = ()


class DeletedObject(WireObject):
    """api-contract §4.2 / §4.5 (``memory_store_deleted`` or ``memory_deleted``)."""

    id: str
    type: Literal["memory_store_deleted", "memory_deleted"]
