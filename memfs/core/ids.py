"""Object ids: a type prefix plus a time-sortable random suffix (SPEC §1 objects), and
the two content digests (the wire's SHA-256 and the store's xxh3-128 blob key).

The suffix is 26 characters of Crockford base32 over 128 bits: a 48-bit Unix time in
milliseconds followed by 80 random bits, like a ULID. Ids made in the same process are
strictly increasing even within one millisecond (the random part is incremented), so
ids sort by creation time.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import xxhash

__all__ = ["PREFIXES", "blob_key_of", "new_id", "sha256_of"]

PREFIXES = {
    "store": "memstore_",
    "memory": "mem_",
    "version": "memver_",
    "snapshot": "snap_",
    "session": "sesn_",
    "api_key": "apikey_",
    "request": "req_",
    "dream": "drm_",
    "event": "sevt_",
}

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lowercase
_lock = threading.Lock()
_last_ms = 0
_last_random = 0


def _encode(value: int) -> str:
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(kind: str) -> str:
    """A new id for ``kind`` (a key of :data:`PREFIXES`), e.g. ``mem_01jd…``.

    Raises:
        KeyError: unknown kind.
    """
    global _last_ms, _last_random
    prefix = PREFIXES[kind]
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            now_ms = _last_ms
            _last_random = (_last_random + 1) & ((1 << 80) - 1)
        else:
            _last_random = int.from_bytes(os.urandom(10), "big")
        _last_ms = now_ms
        value = (now_ms << 80) | _last_random
    return prefix + _encode(value)


def sha256_of(data: bytes | str) -> str:
    """Lowercase hex SHA-256 of ``data`` (text is hashed as UTF-8): the wire's
    ``content_sha256`` (api-contract §4) and every precondition compared with it."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def blob_key_of(data: bytes) -> str:
    """The content address of ``data`` in the store: xxh3-128, 32 lowercase hex digits."""
    return xxhash.xxh3_128_hexdigest(data)
