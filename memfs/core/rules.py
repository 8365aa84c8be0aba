"""Pure validation of paths, content, metadata and store fields, and the slug rule.

Every rule here comes from SPEC §1 ("Validation rules, strictest union of the
sources") unless its docstring names another source. Functions raise the typed
errors of :mod:`memfs.core.errors` and never touch I/O.
"""

from __future__ import annotations

import codecs
import enum
import fnmatch
import hashlib
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, NamedTuple

from memfs.core.config import (
    MAX_CONTENT_BYTES,
    MAX_INSTRUCTIONS_CHARS,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_PATH_BYTES,
    MAX_PATH_SEGMENTS,
    MAX_SEGMENT_BYTES,
    MAX_STORE_DESCRIPTION_CHARS,
    MAX_STORE_NAME_CHARS,
    MAX_VERSION_RETENTION_S,
)
from memfs.core.content import Content
from memfs.core.errors import (
    ContentTooLarge,
    InvalidContent,
    InvalidInput,
    InvalidMetadata,
    InvalidPath,
    InvalidStoreField,
    PathTooLong,
)

__all__ = [
    "MetadataProblem",
    "StoreSpec",
    "check_content_fragment",
    "check_content_size",
    "content_from_bytes",
    "content_from_text",
    "is_scratch_name",
    "metadata_problems",
    "format_duration_s",
    "parse_duration_s",
    "parse_retention",
    "parse_store_spec",
    "slugify",
    "unique_slugs",
    "validate_content",
    "validate_content_bytes",
    "validate_directory_path",
    "validate_instructions",
    "validate_metadata",
    "validate_path",
    "validate_path_prefix",
    "validate_retention_s",
    "validate_segment",
    "validate_store_description",
    "validate_store_name",
    "validate_pair",
]

_LINE_SEPARATORS = frozenset("\u2028\u2029")
# Content may hold these control characters and no other in U+0000–U+001F, U+007F.
_ALLOWED_CONTENT_CONTROLS = frozenset("\n\r\t")
_FORBIDDEN_CONTENT_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# The same rule on encoded bytes, plus bytes that occur in no UTF-8 sequence (0xC0, 0xC1,
# 0xF5-0xFF). None of them can be half of a character split across two writes, so a
# fragment of content holding one is refused on its own (SPEC §4: EILSEQ "at write").
_FORBIDDEN_CONTENT_BYTES_RE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\xc0\xc1\xf5-\xff]")


def _segment_problem(segment: str) -> str | None:
    """Returns why ``segment`` is not a valid path segment, or None (SPEC §1 path rules).

    Length is checked separately because it maps to another errno (ENAMETOOLONG).
    """
    if segment == "":
        return "empty segment"
    if segment in (".", ".."):
        return f"segment {segment!r} is not allowed"
    if segment != segment.strip():
        return f"segment {segment!r} has leading or trailing whitespace"
    if "\\" in segment:
        return f"segment {segment!r} contains a backslash"
    for ch in segment:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf") or ch in _LINE_SEPARATORS:
            return f"segment {segment!r} contains the forbidden character U+{ord(ch):04X}"
    if not unicodedata.is_normalized("NFC", segment):
        return f"segment {segment!r} is not in Unicode NFC"
    return None


def validate_segment(segment: str) -> str:
    """Checks one path segment (a file or directory name) against SPEC §1.

    Args:
        segment: one name, without ``/``.

    Returns:
        ``segment`` unchanged.

    Raises:
        PathTooLong: the segment is over 255 UTF-8 bytes (Linux NAME_MAX).
        InvalidPath: empty, ``.``/``..``, edge whitespace, ``\\``, NUL, a Cc/Cf
            character, U+2028/U+2029, not NFC, or contains ``/``.
    """
    try:
        encoded = segment.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidPath(f"invalid path: segment {segment!r} is not valid UTF-8") from exc
    if len(encoded) > MAX_SEGMENT_BYTES:
        raise PathTooLong(f"path segment is longer than {MAX_SEGMENT_BYTES} bytes")
    if "/" in segment:
        raise InvalidPath(f"segment {segment!r} contains '/'")
    problem = _segment_problem(segment)
    if problem is not None:
        raise InvalidPath(f"invalid path: {problem}")
    return segment


def validate_path(path: object) -> str:
    """Checks a memory path against SPEC §1 and returns it unchanged (never normalized).

    Args:
        path: the candidate, e.g. ``"/projects/foo/notes.md"``.

    Returns:
        The same string.

    Raises:
        InvalidPath: not a string, no leading ``/``, a trailing ``/``, or a segment
            breaking a rule (see :func:`validate_segment`).
        PathTooLong: over 1,024 UTF-8 bytes, more than 20 segments, or a segment over
            255 bytes (one rule for every too-long path: ``ENAMETOOLONG`` through a
            mount, SPEC §4 errno table).
    """
    if not isinstance(path, str):
        raise InvalidPath("path must be a string")
    if not path.startswith("/"):
        raise InvalidPath(f"path {path!r} must start with '/'")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidPath(f"path {path!r} is not valid UTF-8") from exc
    if size > MAX_PATH_BYTES:
        raise PathTooLong(f"path is {size} bytes; the limit is {MAX_PATH_BYTES}")
    segments = path[1:].split("/")
    if len(segments) > MAX_PATH_SEGMENTS:
        raise PathTooLong(f"path has {len(segments)} segments; the limit is {MAX_PATH_SEGMENTS}")
    if path.endswith("/"):
        raise InvalidPath(f"path {path!r} must not end with '/'")
    for segment in segments:
        validate_segment(segment)
    return path


def validate_directory_path(path: object) -> str:
    """Checks the path of a directory a mount is asked to make (``mkdir``): a path
    (:func:`validate_path`) that could still hold a file, so at most 19 segments and
    1,022 bytes — a file in it adds a segment of at least one byte and its ``/``, and a
    directory that no file can ever go in would be a promise the store can't keep
    (SPEC §1: at most 20 segments).

    Returns:
        ``path`` unchanged.

    Raises:
        PathTooLong: more than 19 segments or 1,022 bytes (``ENAMETOOLONG``), or what
            :func:`validate_path` raises.
        InvalidPath: as :func:`validate_path`.
    """
    validate_path(path)
    assert isinstance(path, str)
    segments = path.count("/")
    if segments >= MAX_PATH_SEGMENTS:
        raise PathTooLong(
            f"directory path has {segments} segments; a file in it would have "
            f"{segments + 1} and the limit is {MAX_PATH_SEGMENTS}"
        )
    size = len(path.encode("utf-8"))
    if size + len("/x") > MAX_PATH_BYTES:
        raise PathTooLong(
            f"directory path is {size} bytes; a file in it would be over the limit of "
            f"{MAX_PATH_BYTES}"
        )
    return path


def validate_path_prefix(prefix: object) -> str:
    """Checks a listing prefix: ``/`` or a valid path followed by ``/`` (SPEC §2 listing).

    Raises:
        InvalidPath: the prefix does not start and end with ``/`` or its segments are invalid.
    """
    if not isinstance(prefix, str) or not prefix.startswith("/") or not prefix.endswith("/"):
        raise InvalidPath(f"path_prefix {prefix!r} must start and end with '/'")
    if prefix != "/":
        validate_path(prefix[:-1])
    return prefix


def validate_content_bytes(data: bytes) -> str:
    """Decodes and checks bytes written through a mount (SPEC §1 content rules, §4 EILSEQ).

    Args:
        data: the whole file content.

    Returns:
        The decoded text.

    Raises:
        InvalidContent: not valid UTF-8, or a forbidden control character.
        ContentTooLarge: more than 102,400 bytes whose first 102,400 are text. SPEC §4's
            order of refusals puts not-text (EILSEQ) before too large (EFBIG), so a big
            binary renamed into a store says it is not text, as a ``cp`` of it does;
            judged on that bounded prefix, where a character cut at its end (a file read
            up to the limit, as import does) is no fault, and nothing more is decoded.
    """
    if len(data) > MAX_CONTENT_BYTES:
        _check_text(data[: MAX_CONTENT_BYTES + 1], final=False)
        check_content_size(len(data))
    return _check_text(data, final=True)


def _check_text(data: bytes, *, final: bool) -> str:
    """``data`` decoded as UTF-8 and checked for forbidden controls; with ``final``
    False an incomplete character at its end is left out, not refused.

    Raises:
        InvalidContent: naming the first fault.
    """
    try:
        if final:
            text = data.decode("utf-8")
        else:
            text = codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError as exc:
        raise InvalidContent(f"content is not valid UTF-8 text (byte offset {exc.start})") from exc
    _check_controls(text)
    return text


def content_from_bytes(data: bytes) -> Content:
    """Checks bytes written through a mount once (SPEC §1 content rules, §4 EILSEQ) and
    keeps them with their text and SHA-256: the one conversion and hash of a commit.

    Raises:
        InvalidContent: not valid UTF-8, or a forbidden control character.
        ContentTooLarge: more than 102,400 bytes (checked last: SPEC §4 order of
            refusals).
    """
    text = validate_content_bytes(data)
    return Content(text, data, hashlib.sha256(data).hexdigest())


def content_from_text(content: object) -> Content:
    """Checks memory content given as text (SPEC §1 content rules) and keeps it with its
    UTF-8 bytes and their SHA-256.

    Raises:
        InvalidContent: not a string, a lone surrogate, or a forbidden control character.
        ContentTooLarge: more than 102,400 bytes once encoded as UTF-8.
    """
    if not isinstance(content, str):
        raise InvalidContent("content must be a string")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidContent("content is not valid Unicode (lone surrogate)") from exc
    check_content_size(len(data))
    _check_controls(content)
    return Content(content, data, hashlib.sha256(data).hexdigest())


def check_content_size(size_bytes: int) -> None:
    """Checks a content size in bytes (SPEC §1 content rules: at most 102,400 bytes).

    Raises:
        ContentTooLarge: over the limit.
    """
    if size_bytes > MAX_CONTENT_BYTES:
        raise ContentTooLarge(
            f"content is {size_bytes} bytes; the limit is {MAX_CONTENT_BYTES} bytes"
        )


def check_content_fragment(data: bytes, offset: int = 0) -> None:
    """Checks a fragment of encoded content (one write) for bytes that can never be part
    of valid content wherever the fragment lands (SPEC §1 content rules, §4 EILSEQ at
    write): forbidden controls and bytes that occur in no UTF-8 sequence. Whole-content
    rules (valid UTF-8, size) are :func:`validate_content_bytes`'s. One regex scan.

    Args:
        data: the bytes.
        offset: where ``data`` starts in the content (named in the message).

    Raises:
        InvalidContent: naming the first such byte and its offset.
    """
    match = _FORBIDDEN_CONTENT_BYTES_RE.search(data)
    if match is not None:
        raise InvalidContent(
            f"byte 0x{match.group()[0]:02x} at offset {offset + match.start()} "
            "can't be part of UTF-8 text content (only \\t, \\n, \\r controls)"
        )


def validate_content(content: object) -> str:
    """Checks memory content given as text (SPEC §1 content rules).

    Returns:
        ``content`` unchanged.

    Raises:
        InvalidContent: not a string, a lone surrogate, or a forbidden control character.
        ContentTooLarge: more than 102,400 bytes once encoded as UTF-8.
    """
    if not isinstance(content, str):
        raise InvalidContent("content must be a string")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidContent("content is not valid Unicode (lone surrogate)") from exc
    check_content_size(size)
    _check_controls(content)
    return content


def _check_controls(text: str) -> None:
    match = _FORBIDDEN_CONTENT_RE.search(text)
    if match is not None:
        raise InvalidContent(
            f"content contains the control character U+{ord(match.group()):04X} "
            f"at character offset {match.start()}; only \\n, \\r and \\t are allowed"
        )


class MetadataProblem(enum.Enum):
    """What kind of SPEC §1 metadata rule an entry breaks (edges map kinds to errnos)."""

    TOO_MANY_KEYS = "too_many_keys"  # more than 16 keys
    TOO_LONG = "too_long"  # a key over 64 or a value over 512 characters
    INVALID = "invalid"  # empty key, NUL, not a string


def metadata_problems(
    metadata: Mapping[Any, object], *, allow_null_values: bool = False
) -> list[tuple[MetadataProblem, str]]:
    """Every SPEC §1 metadata rule ``metadata`` breaks, as ``(kind, message)`` pairs
    (empty when it is valid). See :func:`validate_metadata` for ``allow_null_values``."""
    problems: list[tuple[MetadataProblem, str]] = []
    # A patch may name more keys than the limit (removals): the merged result is what
    # counts, and the caller checks it again (api-contract §5.3).
    if len(metadata) > MAX_METADATA_KEYS and not allow_null_values:
        problems.append((MetadataProblem.TOO_MANY_KEYS,
                         f"{len(metadata)} keys; at most {MAX_METADATA_KEYS} are allowed"))
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            problems.append((MetadataProblem.INVALID,
                             f"key {key!r} must be 1 to {MAX_METADATA_KEY_CHARS} characters"))
        elif len(key) > MAX_METADATA_KEY_CHARS:
            problems.append((MetadataProblem.TOO_LONG,
                             f"key {key!r} must be 1 to {MAX_METADATA_KEY_CHARS} characters"))
        elif "\x00" in key:
            problems.append((MetadataProblem.INVALID,
                             f"key {key!r} must not contain the NUL character"))
        if value is None and allow_null_values:
            continue
        if not isinstance(value, str):
            problems.append((MetadataProblem.INVALID, f"value of {key!r} must be a string"))
        elif "\x00" in value:
            problems.append((MetadataProblem.INVALID,
                             f"value of {key!r} must not contain the NUL character"))
        elif len(value) > MAX_METADATA_VALUE_CHARS:
            problems.append((MetadataProblem.TOO_LONG,
                             f"value of {key!r} is {len(value)} characters; "
                             f"at most {MAX_METADATA_VALUE_CHARS} are allowed"))
    return problems


def validate_metadata(
    metadata: object, *, allow_null_values: bool = False
) -> dict[str, str | None]:
    """Checks a metadata mapping and names every problem at once (SPEC §1 metadata).

    Args:
        metadata: the candidate mapping.
        allow_null_values: True for a patch, where ``None`` removes a key; the key count
            is then not checked (the caller checks the merged result).

    Returns:
        A plain dict copy.

    Raises:
        InvalidMetadata: with one entry per problem (too many keys, key length, value
            type or length); :func:`metadata_problems` gives their kinds.
    """
    if not isinstance(metadata, Mapping):
        raise InvalidMetadata(["metadata must be an object of string keys and string values"])
    problems = metadata_problems(metadata, allow_null_values=allow_null_values)
    if problems:
        raise InvalidMetadata([message for _, message in problems])
    return dict(metadata)


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def validate_store_name(name: object) -> str:
    """Checks a store name: 1–255 characters, no control characters (SPEC §1 objects).

    Raises:
        InvalidStoreField: the rule broken, named.
    """
    if not isinstance(name, str):
        raise InvalidStoreField("name must be a string")
    if not 1 <= len(name) <= MAX_STORE_NAME_CHARS:
        raise InvalidStoreField(f"name must be 1 to {MAX_STORE_NAME_CHARS} characters")
    if _has_control(name):
        raise InvalidStoreField("name must not contain control characters")
    return name


def validate_store_description(description: object) -> str:
    """Checks a store description: a string of at most 1,024 characters (SPEC §1 objects).

    Raises:
        InvalidStoreField: not a string or too long.
    """
    if not isinstance(description, str):
        raise InvalidStoreField("description must be a string")
    if "\x00" in description:
        raise InvalidStoreField("description must not contain the NUL character")
    if len(description) > MAX_STORE_DESCRIPTION_CHARS:
        raise InvalidStoreField(
            f"description is {len(description)} characters; "
            f"at most {MAX_STORE_DESCRIPTION_CHARS} are allowed"
        )
    return description


def validate_instructions(instructions: object) -> str | None:
    """Checks per-attachment instructions: None or at most 4,096 characters (SPEC §1 limits).

    Raises:
        InvalidInput: not a string or too long.
    """
    if instructions is None:
        return None
    if not isinstance(instructions, str):
        raise InvalidInput("instructions must be a string")
    if "\x00" in instructions:
        raise InvalidInput("instructions must not contain the NUL character")
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        raise InvalidInput(
            f"instructions are {len(instructions)} characters; "
            f"at most {MAX_INSTRUCTIONS_CHARS} are allowed"
        )
    return instructions


_SLUG_RUN_RE = re.compile(r"[^a-z0-9]+")


def slugify(name: str) -> str:
    """The mount directory name of a store (SPEC §4 layouts, api-contract §5.1).

    The name is lowercased and every run of characters other than ASCII letters and
    digits becomes one ``-``; ``-`` at either end is dropped ("User Preferences" →
    ``user-preferences``). A name with no ASCII letter or digit gives ``store``.
    """
    slug = _SLUG_RUN_RE.sub("-", name.lower()).strip("-")
    return slug or "store"


def unique_slugs(names_in_order: list[tuple[str, str]]) -> dict[str, str]:
    """Slugs for several stores, with a stable suffix on collisions (SPEC §4 layouts).

    Args:
        names_in_order: ``(store_id, name)`` pairs in attachment order.

    Returns:
        ``{store_id: slug}``; the first store keeps the bare slug, later ones get
        ``-2``, ``-3``, … in attachment order, so the result depends only on the input.
    """
    taken: set[str] = set()
    result: dict[str, str] = {}
    for store_id, name in names_in_order:
        base = slugify(name)
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        result[store_id] = slug
    return result


# SPEC §4 "Atomic save": names editors and tools use for scratch files. They live only
# in the mount and never reach the store unless renamed to a real name.
_SCRATCH_PATTERNS = (
    "4913",  # vim's probe file
    "*~",  # backup files
    ".#*",  # emacs lock files
    "#*#",  # emacs auto-save files
    ".*.sw?",  # vim swap files (.x.swp, .x.swo, …)
    ".*.sw??",
    "*.swp",
    "sed??????",  # GNU sed -i
    ".*.??????",  # rsync's .name.XXXXXX
    "*.tmp",
    "*.lock",  # lock files (git's config.lock, …): renamed over their target or removed
)


def is_scratch_name(name: str) -> bool:
    """True when ``name`` (one path segment) is an editor/tool scratch name (SPEC §4).

    Scratch files are held by the mount and never become memories unless renamed to a
    name for which this returns False.
    """
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _SCRATCH_PATTERNS)


class StoreSpec(NamedTuple):
    """One ``--store NAME_OR_ID[:ro|:rw]`` argument, parsed (:func:`parse_store_spec`)."""

    name_or_id: str
    read_only: bool


def parse_store_spec(spec: str) -> StoreSpec:
    """``NAME_OR_ID[:ro|:rw]`` → the store reference and its access: the one syntax of
    ``memfs mount --store``, ``memfs session create --store`` and ``memfs prompt
    --store``.

    ``notes:ro`` is ``notes`` read-only; ``notes:rw`` and ``notes`` are read-write. Only
    a final, lower-case ``:ro`` or ``:rw`` is a suffix: ``a:b`` names the store ``a:b``,
    ``notes:RO`` the store ``notes:RO``, and ``x:ro:ro`` the store ``x:ro`` read-only
    (a store whose name ends in ``:ro`` is reached that way, or by its id).

    Raises:
        InvalidInput: nothing before the suffix (``""``, ``":ro"``, ``":rw"``).
    """
    name, access = spec, False
    for suffix, read_only in ((":ro", True), (":rw", False)):
        if spec.endswith(suffix):
            name, access = spec[: -len(suffix)], read_only
            break
    if not name:
        raise InvalidInput(
            f"--store {spec!r}: give a store name or id (optionally followed by :ro or :rw)"
        )
    return StoreSpec(name, access)


_PAIR_ID_RES = {
    "identity_id": re.compile(r"idn_[A-Za-z0-9_-]{1,64}"),
    "template_id": re.compile(r"tmpl_[A-Za-z0-9_-]{1,64}"),
}


def validate_pair(identity_id: object, template_id: object) -> tuple[str, str]:
    """Checks an (identity, template) pair (SPEC §8): ids chosen by the caller,
    ``idn_`` and ``tmpl_`` followed by 1–64 ASCII letters, digits, ``_`` or ``-``.

    Raises:
        InvalidInput: the id that breaks the rule, named.
    """
    for field, value in (("identity_id", identity_id), ("template_id", template_id)):
        pattern = _PAIR_ID_RES[field]
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            prefix = pattern.pattern.split("_", 1)[0]
            raise InvalidInput(
                f"{field} must be {prefix}_ followed by 1 to 64 ASCII letters, digits, "
                f"'_' or '-', not {value!r}"
            )
    return str(identity_id), str(template_id)


# Units of a duration such as ``30d`` (seconds each).
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 24 * 3600, "w": 7 * 24 * 3600}
_DURATION = re.compile(r"([0-9]{1,12})([smhdw]?)")


def parse_duration_s(text: str) -> int:
    """A duration such as ``30d``, ``12h``, ``90m``, ``2w``, ``45s`` or ``45`` (seconds)
    in seconds: the one parser of the CLI's durations (``--ttl 12h``, ``--retention
    30d``, ``--since 1h``, ``--prune-interval 10m``).

    Raises:
        InvalidInput: anything else (the message shows the accepted forms).
    """
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise InvalidInput(
            f"{text!r} is not a duration: give a whole number of seconds, or a number "
            "with a unit, s, m, h, d or w (e.g. 30d, 12h)"
        )
    return int(match.group(1)) * _DURATION_UNITS[match.group(2) or "s"]


def validate_retention_s(retention_s: object) -> int | None:
    """Checks a store's version retention period in seconds (SPEC §2 retention): None
    keeps every version forever; else an integer from 1 second to 100 years.

    Raises:
        InvalidInput: not an integer (or None), or out of range.
    """
    if retention_s is None:
        return None
    if not isinstance(retention_s, int) or isinstance(retention_s, bool):
        raise InvalidInput("version retention must be a whole number of seconds or null")
    if not 1 <= retention_s <= MAX_VERSION_RETENTION_S:
        raise InvalidInput(
            f"version retention must be from 1 to {MAX_VERSION_RETENTION_S} seconds "
            f"(100 years), or null to keep every version; got {retention_s}"
        )
    return retention_s


def parse_retention(text: str) -> int | None:
    """A retention period as the CLI takes it (``--retention 30d``): a duration in
    seconds, or None for ``forever`` (keep every version, the default; SPEC §2).

    Raises:
        InvalidInput: neither, or a period ``validate_retention_s`` refuses.
    """
    if text.strip().lower() == "forever":
        return None
    try:
        return validate_retention_s(parse_duration_s(text))
    except InvalidInput as exc:
        raise InvalidInput(f"--retention: {exc} (or 'forever')") from None


def format_duration_s(seconds: int) -> str:
    """``2592000`` → ``30d``: the largest unit of :func:`parse_duration_s` that divides
    it (its inverse)."""
    for unit, size in sorted(_DURATION_UNITS.items(), key=lambda item: -item[1]):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
