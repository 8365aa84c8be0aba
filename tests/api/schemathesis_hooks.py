"""Hooks of the schemathesis run of ``test_schemathesis.py`` (``SCHEMATHESIS_HOOKS``).

The run tries both sides of the schema: positive cases must be accepted, negative ones
refused. What JSON Schema can't state is kept out of the positive cases here, each
rule named, and said in the descriptions of the request models of :mod:`memfs.wire`:

- byte limits (the schema counts characters), Unicode NFC, format characters (Cf) in
  path segments;
- rules between two fields or parameters: ``replacement_content`` only with
  ``mode=redact`` (query parameters can't depend on each other in OpenAPI), a forget
  option given in the body and the query with two values, a directory moved into
  itself, a store attached twice to one session, a session given both resources and an
  (identity, template) pair (or neither), a flat session with two writable stores, a
  session's ``roles`` without its ``user_id`` or with a ``principal`` object; a listing
  with deleted memories (``include_deleted=true`` or ``status=deleted``) at a ``depth``
  other than 0 or with ``include_deleted=true`` and ``status=active`` together, or with
  a record filter;
- ``page`` cursors: opaque, only ever taken from a response (the stateful links do);
- points of history (SPEC §10: ``at``, a diff's ``from``/``to``, a snapshot's ``at``):
  whether one names a moment depends on the store (its snapshots and versions) and on
  the clock, so only ``now`` is a positive case; a listing ``at`` a point lists no
  deleted memories and takes no record filter; a snapshot name follows the snapshot
  name rules (:func:`memfs.core.points.validate_snapshot_name`: path-segment rules,
  not ``now``, not like a time, a version id or a snapshot id, no ``@``, not
  ``auto-…``).

Path parameters are replaced by real ids (``$MEMFS_FUZZ_IDS``) in about half of the
cases, so that bodies and queries reach the engine instead of stopping at 404; long
polls are cut to :data:`MAX_LONG_POLL_S` so that the run stays bounded in time. Both
depend only on the case, so the run is deterministic.
"""

from __future__ import annotations

import json
import os
import unicodedata
import zlib
from typing import Any

import schemathesis
from schemathesis import GenerationMode

from memfs.core.config import MAX_CONTENT_BYTES, MAX_PATH_BYTES, MAX_SEGMENT_BYTES
from memfs.core.errors import InvalidInput
from memfs.core.points import validate_snapshot_name

MAX_LONG_POLL_S = 0.05
IDS: dict[str, str] = json.loads(os.environ.get("MEMFS_FUZZ_IDS", "{}"))
_PATH_FIELDS = ("path", "old_prefix", "new_prefix", "path_prefix")


def _path_is_stateable(path: object) -> bool:
    """False for a path the schema calls valid that breaks a rule it can't state."""
    if not isinstance(path, str):
        return True
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return False
    for segment in path.split("/"):
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            return False
        if not unicodedata.is_normalized("NFC", segment):
            return False
        if any(unicodedata.category(ch) in ("Cf", "Cs") for ch in segment):
            return False
    return True


def _values_are_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    for name in _PATH_FIELDS:
        if not _path_is_stateable(body.get(name)) or not _path_is_stateable(query.get(name)):
            return False
    content = body.get("content")
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass")) <= MAX_CONTENT_BYTES
    return True


def _rename_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    old, new = body.get("old_prefix"), body.get("new_prefix")
    return not (isinstance(old, str) and isinstance(new, str) and new.startswith(old))


def _session_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    # The principal (SPEC §6): roles need a user_id; one form or the other, not both.
    flat = body.get("user_id") is not None or body.get("roles") is not None
    if (body.get("roles") and body.get("user_id") is None) or (
        flat and body.get("principal") is not None
    ):
        return False
    resources = body.get("resources")
    pair = [body.get("identity_id"), body.get("template_id")]
    if resources is None:  # SPEC §8: a pair's session, which is flat
        return None not in pair and body.get("layout") in (None, "flat")
    if pair != [None, None] or not isinstance(resources, list):
        return pair == [None, None]  # resources or a pair, not both
    dicts = [r for r in resources if isinstance(r, dict)]
    ids = [r.get("memory_store_id") for r in dicts]
    writable = [r for r in dicts if r.get("access") in (None, "read_write")]
    flat_ok = body.get("layout") != "flat" or len(writable) <= 1  # one writable default
    return len(ids) == len(set(ids)) and flat_ok


def _delete_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    mode = query.get("mode") or "soft_delete"
    return query.get("replacement_content") is None or mode == "redact"


def _forget_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    for name, value in query.items():
        if value is not None and body.get(name) not in (None, value):
            return False
    mode = body.get("mode") or query.get("mode") or "redact"
    replacement = body.get("replacement_content") or query.get("replacement_content")
    return replacement is None or mode == "redact"


def _points_are_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    """Only ``now`` names a moment whatever the store holds (SPEC §10)."""
    return all(
        source.get(name) in (None, "now")
        for source in (body, query)
        for name in ("at", "from", "to")
    )


def _snapshot_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    try:
        validate_snapshot_name(body.get("name"), automatic=False)  # a user's name
    except InvalidInput:
        return False
    return True


def _listing_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    include_deleted = query.get("include_deleted") in (True, "true")
    record_filters = ("record_type", "tag", "min_importance", "user_id")
    if query.get("at") is not None and (
        include_deleted
        or query.get("status") == "deleted"
        or any(query.get(name) is not None for name in record_filters)
    ):
        return False  # the past lists no deleted memories, takes no record filter
    if include_deleted and query.get("status") == "active":
        return False
    with_deleted = include_deleted or query.get("status") == "deleted"
    if not with_deleted:
        return True
    if any(query.get(name) is not None for name in record_filters):
        return False  # record filters list live records only
    return query.get("depth") in (None, 0, "0")


def _dream_is_stateable(body: dict[str, Any], query: dict[str, Any]) -> bool:
    # api-contract §7.4: one memory_store input, at most one sessions input of 1..100
    # distinct ids; update_existing names the input; instructions ≤ 4,096 characters.
    inputs = [i for i in body.get("inputs") or [] if isinstance(i, dict)]
    stores = [i for i in inputs if i.get("type") == "memory_store"]
    sessions = [i.get("session_ids") or [] for i in inputs if i.get("type") == "sessions"]
    if len(stores) != 1 or len(sessions) > 1:
        return False
    if sessions and (len(sessions[0]) > 100 or len(set(sessions[0])) != len(sessions[0])):
        return False
    behavior = body.get("output_behavior")
    if isinstance(behavior, dict) and behavior.get("type") == "update_existing" and (
        behavior.get("memory_store_id") != stores[0].get("memory_store_id")
    ):
        return False
    return len(body.get("instructions") or "") <= 4096


_MEMORIES = "/v1/memory_stores/{memory_store_id}/memories"
_MEMORY = f"{_MEMORIES}/{{memory_id}}"
_STORELESS_MEMORY = "/v1/memories/{memory_id}"  # seed 004's routes without the store
# (method, path) → the rule between fields of that operation (the list above).
_OPERATION_RULES = {
    ("POST", f"{_MEMORIES}/rename_prefix"): _rename_is_stateable,
    ("GET", _MEMORIES): _listing_is_stateable,
    ("POST", "/v1/sessions"): _session_is_stateable,
    ("DELETE", _MEMORY): _delete_is_stateable,
    ("POST", f"{_MEMORY}/forget"): _forget_is_stateable,
    ("DELETE", _STORELESS_MEMORY): _delete_is_stateable,
    ("POST", f"{_STORELESS_MEMORY}/forget"): _forget_is_stateable,
    ("POST", "/v1/memory_stores/{memory_store_id}/snapshots"): _snapshot_is_stateable,
    ("POST", "/v1/dreams"): _dream_is_stateable,
}


def _positive_case_is_stateable(case: Any) -> bool:
    body = case.body if isinstance(case.body, dict) else {}
    query = case.query or {}
    if query.get("page") or not _values_are_stateable(body, query):
        return False
    if not _points_are_stateable(body, query):
        return False
    rule = _OPERATION_RULES.get((case.method.upper(), case.operation.path))
    return rule is None or rule(body, query)


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return True
    return _positive_case_is_stateable(case)


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Long polls and event streams cut short; real ids in about half of the cases
    (every phase)."""
    if case.operation.path.endswith("/events/stream") and "timeout_s" not in (case.query or {}):
        case.query = {**(case.query or {}), "timeout_s": MAX_LONG_POLL_S}
    timeout_s = (case.query or {}).get("timeout_s")
    if not isinstance(timeout_s, bool) and isinstance(timeout_s, int | float | str):
        try:
            waits = float(timeout_s) > MAX_LONG_POLL_S
        except ValueError:
            waits = False  # not a number: refused without waiting
        if waits:
            case.query["timeout_s"] = MAX_LONG_POLL_S
    if not case.path_parameters or not IDS:
        return
    if zlib.crc32(json.dumps([case.query, case.body], default=str).encode()) % 2:
        restoring = case.operation.path.endswith("/restore")
        for name in case.path_parameters:
            key = "deleted_memory_id" if restoring and name == "memory_id" else name
            case.path_parameters[name] = IDS.get(key, case.path_parameters[name])


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keeps every failure but the 400s of positive cases that break a rule the schema
    can't state (the list above; the coverage phase does not go through
    :func:`filter_case`), and of positive cases refused because an earlier step archived
    the store (400 ``store_archived``, a state the schema can't describe; api-contract
    §8.1 chose 400 for it) or because earlier steps mounted ten stores on the pair (400
    ``mount_limit_reached``, SPEC §8), or that name a session without a transcript (400
    ``session_without_transcript``, SPEC §11)."""
    if response.status_code != 400:
        return True
    meta = case.meta
    positive = meta is not None and meta.generation.mode is GenerationMode.POSITIVE
    if positive and not _positive_case_is_stateable(case):
        return False
    try:
        code = response.json()["error"]["details"]["error_code"]
    except (ValueError, KeyError, TypeError):
        return True
    # A session's transcript is a state too (SPEC §11): a dream of one without events.
    return code not in ("store_archived", "mount_limit_reached", "session_without_transcript")
