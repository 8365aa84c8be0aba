"""How memfs's processes log: plain lines or JSON objects, never a secret.

``memfs serve`` and the mount daemons call :func:`configure` on their one handler
(``--log-format text|json``). Either way a :class:`SecretFilter` replaces every API-key
secret and session token in a record by its prefix and ``…`` before the record is
formatted (SPEC §3: a secret is shown once, at creation; a log is kept for long).

With ``json``, :class:`JsonFormatter` writes one object per line::

    {"time": "2026-12-06T02:07:02.929Z", "level": "INFO", "logger": "memfs.access",
     "message": "GET /v1/memory_stores/memstore_01m… 200 4.1 ms",
     "request_id": "req_01m…", "store_id": "memstore_01m…", "method": "GET", …}

``time`` is UTC (RFC 3339, milliseconds), ``level`` the level's name, ``logger`` the
logger's name, ``message`` the formatted message, and ``exception`` the traceback when
there is one. The ids a record involves are fields of their own: those passed with
``extra={"store_id": …}`` (the access log passes its request's), else found in the
message by their prefix (:data:`ID_FIELDS`): ``store_id``, ``memory_id``,
``version_id``, ``session_id``, ``request_id``, ``api_key_id`` (the first of each).
Other ``extra`` fields of :data:`EXTRA_FIELDS` are copied as they are.

Memory content is never given to a logger by memfs's code (the FUSE layer logs a
buffer as ``<N bytes>``); paths are (a log is what says which file failed), and a
redaction scrubs them from a running mount's log (:mod:`memfs.fuse.status`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "EXTRA_FIELDS",
    "ID_FIELDS",
    "LOG_FORMATS",
    "TEXT_FORMAT",
    "JsonFormatter",
    "SecretFilter",
    "configure",
]

# The id fields of a JSON record and the id prefix each is found by in a message
# (memfs.core.ids.PREFIXES).
ID_FIELDS = {
    "store_id": "memstore_",
    "memory_id": "mem_",
    "version_id": "memver_",
    "session_id": "sesn_",
    "request_id": "req_",
    "api_key_id": "apikey_",
}
# Fields of ``extra=`` copied into a JSON record besides the ids.
EXTRA_FIELDS = ("method", "route", "path", "status", "duration_ms", "client")
LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"

_ID_PATTERN = re.compile(
    r"\b(" + "|".join(re.escape(prefix) for prefix in ID_FIELDS.values()) + r")[0-9a-z]{26}\b"
)
_FIELD_OF_PREFIX = {prefix: name for name, prefix in ID_FIELDS.items()}


class SecretFilter(logging.Filter):
    """Replaces every secret in a record's message (and its arguments) by the secret's
    prefix and ``…``: any word starting with one of ``prefixes`` (``memfs_sk_``,
    ``memfs_st_``: :data:`memfs.store.API_KEY_SECRET_PREFIX`,
    :data:`memfs.store.SESSION_TOKEN_PREFIX`). Never drops a record."""

    def __init__(self, prefixes: Sequence[str]) -> None:
        super().__init__()
        alternatives = "|".join(re.escape(prefix) for prefix in prefixes)
        self._pattern = re.compile(rf"({alternatives})[A-Za-z0-9_\-]+")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self._pattern.search(message):
            record.msg = self._pattern.sub(r"\1…", message)
            record.args = None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = self._pattern.sub(
                r"\1…", logging.Formatter().formatException(record.exc_info)
            )
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (the fields of the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"
            ).replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
        }
        for match in _ID_PATTERN.finditer(message):
            entry.setdefault(_FIELD_OF_PREFIX[match.group(1)], match.group(0))
        for name in (*ID_FIELDS, *EXTRA_FIELDS):
            value = record.__dict__.get(name)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure(
    handler: logging.Handler,
    log_format: str,
    *,
    secret_prefixes: Sequence[str],
    text_format: str = TEXT_FORMAT,
) -> logging.Handler:
    """Gives ``handler`` the formatter of ``log_format`` (``text``: ``text_format``, a
    ``%``-style format; ``json``: :class:`JsonFormatter`) and a :class:`SecretFilter` of
    ``secret_prefixes``. Returns ``handler``.

    Raises:
        ValueError: ``log_format`` is not one of :data:`LOG_FORMATS`.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: give text or json")
    text = logging.Formatter(text_format)
    handler.setFormatter(JsonFormatter() if log_format == "json" else text)
    handler.addFilter(SecretFilter(secret_prefixes))
    return handler
