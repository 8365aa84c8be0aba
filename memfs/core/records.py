"""Long-term memory records (SPEC §6, seed 002): the record header and its rules.

A memory is a **record** when its content starts with YAML front matter — a ``---``
line, a YAML mapping, a ``---`` line — whose ``type`` is one of the five
:class:`RecordType` values. Pure: no I/O. :func:`parse_record` is the one parser of the
header; the store indexes what it returns (memfs/store/records.py) and never re-reads
the YAML itself. The content stays the author's bytes: nothing here rewrites it.

Rules (SPEC §6 table), one message per broken rule, all of them at once
(:class:`memfs.core.errors.InvalidRecord`):

=============================  =====================================================
``type``                       episodic | semantic | procedural | preference | profile
``scope``                      private (default) | share | public
``importance``, ``confidence`` a number, 0 ≤ x ≤ 1
``tags``                       a list of ≤ 32 strings, each 1–64 characters
``source``                     explicit_user_input | implicit_inference |
                               system_generated | external_data | corrected_memory
``summary``                    a string of ≤ 1,024 characters
``structured``                 a mapping of scalars, lists and mappings, ≤ 8 KiB as JSON
``user_id`` ``agent_id``       a string of 1–128 characters, no control characters
``tenant_id``
``relations``                  a list of ``{type: related_to | derived_from |
                               contradicts | supersedes, target: <path or mem_ id>}``
``allowed_users``              lists of strings (1–128 characters, no control
``allowed_roles``              characters each)
=============================  =====================================================

A key whose value is YAML ``null`` counts as absent. Unknown keys are kept verbatim (in
the file, and in :attr:`RecordHeader.extra`). A header whose ``type`` is anything else
or absent, or content without front matter, is ordinary content: never refused for its
header (:func:`parse_record` returns None).

Limitation: front matter whose YAML does not parse is ordinary content too — unless one
of its lines is a top-level ``type:`` naming a record type, in which case it is a record
whose header is broken, and refused (an agent that broke the YAML of its record must
hear of it, not see the record silently leave the index).
"""

from __future__ import annotations

import enum
import functools
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memfs.core import rules
from memfs.core.errors import InvalidInput, InvalidRecord
from memfs.core.model import format_timestamp

if TYPE_CHECKING:
    import yaml

__all__ = [
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_IMPORTANCE",
    "HALF_LIFE_METADATA_KEY",
    "MAX_ID_CHARS",
    "MAX_STRUCTURED_JSON_BYTES",
    "MAX_SUMMARY_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "Record",
    "RecordFilter",
    "RecordHeader",
    "RecordRelation",
    "RecordScope",
    "RecordSource",
    "RecordType",
    "Relation",
    "RelationType",
    "decay_score",
    "half_life_days",
    "parse_record",
    "record_to_wire",
    "split_front_matter",
]

MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_SUMMARY_CHARS = 1024
MAX_STRUCTURED_JSON_BYTES = 8 * 1024
MAX_ID_CHARS = 128
# decay_score = importance × 0.5^(days / half-life) (SPEC §6); a record that states no
# importance decays as one of middling importance.
DEFAULT_IMPORTANCE = 0.5
DEFAULT_HALF_LIFE_DAYS = 30.0
# The store metadata key (SPEC §1 metadata, str → str) holding a store's half-life in
# days, e.g. ``"7"`` or ``"90.5"``; absent or unreadable: DEFAULT_HALF_LIFE_DAYS.
HALF_LIFE_METADATA_KEY = "record_half_life_days"

_FENCE = "---"
_E = TypeVar("_E", bound=enum.StrEnum)
_SECONDS_PER_DAY = 86_400.0


class RecordType(enum.StrEnum):
    """The five kinds of long-term record (seed 002); a ``type`` among them makes a record."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    PREFERENCE = "preference"
    PROFILE = "profile"


class RecordScope(enum.StrEnum):
    """Who may see a record (SPEC §6 visibility): ``private`` only its user, its
    ``allowed_users`` and ``allowed_roles`` and admins; ``share``/``public`` everyone
    who can read the store."""

    PRIVATE = "private"
    SHARE = "share"
    PUBLIC = "public"


class RecordSource(enum.StrEnum):
    """Where a record's knowledge came from (seed 002 ``metadata.source``)."""

    EXPLICIT_USER_INPUT = "explicit_user_input"
    IMPLICIT_INFERENCE = "implicit_inference"
    SYSTEM_GENERATED = "system_generated"
    EXTERNAL_DATA = "external_data"
    CORRECTED_MEMORY = "corrected_memory"


class RelationType(enum.StrEnum):
    """How a record relates to another memory (SPEC §6 ``relations``)."""

    RELATED_TO = "related_to"
    DERIVED_FROM = "derived_from"
    CONTRADICTS = "contradicts"
    SUPERSEDES = "supersedes"


@dataclass(frozen=True)
class Relation:
    """One entry of ``relations``.

    Attributes:
        type: the kind of relation.
        target: as written: a memory path (``/…``) or a ``mem_…`` id.
    """

    type: RelationType
    target: str

    @property
    def target_is_id(self) -> bool:
        """True when the target names a memory by id (``mem_…``), not by path."""
        return not self.target.startswith("/")


@dataclass(frozen=True)
class RecordHeader:
    """The typed fields of a record header (SPEC §6), as :func:`parse_record` read them.

    Optional keys that were absent (or ``null``) are None / empty. ``extra`` holds the
    unknown keys with their parsed values, in the order written. ``body_offset`` is the
    character offset of the body (the raw text below the closing ``---`` line).
    """

    type: RecordType
    scope: RecordScope = RecordScope.PRIVATE
    importance: float | None = None
    confidence: float | None = None
    tags: tuple[str, ...] = ()
    source: RecordSource | None = None
    summary: str | None = None
    structured: Mapping[str, Any] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    tenant_id: str | None = None
    relations: tuple[Relation, ...] = ()
    allowed_users: tuple[str, ...] = ()
    allowed_roles: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    body_offset: int = 0


@functools.cache
def _safe_loader() -> type[yaml.SafeLoader]:
    """YAML's safe loader (plain data only: no tags that build objects), in its C
    version when libyaml is there (about 10× faster), else the Python one."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


def split_front_matter(content: str) -> tuple[str, int] | None:
    """The YAML text of ``content``'s front matter and the offset of the body after it.

    Front matter is a first line ``---``, then lines up to the next line that is exactly
    ``---`` (trailing spaces and ``\\r`` allowed). Returns None when ``content`` has none
    (no opening line, or no closing one).
    """
    first_end = content.find("\n")
    if first_end < 0 or content[:first_end].rstrip() != _FENCE:
        return None
    start = first_end + 1
    position = start
    while position <= len(content):
        line_end = content.find("\n", position)
        end = len(content) if line_end < 0 else line_end
        if content[position:end].rstrip() == _FENCE:
            body = len(content) if line_end < 0 else line_end + 1
            return content[start:position], body
        if line_end < 0:
            return None
        position = line_end + 1
    return None


_TYPE_LINE = re.compile(
    r"^type\s*:\s*['\"]?(" + "|".join(t.value for t in RecordType) + r")['\"]?\s*(#.*)?$",
    re.MULTILINE,
)


def parse_record(content: str) -> RecordHeader | None:
    """Reads ``content``'s record header (SPEC §6).

    Args:
        content: the whole memory content (already valid per SPEC §1).

    Returns:
        The header, or None when the content is not a record (no front matter, or a
        ``type`` that is absent or not a record type).

    Raises:
        InvalidRecord: the header makes it a record and breaks a rule; the message names
            every key and rule broken (``"importance: must be a number from 0 to 1"``).
    """
    split = split_front_matter(content)
    if split is None:
        return None
    text, body_offset = split
    # yaml is imported by the first header read, not with this module: importing it is
    # ~5 % of what `memfs store list` costs to start, and most commands read no header.
    import yaml

    try:
        loaded = yaml.load(text, Loader=_safe_loader())
    except yaml.YAMLError as exc:
        if _TYPE_LINE.search(text) is None:
            return None
        problem = str(exc).replace("\n", " ")
        raise InvalidRecord(
            f"invalid record header: the front matter is not valid YAML: {problem}",
            key="",
        ) from exc
    if not isinstance(loaded, dict):
        return None
    kind = loaded.get("type")
    if not isinstance(kind, str) or kind not in RecordType.__members__.values():
        return None
    checker = _Checker(loaded)
    header = checker.header(RecordType(kind), body_offset)
    if checker.problems:
        raise InvalidRecord(
            "invalid record header: " + "; ".join(checker.problems),
            key=checker.keys[0],
            problems=checker.problems,
        )
    return header


_KNOWN_KEYS = frozenset(
    {
        "type",
        "scope",
        "importance",
        "confidence",
        "tags",
        "source",
        "summary",
        "structured",
        "user_id",
        "agent_id",
        "tenant_id",
        "relations",
        "allowed_users",
        "allowed_roles",
    }
)


def _enum_rule(values: type[enum.StrEnum]) -> str:
    return "must be one of " + ", ".join(v.value for v in values)


class _Checker:
    """Validates the keys of one loaded header, collecting one problem per broken rule."""

    def __init__(self, loaded: dict[Any, Any]) -> None:
        self.loaded = loaded
        self.problems: list[str] = []
        self.keys: list[str] = []

    def fail(self, key: str, rule: str) -> None:
        self.keys.append(key)
        self.problems.append(f"{key}: {rule}")

    def value(self, key: str) -> Any:
        return self.loaded.get(key)

    def header(self, kind: RecordType, body_offset: int) -> RecordHeader:
        return RecordHeader(
            type=kind,
            scope=self.choice("scope", RecordScope) or RecordScope.PRIVATE,
            importance=self.fraction("importance"),
            confidence=self.fraction("confidence"),
            tags=self.tags(),
            source=self.choice("source", RecordSource),
            summary=self.summary(),
            structured=self.structured(),
            user_id=self.identifier("user_id"),
            agent_id=self.identifier("agent_id"),
            tenant_id=self.identifier("tenant_id"),
            relations=self.relations(),
            allowed_users=self.names("allowed_users"),
            allowed_roles=self.names("allowed_roles"),
            extra={k: v for k, v in self.loaded.items() if k not in _KNOWN_KEYS},
            body_offset=body_offset,
        )

    def choice(self, key: str, values: type[_E]) -> _E | None:
        raw = self.value(key)
        if raw is None:
            return None
        if isinstance(raw, str) and raw in values.__members__.values():
            return values(raw)
        self.fail(key, _enum_rule(values))
        return None

    def fraction(self, key: str) -> float | None:
        raw = self.value(key)
        if raw is None:
            return None
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 1:
            self.fail(key, "must be a number from 0 to 1")
            return None
        return float(raw)

    def tags(self) -> tuple[str, ...]:
        raw = self.value("tags")
        if raw is None:
            return ()
        rule = f"must be a list of at most {MAX_TAGS} strings of 1–{MAX_TAG_CHARS} characters"
        if (
            not isinstance(raw, list)
            or len(raw) > MAX_TAGS
            or not all(isinstance(t, str) and 1 <= len(t) <= MAX_TAG_CHARS for t in raw)
        ):
            self.fail("tags", rule)
            return ()
        return tuple(raw)

    def summary(self) -> str | None:
        raw = self.value("summary")
        if raw is None:
            return None
        if not isinstance(raw, str) or len(raw) > MAX_SUMMARY_CHARS:
            self.fail("summary", f"must be a string of at most {MAX_SUMMARY_CHARS} characters")
            return None
        return raw

    def structured(self) -> Mapping[str, Any] | None:
        raw = self.value("structured")
        if raw is None:
            return None
        if not isinstance(raw, dict):
            self.fail("structured", "must be a mapping")
            return None
        try:
            as_json = json.dumps(_jsonable(raw), ensure_ascii=False)
        except ValueError as exc:
            self.fail("structured", f"must hold only scalars, lists and mappings ({exc})")
            return None
        if len(as_json.encode("utf-8")) > MAX_STRUCTURED_JSON_BYTES:
            self.fail("structured", f"must be at most {MAX_STRUCTURED_JSON_BYTES} bytes as JSON")
            return None
        parsed: dict[str, Any] = json.loads(as_json)
        return parsed

    def identifier(self, key: str) -> str | None:
        raw = self.value(key)
        if raw is None:
            return None
        if not _is_name(raw):
            self.fail(
                key,
                f"must be a string of 1–{MAX_ID_CHARS} characters without control "
                "characters (quote a number)",
            )
            return None
        assert isinstance(raw, str)
        return raw

    def names(self, key: str) -> tuple[str, ...]:
        raw = self.value(key)
        if raw is None:
            return ()
        if not isinstance(raw, list) or not all(_is_name(n) for n in raw):
            self.fail(
                key,
                f"must be a list of strings of 1–{MAX_ID_CHARS} characters without "
                "control characters",
            )
            return ()
        return tuple(raw)

    def relations(self) -> tuple[Relation, ...]:
        raw = self.value("relations")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.fail("relations", "must be a list of {type, target} mappings")
            return ()
        found: list[Relation] = []
        for index, item in enumerate(raw):
            key = f"relations[{index}]"
            if not isinstance(item, dict):
                self.fail(key, "must be a mapping with type and target")
                continue
            kind, target = item.get("type"), item.get("target")
            ok = True
            if not isinstance(kind, str) or kind not in RelationType.__members__.values():
                self.fail(f"{key}.type", _enum_rule(RelationType))
                ok = False
            target_problem = _target_problem(target)
            if target_problem is not None:
                self.fail(f"{key}.target", target_problem)
                ok = False
            if ok:
                found.append(Relation(RelationType(str(kind)), str(target)))
        return tuple(found)


def _is_name(value: object) -> bool:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= MAX_ID_CHARS
        and not any(unicodedata.category(ch) == "Cc" for ch in value)
    )


def _target_problem(target: object) -> str | None:
    """Why ``target`` can't name a memory (None: it can): a SPEC §1 path or a mem_ id."""
    rule = "must be a memory path (/…) or a mem_… id"
    if not isinstance(target, str) or not target:
        return rule
    if target.startswith("/"):
        try:
            rules.validate_path(target)
        except InvalidInput as exc:
            return f"{rule}: {exc.message}"
        return None
    if not _is_name(target) or not target.startswith("mem_") or " " in target:
        return rule
    return None


def _jsonable(value: Any) -> Any:
    """``value`` (parsed YAML) as JSON data: dates become ISO-8601 text.

    Raises:
        ValueError: a value that is no scalar, list or string-keyed mapping (a set, a
            binary string, a non-string key, a non-finite number).
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("a number that is not finite")
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ValueError("a mapping key that is not a string")
        return {k: _jsonable(v) for k, v in value.items()}
    raise ValueError(f"a value of YAML type {type(value).__name__}")


def half_life_days(store_metadata: Mapping[str, str]) -> float:
    """A store's record half-life in days (SPEC §6 "half-life per store"): its metadata
    key :data:`HALF_LIFE_METADATA_KEY` when it holds a positive number, else
    :data:`DEFAULT_HALF_LIFE_DAYS`."""
    raw = store_metadata.get(HALF_LIFE_METADATA_KEY)
    try:
        days = float(raw) if raw is not None else DEFAULT_HALF_LIFE_DAYS
    except ValueError:
        return DEFAULT_HALF_LIFE_DAYS
    return days if days > 0 and days != float("inf") else DEFAULT_HALF_LIFE_DAYS


def decay_score(
    importance: float | None, last_accessed: datetime, now: datetime, half_life: float
) -> float:
    """``importance × 0.5^(days since last_accessed / half_life)`` (SPEC §6).

    Args:
        importance: the record's importance; None counts as :data:`DEFAULT_IMPORTANCE`.
        last_accessed: when the record was last read (or written, if never read).
        now: the time to score at (a fake clock in tests).
        half_life: days after which an unread record's score halves (> 0).

    Returns:
        A score from 0 to 1, rounded to 6 places. A ``last_accessed`` in the future
        counts as now.
    """
    weight = DEFAULT_IMPORTANCE if importance is None else importance
    days = max(0.0, (now - last_accessed).total_seconds() / _SECONDS_PER_DAY)
    score: float = weight * 0.5 ** (days / half_life)
    return round(score, 6)


@dataclass(frozen=True)
class RecordRelation:
    """A relation as indexed (SPEC §6 "relations are resolved").

    Attributes:
        type: the kind of relation.
        target: the target as written in the header (a path or a ``mem_…`` id).
        target_memory_id: the memory it resolved to (None: nothing was ever there).
        target_path: that memory's current path when it is live, else None.
        memory_id: the record the relation belongs to (its source).
        memory_path: that record's current path.
    """

    type: RelationType
    target: str
    target_memory_id: str | None
    target_path: str | None
    memory_id: str
    memory_path: str

    @property
    def dangling(self) -> bool:
        """True when the target is not a live memory (reported, never refused)."""
        return self.target_path is None


@dataclass(frozen=True)
class Record:
    """A record as the index holds it (SPEC §6), for the API's ``record`` object, the CLI
    and the front ends.

    Attributes:
        memory_id, store_id, path: the memory (its current path).
        type … allowed_roles: the header's typed fields (see :class:`RecordHeader`).
        relations: the outgoing relations, in header order.
        version: the number of versions of the memory.
        created_at, updated_at: the memory's.
        last_accessed: when it was last read (or first indexed, if never read).
        decay_score: :func:`decay_score` at the time it was read from the index, with its
            store's half-life.
    """

    memory_id: str
    store_id: str
    path: str
    type: RecordType
    scope: RecordScope
    importance: float | None
    confidence: float | None
    source: RecordSource | None
    summary: str | None
    structured: Mapping[str, Any] | None
    user_id: str | None
    agent_id: str | None
    tenant_id: str | None
    tags: tuple[str, ...]
    allowed_users: tuple[str, ...]
    allowed_roles: tuple[str, ...]
    relations: tuple[RecordRelation, ...]
    version: int
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime
    decay_score: float


@dataclass(frozen=True)
class RecordFilter:
    """Which records a listing keeps (SPEC §6 curation); None / empty = any.

    Attributes:
        record_type: only this type.
        tag: only records carrying this tag.
        min_importance: only records whose importance is at least this (a record
            without importance never matches).
        user_id: only records of this user.
        scope: only this scope.
    """

    record_type: RecordType | None = None
    tag: str | None = None
    min_importance: float | None = None
    user_id: str | None = None
    scope: RecordScope | None = None

    @classmethod
    def of(
        cls,
        *,
        record_type: str | None = None,
        tag: str | None = None,
        min_importance: float | None = None,
        user_id: str | None = None,
        scope: str | None = None,
    ) -> RecordFilter:
        """A filter from untyped input (query parameters, CLI options).

        Raises:
            InvalidInput: an unknown type or scope, or an importance outside 0–1.
        """
        if record_type is not None and record_type not in RecordType.__members__.values():
            raise InvalidInput(f"record_type {_enum_rule(RecordType)}, not {record_type!r}")
        if scope is not None and scope not in RecordScope.__members__.values():
            raise InvalidInput(f"scope {_enum_rule(RecordScope)}, not {scope!r}")
        if min_importance is not None and not 0 <= min_importance <= 1:
            raise InvalidInput("min_importance must be a number from 0 to 1")
        if tag is not None and not (_is_name(tag) and len(tag) <= MAX_TAG_CHARS):
            raise InvalidInput(
                f"tag must be 1–{MAX_TAG_CHARS} characters without control characters"
            )
        if user_id is not None and not _is_name(user_id):
            raise InvalidInput(
                f"user_id must be 1–{MAX_ID_CHARS} characters without control characters"
            )
        return cls(
            record_type=None if record_type is None else RecordType(record_type),
            tag=tag,
            min_importance=min_importance,
            user_id=user_id,
            scope=None if scope is None else RecordScope(scope),
        )

    @property
    def empty(self) -> bool:
        """True when the filter keeps every memory (records or not)."""
        return self == RecordFilter()


def record_to_wire(record: Record) -> dict[str, Any]:
    """The ``record`` object of a memory on the API (a memfs extension of api-contract
    §4.3 ``memory``; the SDK ignores it): the header's typed fields, ``version``,
    ``last_accessed`` and ``decay_score`` (SPEC §6), and the relations with their
    resolution (``target_memory_id``, the target's current ``target_path``,
    ``dangling``)."""
    return {
        "type": record.type.value,
        "scope": record.scope.value,
        "importance": record.importance,
        "confidence": record.confidence,
        "tags": list(record.tags),
        "source": None if record.source is None else record.source.value,
        "summary": record.summary,
        "structured": None if record.structured is None else dict(record.structured),
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "tenant_id": record.tenant_id,
        "relations": [
            {
                "type": relation.type.value,
                "target": relation.target,
                "target_memory_id": relation.target_memory_id,
                "target_path": relation.target_path,
                "dangling": relation.dangling,
            }
            for relation in record.relations
        ],
        "allowed_users": list(record.allowed_users),
        "allowed_roles": list(record.allowed_roles),
        "version": record.version,
        "last_accessed": format_timestamp(record.last_accessed),
        "decay_score": record.decay_score,
    }
