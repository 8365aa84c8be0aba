"""Names on a mount: decoding what the kernel sends, store paths, scratch files.

Owns the small name rules every module of :mod:`memfs.fuse` shares: a kernel name as
text (SPEC §1: paths are UTF-8, segments at most 255 bytes), a name joined to its
directory's store path, and whether a file's content stays in the mount (a scratch
name, SPEC §4 atomic save), and the size a write may give it. The rules themselves are
:mod:`memfs.core.rules`'.
"""

from __future__ import annotations

import hashlib

from memfs.core.config import MAX_SEGMENT_BYTES
from memfs.core.errors import ContentTooLarge, InvalidPath, PathTooLong
from memfs.core.rules import check_content_fragment, check_content_size, is_scratch_name
from memfs.fuse.inodes import InodeTable, Node

__all__ = [
    "MAX_SCRATCH_BYTES",
    "check_fragment",
    "check_size",
    "decode_name",
    "is_local_scratch",
    "join_path",
    "sha256_hex",
]

# Scratch files are not memories, but they live in the daemon's memory: bound them.
MAX_SCRATCH_BYTES = 16 * 1024 * 1024


def decode_name(name: bytes) -> str:
    """A file name from the kernel as text (SPEC §1: paths are UTF-8).

    Raises:
        PathTooLong: over 255 bytes (NAME_MAX).
        InvalidPath: not valid UTF-8.
    """
    if len(name) > MAX_SEGMENT_BYTES:
        raise PathTooLong(f"file name is {len(name)} bytes; the limit is {MAX_SEGMENT_BYTES}")
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidPath(f"file name {name!r} is not valid UTF-8") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def join_path(directory_path: str, name: str) -> str:
    """``name`` inside the store path ``directory_path`` (``/`` for a store root)."""
    return ("" if directory_path == "/" else directory_path) + "/" + name


def is_local_scratch(node: Node) -> bool:
    """A file whose content never reaches the store in place (SPEC §4 atomic save)."""
    return (node.memory is None or node.placement.parked) and is_scratch_name(node.name)


def check_fragment(node: Node, data: bytes, offset: int) -> None:
    """Raises InvalidContent (EILSEQ) for ``data`` written at ``offset`` of file
    ``node`` when it holds a byte text content can never hold
    (:func:`memfs.core.rules.check_content_fragment`); scratch content is not checked."""
    if not is_local_scratch(node):
        check_content_fragment(data, offset)


def check_size(table: InodeTable, node: Node, size_bytes: int) -> None:
    """Raises ContentTooLarge (EFBIG): file ``node`` of ``table`` would hold content
    beyond SPEC §1's limit, or be a scratch file beyond :data:`MAX_SCRATCH_BYTES`."""
    if not is_local_scratch(node):
        check_content_size(size_bytes)
    elif size_bytes > MAX_SCRATCH_BYTES:
        raise ContentTooLarge(
            f"{table.display_path(node)} would be {size_bytes} bytes; "
            f"the limit for a scratch file is {MAX_SCRATCH_BYTES} bytes"
        )
