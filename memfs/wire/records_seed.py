"""Seed 002's record JSON ⇄ a record file (SPEC §6): the import and export shape of
chat-derived long-term memories (``memfs import --format jsonl``, ``memfs export
--format records-jsonl``). Pure: no I/O.

A seed record::

    {"memory_id": "user_id_xxx_mem_002", "tenant_id": "app", "user_id": "user_id_xxx",
     "agent_id": "worker_agent", "type": "preference", "scope": "private",
     "content": {"raw": "…", "summary": "…", "structured": {…}},
     "embedding": {…},
     "metadata": {"importance": 0.92, "confidence": 0.96, "tags": […],
                  "source": "explicit_user_input", "version": 1},
     "time": {"created_at": "…", "updated_at": "…", "last_accessed": "…",
              "decay_score": 0.95},
     "relations": [{"type": "related_to", "target_memory_id": "user_id_xxx_mem_001"}],
     "access_control": {"visibility": "private", "allowed_users": […],
                        "allowed_roles": […]}}

becomes the file ``<user_id>/<memory_id>.md`` (``<memory_id>.md`` without a user): a
header with the typed keys of SPEC §6 (``scope`` from ``scope``, else
``access_control.visibility``), ``memory_id`` and the seed's ``created_at`` /
``updated_at`` kept as unknown keys (so an export gives them back), then ``raw`` and a
newline. A relation's ``target_memory_id`` becomes the path the import gives that seed
id in the same user's folder, so relations between imported records resolve (and
dangle, reported, until their target is imported). Ignored on import: the embedding
(semantic search computes its own vectors), ``metadata.version`` (the number of
versions is memfs's), ``time.last_accessed`` and ``time.decay_score`` (derived: memfs
keeps its own from the reads it sees).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import yaml

from memfs.core.errors import InvalidInput
from memfs.core.model import format_timestamp
from memfs.core.records import Record, RecordHeader, RecordType, parse_record

__all__ = [
    "RECORD_SUFFIX",
    "is_seed_record",
    "seed_path",
    "seed_to_file",
    "file_to_seed",
    "seed_id_of",
]

RECORD_SUFFIX = ".md"
_ID_KEY = "memory_id"
_TIME_KEYS = ("created_at", "updated_at")


def is_seed_record(value: object) -> bool:
    """True when a JSON Lines object is a seed 002 record (a record type, and a
    ``content`` object or no ``path``), not a memory object of ``memfs export``."""
    return (
        isinstance(value, dict)
        and value.get("type") in RecordType.__members__.values()
        and (isinstance(value.get("content"), dict) or "path" not in value)
    )


def seed_path(memory_id: str, user_id: str | None) -> str:
    """The memory path (below the import prefix, without its leading ``/``) of a seed
    record: ``<user_id>/<memory_id>.md``, or ``<memory_id>.md`` without a user."""
    name = memory_id + RECORD_SUFFIX
    return f"{user_id}/{name}" if user_id else name


def _section(seed: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = seed.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{key} must be an object")
    return value


def _text(seed: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    value = seed.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{key} must be a non-empty string")
    return value


def _relations(seed: Mapping[str, Any], prefix: str, user_id: str | None) -> list[dict[str, Any]]:
    raw = seed.get("relations") or []
    if not isinstance(raw, list):
        raise InvalidInput("relations must be a list")
    relations = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InvalidInput(f"relations[{index}] must be an object")
        target = item.get("target_memory_id", item.get("target"))
        if not isinstance(target, str) or not target:
            raise InvalidInput(f"relations[{index}].target_memory_id must be a string")
        if not target.startswith(("/", "mem_")):
            target = prefix + seed_path(target, user_id)
        relations.append({"type": item.get("type"), "target": target})
    return relations


def seed_to_file(seed: Mapping[str, Any], prefix: str = "/") -> tuple[str, str]:
    """The memory path and content of a seed 002 record (see the module docstring).

    Args:
        seed: the parsed JSON object.
        prefix: the import prefix (``/`` or ``/dir/``).

    Returns:
        ``(path, content)``; the content is a record whose header memfs validates at
        the write (a value breaking SPEC §6 is refused there, naming the key).

    Raises:
        InvalidInput: the object lacks ``memory_id``, or a section has the wrong shape.
    """
    memory_id = _text(seed, _ID_KEY, required=True)
    assert memory_id is not None
    user_id = _text(seed, "user_id")
    content = _section(seed, "content")
    metadata = _section(seed, "metadata")
    access = _section(seed, "access_control")
    times = _section(seed, "time")
    header: dict[str, Any] = {"type": seed.get("type")}
    scope = seed.get("scope", access.get("visibility"))
    candidates: list[tuple[str, Any]] = [
        ("scope", scope),
        (_ID_KEY, memory_id),
        ("user_id", user_id),
        ("agent_id", seed.get("agent_id")),
        ("tenant_id", seed.get("tenant_id")),
        ("importance", metadata.get("importance")),
        ("confidence", metadata.get("confidence")),
        ("tags", metadata.get("tags")),
        ("source", metadata.get("source")),
        ("summary", content.get("summary")),
        ("structured", content.get("structured")),
        ("relations", _relations(seed, prefix, user_id) or None),
        ("allowed_users", access.get("allowed_users")),
        ("allowed_roles", access.get("allowed_roles")),
        *((key, times.get(key)) for key in _TIME_KEYS),
    ]
    header.update((key, value) for key, value in candidates if value is not None)
    raw = content.get("raw", "")
    if not isinstance(raw, str):
        raise InvalidInput("content.raw must be a string")
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    return prefix + seed_path(memory_id, user_id), f"---\n{front}---\n{raw}\n"


def _seed_id(record_path: str, extra: Mapping[str, Any], memory_id: str) -> str:
    kept = extra.get(_ID_KEY)
    return kept if isinstance(kept, str) and kept else memory_id


def _target_id(target: str, resolved: str | None, seed_ids: Mapping[str, str]) -> str:
    """The seed id of a relation's target: that of the memory it resolved to when the
    export knows it, else the stem of a path target (as the import named it)."""
    if resolved is not None and resolved in seed_ids:
        return seed_ids[resolved]
    if target.startswith("/"):
        name = target.rsplit("/", 1)[-1]
        return name.removesuffix(RECORD_SUFFIX)
    return target


def _time(extra: Mapping[str, Any], key: str, fallback: datetime) -> str:
    kept = extra.get(key)
    if isinstance(kept, datetime):
        return format_timestamp(kept)
    return kept if isinstance(kept, str) else format_timestamp(fallback)


def file_to_seed(
    record: Record, header: RecordHeader, body: str, seed_ids: Mapping[str, str]
) -> dict[str, Any]:
    """A record as seed 002's JSON object (``memfs export --format records-jsonl``).

    Args:
        record: the index entry (decay, last access, version, resolved relations).
        header: the parsed header of its content (its unknown keys give back the seed's
            ``memory_id``, ``created_at`` and ``updated_at``).
        body: the content below the header; one final newline is dropped (the import
            adds one).
        seed_ids: ``mem_`` id → seed id of the records exported with it (relations).
    """
    extra = header.extra
    return {
        "memory_id": _seed_id(record.path, extra, record.memory_id),
        "tenant_id": record.tenant_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "type": record.type.value,
        "scope": record.scope.value,
        "content": {
            "raw": body.removesuffix("\n"),
            "summary": record.summary,
            "structured": None if header.structured is None else dict(header.structured),
        },
        "metadata": {
            "importance": record.importance,
            "confidence": record.confidence,
            "tags": list(header.tags),
            "source": None if record.source is None else record.source.value,
            "version": record.version,
        },
        "time": {
            "created_at": _time(extra, "created_at", record.created_at),
            "updated_at": _time(extra, "updated_at", record.updated_at),
            "last_accessed": format_timestamp(record.last_accessed),
            "decay_score": record.decay_score,
        },
        "relations": [
            {
                "type": relation.type.value,
                "target_memory_id": _target_id(
                    relation.target, relation.target_memory_id, seed_ids
                ),
            }
            for relation in record.relations
        ],
        "access_control": {
            "visibility": record.scope.value,
            "allowed_users": list(header.allowed_users),
            "allowed_roles": list(header.allowed_roles),
        },
    }


def seed_id_of(record: Record, content: str) -> str:
    """The seed id a record is exported under: its header's ``memory_id``, else its
    ``mem_`` id."""
    header = parse_record(content)
    return _seed_id(record.path, header.extra if header else {}, record.memory_id)
