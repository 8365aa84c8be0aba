"""The inode table: the tree of nodes a mount shows, and how memories are placed in it.

A mount holds the whole tree of its stores in memory (loaded once with
:meth:`memfs.backend.Backend.list_memories`, kept current by the change feed).
Files are memories; directories are path prefixes (SPEC §4 mapping), plus directories
the mount *holds* without any memory below them (made by ``mkdir``, or emptied by
``rm`` through this mount) until a file is created in them or they are removed.

Layouts (SPEC §4):

* per-store: ``/<slug>/…`` is store ``slug``'s root; the mount root is read-only.
* flat: every store is rooted at the mount root. The same path in several stores shows
  the one of highest priority (the writable default first, then attachment order); the
  others are *shadowed* and shown again when the winner goes away.

Inode numbers come from a monotonic counter and are never reused: the kernel may still
hold a handle on an inode whose entry is gone, and a reused number would alias it.
Nodes leave :attr:`InodeTable._nodes` only when they are out of the tree, no longer
known to the kernel (lookup count zero, the pyfuse3 contract: ``forget`` may remove an
inode only then) and not open.

Every change of an entry the kernel may have cached is recorded as a :class:`Notice`;
a separate task delivers them with ``pyfuse3.invalidate_*`` (never a request handler,
which could deadlock on the same inode).
"""

from __future__ import annotations

import enum
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memfs.core.model import Layout, Memory
from memfs.fuse.content import WorkingCopy
from memfs.fuse.errors import NoSuchEntry, NotADirectory, ReadOnly
from memfs.fuse.namespace import Placement

if TYPE_CHECKING:
    from memfs.backend.protocol import AsOfPoint

__all__ = [
    "ROOT_INODE",
    "Attachment",
    "InodeTable",
    "Kind",
    "Layout",
    "Node",
    "Notice",
]

# FUSE_ROOT_ID (pyfuse3.ROOT_INODE): the inode the kernel asks for at the mount root.
ROOT_INODE = 1


class Kind(enum.Enum):
    FILE = "file"
    DIRECTORY = "directory"


@dataclass(eq=False)
class Attachment:
    """A store attached to the mount.

    Attributes:
        store_id: ``memstore_…``.
        name: the store's name at mount time.
        directory: its directory name under the mount root (per-store layout), a slug.
        priority: 0 for the first attachment; lower wins in a flat layout.
        read_only: attached read-only (``:ro``, or a non-default store of a flat layout).
        archived: the store is archived (SPEC §2: its mounts turn read-only).
        deleted: the store was deleted while mounted; it shows as empty and read-only.
        seq: the last change-feed seq applied to the tree.
        as_of: the point an as-of attachment shows (SPEC §10, ``--store NAME@POINT``),
            resolved once at mount time; None: the store as it is. An as-of attachment
            is read-only and its content never changes (only an erasure, SPEC §2,
            takes a file away).
    """

    store_id: str
    name: str
    directory: str
    priority: int
    read_only: bool
    archived: bool = False
    deleted: bool = False
    seq: int = 0
    as_of: AsOfPoint | None = None

    @property
    def writable(self) -> bool:
        return not (self.read_only or self.archived or self.deleted or self.as_of is not None)

    @property
    def immutable(self) -> bool:
        """An as-of attachment: the kernel may cache its entries and pages for long."""
        return self.as_of is not None


@dataclass(eq=False, slots=True)
class Node:
    """One inode.

    Attributes:
        inode: never reused.
        kind: file or directory.
        name: the entry name in ``parent`` ("" for the root).
        parent: None for the root and for nodes out of the tree.
        attachment: files: the store of ``memory`` (or of the memory it will become);
            directories: their store in a per-store layout, None when shared (flat) or
            for the mount root.
        children: directories only, name → node.
        memory: the head this file shows, without content; None for a file that exists
            only in the mount (new and not yet closed, or a scratch file).
        lookup_count: how many times the kernel was given this inode and not told to
            forget it (pyfuse3 lookup-count contract).
        placement: where the node stands in the namespace (store root, held, parked,
            created here, stale), changed only through its transitions
            (:class:`memfs.fuse.namespace.Placement`).
        mtime_ns: modification time shown by stat.
        open_count: open file handles on this node.
        working: the file's content state (buffer, dirty, digests, refusal), changed
            only through its transitions (:class:`memfs.fuse.content.WorkingCopy`).
        kernel_attributes: ``(st_size, mtime_ns)`` last handed to the kernel, which may
            cache them for the attribute timeout; None when it holds none that can be
            stale (see :meth:`InodeTable.notice_if_stale`).
        subdirectories: directories only: how many of ``children`` are directories
            (kept by the table as entries are linked and unlinked).
        listed_mtime_ns: directories: ``mtime_ns`` when the kernel was last given a
            listing (readdir from the start); another value means the listing it may
            hold is older than the children (see ``Operations.opendir``).
    """

    inode: int
    kind: Kind
    name: str
    parent: Node | None
    attachment: Attachment | None
    children: dict[str, Node] = field(default_factory=dict)
    memory: Memory | None = None
    lookup_count: int = 0
    placement: Placement = field(default_factory=Placement)
    mtime_ns: int = field(default_factory=time.time_ns)
    open_count: int = 0
    working: WorkingCopy = field(default_factory=WorkingCopy)
    kernel_attributes: tuple[int, int] | None = None
    subdirectories: int = 0
    listed_mtime_ns: int = 0

    @property
    def is_dir(self) -> bool:
        return self.kind is Kind.DIRECTORY

    @property
    def size_bytes(self) -> int:
        if self.working.buffer is not None:
            return len(self.working.buffer)
        if self.memory is not None:
            return self.memory.content_size_bytes
        return 0

    @property
    def stored(self) -> bool:
        """True when this file shows a memory at its own path (not local, not parked)."""
        return self.memory is not None and not self.placement.parked

    def __repr__(self) -> str:
        return f"<Node {self.inode} {self.kind.value} {self.name!r}>"


@dataclass(frozen=True)
class Notice:
    """A kernel cache entry to invalidate: an entry (``name`` set) or an inode."""

    inode: int
    name: bytes | None = None
    attr_only: bool = False


def _timestamp_ns(memory: Memory) -> int:
    return int(memory.updated_at.timestamp() * 1_000_000) * 1000


class InodeTable:
    """The nodes of one mount and the rules that place memories among them.

    Args:
        layout: per-store or flat.
        attachments: in attachment order; in a flat layout the first writable one is
            the default (callers mark the others read-only).

    Raises nothing but :class:`memfs.fuse.errors.FilesystemError` subclasses.
    """

    def __init__(self, layout: Layout, attachments: list[Attachment]) -> None:
        self.layout = layout
        self.attachments = attachments
        self._next_inode = itertools.count(ROOT_INODE + 1)
        self._nodes: dict[int, Node] = {}
        self._by_memory: dict[tuple[str, str], Node] = {}
        self._shadowed: list[Node] = []
        # Nodes parked by park(); one whose ``parked`` was cleared since is dropped at the
        # next parked_holder, so a create asks a handful of nodes, not the whole store.
        self._parked: set[Node] = set()
        self._notices: list[Notice] = []
        self.root = Node(
            ROOT_INODE, Kind.DIRECTORY, "", None, None,
            placement=Placement(store_root=layout is Layout.FLAT),
        )
        self.root.lookup_count = 1  # the kernel never forgets the root
        self._nodes[ROOT_INODE] = self.root
        self._store_roots: dict[str, Node] = {}
        for attachment in attachments:
            if layout is Layout.PER_STORE:
                node = self._new(Kind.DIRECTORY, attachment, store_root=True)
                self._link(self.root, attachment.directory, node)
                self._store_roots[attachment.store_id] = node
            else:
                self._store_roots[attachment.store_id] = self.root
        self._notices.clear()

    # ------------------------------------------------------------------ lookups

    def get(self, inode: int) -> Node:
        """The node of ``inode``. Raises NoSuchEntry when the kernel's inode is gone."""
        node = self._nodes.get(inode)
        if node is None:
            raise NoSuchEntry(f"inode {inode} is unknown")
        return node

    def child(self, parent: Node, name: str) -> Node:
        """The entry ``name`` of ``parent``. Raises NotADirectory, NoSuchEntry."""
        if not parent.is_dir:
            raise NotADirectory(f"{self.display_path(parent)} is not a directory")
        node = parent.children.get(name)
        if node is None:
            raise NoSuchEntry(f"no entry {name!r} in {self.display_path(parent)}")
        return node

    def attachments_below(self, directory: Node) -> list[Attachment]:
        """The stores whose paths ``directory`` shows (all of them at a shared root)."""
        if directory.attachment is not None:
            return [directory.attachment]
        return list(self.attachments)

    def store_root(self, attachment: Attachment) -> Node:
        """The directory holding ``attachment``'s paths (the mount root in a flat layout)."""
        return self._store_roots[attachment.store_id]

    def node_for_memory(self, store_id: str, memory_id: str) -> Node | None:
        """The node showing (or parking, or shadowing) a memory, if any."""
        return self._by_memory.get((store_id, memory_id))

    def park(self, node: Node) -> None:
        """Marks stored file ``node`` (just renamed to a scratch name) as parked: its
        memory stays at its path until the name is reused (see
        :class:`memfs.fuse.namespace.Placement`)."""
        node.placement.park()
        self._parked.add(node)

    def parked_holder(self, attachment: Attachment, path: str) -> Node | None:
        """The parked node whose memory sits at ``path`` in ``attachment``'s store.
        Costs the number of parked nodes (a few scratch renames), not the store size."""
        for node in list(self._parked):
            if not node.placement.parked:
                self._parked.discard(node)
            elif (
                node.attachment is attachment
                and node.memory is not None
                and node.memory.path == path
            ):
                return node
        return None

    def memory_path(self, node: Node) -> str:
        """The store path of ``node``: its names from its store root, e.g. ``/a/b.md``.

        The store root itself gives ``/``. Raises NoSuchEntry for a node out of the
        tree or for the per-store mount root (which belongs to no store).
        """
        names: list[str] = []
        current: Node | None = node
        while current is not None and not current.placement.store_root:
            names.append(current.name)
            current = current.parent
        if current is None:
            raise NoSuchEntry(f"{node!r} is not in any store")
        return "/" + "/".join(reversed(names))

    def display_path(self, node: Node) -> str:
        """The path of ``node`` below the mount point, for logs."""
        names: list[str] = []
        current: Node | None = node
        while current is not None and current is not self.root:
            names.append(current.name)
            current = current.parent
        prefix = "" if current is self.root else "<detached>"
        return prefix + "/" + "/".join(reversed(names))

    def default_attachment(self) -> Attachment | None:
        """The store new files go to in a flat layout: the first writable attachment."""
        for attachment in self.attachments:
            if not attachment.read_only:
                return attachment
        return None

    def write_target(self, directory: Node) -> Attachment:
        """The store a new entry in ``directory`` belongs to.

        Raises:
            ReadOnly: the per-store mount root, a read-only or archived store, or a flat
                layout without a writable store (SPEC §4 errno table).
        """
        if self.layout is Layout.FLAT:
            attachment = self.default_attachment()
            if attachment is None:
                raise ReadOnly("no store of this mount is writable")
        else:
            if directory is self.root:
                raise ReadOnly("the mount root is read-only; write inside a store directory")
            attachment = directory.attachment
            assert attachment is not None
        if not attachment.writable:
            raise ReadOnly(f"store {attachment.name!r} is {self._why_read_only(attachment)}")
        return attachment

    def check_writable(self, node: Node) -> Attachment:
        """The store a change of ``node`` itself (delete, rename, metadata) goes to.

        Raises:
            ReadOnly: ``node`` is a store root, the mount root, or lives in a store that
                is not writable (in a flat layout a file of a read-only store can be
                rewritten by copy-up but not deleted or renamed: SPEC §4 flat layout).
        """
        if node is self.root or (node.placement.store_root and self.layout is Layout.PER_STORE):
            raise ReadOnly("store directories and the mount root can't be changed")
        if node.is_dir:
            return self.write_target(node)
        attachment = node.attachment
        assert attachment is not None
        if not attachment.writable:
            raise ReadOnly(f"store {attachment.name!r} is {self._why_read_only(attachment)}")
        return attachment

    def content_target(self, node: Node) -> Attachment:
        """The store new content of file ``node`` goes to: its own, or the flat default
        (copy-up, SPEC §4 flat layout; never from an as-of attachment). Raises
        ReadOnly."""
        attachment = node.attachment
        assert attachment is not None
        if attachment.writable:
            return attachment
        if self.layout is Layout.FLAT and not attachment.deleted and not attachment.immutable:
            # (the past is never copied up: SPEC §10 as-of views refuse every write)
            default = self.default_attachment()
            if default is not None and default.writable:
                return default
        raise ReadOnly(f"store {attachment.name!r} is {self._why_read_only(attachment)}")

    def is_writable(self, node: Node) -> bool:
        """Whether ``node`` accepts writes (its stat mode shows ``w`` bits)."""
        try:
            if node.is_dir:
                self.write_target(node)
            else:
                self.content_target(node)
        except ReadOnly:
            return False
        return True

    @staticmethod
    def _why_read_only(attachment: Attachment) -> str:
        if attachment.as_of is not None:
            return f"the read-only view of the store at {attachment.as_of.text}"
        if attachment.deleted:
            return "deleted"
        if attachment.archived:
            return "archived"
        return "attached read-only"

    def subdirectory_count(self, directory: Node) -> int:
        """How many directories ``directory`` holds (its st_nlink is 2 + this); O(1)."""
        return directory.subdirectories

    def files_below(self, directory: Node) -> Iterator[Node]:
        """Every file node in the subtree of ``directory``."""
        for child in directory.children.values():
            if child.is_dir:
                yield from self.files_below(child)
            else:
                yield child

    def store_memory_nodes(self) -> Iterator[Node]:
        """Every node showing a memory at its path, in any store."""
        return (node for node in self._by_memory.values() if node.stored)

    def store_nodes(self, attachment: Attachment) -> list[Node]:
        """Every file node indexed for ``attachment``'s store."""
        return [node for (store_id, _), node in self._by_memory.items()
                if store_id == attachment.store_id]

    # --------------------------------------------------------------- mutation

    def _new(self, kind: Kind, attachment: Attachment | None, *, store_root: bool = False) -> Node:
        node = Node(
            next(self._next_inode), kind, "", None, attachment,
            placement=Placement(store_root=store_root),
        )
        self._nodes[node.inode] = node
        return node

    def new_directory(self, parent: Node, name: str, *, held: bool) -> Node:
        """Makes and links a directory ``name`` in ``parent``."""
        attachment = parent.attachment if self.layout is Layout.PER_STORE else None
        node = self._new(Kind.DIRECTORY, attachment)
        if held:
            node.placement.hold()
        self._link(parent, name, node)
        return node

    def new_file(self, parent: Node, name: str, attachment: Attachment) -> Node:
        """Makes and links a file that exists only in the mount until committed: the
        kernel's own create (or link) made the entry, so nothing of the parent is
        invalidated — the kernel drops the parent's attributes and cached listing
        itself when it creates (``fuse_dir_changed``), and a notice per created file
        was a thread wake-up and a kernel call for every file ``cp`` writes."""
        node = self._new(Kind.FILE, attachment)
        self._link(parent, name, node, tell_kernel=False)
        return node

    def add_memory(self, attachment: Attachment, memory: Memory) -> Node:
        """Makes a node for a memory of ``attachment`` and places it at its path."""
        node = self._new(Kind.FILE, attachment)
        self.set_memory(node, memory)
        self.place(node)
        return node

    def set_memory(self, node: Node, memory: Memory | None) -> None:
        """Points ``node`` at ``memory`` (None: the node keeps only local content)."""
        if node.memory is not None and node.attachment is not None:
            key = (node.attachment.store_id, node.memory.id)
            if self._by_memory.get(key) is node:
                del self._by_memory[key]
        node.memory = memory
        if memory is None:
            node.placement.unpark()
            return
        if node.attachment is None or node.attachment.store_id != memory.memory_store_id:
            node.attachment = self._attachment(memory.memory_store_id)
        assert node.attachment is not None
        self._by_memory[(node.attachment.store_id, memory.id)] = node
        node.mtime_ns = _timestamp_ns(memory)
        # An open file keeps the digest it was opened with (the precondition).
        node.working.follow_head(memory.content_sha256, is_open=node.open_count > 0)
        self.notice_if_stale(node)

    def notice_if_stale(self, node: Node) -> None:
        """Invalidates the kernel's cached attributes of file ``node`` when they differ
        from what it shows now: a commit, rename or metadata change moves mtime to the
        version's ``updated_at``; a conflict or a refusal puts the head's size back. (The
        kernel drops its size and times itself after each of its writes.)"""
        if node.is_dir or node.kernel_attributes is None:
            return
        if node.kernel_attributes != (node.size_bytes, node.mtime_ns):
            # kernel_attributes stays as it is until the kernel asks again: an open in
            # between knows the kernel's size may still be the old one.
            self._notices.append(Notice(node.inode, attr_only=True))

    def all_nodes(self) -> list[Node]:
        """Every node the table holds: in the tree, or out of it but still known to the
        kernel or open."""
        return list(self._nodes.values())

    def _attachment(self, store_id: str) -> Attachment:
        for attachment in self.attachments:
            if attachment.store_id == store_id:
                return attachment
        raise NoSuchEntry(f"store {store_id} is not attached")

    def _link(self, parent: Node, name: str, node: Node, *, tell_kernel: bool = True) -> None:
        previous = parent.children.get(name)
        if previous is not None and previous is not node and previous.is_dir:
            parent.subdirectories -= 1
        if node.is_dir and previous is not node:
            parent.subdirectories += 1
        parent.children[name] = node
        node.parent = parent
        node.name = name
        parent.mtime_ns = time.time_ns()
        if tell_kernel:
            self._notices.append(Notice(parent.inode))  # all of it: a cached listing too

    def unlink(self, node: Node) -> None:
        """Takes ``node``'s entry out of its directory (the node itself may live on)."""
        parent = node.parent
        if parent is None:
            return
        if parent.children.get(node.name) is node:
            del parent.children[node.name]
            if node.is_dir:
                parent.subdirectories -= 1
        node.parent = None
        parent.mtime_ns = time.time_ns()
        self._notices.append(Notice(parent.inode, node.name.encode("utf-8", "surrogateescape")))
        self._notices.append(Notice(parent.inode))  # all of it: a cached listing too

    def move(self, node: Node, parent: Node, name: str) -> None:
        """Moves ``node`` to ``parent``/``name``; the caller removed what was there."""
        self.unlink(node)
        self._link(parent, name, node)

    def remove(self, node: Node) -> None:
        """Removes ``node`` from the tree and the memory index; the inode lives on while
        the kernel knows it or it is open. The node's own notice (its pages and
        attributes) is queued before its directory's, so once a listing no longer shows
        it, a descriptor still open on it reads nothing cached (notices are delivered in
        order)."""
        self._notices.append(Notice(node.inode))
        self.unlink(node)
        if node in self._shadowed:
            self._shadowed.remove(node)
        if node.memory is not None and node.attachment is not None:
            key = (node.attachment.store_id, node.memory.id)
            if self._by_memory.get(key) is node:
                del self._by_memory[key]
        node.placement.unpark()
        self.release_if_unused(node)

    def place(self, node: Node) -> bool:
        """Links file ``node`` at its memory's path, making directories as needed.

        Returns:
            False when the path is taken (the node is shadowed and retried by
            :meth:`retry_shadowed`); True when placed.
        """
        assert node.memory is not None
        assert node.attachment is not None
        if node in self._shadowed:
            self._shadowed.remove(node)
        attachment = node.attachment
        names = node.memory.path[1:].split("/")
        directory = self._store_roots[attachment.store_id]
        made: list[Node] = []
        for name in names[:-1]:
            child = directory.children.get(name)
            if child is None:
                child = self.new_directory(directory, name, held=False)
                made.append(child)
            elif not child.is_dir:
                return self._shadow(node, made)
            directory = child
        existing = directory.children.get(names[-1])
        if existing is node:
            return True
        if existing is not None:
            if not self._outranks(node, existing):
                return self._shadow(node, made)
            self.unlink(existing)
            self._shadowed.append(existing)
            self._notices.append(Notice(existing.inode))
        self._link(directory, names[-1], node)
        self.filled_below(node)
        return True

    def _outranks(self, node: Node, existing: Node) -> bool:
        """A memory takes the place of ``existing`` only in a flat layout, over a stored,
        clean file of a store attached later (SPEC §4: the default wins, then the
        earlier attachment)."""
        return (
            not existing.is_dir
            and existing.stored
            and not existing.working.dirty
            and existing.attachment is not None
            and node.attachment is not None
            and node.attachment.priority < existing.attachment.priority
        )

    def _shadow(self, node: Node, made: list[Node]) -> bool:
        for directory in reversed(made):
            if not directory.children:
                self.unlink(directory)
        self._shadowed.append(node)
        return False

    def shadow(self, node: Node) -> None:
        """Keeps ``node`` (out of the tree) to be shown again when its path is free."""
        self.unlink(node)
        if node not in self._shadowed:
            self._shadowed.append(node)
        self._notices.append(Notice(node.inode))

    def retry_shadowed(self) -> None:
        """Places shadowed nodes whose path has become free."""
        for node in list(self._shadowed):
            if node in self._shadowed and node.memory is not None:
                self.place(node)

    def prune(self, directory: Node | None) -> None:
        """Removes ``directory`` and its ancestors while they are empty, not held and not a
        store root (a directory is only a path prefix, SPEC §4 mapping)."""
        while (
            directory is not None
            and directory.parent is not None
            and not directory.placement.store_root
            and not directory.placement.held
            and not directory.children
        ):
            parent = directory.parent
            self.unlink(directory)
            self.release_if_unused(directory)
            directory = parent

    def hold_if_empty(self, directory: Node) -> None:
        """A directory emptied through the mount stays until rmdir (``rm -r`` removes
        the files, then the directory)."""
        if not directory.children:
            directory.placement.hold()

    def filled_below(self, node: Node) -> None:
        """File ``node`` was placed, created or renamed: no directory above it is held
        any more (each is a path prefix of a memory again)."""
        for ancestor in self.ancestors(node):
            ancestor.placement.filled()

    def ancestors(self, node: Node) -> Iterator[Node]:
        current = node.parent
        while current is not None:
            yield current
            current = current.parent

    def handed_out(self, node: Node) -> None:
        """The kernel was given ``node`` by name (lookup, create, mkdir, readdirplus):
        its lookup count goes up by one (pyfuse3 lookup-count contract, balanced by
        :meth:`forget`), and the dentry the kernel holds of it is fresh
        (:meth:`memfs.fuse.namespace.Placement.handed_out`)."""
        node.lookup_count += 1
        node.placement.handed_out()

    def forget(self, inode: int, count: int) -> None:
        """Lowers the lookup count of ``inode`` by ``count`` (pyfuse3 ``forget``)."""
        node = self._nodes.get(inode)
        if node is None or node is self.root:
            return
        node.lookup_count = max(0, node.lookup_count - count)
        self.release_if_unused(node)

    def release_if_unused(self, node: Node) -> None:
        """Drops ``node`` from the inode map once it is out of the tree, unknown to the
        kernel, closed and not waiting to be shown again (lookup_counts.rst
        ``maybe_remove_inode``)."""
        if (
            node is self.root
            or node.parent is not None
            or node.lookup_count > 0
            or node.open_count > 0
            or node in self._shadowed
            or (node.memory is not None and node.attachment is not None
                and self._by_memory.get((node.attachment.store_id, node.memory.id)) is node)
        ):
            return
        self._nodes.pop(node.inode, None)

    def take_notices(self) -> list[Notice]:
        """The kernel invalidations recorded since the last call."""
        notices, self._notices = self._notices, []
        return notices

    def notice(self, notice: Notice) -> None:
        self._notices.append(notice)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, inode: int) -> bool:
        return inode in self._nodes
