"""The memory file service: the six commands of the ``memory_20250818`` tool on memfs
stores, shared by the SDK memory tool (:mod:`memfs.memory_tool.tool`) and the MCP server
(:mod:`memfs.mcp`).

Paths are the tool's: everything lives under ``/memories``. With one attached store,
``/memories/<path>`` is the memory ``/<path>`` of that store (flat); with several, each
store is the directory ``/memories/<slug>/`` (SPEC §4 per-store layout, slugs in
attachment order) and ``/memories`` itself holds nothing else. Directories are path
prefixes, as on a mount: one exists while a memory lies below it.

What each command writes (SPEC §2, §3): ``create`` one ``created`` version;
``str_replace`` and ``insert`` one ``modified`` version (none when the text is unchanged);
``delete`` of a file one ``deleted`` version (soft delete, restorable), of a directory one
per memory below it; ``rename`` of a file one ``modified`` version (id kept), of a
directory one per memory, all in one transaction. Every version is attributed to the
access's actor (the session).

Concurrency (SPEC §2 optimistic concurrency, §4 concurrent writers): ``str_replace`` and
``insert`` read the file and write it back under a ``content_sha256`` precondition on
what they read. If another writer changed it in between, the edit is made again on the
new content, up to :data:`MAX_EDIT_ATTEMPTS` times, and then reported: a concurrent change
is never overwritten. An edit whose ``old_str`` no longer matches the new content is
refused with the reference's no-match text.

Result and error texts are those of the SDK's reference implementation
(``BetaLocalFilesystemMemoryTool``, anthropic 2.10.0) word for word; conditions it does
not have use :mod:`memfs.memory_tool.refusals`. Refusals raise :class:`Refused`.

Differences from a local folder, on purpose: a directory shows the size ``4K`` (there
is no directory inode); empty directories do not exist; ``rename`` across stores is
refused (a mount answers ``EXDEV``), as are renaming and deleting a store's own
directory (one call must not empty a whole store; ``rm -r`` through a mount can).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from memfs.core import rules
from memfs.core.errors import InvalidInput, MemfsError, NotFound, PathConflict, PreconditionFailed
from memfs.core.query import DEFAULT_SEARCH_LIMIT
from memfs.memory_tool.access import Attachment, FileInfo, StoreAccess, StoredFile
from memfs.memory_tool.refusals import RefusalKind, Refused, refusal_for

__all__ = [
    "DIRECTORY_SIZE_BYTES",
    "MAX_EDIT_ATTEMPTS",
    "MAX_LINES",
    "MEMORIES_ROOT",
    "Location",
    "MemoryFiles",
    "format_file_size",
]

MEMORIES_ROOT = "/memories"
# The reference implementation refuses to show files of more lines than this.
MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
# What ``view`` shows as a directory's size: the st_size of a directory on ext4, which is
# what the reference implementation prints for its folders (``4K``).
DIRECTORY_SIZE_BYTES = 4096
# How often str_replace / insert re-read and retry when another writer changed the file
# between their read and their write (each retry follows a change that committed, so
# this bounds only a file under a storm of writes).
MAX_EDIT_ATTEMPTS = 5
# ``view`` of a directory goes this many levels deep (the reference's rule).
VIEW_DEPTH = 2

# An edit of :meth:`MemoryFiles._edit`: old content → (new content, result text); raises
# Refused when the edit can't be made on that content.
_Edit = Callable[[str], tuple[str, str]]


def format_file_size(size_bytes: int) -> str:
    """``0B``, ``512B``, ``4K``, ``1.5M``: the reference implementation's size format."""
    if size_bytes == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size_bytes.bit_length() - 1) // 10, len(units) - 1)
    size = size_bytes / (1024**i)
    if size == int(size):
        return f"{int(size)}{units[i]}"
    return f"{size:.1f}{units[i]}"


def _split_lines_keeping_cr(content: str) -> list[str]:
    """Split on LF only (keeping any CR), without the empty tail a trailing newline
    leaves (the reference's insert rule)."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(
        f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{line}" for n, line in enumerate(lines, first)
    )


@dataclass(frozen=True)
class Location:
    """Where a tool path points.

    Attributes:
        path: the tool path as given (texts quote it verbatim, as the reference does).
        attachment: the store, or None for the ``/memories`` root of several stores and
            for a directory naming no attached store.
        memory_path: the memory path in that store; ``/`` for the store's own directory.
        top: True for ``/memories`` itself.
    """

    path: str
    attachment: Attachment | None
    memory_path: str
    top: bool = False

    @property
    def store_root(self) -> bool:
        """True for a directory that is a whole store (``/memories`` when flat)."""
        return self.attachment is not None and self.memory_path == "/"

    @property
    def prefix(self) -> str:
        """The listing prefix of this location as a directory (``/`` or ``/a/``)."""
        return "/" if self.memory_path == "/" else self.memory_path + "/"


@dataclass(frozen=True)
class _Directory:
    """A directory found at a location (marker of :meth:`MemoryFiles._stat`)."""


_DIRECTORY = _Directory()


class MemoryFiles:
    """The memory commands over a :class:`StoreAccess`.

    Every command returns the reference implementation's success text, or raises
    :class:`Refused` with its error text.

    Args:
        access: the stores and the actor.
        attachments: what ``access.attachments()`` returned (:meth:`open` asks for them).
    """

    def __init__(self, access: StoreAccess, attachments: Sequence[Attachment]) -> None:
        self.access = access
        self.attachments = list(attachments)
        self._by_slug = {a.slug: a for a in self.attachments}

    @classmethod
    async def open(cls, access: StoreAccess) -> MemoryFiles:
        """A service over ``access`` and the stores it has.

        Raises:
            Refused: the attachments can't be learnt (bad token, server down).
        """
        with _refusals(MEMORIES_ROOT):
            attachments = await access.attachments()
        return cls(access, attachments)

    async def aclose(self) -> None:
        await self.access.aclose()

    @property
    def flat(self) -> bool:
        """True when one store is attached: it is ``/memories`` itself."""
        return len(self.attachments) == 1

    # ------------------------------------------------------------------ paths

    def tool_path(self, attachment: Attachment, memory_path: str) -> str:
        """The tool path of a memory path of ``attachment``."""
        base = MEMORIES_ROOT if self.flat else f"{MEMORIES_ROOT}/{attachment.slug}"
        return base if memory_path == "/" else base + memory_path

    def locate(self, path: str) -> Location:
        """Resolves a tool path (SPEC §1 path rules through :mod:`memfs.core.rules`).

        Raises:
            Refused: outside ``/memories``, escaping it with ``..``, or breaking a path
                rule (the rule named).
        """
        if not isinstance(path, str) or not (
            path == MEMORIES_ROOT or path.startswith(MEMORIES_ROOT + "/")
        ):
            raise Refused(f"Path must start with /memories, got: {path}")
        rest = path[len(MEMORIES_ROOT) :]
        if rest.endswith("/"):
            rest = rest[:-1]  # "/memories/dir/" names the directory
        segments = rest.split("/")[1:] if rest else []
        depth = 0
        for segment in segments:
            depth += -1 if segment == ".." else 1
            if depth < 0:
                raise Refused(f"Path {path} would escape /memories directory")
        if not segments:
            return Location(path, self.attachments[0] if self.flat else None, "/", top=True)
        attachment = self.attachments[0] if self.flat else self._by_slug.get(segments[0])
        inner = segments if self.flat else segments[1:]
        memory_path = "/" + "/".join(inner)
        if inner:
            with _refusals(path):
                rules.validate_path(memory_path)
        return Location(path, attachment, memory_path)

    def _writable(self, location: Location) -> Attachment:
        """The store a mutation at ``location`` goes to.

        Raises:
            Refused: a read-only attachment, or a place outside every store (the root of
                several stores holds only their directories, SPEC §4).
        """
        attachment = location.attachment
        if attachment is None:
            directories = ", ".join(f"{MEMORIES_ROOT}/{a.slug}" for a in self.attachments)
            raise Refused(
                f"Cannot modify {location.path}: /memories holds one directory per memory "
                f"store ({directories}); write inside one of them",
                RefusalKind.READ_ONLY,
            )
        if attachment.read_only:
            raise Refused(
                f"Cannot modify {location.path}: the memory store {attachment.name!r} is "
                "attached read-only",
                RefusalKind.READ_ONLY,
            )
        return attachment

    async def _stat(self, location: Location) -> StoredFile | _Directory | None:
        """The file at ``location`` (with content), the directory marker, or None."""
        if location.top or location.store_root:
            return _DIRECTORY
        attachment = location.attachment
        if attachment is None:
            return None
        with _refusals(location.path):
            found = await self.access.read(attachment.store_id, location.memory_path)
            if found is not None:
                return found
            below = await self.access.listing(attachment.store_id, location.prefix)
        return _DIRECTORY if below else None

    async def _file(self, location: Location) -> StoredFile:
        """The file at ``location`` for an edit.

        Raises:
            Refused: missing (the reference's text), or a directory.
        """
        found = await self._stat(location)
        if found is None:
            raise Refused(
                f"The path {location.path} does not exist. Please provide a valid path.",
                RefusalKind.NOT_FOUND,
            )
        if not isinstance(found, StoredFile):
            raise Refused(f"The path {location.path} is not a file.", RefusalKind.INVALID)
        return found

    # --------------------------------------------------------------- commands

    async def view(self, path: str, view_range: Sequence[int] | None = None) -> str:
        """``view``: a directory two levels deep, or a file with line numbers.

        Args:
            path: a tool path.
            view_range: ``[first, last]`` line numbers (1-based; ``last`` -1 = to the end).

        Raises:
            Refused: the path does not exist, breaks a rule, or the file is too long.
        """
        location = self.locate(path)
        found = await self._stat(location)
        if found is None:
            raise Refused(
                f"The path {path} does not exist. Please provide a valid path.",
                RefusalKind.NOT_FOUND,
            )
        if isinstance(found, StoredFile):
            return _view_file(path, found.content, view_range)
        lines = [f"{format_file_size(DIRECTORY_SIZE_BYTES)}\t{path}"]
        lines += [f"{size}\t{path}/{name}" for size, name in await self._directory_items(location)]
        return (
            f"Here're the files and directories up to 2 levels deep in {path}, excluding "
            "hidden items:\n" + "\n".join(lines)
        )

    async def _directory_items(self, location: Location) -> list[tuple[str, str]]:
        """``(size, relative name)`` of what ``view`` lists below a directory, depth first
        in name order; hidden names (``.x``) and what lies below them are skipped."""
        tree: dict[str, _Node] = {}
        if location.attachment is None:  # the root of several stores
            for attachment in self.attachments:
                node = tree.setdefault(attachment.slug, _Node())
                with _refusals(location.path):
                    for info in await self.access.listing(attachment.store_id, "/"):
                        node.add(info.path[1:].split("/"), info, VIEW_DEPTH - 1)
        else:
            prefix = location.prefix
            with _refusals(location.path):
                below = await self.access.listing(location.attachment.store_id, prefix)
            root = _Node()
            for info in below:
                root.add(info.path[len(prefix) :].split("/"), info, VIEW_DEPTH)
            tree = root.children
        return list(_walk(tree, ""))

    async def create(self, path: str, file_text: str) -> str:
        """``create``: a new file (parents are implicit). Never overwrites.

        Raises:
            Refused: the path exists (as a file or a directory), a read-only store, the
                content breaks a rule (binary, > 100 KB), the store is full.
        """
        location = self.locate(path)
        if location.top or location.store_root:
            raise Refused(f"File {path} already exists", RefusalKind.EXISTS)
        attachment = self._writable(location)
        try:
            with _refusals(path):
                await self.access.create(attachment.store_id, location.memory_path, file_text)
        except Refused as refused:
            cause = refused.__cause__
            if (
                isinstance(cause, PathConflict)
                and cause.conflicting_path is not None
                and _is_ancestor(cause.conflicting_path, location.memory_path)
            ):
                blocker = self.tool_path(attachment, cause.conflicting_path)
                raise Refused(
                    f"Cannot create {path}: {blocker} is a file, not a directory",
                    RefusalKind.EXISTS,
                ) from cause
            raise
        return f"File created successfully at: {path}"

    async def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """``str_replace``: replaces the one occurrence of ``old_str``, under a
        precondition on the content read (module docstring).

        Raises:
            Refused: no such file, a directory, read-only, ``old_str`` absent or not
                unique, the result breaks a content rule, or the file kept changing.
        """
        location = self.locate(path)

        def edit(content: str) -> tuple[str, str]:
            count = content.count(old_str)
            if count == 0:
                raise Refused(
                    f"No replacement was performed, old_str `{old_str}` did not appear "
                    f"verbatim in {path}."
                )
            if count > 1:
                raise Refused(
                    f"No replacement was performed. Multiple occurrences of old_str "
                    f"`{old_str}` in lines: {', '.join(map(str, _match_lines(content, old_str)))}"
                    ". Please ensure it is unique"
                )
            changed_line = content[: content.find(old_str)].count("\n")
            new_content = content.replace(old_str, new_str)
            new_lines = new_content.split("\n")
            start = max(0, changed_line - 2)
            end = min(len(new_lines), changed_line + 3)
            snippet = _numbered(new_lines[start:end], start + 1)
            return new_content, (
                "The memory file has been edited. Here is the snippet showing the change "
                "(with line numbers):\n" + snippet
            )

        return await self._edit(location, edit)

    async def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """``insert``: ``insert_text`` after line ``insert_line`` (0 = at the top), under
        a precondition on the content read (module docstring).

        Raises:
            Refused: no such file, a directory, read-only, ``insert_line`` out of range,
                the result breaks a content rule, or the file kept changing.
        """
        location = self.locate(path)

        def edit(content: str) -> tuple[str, str]:
            lines = _split_lines_keeping_cr(content)
            if insert_line < 0 or insert_line > len(lines):
                raise Refused(
                    f"Invalid `insert_line` parameter: {insert_line}. "
                    f"It should be within the range [0, {len(lines)}]."
                )
            lines.insert(insert_line, insert_text.rstrip("\n"))
            new_content = "\n".join(lines)
            if not new_content.endswith("\n"):
                new_content += "\n"
            return new_content, f"The file {path} has been edited."

        return await self._edit(location, edit)

    async def _edit(self, location: Location, edit: _Edit) -> str:
        """Reads, edits and writes back under a ``content_sha256`` precondition; on a
        concurrent change, again on the new content (bounded)."""
        lost: Refused | None = None
        for _attempt in range(MAX_EDIT_ATTEMPTS):
            current = await self._file(location)
            attachment = self._writable(location)
            new_content, result = edit(current.content)
            try:
                with _refusals(location.path):
                    await self.access.update(
                        attachment.store_id,
                        current.memory_id,
                        content=new_content,
                        expected_sha256=current.content_sha256,
                    )
            except Refused as refused:
                if not isinstance(refused.__cause__, PreconditionFailed):
                    raise
                lost = refused  # another writer won: edit their content instead
                continue
            return result
        assert lost is not None
        raise lost

    async def delete(self, path: str) -> str:
        """``delete``: a file, or a directory and everything below it (soft deletes).

        Raises:
            Refused: ``/memories`` itself or a store's own directory, no such path,
                read-only.
        """
        location = self.locate(path)
        if location.top:
            raise Refused("Cannot delete the /memories directory itself", RefusalKind.READ_ONLY)
        found = await self._stat(location)
        if found is None:
            raise Refused(f"The path {path} does not exist", RefusalKind.NOT_FOUND)
        attachment = self._writable(location)
        if location.store_root:
            # One call must not empty a whole store (there is no bulk restore): the
            # files in it are deleted one by one or by subdirectory instead.
            raise Refused(
                f"Cannot delete {path}: it is the directory of a memory store; delete "
                "the files or subdirectories in it instead",
                RefusalKind.READ_ONLY,
            )
        with _refusals(path):
            if isinstance(found, StoredFile):
                try:
                    await self.access.delete(attachment.store_id, found.memory_id)
                except NotFound:
                    raise Refused(
                        f"The path {path} does not exist", RefusalKind.NOT_FOUND
                    ) from None
            else:
                for info in await self.access.listing(attachment.store_id, location.prefix):
                    await self._delete_quietly(attachment, info)
        return f"Successfully deleted {path}"

    async def _delete_quietly(self, attachment: Attachment, info: FileInfo) -> None:
        """Deletes one memory of a directory; one deleted meanwhile is already gone."""
        with suppress(NotFound):
            await self.access.delete(attachment.store_id, info.memory_id)

    async def rename(self, old_path: str, new_path: str) -> str:
        """``rename``: moves a file (id kept) or a directory (at once) within a store.

        Raises:
            Refused: ``/memories`` or a store's directory, the destination exists, no
                such source, different stores, read-only, a path rule.
        """
        old = self.locate(old_path)
        new = self.locate(new_path)
        if old.top:
            raise Refused("Cannot rename the /memories directory itself", RefusalKind.READ_ONLY)
        if await self._stat(new) is not None:
            raise Refused(f"The destination {new_path} already exists", RefusalKind.EXISTS)
        found = await self._stat(old)
        if found is None:
            raise Refused(f"The path {old_path} does not exist", RefusalKind.NOT_FOUND)
        if old.store_root:
            raise Refused(
                f"Cannot rename {old_path}: it is the directory of a memory store",
                RefusalKind.READ_ONLY,
            )
        attachment = self._writable(old)
        if new.attachment is None or new.attachment.store_id != attachment.store_id:
            self._writable(new)
            raise Refused(
                f"Cannot rename {old_path} to {new_path}: they are in different memory "
                "stores; create the new file and delete the old one instead",
                RefusalKind.INVALID,
            )
        try:
            with _refusals(new_path):
                if isinstance(found, StoredFile):
                    await self.access.update(
                        attachment.store_id, found.memory_id, path=new.memory_path
                    )
                else:
                    await self.access.rename_prefix(
                        attachment.store_id, old.prefix, new.prefix
                    )
        except Refused as refused:
            raise self._rename_refusal(refused, old_path, new_path, attachment) from None
        return f"Successfully renamed {old_path} to {new_path}"

    def _rename_refusal(
        self, refused: Refused, old_path: str, new_path: str, attachment: Attachment
    ) -> Refused:
        cause = refused.__cause__
        if isinstance(cause, PathConflict):
            blocker = (
                new_path
                if cause.conflicting_path is None  # hidden from the caller
                else self.tool_path(attachment, cause.conflicting_path)
            )
            return Refused(
                f"Cannot rename {old_path} to {new_path}: {blocker} is in the way",
                RefusalKind.EXISTS,
            )
        if isinstance(cause, NotFound):
            return Refused(f"The path {old_path} does not exist", RefusalKind.NOT_FOUND)
        if type(cause) is InvalidInput:
            return Refused(f"Cannot rename {old_path} to {new_path}: {cause.message}")
        return refused

    # ------------------------------------------------------- resources (MCP)

    async def read(self, attachment: Attachment, memory_path: str) -> StoredFile:
        """One memory with its content (an MCP resource).

        Raises:
            Refused: no such memory (NOT_FOUND), or what reading met.
        """
        tool_path = self.tool_path(attachment, memory_path)
        with _refusals(tool_path):
            rules.validate_path(memory_path)
            found = await self.access.read(attachment.store_id, memory_path)
        if found is None:
            raise Refused(f"The path {tool_path} does not exist", RefusalKind.NOT_FOUND)
        return found

    async def search(self, query: str, limit: int = DEFAULT_SEARCH_LIMIT) -> str:
        """Full-text search of every attached store (SPEC §7; the query language of
        :mod:`memfs.core.query`): a JSON list of hits, best first, each with its ``path``
        under ``/memories``, ``memory_store_id``, ``score`` and ``snippet``.

        Raises:
            Refused: a malformed query or limit (INVALID), or what searching met.
        """
        by_id = {a.store_id: a for a in self.attachments}
        with _refusals(MEMORIES_ROOT):
            hits = await self.access.search(list(by_id), query, limit)
        return json.dumps(
            [
                {
                    "path": self.tool_path(by_id[hit.store_id], hit.path),
                    "memory_store_id": hit.store_id,
                    "score": hit.score,
                    "snippet": hit.snippet,
                }
                for hit in hits
                if hit.store_id in by_id
            ],
            indent=2,
            ensure_ascii=False,
        )

    async def every_file(self) -> list[tuple[Attachment, FileInfo]]:
        """Every memory of every attached store, in attachment then path order.

        Raises:
            Refused: what listing met.
        """
        result: list[tuple[Attachment, FileInfo]] = []
        for attachment in self.attachments:
            with _refusals(self.tool_path(attachment, "/")):
                listing = await self.access.listing(attachment.store_id, "/")
            result += [(attachment, info) for info in listing]
        return result


@contextmanager
def _refusals(path: str) -> Iterator[None]:
    """Turns the domain errors raised inside into :class:`Refused` (the one table)."""
    try:
        yield
    except Refused:
        raise
    except MemfsError as exc:
        raise refusal_for(exc, path) from exc


class _Node:
    """A directory of the ``view`` tree: children by name; a file is a leaf with its
    size."""

    __slots__ = ("children", "size_bytes")

    def __init__(self, size_bytes: int | None = None) -> None:
        self.children: dict[str, _Node] = {}
        self.size_bytes = size_bytes  # None: a directory

    def add(self, segments: list[str], info: FileInfo, levels: int) -> None:
        """Adds the memory ``info`` found at ``segments`` below this node, ``levels``
        levels deep at most; hidden segments end the descent."""
        name = segments[0]
        if levels <= 0 or name.startswith("."):
            return
        if len(segments) == 1:
            self.children[name] = _Node(info.size_bytes)
            return
        child = self.children.setdefault(name, _Node())
        child.add(segments[1:], info, levels - 1)


def _walk(children: dict[str, _Node], parent: str) -> Iterator[tuple[str, str]]:
    for name in sorted(children):
        node = children[name]
        relative = f"{parent}/{name}" if parent else name
        if node.size_bytes is None:
            yield format_file_size(DIRECTORY_SIZE_BYTES), relative + "/"
            yield from _walk(node.children, relative)
        else:
            yield format_file_size(node.size_bytes), relative


def _is_ancestor(candidate: str, path: str) -> bool:
    return path.startswith(candidate + "/")


def _match_lines(content: str, needle: str) -> list[int]:
    """1-based line numbers where ``needle`` starts (overlapping matches included, as
    the reference counts them)."""
    found: list[int] = []
    start = content.find(needle)
    while start != -1:
        found.append(content[:start].count("\n") + 1)
        start = content.find(needle, start + 1)
    return found


def _view_file(path: str, content: str, view_range: Sequence[int] | None) -> str:
    """The reference's file view: numbered lines, optionally a range of them."""
    lines = content.split("\n")
    if len(lines) > MAX_LINES:
        raise Refused(f"File {path} exceeds maximum line limit of 999,999 lines.")
    shown: list[str] = lines
    first = 1
    if view_range and len(view_range) == 2:
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        shown = lines[start:end]
        first = start + 1
    return f"Here's the content of {path} with line numbers:\n" + _numbered(shown, first)
