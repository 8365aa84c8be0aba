"""Names on a mount: decoding what the kernel sends, store paths, scratch files.

Owns the small name rules every module of :mod:`memfs.fuse` shares: a kernel name as
text (SPEC §1: paths are UTF-8, segments at most 255 bytes), a name joined to its
directory's store path, and whether a file's content stays in the mount (a scratch
name, SPEC §4 atomic save). The rules themselves are :mod:`memfs.core.rules`'.
"""

from __future__ import annotations

import hashlib

from memfs.core.config import MAX_SEGMENT_BYTES
from memfs.core.errors import InvalidPath, PathTooLong
from memfs.core.rules import is_scratch_name
from memfs.fuse.inodes import Node

__all__ = ["decode_name", "is_local_scratch", "join_path", "sha256_hex"]


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
    return (node.memory is None or node.parked) and is_scratch_name(node.name)
