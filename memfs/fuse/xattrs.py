"""Extended attributes on a mount: ``user.meta.*`` metadata, ``user.memfs.*`` facts.

Owns :class:`Xattrs` (SPEC §4 mapping: xattrs):

* ``user.meta.<key>``: the memory's metadata, read-write. The rules are SPEC §1's, from
  :func:`memfs.core.rules.metadata_problems` (what the engine refuses, the mount refuses);
  this module only maps their kinds to errnos: too many keys → :class:`TooManyAttributes`
  (ENOSPC), too long → :class:`AttributeTooLarge` (E2BIG), anything else →
  :class:`memfs.core.errors.InvalidMetadata` (EINVAL). A file not yet stored keeps them
  pending until its first commit.
* ``user.memfs.id``, ``user.memfs.version_id``, ``user.memfs.sha256``: read-only, not
  listed (tools that copy every listed xattr would fail on them).
* ``user.memfs.last_accessed`` (RFC 3339 UTC) and ``user.memfs.decay`` (the decay score,
  6 decimals) of a record (SPEC §6): read-only, not listed; absent (ENODATA) on a
  memory that is no record, and on a remote mount.
* any other namespace: ENOTSUP.
"""

from __future__ import annotations

from collections.abc import Callable

from memfs.backend import Backend, MemoryChange
from memfs.core.errors import InvalidContent, InvalidMetadata
from memfs.core.model import format_timestamp
from memfs.core.records import Record
from memfs.core.rules import MetadataProblem, metadata_problems
from memfs.fuse.errors import (
    AttributeTooLarge,
    NoSuchAttribute,
    ReadOnlyAttribute,
    TooManyAttributes,
    UnknownAttribute,
)
from memfs.fuse.inodes import InodeTable, Node

__all__ = ["XATTR_META_PREFIX", "Xattrs"]

XATTR_USER_PREFIX = "user."
XATTR_MEMFS_PREFIX = "user.memfs."
XATTR_META_PREFIX = "user.meta."
_XATTR_MEMFS_FIELDS = {
    "user.memfs.id": "id",
    "user.memfs.version_id": "memory_version_id",
    "user.memfs.sha256": "content_sha256",
}


_XATTR_RECORD_FIELDS: dict[str, Callable[[Record], str]] = {
    "user.memfs.last_accessed": lambda record: format_timestamp(record.last_accessed),
    "user.memfs.decay": lambda record: f"{record.decay_score:.6f}",
}


class Xattrs:
    """The xattr requests of one mount; the caller holds the lock for changes.

    Args:
        backend: the store.
        table: the inode table.
    """

    def __init__(self, backend: Backend, table: InodeTable) -> None:
        self._backend = backend
        self._table = table

    async def get(self, node: Node, raw_name: bytes) -> bytes:
        """Raises UnknownAttribute (not ``user.*``: no security labels, no POSIX ACLs),
        NoSuchAttribute."""
        text = raw_name.decode("utf-8", "replace")
        if not text.startswith(XATTR_USER_PREFIX):
            # ENOTSUP, as the kernel answers for a namespace a local filesystem has no
            # handler for. ls -l then remembers the filesystem lacks both and stops
            # asking (coreutils caches ENOTSUP per device): two round trips per mount
            # instead of two per file on ``ls -l`` of a large tree.
            raise UnknownAttribute(f"{text}: memfs serves only user.* attributes")
        memory = node.memory if node.stored else None
        if text in _XATTR_MEMFS_FIELDS and memory is not None:
            return str(getattr(memory, _XATTR_MEMFS_FIELDS[text])).encode()
        if (
            text in _XATTR_RECORD_FIELDS
            and memory is not None
            and node.attachment is not None
            and not node.attachment.immutable  # today's record is not the past's
        ):
            record = await self._backend.get_record(node.attachment.store_id, memory.id)
            if record is not None:
                return _XATTR_RECORD_FIELDS[text](record).encode()
        if text.startswith(XATTR_META_PREFIX) and not node.is_dir:
            value = self.metadata(node).get(text[len(XATTR_META_PREFIX):])
            if value is not None:
                return value.encode()
        raise NoSuchAttribute(f"{text} is not set on {self._table.display_path(node)}")

    def names(self, node: Node) -> list[bytes]:
        """Only ``user.meta.*``: the read-only ``user.memfs.*`` are answered by get but
        not listed, so tools that copy every listed xattr (cp -a, mv across stores,
        rsync -X) don't try to set them and print EPERM complaints."""
        if node.is_dir:
            return []
        return [(XATTR_META_PREFIX + key).encode() for key in sorted(self.metadata(node))]

    async def set(self, node: Node, raw_name: bytes, value: bytes) -> None:
        """Sets one ``user.meta.*`` key. Raises the xattr errors, InvalidContent (value
        not UTF-8), ReadOnly and the store's errors."""
        key = self._meta_key(node, raw_name)
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidContent("a user.meta value must be UTF-8 text") from exc
        metadata = dict(self.metadata(node))
        metadata[key] = text
        await self._set_metadata(node, metadata)

    async def remove(self, node: Node, raw_name: bytes) -> None:
        """Raises NoSuchAttribute and as :meth:`set`."""
        key = self._meta_key(node, raw_name)
        metadata = dict(self.metadata(node))
        if key not in metadata:
            raise NoSuchAttribute(f"user.meta.{key} is not set")
        del metadata[key]
        await self._set_metadata(node, metadata)

    def metadata(self, node: Node) -> dict[str, str]:
        if node.stored:
            assert node.memory is not None
            return node.memory.metadata
        return node.working.pending_metadata

    def _meta_key(self, node: Node, raw_name: bytes) -> str:
        """The metadata key of a settable xattr name. Raises UnknownAttribute,
        ReadOnlyAttribute, ReadOnly."""
        name = raw_name.decode("utf-8", "replace")
        if name.startswith(XATTR_MEMFS_PREFIX):
            raise ReadOnlyAttribute(f"{name} is maintained by memfs and can't be changed")
        if not name.startswith(XATTR_META_PREFIX) or node.is_dir:
            raise UnknownAttribute(f"{name} is not supported: only user.meta.<key> on files")
        if node.stored:
            self._table.check_writable(node)
        else:
            self._table.content_target(node)
        return name[len(XATTR_META_PREFIX):]

    async def _set_metadata(self, node: Node, metadata: dict[str, str]) -> None:
        _check(metadata)
        if not node.stored:
            node.working.set_pending_metadata(metadata)  # applied by the first commit
            return
        assert node.memory is not None
        assert node.attachment is not None
        memory = await self._backend.update_memory(
            node.attachment.store_id, node.memory.id, MemoryChange(metadata=metadata)
        )
        self._table.set_memory(node, memory)


_ERROR_BY_PROBLEM: dict[MetadataProblem, type[Exception]] = {
    MetadataProblem.TOO_MANY_KEYS: TooManyAttributes,
    MetadataProblem.TOO_LONG: AttributeTooLarge,
}


def _check(metadata: dict[str, str]) -> None:
    """Refuses metadata breaking a SPEC §1 rule, with the xattr error of its kind."""
    problems = metadata_problems(metadata)
    if not problems:
        return
    kind, _ = problems[0]
    error = _ERROR_BY_PROBLEM.get(kind)
    if error is None:
        raise InvalidMetadata([message for _, message in problems])
    raise error("; ".join(message for _, message in problems))
