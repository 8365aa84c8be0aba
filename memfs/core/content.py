"""A memory's content, checked once: its text, its UTF-8 bytes and their SHA-256.

Built only by :func:`memfs.core.rules.content_from_bytes` (bytes written through a
mount) and :func:`memfs.core.rules.content_from_text` (text from the API, the memory
tool, the CLI), which apply the SPEC §1 content rules; whoever holds one passes it down
to the store, which then neither decodes, encodes, validates nor hashes it again.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Content", "text_of"]


@dataclass(frozen=True, slots=True)
class Content:
    """Content that passed the SPEC §1 content rules.

    Attributes:
        text: the content as text.
        data: ``text`` encoded as UTF-8 (at most 102,400 bytes).
        sha256: the lowercase hex SHA-256 of ``data`` (api-contract §4 ``content_sha256``).
    """

    text: str
    data: bytes
    sha256: str


def text_of(content: str | Content) -> str:
    """The text of ``content`` (for a backend that sends text, the remote one)."""
    return content.text if isinstance(content, Content) else content
