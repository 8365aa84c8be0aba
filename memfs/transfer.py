"""Bulk import of a folder (or a JSON Lines file) into a store, and export back out.

Used by ``memfs import`` and ``memfs export`` and by the console's import and export
(:mod:`memfs.console.transfer`). There is no SQL here: every read and write is one
call into a :class:`~memfs.store.caller.Caller`'s facades (the engine itself for the
CLI; the signed-in credential's caller for the console, so its visibility and actor
apply), which enforce the SPEC §1 rules again; the checks
made here first only exist to name the problem of each refused file precisely and to
avoid reading files that cannot be stored.

Import mapping: ``DIR/a/b.txt`` becomes the memory ``<prefix>a/b.txt`` (prefix ``/`` by
default). A file is **refused**, with a reason, when it

- is not a regular file (or a symbolic link to one): directories behind symbolic links
  are not followed, special files are skipped;
- is hidden (a name starting with ``.``) unless ``include_hidden``; or is a scratch
  file of an editor or tool (``*~``, ``*.swp``, ``*.tmp`` …; SPEC §4 atomic save), which
  a mount would never store either;
- has a name that is not a valid memory path (SPEC §1 path rules: NFC, no control or
  format characters, no edge whitespace, segment ≤255 bytes, path ≤1,024 bytes, ≤20
  segments, valid UTF-8);
- is larger than 102,400 bytes, is not UTF-8 text or holds a forbidden control
  character (SPEC §1 content rules);
- collides with a memory already in the store at a parent or child path (SPEC §1:
  ``/a`` and ``/a/b`` can't coexist), or cannot be read.

A memory that already exists at the same path is updated only when its bytes differ
(SPEC §2: an update that changes nothing writes no version), with a ``content_sha256``
precondition so that a concurrent writer is never overwritten silently.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import io
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from memfs.core.config import MAX_CONTENT_BYTES
from memfs.core.errors import (
    ContentTooLarge,
    InvalidInput,
    MemfsError,
    NotFound,
    PathConflict,
    PreconditionFailed,
)
from memfs.core.model import Memory
from memfs.core.records import parse_record
from memfs.core.rules import (
    is_scratch_name,
    validate_content,
    validate_content_bytes,
    validate_metadata,
    validate_path,
    validate_path_prefix,
)
from memfs.store import Caller
from memfs.wire import memory_to_wire
from memfs.wire.records_seed import file_to_seed, is_seed_record, seed_id_of, seed_to_file

__all__ = [
    "MAX_ARCHIVE_ENTRIES",
    "ArchiveKind",
    "ExportOutcome",
    "ImportCandidate",
    "ImportOutcome",
    "ImportStatus",
    "archive_kind",
    "export_archive",
    "export_jsonl",
    "export_records_jsonl",
    "export_tree",
    "import_candidates",
    "plan_archive_import",
    "plan_directory_import",
    "plan_jsonl_import",
]


class ImportStatus(enum.StrEnum):
    """What happened to one imported file."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    REFUSED = "refused"


@dataclasses.dataclass(frozen=True)
class ImportCandidate:
    """One entry found in the import source, before anything is read or written.

    Attributes:
        source: how to name the entry to a human: the path relative to the imported
            folder (non-UTF-8 bytes shown as ``\\xNN``), or ``FILE:LINE`` for JSON Lines.
        path: the memory path it maps to — also for an entry refused for its kind
            (hidden, scratch name, link to a directory: the path it would have had; a
            directory's ends in ``/``) — or None when the name is not a valid path.
        file: the file to read, or None when ``content`` is given (JSON Lines) or the
            entry is refused already.
        content: the text of a JSON Lines record.
        metadata: memory metadata of a JSON Lines record.
        refusal: ``(code, reason)`` when the entry is refused without reading it.
    """

    source: str
    path: str | None
    file: Path | None = None
    content: str | None = None
    metadata: dict[str, str] | None = None
    refusal: tuple[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class ImportOutcome:
    """The result for one candidate.

    Attributes:
        source, path: as in :class:`ImportCandidate`.
        status: created, updated, unchanged or refused.
        code: for a refusal, the error code (``invalid_content``, ``content_too_large``,
            ``invalid_path``, ``path_too_long``, ``memory_path_conflict``, ``hidden``,
            ``scratch_name``, ``not_regular_file``, ``unreadable``, …).
        reason: for a refusal, one line saying why.
        memory_id, memory_version_id: the memory and its head after the import.
        size_bytes: content size in bytes, when known.
    """

    source: str
    path: str | None
    status: ImportStatus
    code: str | None = None
    reason: str | None = None
    memory_id: str | None = None
    memory_version_id: str | None = None
    size_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``status`` as its string value)."""
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        return data


def _display(relative: str) -> str:
    """A printable form of a file name that may hold undecodable bytes (surrogateescape)."""
    return os.fsencode(relative).decode("utf-8", "backslashreplace")


def _join(prefix: str, relative_parts: Iterable[str]) -> str:
    return prefix + "/".join(relative_parts)


def _would_be_path(prefix: str, relative_parts: Iterable[str], *, directory: bool) -> str | None:
    """The memory path (``directory``: the memory directory, ending in ``/``) an entry
    refused for its kind rather than its name would have had, or None if its name is not
    a valid path either (SPEC §1)."""
    path = _join(prefix, relative_parts)
    try:
        if directory:
            validate_path_prefix(path + "/")
        else:
            validate_path(path)
    except InvalidInput:
        return None
    return path + "/" if directory else path


def plan_directory_import(
    directory: Path, *, prefix: str = "/", include_hidden: bool = False
) -> list[ImportCandidate]:
    """Walks ``directory`` and maps every entry to a memory path (see the module docstring).

    Only names and ``stat`` results are looked at here; contents are read by
    :func:`import_candidates`, one file at a time.

    Args:
        directory: the folder to import.
        prefix: the memory directory to import into, ``/`` or ``/x/y/`` (must end with
            ``/``; SPEC §2 listing prefix rule).
        include_hidden: also import names starting with ``.``.

    Returns:
        The candidates in byte order of their source path, refused ones included.

    Raises:
        InvalidPath: ``prefix`` is not a valid directory prefix.
        NotADirectoryError, FileNotFoundError, PermissionError: ``directory`` can't be
            listed (the caller reports it; nothing was imported).
    """
    validate_path_prefix(prefix)
    root = Path(directory)
    if not root.is_dir():
        if root.exists():
            raise NotADirectoryError(f"{directory} is not a directory")
        raise FileNotFoundError(f"{directory} does not exist")
    os.listdir(root)  # raises PermissionError now rather than yielding nothing
    candidates: list[ImportCandidate] = []
    walk_errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=walk_errors.append):
        here = Path(dirpath)
        relative_dir = here.relative_to(root).parts
        kept: list[str] = []
        for name in sorted(dirnames):
            relative = "/".join((*relative_dir, name))
            would_be = _would_be_path(prefix, (*relative_dir, name), directory=True)
            if name.startswith(".") and not include_hidden:
                candidates.append(
                    ImportCandidate(
                        _display(relative) + "/",
                        would_be,
                        refusal=("hidden", "hidden directory, not imported (--include-hidden)"),
                    )
                )
            elif (here / name).is_symlink():
                candidates.append(
                    ImportCandidate(
                        _display(relative) + "/",
                        would_be,
                        refusal=("not_regular_file", "symbolic link to a directory, not followed"),
                    )
                )
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            candidates.append(
                _file_candidate(here / name, (*relative_dir, name), prefix, include_hidden)
            )
    for error in walk_errors:
        relative = os.path.relpath(error.filename, root) if error.filename else "?"
        candidates.append(
            ImportCandidate(
                _display(relative) + "/",
                None,
                refusal=("unreadable", f"cannot list directory: {error.strerror}"),
            )
        )
    candidates.sort(key=lambda c: c.source.encode())
    return candidates


def _file_candidate(
    file: Path, relative_parts: tuple[str, ...], prefix: str, include_hidden: bool
) -> ImportCandidate:
    relative = "/".join(relative_parts)
    source = _display(relative)
    name = relative_parts[-1]
    if name.startswith(".") and not include_hidden:
        return ImportCandidate(
            source,
            _would_be_path(prefix, relative_parts, directory=False),
            refusal=("hidden", "hidden file, not imported (--include-hidden)"),
        )
    if is_scratch_name(name):
        return ImportCandidate(
            source,
            _would_be_path(prefix, relative_parts, directory=False),
            refusal=(
                "scratch_name",
                "editor or tool scratch file name; memfs never stores these (SPEC §4)",
            ),
        )
    try:
        validate_path(_join(prefix, relative_parts))
    except InvalidInput as exc:
        return ImportCandidate(source, None, refusal=(exc.code, exc.message))
    path = _join(prefix, relative_parts)
    try:
        info = file.stat()  # follows a symbolic link to its target
    except FileNotFoundError:
        return ImportCandidate(source, path, refusal=("not_regular_file", "broken symbolic link"))
    except OSError as exc:
        return ImportCandidate(source, path, refusal=("unreadable", str(exc.strerror)))
    if not stat.S_ISREG(info.st_mode):
        return ImportCandidate(source, path, refusal=("not_regular_file", "not a regular file"))
    if info.st_size > MAX_CONTENT_BYTES:
        error = ContentTooLarge(
            f"file is {info.st_size:,} bytes; the limit is {MAX_CONTENT_BYTES:,} bytes"
        )
        return ImportCandidate(source, path, refusal=(error.code, error.message))
    return ImportCandidate(source, path, file=file)


def plan_jsonl_import(
    lines: Iterable[str], *, source_name: str, prefix: str = "/"
) -> list[ImportCandidate]:
    """Reads memory records from JSON Lines, as written by :func:`export_jsonl` or
    :func:`export_records_jsonl`.

    Each line is an object with ``path`` and ``content`` (strings) and optionally
    ``metadata``; other fields (``id``, timestamps …) are ignored, so the memory wire
    objects of api-contract §4.3 round-trip. Blank lines are skipped. A record's path
    ``/a/b`` is imported at ``<prefix>a/b``. A line in seed 002's record shape
    (:func:`memfs.wire.records_seed.is_seed_record`) becomes a record file with its header
    (:func:`memfs.wire.records_seed.seed_to_file`), whose rules the engine checks at the write.

    Raises:
        InvalidPath: ``prefix`` is not ``/`` or a valid directory prefix.

    Returns:
        One candidate per non-blank line; a malformed line becomes a refused candidate
        named ``SOURCE:LINE``.
    """
    validate_path_prefix(prefix)
    candidates: list[ImportCandidate] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        source = f"{source_name}:{number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            candidates.append(
                ImportCandidate(source, None, refusal=("invalid_json", f"not JSON: {exc}"))
            )
            continue
        if is_seed_record(record):
            candidates.append(_seed_candidate(source, record, prefix))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("path"), str):
            candidates.append(
                ImportCandidate(source, None, refusal=("invalid_record", "no string field 'path'"))
            )
            continue
        path = prefix[:-1] + record["path"]
        content = record.get("content")
        if not isinstance(content, str):
            candidates.append(
                ImportCandidate(
                    source, path, refusal=("invalid_record", "no string field 'content'")
                )
            )
            continue
        metadata = record.get("metadata") or None
        try:
            validate_path(path)
            if metadata is not None:
                validate_metadata(metadata)
        except InvalidInput as exc:
            candidates.append(ImportCandidate(source, path, refusal=(exc.code, exc.message)))
            continue
        candidates.append(ImportCandidate(source, path, content=content, metadata=metadata))
    return candidates


def _seed_candidate(source: str, record: dict[str, Any], prefix: str) -> ImportCandidate:
    """The candidate of one seed 002 record line (refused with the reason of a bad shape)."""
    try:
        path, content = seed_to_file(record, prefix)
        validate_path(path)
    except InvalidInput as exc:
        return ImportCandidate(source, None, refusal=(exc.code, exc.message))
    return ImportCandidate(source, path, content=content)


def import_candidates(
    caller: Caller,
    store_id: str,
    candidates: Iterable[ImportCandidate],
) -> Iterator[ImportOutcome]:
    """Writes the candidates into a store, one transaction each, yielding each outcome.

    Existing memories are updated only when their bytes differ, under a
    ``content_sha256`` precondition. Per-file problems become ``refused`` outcomes.

    Args:
        caller: who writes (its actor is ``created_by`` of every version written) and
            what it sees (``engine.for_caller(actor=…)``).
        store_id: the target store's id.
        candidates: from :func:`plan_directory_import` or :func:`plan_jsonl_import`.

    Yields:
        One :class:`ImportOutcome` per candidate, in order.

    Raises:
        NotFound: the store disappeared.
        StoreArchived: the store is archived (checked before the first write).
        StoreFull: the store reached its memory limit; outcomes so far stand.
    """
    existing = {memory.path: memory for memory in caller.memories.all(store_id)}
    for candidate in candidates:
        if candidate.refusal is not None or candidate.path is None:
            code, reason = candidate.refusal or ("invalid_path", "no memory path")
            yield ImportOutcome(
                candidate.source, candidate.path, ImportStatus.REFUSED, code, reason
            )
            continue
        try:
            text = _read_candidate(candidate)
        except MemfsError as exc:
            yield ImportOutcome(
                candidate.source, candidate.path, ImportStatus.REFUSED, exc.code, exc.message
            )
            continue
        except OSError as exc:
            yield ImportOutcome(
                candidate.source,
                candidate.path,
                ImportStatus.REFUSED,
                "unreadable",
                str(exc.strerror or exc),
            )
            continue
        yield _write(caller, store_id, candidate, text, existing.get(candidate.path))


def _read_candidate(candidate: ImportCandidate) -> str:
    """The candidate's text, checked against the SPEC §1 content rules."""
    if candidate.content is not None:
        return validate_content(candidate.content)
    assert candidate.file is not None
    with open(candidate.file, "rb") as stream:
        data = stream.read(MAX_CONTENT_BYTES + 1)  # the file may have grown since stat
    return validate_content_bytes(data)


def _write(
    caller: Caller,
    store_id: str,
    candidate: ImportCandidate,
    text: str,
    current: Memory | None,
) -> ImportOutcome:
    assert candidate.path is not None
    data = text.encode("utf-8")
    size_bytes = len(data)
    try:
        if current is None:
            memory = caller.memories.create(
                store_id,
                candidate.path,
                text,
                metadata=candidate.metadata,
            )
            status = ImportStatus.CREATED
        elif current.content_sha256 == hashlib.sha256(data).hexdigest() and (
            candidate.metadata is None or candidate.metadata == current.metadata
        ):
            return ImportOutcome(
                candidate.source,
                candidate.path,
                ImportStatus.UNCHANGED,
                memory_id=current.id,
                memory_version_id=current.memory_version_id,
                size_bytes=size_bytes,
            )
        else:
            memory = caller.memories.update(
                store_id,
                current.id,
                content=text,
                expected_sha256=current.content_sha256,
                metadata=candidate.metadata,
            )
            status = ImportStatus.UPDATED
    except (InvalidInput, PathConflict, PreconditionFailed) as exc:
        return ImportOutcome(
            candidate.source, candidate.path, ImportStatus.REFUSED, exc.code, exc.message
        )
    except NotFound as exc:
        # The memory was deleted by someone else after the listing; the store itself is
        # checked by the next call, which raises if it is the store that is gone.
        caller.stores.get(store_id)
        return ImportOutcome(
            candidate.source, candidate.path, ImportStatus.REFUSED, exc.code, exc.message
        )
    return ImportOutcome(
        candidate.source,
        candidate.path,
        status,
        memory_id=memory.id,
        memory_version_id=memory.memory_version_id,
        size_bytes=size_bytes,
    )


# ------------------------------------------------------------------ export


@dataclasses.dataclass(frozen=True)
class ExportOutcome:
    """One memory written out: its path, the file written, and its size in bytes."""

    path: str
    file: Path | None
    size_bytes: int


def _selected(caller: Caller, store_id: str, prefix: str) -> list[Memory]:
    validate_path_prefix(prefix)
    return [m for m in caller.memories.all(store_id) if m.path.startswith(prefix)]


def export_tree(
    caller: Caller,
    store_id: str,
    directory: Path,
    *,
    prefix: str = "/",
    on_total: Callable[[int], None] | None = None,
) -> Iterator[ExportOutcome]:
    """Writes every live memory under ``prefix`` to ``directory/<path below prefix>``.

    Memory paths are valid relative file names by SPEC §1 (no ``..``, no empty
    segment), so nothing is written outside ``directory``. Files are written with the
    exact bytes of the head version. Existing files are replaced; nothing else in
    ``directory`` is touched. A memory deleted while the export runs is skipped.

    Args:
        on_total: called once with the number of memories to export (for progress).

    Raises:
        NotFound: unknown store. InvalidPath: bad prefix. OSError: a file can't be written
            (``filename`` names it). Each file is written whole or not at all (a temporary
            name, then a rename), so the files yielded before the error are complete and
            nothing else was written; the caller reports them (``memfs export`` lists them).
    """
    memories = _selected(caller, store_id, prefix)
    if on_total is not None:
        on_total(len(memories))
    directory.mkdir(parents=True, exist_ok=True)
    for memory in memories:
        try:
            full = caller.memories.get(store_id, memory.id, with_content=True)
        except NotFound:
            continue
        assert full.content is not None
        data = full.content.encode("utf-8")
        target = directory.joinpath(*full.path[len(prefix) :].split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, data)
        yield ExportOutcome(full.path, target, len(data))


def _write_atomically(target: Path, data: bytes) -> None:
    """Writes ``data`` to a short temporary name beside ``target``, then renames it over.

    The temporary name (``.memfs-export-<16 hex>.tmp``, 34 bytes) fits NAME_MAX whatever
    the length of ``target``'s name (a memory path segment may itself be 255 bytes, SPEC
    §1), and is a scratch name (``*.tmp``, SPEC §4), so exporting into a memfs mount
    stores one version of ``target`` only. The file gets the mode a plain ``open()``
    would give (0666 minus the umask). A reader never sees a half-written ``target``; on
    failure the temporary file is removed.

    Raises:
        OSError: the file can't be created, written or renamed.
    """
    temporary = target.with_name(f".memfs-export-{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    try:
        with open(fd, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):  # name the file the user asked for, not ours
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise


def export_jsonl(
    caller: Caller,
    store_id: str,
    stream: IO[str],
    *,
    prefix: str = "/",
    on_total: Callable[[int], None] | None = None,
) -> Iterator[ExportOutcome]:
    """Writes every live memory under ``prefix`` as one JSON object per line.

    Each line is the api-contract §4.3 ``memory`` object with its content (the same
    object the API returns with ``view=full``); :func:`plan_jsonl_import` reads it back.

    Raises:
        NotFound: unknown store. InvalidPath: bad prefix.
    """
    memories = _selected(caller, store_id, prefix)
    if on_total is not None:
        on_total(len(memories))
    for memory in memories:
        try:
            full = caller.memories.get(store_id, memory.id, with_content=True)
        except NotFound:
            continue
        stream.write(json.dumps(memory_to_wire(full, full=True), ensure_ascii=False) + "\n")
        yield ExportOutcome(full.path, None, full.content_size_bytes)


def export_records_jsonl(
    caller: Caller,
    store_id: str,
    stream: IO[str],
    *,
    prefix: str = "/",
    on_total: Callable[[int], None] | None = None,
) -> Iterator[ExportOutcome]:
    """Writes every live record under ``prefix`` as one seed 002 record object per line
    (:func:`memfs.wire.records_seed.file_to_seed`); memories that are no record are left
    out. ``memfs import FILE.jsonl`` reads them back.

    Raises:
        NotFound: unknown store. InvalidPath: bad prefix.
    """
    validate_path_prefix(prefix)
    records = [r for r in caller.records.list([store_id]) if r.path.startswith(prefix)]
    if on_total is not None:
        on_total(len(records))
    contents: dict[str, str] = {}
    for record in records:
        with contextlib.suppress(NotFound):
            memory = caller.memories.get(store_id, record.memory_id, with_content=True)
            contents[record.memory_id] = memory.content or ""
    seed_ids = {
        r.memory_id: seed_id_of(r, contents[r.memory_id])
        for r in records
        if r.memory_id in contents
    }
    for record in records:
        content = contents.get(record.memory_id)
        header = None if content is None else parse_record(content)
        if content is None or header is None:
            continue  # deleted or rewritten meanwhile
        line = file_to_seed(record, header, content[header.body_offset :], seed_ids)
        stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        yield ExportOutcome(record.path, None, len(content.encode("utf-8")))


# ------------------------------------------------------------------ archives (the console)


class ArchiveKind(enum.StrEnum):
    """An archive of files: what the console exports and accepts as an upload."""

    ZIP = "zip"
    TAR_GZ = "tar.gz"


# How many entries an uploaded archive may hold (a store holds at most 10,000 memories by
# default; the rest is directories and refused entries).
MAX_ARCHIVE_ENTRIES = 50_000


def export_archive(
    caller: Caller,
    store_id: str,
    stream: IO[bytes],
    kind: ArchiveKind,
    *,
    prefix: str = "/",
) -> Iterator[ExportOutcome]:
    """Writes every live memory under ``prefix`` into a zip or gzip'd tar archive, at
    its path below ``prefix`` (``/notes/a.md`` → ``notes/a.md``), with the exact bytes of
    its head and its ``updated_at`` as the entry's time: the folder ``memfs export``
    writes, packed. :func:`plan_archive_import` reads it back.

    Raises:
        NotFound: unknown store. InvalidPath: bad prefix.
    """
    import tarfile
    import zipfile

    memories = _selected(caller, store_id, prefix)
    with contextlib.ExitStack() as stack:
        if kind is ArchiveKind.ZIP:
            archive_zip = stack.enter_context(
                zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED)
            )
        else:
            archive_tar = stack.enter_context(tarfile.open(fileobj=stream, mode="w:gz"))
        for memory in memories:
            try:
                full = caller.memories.get(store_id, memory.id, with_content=True)
            except NotFound:
                continue
            data = (full.content or "").encode("utf-8")
            name = full.path[len(prefix) :]
            if kind is ArchiveKind.ZIP:
                when = full.updated_at.timetuple()[:6]
                info = zipfile.ZipInfo(name, date_time=max(when, (1980, 1, 1, 0, 0, 0)))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive_zip.writestr(info, data)
            else:
                entry = tarfile.TarInfo(name)
                entry.size = len(data)
                entry.mtime = int(full.updated_at.timestamp())
                entry.mode = 0o644
                archive_tar.addfile(entry, io.BytesIO(data))
            yield ExportOutcome(full.path, None, len(data))


def archive_kind(data: bytes) -> ArchiveKind | None:
    """Which archive ``data`` is, by its first bytes (zip or gzip), or None."""
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return ArchiveKind.ZIP
    if data.startswith(b"\x1f\x8b"):
        return ArchiveKind.TAR_GZ
    return None


def plan_archive_import(
    data: bytes, *, source_name: str, prefix: str = "/", include_hidden: bool = False
) -> list[ImportCandidate]:
    """The candidates of an uploaded zip or gzip'd tar archive of files, as
    :func:`plan_directory_import` maps a folder: ``a/b.txt`` becomes ``<prefix>a/b.txt``,
    refused (with its reason) when hidden, a scratch name, not a regular file (a link,
    a device), an invalid path, over 102,400 bytes or not UTF-8 text. Read in memory,
    never extracted: a member's name can't reach outside the store, and at most
    102,401 bytes of any member are decompressed (a member that claims less and holds
    more is refused too).

    Raises:
        InvalidPath: ``prefix`` is not a valid directory prefix.
        InvalidInput: ``unknown_archive`` (not a zip or gzip'd tar archive, or a broken
            one), ``too_many_entries`` (over :data:`MAX_ARCHIVE_ENTRIES`).
    """
    import tarfile
    import zipfile

    validate_path_prefix(prefix)
    kind = archive_kind(data)
    if kind is None:
        raise InvalidInput(f"{source_name} is not a zip or .tar.gz archive", code="unknown_archive")
    candidates: list[ImportCandidate] = []
    try:
        with contextlib.ExitStack() as stack:
            if kind is ArchiveKind.ZIP:
                archive = stack.enter_context(zipfile.ZipFile(io.BytesIO(data)))
                infos = [i for i in archive.infolist() if not i.is_dir()]
                _check_entries(len(infos))
                for info in infos:
                    regular = (info.external_attr >> 16) & 0o170000 in (0, stat.S_IFREG)
                    reader = _zip_reader(archive, info) if regular else None
                    candidates.append(
                        _member_candidate(info.filename, reader, prefix, include_hidden)
                    )
            else:
                tar = stack.enter_context(tarfile.open(fileobj=io.BytesIO(data), mode="r:gz"))
                entries = [e for e in tar.getmembers() if not e.isdir()]
                _check_entries(len(entries))
                for entry in entries:
                    reader = _tar_reader(tar, entry) if entry.isfile() else None
                    candidates.append(
                        _member_candidate(entry.name, reader, prefix, include_hidden)
                    )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise InvalidInput(
            f"{source_name} is a broken archive: {exc}", code="unknown_archive"
        ) from None
    candidates.sort(key=lambda c: c.source.encode())
    return candidates


def _check_entries(count: int) -> None:
    if count > MAX_ARCHIVE_ENTRIES:
        raise InvalidInput(
            f"the archive holds {count:,} entries; at most {MAX_ARCHIVE_ENTRIES:,} are read",
            code="too_many_entries",
        )


def _zip_reader(archive: Any, info: Any) -> Callable[[], bytes]:
    def read() -> bytes:
        with archive.open(info) as member:
            return bytes(member.read(MAX_CONTENT_BYTES + 1))

    return read


def _tar_reader(tar: Any, entry: Any) -> Callable[[], bytes]:
    def read() -> bytes:
        member = tar.extractfile(entry)
        return b"" if member is None else bytes(member.read(MAX_CONTENT_BYTES + 1))

    return read


def _member_candidate(
    name: str,
    reader: Callable[[], bytes] | None,
    prefix: str,
    include_hidden: bool,
) -> ImportCandidate:
    """One archive member as a candidate: its content read now (bounded), or refused
    (``reader`` None: not a regular file)."""
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    source = "/".join(parts) or name
    if not parts or ".." in parts:
        return ImportCandidate(source, None, refusal=("invalid_path", "not a relative path"))
    would_be = _would_be_path(prefix, parts, directory=False)
    if any(p.startswith(".") for p in parts) and not include_hidden:
        return ImportCandidate(source, would_be, refusal=("hidden", "hidden file, not imported"))
    if is_scratch_name(parts[-1]):
        return ImportCandidate(source, would_be, refusal=(
            "scratch_name", "editor or tool scratch file name; memfs never stores these (SPEC §4)"
        ))
    if reader is None:
        return ImportCandidate(source, would_be, refusal=(
            "not_regular_file", "not a regular file (a link or a device)"
        ))
    path = _join(prefix, parts)
    try:
        validate_path(path)
        text = validate_content_bytes(reader())
    except MemfsError as exc:
        return ImportCandidate(source, would_be, refusal=(exc.code, exc.message))
    except (OSError, EOFError, ValueError) as exc:
        return ImportCandidate(source, path, refusal=("unreadable", str(exc)))
    return ImportCandidate(source, path, content=text)
