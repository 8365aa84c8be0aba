"""Points of a store's history (SPEC §10): the one parser of the text that names one.

A point names one moment of one store's history, and is written as one of:

=====================  ==========================================================
``now``                the store as it is
an RFC 3339 time       ``2026-12-06T01:02:03Z``, ``2026-12-06T03:02:03+02:00``, or
                       a bare date ``2026-12-06`` (its midnight UTC): the store
                       as it was at that instant (every version written at or
                       before it counts)
a version id           ``memver_…``: the moment right after that version
a snapshot             its ``snap_…`` id, or anything else that is a valid snapshot
                       name (:func:`validate_snapshot_name`)
=====================  ==========================================================

:func:`parse_point` tells them apart by their form alone (a snapshot can't be named
``now``, like a time, a version id or a snapshot id, so every text has one reading)
and raises :class:`~memfs.core.errors.InvalidPoint` naming what is wrong. Resolving a
point to the store's sequence number (whether the snapshot or version exists, whether
the time is in the future; a time before the store's first version is the empty
store) is the engine's (:mod:`memfs.store.history`). Snapshot names starting with
``auto-`` are memfs's own (the automatic snapshots before a bulk change): a point may
name one, a user may not create one (:func:`validate_snapshot_name`).

:func:`split_store_point` reads the ``STORE@POINT`` form the CLI takes (``memfs diff``,
``memfs mount --store NAME@POINT``); :func:`point_label` names a point in one path
segment (the directory of an as-of attachment).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from memfs.core import rules
from memfs.core.errors import InvalidInput, InvalidPath, InvalidPoint
from memfs.core.ids import PREFIXES

__all__ = [
    "AUTO_PREFIX",
    "NOW",
    "Point",
    "PointKind",
    "parse_mount_store",
    "parse_point",
    "parse_time",
    "is_snapshot_id",
    "point_label",
    "split_store_point",
    "validate_snapshot_name",
]

_VERSION_PREFIX = PREFIXES["version"]
_SNAPSHOT_PREFIX = PREFIXES["snapshot"]
# The prefix of the snapshots memfs takes itself (memfs.store.snapshots.auto_snapshot).
AUTO_PREFIX = "auto-"
# What looks like a time: a date first. Such a text is a time or an error, never a
# snapshot name (validate_snapshot_name refuses names of this form).
_TIME_LIKE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}")
# RFC 3339 date-time (section 5.6), with 't'/'z' accepted as the RFC allows, or a
# full date alone.
_RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:[Zz]|[+-][0-9]{2}:[0-9]{2}))?$"
)
_VERSION_ID = re.compile(r"^memver_[0-9a-z]{1,64}$")
_SNAPSHOT_ID = re.compile(r"^snap_[0-9a-z]{1,64}$")
_OFFSET = re.compile(r"([+-])([0-9]{2}):([0-9]{2})$")


class PointKind(enum.StrEnum):
    """The four ways to write a point (SPEC §10); a snapshot by name or ``snap_`` id."""

    NOW = "now"
    TIME = "time"
    VERSION = "version"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True)
class Point:
    """One parsed point of history.

    Attributes:
        kind: which form it was written in.
        text: the text as given (what error messages quote).
        time: the instant, UTC, for ``TIME``; None otherwise.
        name: the version id (``VERSION``), or the snapshot name or ``snap_`` id
            (``SNAPSHOT``); None otherwise.
    """

    kind: PointKind
    text: str
    time: datetime | None = None
    name: str | None = None

    def __str__(self) -> str:
        return self.text


NOW = Point(PointKind.NOW, "now")


def parse_time(text: str) -> datetime:
    """An RFC 3339 date-time (or a full date: its midnight UTC) → an aware UTC datetime.

    Args:
        text: e.g. ``2026-12-06T01:02:03.5Z``, ``2026-12-06T03:02:03+02:00``,
            ``2026-12-06``. Fractions finer than microseconds are truncated.

    Raises:
        InvalidPoint: not of that form, or no such date or time (``2026-02-30``); the
            message quotes ``text``.
    """
    if not _RFC3339.match(text):
        raise InvalidPoint(
            f"point {text!r} is not an RFC 3339 time (e.g. 2026-12-06T01:02:03Z; "
            "a time needs its offset, Z for UTC)"
        )
    offset = _OFFSET.search(text)
    if offset is not None and (int(offset.group(2)) > 23 or int(offset.group(3)) > 59):
        raise InvalidPoint(
            f"point {text!r}: UTC offset {offset.group(0)} is out of range "
            "(-23:59 to +23:59; Z for UTC)"
        )
    normalized = text.replace("t", "T").replace("z", "Z").replace(" ", "T")
    fraction = re.search(r"\.([0-9]+)", normalized)
    if fraction is not None and len(fraction.group(1)) > 6:  # fromisoformat takes ≤ 6
        normalized = normalized.replace(fraction.group(0), "." + fraction.group(1)[:6])
    try:
        parsed = datetime.fromisoformat(normalized)
    except ValueError as exc:
        raise InvalidPoint(f"point {text!r} is not a valid time: {exc}") from exc
    if parsed.tzinfo is None:  # a bare date
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def validate_snapshot_name(name: object, *, automatic: bool = True) -> str:
    """Checks a snapshot name (SPEC §10: the path-segment rules of SPEC §1, unique per
    store), so that it also reads back as a snapshot when written as a point: not
    ``now`` in any case, not starting like a date, a version id or a snapshot id, no ``@``
    (``STORE@POINT``).

    Args:
        name: the name.
        automatic: whether ``auto-…`` is allowed: a name memfs gave its own snapshot
            (True: reading one, a point naming one); False for a name a user gives.

    Returns:
        ``name`` unchanged.

    Raises:
        InvalidInput: the rule it breaks, named (not a string, a path-segment rule, a
            reserved form); ``error_code`` ``invalid_snapshot_name``.
    """
    if not isinstance(name, str):
        raise InvalidInput("snapshot name must be a string", code="invalid_snapshot_name")
    try:
        rules.validate_segment(name)
    except InvalidPath as exc:
        raise _bad_name(f"{name!r}: {exc.message.removeprefix('invalid path: ')}") from exc
    if name.casefold() == "now":
        raise _bad_name(f"{name!r}: it names the present")
    if _TIME_LIKE.match(name):
        raise _bad_name(f"{name!r}: it would read as a time")
    if name.startswith(_VERSION_PREFIX):
        raise _bad_name(f"{name!r}: it would read as a version id")
    if name.startswith(_SNAPSHOT_PREFIX):
        raise _bad_name(f"{name!r}: it would read as a snapshot id")
    if "@" in name:
        raise _bad_name(f"{name!r}: '@' separates a store and a point")
    if not automatic and name.casefold().startswith(AUTO_PREFIX):
        raise _bad_name(
            f"{name!r}: names starting with {AUTO_PREFIX!r} are reserved for the snapshots "
            "memfs takes itself"
        )
    return name


def _bad_name(what: str) -> InvalidInput:
    return InvalidInput(f"invalid snapshot name {what}", code="invalid_snapshot_name")


def parse_point(text: object) -> Point:
    """Reads one point (SPEC §10) from its text; the one parser of points.

    Args:
        text: ``now``, an RFC 3339 time, a ``memver_…`` id, a snapshot name or a
            ``snap_…`` id.

    Returns:
        The :class:`Point`; not yet resolved against a store.

    Raises:
        InvalidPoint: the text is none of the four forms; the message quotes it and
            says which form it was taken for and what is wrong.
    """
    if not isinstance(text, str) or text == "":
        raise InvalidPoint(
            "a point must be 'now', an RFC 3339 time, a memver_ id or a snapshot name"
        )
    if text.casefold() == "now":  # no snapshot is named NOW or Now: each reads as now
        return NOW
    if _TIME_LIKE.match(text):
        return Point(PointKind.TIME, text, time=parse_time(text))
    if text.startswith(_VERSION_PREFIX):
        if not _VERSION_ID.match(text):
            raise InvalidPoint(f"point {text!r} is not a valid version id")
        return Point(PointKind.VERSION, text, name=text)
    if text.startswith(_SNAPSHOT_PREFIX):
        if not _SNAPSHOT_ID.match(text):
            raise InvalidPoint(f"point {text!r} is not a valid snapshot id")
        return Point(PointKind.SNAPSHOT, text, name=text)
    try:
        validate_snapshot_name(text)
    except InvalidInput as exc:
        raise InvalidPoint(
            f"point {text!r} is not 'now', an RFC 3339 time, a memver_ id or a snapshot "
            f"name ({exc.message})"
        ) from exc
    return Point(PointKind.SNAPSHOT, text, name=text)


def split_store_point(spec: str) -> tuple[str, Point | None]:
    """``STORE[@POINT]`` → the store reference and its parsed point (None: no ``@``).

    The point is what follows the last ``@`` (a point never holds one). A store whose
    name holds ``@`` is reached by its ``memstore_`` id, or with an explicit point
    (``a@b@now`` is the store ``a@b`` now).

    Raises:
        InvalidPoint: an empty store or point (``@now``, ``notes@``), or a bad point.
    """
    store, sep, point = spec.rpartition("@")
    if not sep:
        return spec, None
    if not store:
        raise InvalidPoint(f"{spec!r}: give a store before '@'")
    if not point:
        raise InvalidPoint(f"{spec!r}: give a point after '@' (e.g. now, a time, a snapshot)")
    return store, parse_point(point)



def is_snapshot_id(name: str) -> bool:
    """Whether a snapshot point is written as a ``snap_…`` id rather than a name (a
    snapshot name can't look like one: :func:`validate_snapshot_name`)."""
    return name.startswith(_SNAPSHOT_PREFIX)


def _compact_time(moment: datetime) -> str:
    """``2026-12-06T01:02:03.5Z`` → ``20261206T010203.500000Z`` (UTC; the fraction only
    when there is one)."""
    moment = moment.astimezone(UTC)
    text = moment.strftime("%Y%m%dT%H%M%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def point_label(point: Point, *, snapshot_name: str | None, resolved_at: datetime) -> str:
    """The point as one path segment (SPEC §10: an as-of attachment's directory is
    ``<store directory>@<label>``): stable (the same point gives the same label) and
    never mistaken for another point.

    ======================  ==================================================
    a snapshot (by name     its name: ``before-cleanup``
    or ``snap_…`` id)
    a version id            the id: ``memver_…``
    an RFC 3339 time        UTC, compact: ``20261206T010203Z`` (``.ffffffZ``
                            when it has a fraction)
    ``now``                 the moment it was resolved, the same way (the
                            view is fixed there: it shows what ``now`` was)
    ======================  ==================================================

    Args:
        point: the parsed point.
        snapshot_name: the snapshot's name when ``point`` names a snapshot (by id).
        resolved_at: when ``now`` was resolved (UTC).
    """
    if point.kind is PointKind.SNAPSHOT:
        return snapshot_name or str(point.name)
    if point.kind is PointKind.VERSION:
        return str(point.name)
    if point.kind is PointKind.TIME:
        assert point.time is not None
        return _compact_time(point.time)
    return _compact_time(resolved_at)


def parse_mount_store(argument: str) -> tuple[rules.StoreSpec, Point | None]:
    """``memfs mount --store NAME_OR_ID[@POINT][:ro|:rw]`` → the store reference and
    access (:func:`memfs.core.rules.parse_store_spec`) and the point of an as-of
    attachment (SPEC §10), None for the store as it is. A store with a point is
    read-only (``:ro`` may be given, ``:rw`` is refused); a store whose name holds
    ``@`` is mounted as it is by its ``memstore_`` id.

    Raises:
        InvalidPoint: an empty store or point, or a bad point (named).
        InvalidInput: nothing before the suffix; ``:rw`` with a point.
    """
    spec = rules.parse_store_spec(argument)
    store, point = split_store_point(spec.name_or_id)
    if point is None:
        return spec, None
    if argument.endswith(":rw"):
        raise InvalidInput(
            f"--store {argument!r}: a store as of a point is read-only (drop ':rw')"
        )
    return rules.StoreSpec(store, True), point
