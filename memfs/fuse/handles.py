"""The handles a mount gave the kernel: open files and open directories.

Owns :class:`Handles`, the table of ``fh`` numbers (:class:`Handle` for a file,
:class:`Listing` for a directory), and which of them write to a node. A file's
content is not here: every handle of a node shares its working copy
(:mod:`memfs.fuse.content`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import trio

from memfs.core.errors import InvalidInput
from memfs.fuse.inodes import Node

__all__ = ["Handle", "Handles", "Listing", "fuse_mount_id", "holds_descriptor"]


@dataclass(eq=False)
class Handle:
    """An open file. ``wrote``: data was written (or truncated) through this handle.
    ``append``: opened with ``O_APPEND``: every write goes to the end of the content the
    mount holds, whatever offset the kernel computed from its cached (maybe stale) size
    (write(2): "the file offset is first set to the end of the file").
    Every handle of a node reads the node's one content, as on a local filesystem: the
    kernel's page cache is per inode, so a per-handle snapshot would leak into the pages
    other opens read.
    ``pid``: the process that opened it (see :meth:`Handles.of_process`).
    ``direct_io``: opened with ``direct_io`` (reads bypass the page cache, so the kernel
    never cuts them at the size it holds).
    ``refusal``: the first write or ``ftruncate`` refused through this handle: nothing
    written through it is committed, and every close of it reports the refusal (SPEC §4
    "a save is all or nothing")."""

    node: Node
    writable: bool
    wrote: bool = False
    append: bool = False
    pid: int = 0
    refusal: Exception | None = None
    direct_io: bool = False


@dataclass
class Listing:
    """An open directory. ``entries``: its children by inode, snapshotted at the first
    ``readdir`` of a pass; ``inodes``: their inode numbers (the readdir cursors)."""

    directory: Node
    entries: list[Node] | None = None
    inodes: list[int] | None = None


class Handles:
    """Open files and directories of one mount, by ``fh`` (never reused)."""

    def __init__(self) -> None:
        self._files: dict[int, Handle] = {}
        self._listings: dict[int, Listing] = {}
        self._next_fh = itertools.count(1)
        self._mount_id: int | None = None  # the kernel's, found at the first need

    def open_file(self, node: Node, *, writable: bool, append: bool, pid: int) -> int:
        """A new handle on file ``node`` (its ``open_count`` goes up)."""
        fh = next(self._next_fh)
        self._files[fh] = Handle(node, writable, append=append, pid=pid)
        node.open_count += 1
        return fh

    def file(self, fh: int) -> Handle:
        """Raises InvalidInput (EINVAL) for a handle that is not open."""
        handle = self._files.get(fh)
        if handle is None:
            raise InvalidInput(f"file handle {fh} is not open")
        return handle

    def get(self, fh: int | None) -> Handle | None:
        return self._files.get(fh) if fh is not None else None

    def close_file(self, fh: int) -> Handle | None:
        """Forgets ``fh`` (its node's ``open_count`` goes down); None if unknown."""
        handle = self._files.pop(fh, None)
        if handle is not None:
            handle.node.open_count -= 1
        return handle

    def files(self) -> list[Handle]:
        return list(self._files.values())

    def has_writer(self, node: Node) -> bool:
        """Whether ``node`` has a writable handle open."""
        return any(h.writable and h.node is node for h in self._files.values())

    def of_process(self, pid: int) -> Iterator[Handle]:
        """The file handles process ``pid`` opened (a refused write of a process marks
        the empty new files it holds: see :meth:`refuse_write`)."""
        return (h for h in self._files.values() if h.pid == pid)

    def refuse_write(self, handle: Handle, refusal: Exception) -> None:
        """A write through ``handle`` was refused: nothing changed, and the save it
        belongs to fails whole: its close commits nothing and reports ``refusal`` (SPEC
        §4 "a save is all or nothing"). New files the same process created and holds
        open without having written anything count as refused too: a tool that failed
        on content memfs can't store (sqlite3, whose journal is binary) leaves no empty
        file behind."""
        handle.refusal = handle.refusal or refusal
        handle.node.working.refuse(refusal)
        for other in self.of_process(handle.pid):
            if other.node.memory is None and not other.node.working.buffer:
                other.node.working.refuse()

    def refuse_truncate(self, node: Node, fh: int | None, refusal: Exception) -> None:
        """A truncate of ``node`` was refused: nothing changed (SPEC §4), not even the
        times; through a descriptor (``ftruncate(2)``, ``fh`` given) the save it belongs
        to fails whole, as for a write."""
        handle = self.get(fh)
        if handle is not None:
            handle.refusal = handle.refusal or refusal
        node.working.refuse(refusal if handle is not None else None)

    async def holds_descriptor(self, pid: int, node: Node, mountpoint: str) -> bool:
        """Whether process ``pid`` still has a descriptor of ``node`` open on the mount
        at ``mountpoint`` (see :func:`holds_descriptor`); reads /proc in worker threads."""
        if self._mount_id is None:
            self._mount_id = await trio.to_thread.run_sync(fuse_mount_id, mountpoint)
        return await trio.to_thread.run_sync(holds_descriptor, pid, node.inode, self._mount_id)

    def open_listing(self, directory: Node) -> int:
        fh = next(self._next_fh)
        self._listings[fh] = Listing(directory)
        return fh

    def listing(self, fh: int) -> Listing:
        """Raises InvalidInput (EINVAL) for a directory handle that is not open."""
        listing = self._listings.get(fh)
        if listing is None:
            raise InvalidInput(f"directory handle {fh} is not open")
        return listing

    def close_listing(self, fh: int) -> None:
        self._listings.pop(fh, None)


_OCTAL_ESCAPE_RE = re.compile(r"\\([0-7]{3})")


def fuse_mount_id(mountpoint: str) -> int | None:
    """The kernel's mount ID of the FUSE mount on top at ``mountpoint`` (a real path),
    from ``/proc/self/mountinfo`` (proc(5)); None when there is none. Blocking."""
    found = None
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields, _, rest = line.partition(" - ")
            parts = fields.split(" ")
            point = _OCTAL_ESCAPE_RE.sub(lambda m: chr(int(m[1], 8)), parts[4])
            if point == mountpoint and rest.startswith("fuse"):
                found = int(parts[0])
    return found


def holds_descriptor(pid: int, inode: int, mount_id: int | None) -> bool:
    """Whether process ``pid`` holds a file descriptor of inode number ``inode`` on the
    mount of ID ``mount_id`` (any mount when None), read from ``/proc/<pid>/fdinfo``
    (the kernel's own table; nothing there calls into the mount). At a FUSE flush the
    descriptor being closed is already gone from that table, so False means the close
    was of the process's last descriptor of the file. Blocking (reads /proc).

    True also when it can't be told (a process of another user without ptrace access, a
    kernel without ``ino:`` in fdinfo): the caller then keeps the old, later, answer.
    A process that is gone holds nothing."""
    directory = f"/proc/{pid}/fdinfo"
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    wanted = {f"ino:\t{inode}"} | ({f"mnt_id:\t{mount_id}"} if mount_id is not None else set())
    for name in names:
        with contextlib.suppress(OSError):  # closed meanwhile
            with open(os.path.join(directory, name), encoding="ascii") as info:
                lines = set(info.read().splitlines())
            if not any(line.startswith("ino:") for line in lines) or wanted <= lines:
                return True
    return False
