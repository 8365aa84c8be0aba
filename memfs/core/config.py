"""Limits, defaults and settings. Every constant names its unit.

The limits are SPEC §1 ("Validation rules" and "Limits"); defaults that the SPEC leaves
open are chosen here and documented once.

Every environment variable memfs reads is read here, and only here:

================================  =========================================================
``MEMFS_HOME``                    the data directory (:func:`memfs_home`)
``MEMFS_DATABASE``                the store database (:func:`database_url`)
``MEMFS_MEMORY_LIMIT``            live memories per store (:func:`memory_limit`)
``MEMFS_SQLITE_SYNC``             ``full`` or ``normal`` (:func:`sqlite_synchronous_full`)
``MEMFS_TOKEN``                   a remote mount's session token (:func:`session_token`)
``MEMFS_SEARCH_MODEL_DIR``        a local embedding model for semantic search
                                  (:func:`search_model_dir`)
``ANTHROPIC_API_KEY``             the key of the language-model dreamer (:func:`dream_endpoint`)
``ANTHROPIC_BASE_URL``            its Messages API endpoint (:func:`dream_endpoint`)
``MEMFS_DREAM_DECAY_BELOW``       the consolidating dreamer's decay threshold
                                  (:func:`dream_decay_below`)
``MEMFS_DREAM_NEAR_DUPLICATE``    its near-duplicate similarity
                                  (:func:`dream_near_duplicate`)
``MEMFS_DREAM_MAX_TURNS``         the language-model dreamer's turn limit
                                  (:func:`dream_max_turns`)
``MEMFS_DREAM_TIME_LIMIT``        its wall-time limit in seconds (:func:`dream_time_limit_s`)
================================  =========================================================
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "DEFAULT_API_HOST",
    "DEFAULT_API_PORT",
    "DEFAULT_CACHE_SIZE_BYTES",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_PAGE_LIMIT",
    "DEFAULT_VERSION_RETENTION_S",
    "MAX_CONTENT_BYTES",
    "MAX_FULL_VIEW_PAGE_LIMIT",
    "MAX_INSTRUCTIONS_CHARS",
    "MAX_METADATA_KEYS",
    "MAX_METADATA_KEY_CHARS",
    "MAX_METADATA_VALUE_CHARS",
    "MAX_PAGE_LIMIT",
    "MAX_PATH_BYTES",
    "MAX_PATH_SEGMENTS",
    "MAX_SEGMENT_BYTES",
    "MAX_STORES_PER_SESSION",
    "MAX_EXPLICIT_MOUNTS",
    "MAX_STORES_PER_PAIR_SESSION",
    "DEFAULT_PAIR_MOUNT_ROOT",
    "DEFAULT_SESSION_MOUNT_ROOT",
    "DEFAULT_PRUNE_INTERVAL_S",
    "FOLD_WINDOW_S",
    "DEFAULT_SESSION_TTL_S",
    "CONSOLE_SIGN_IN_TTL_S",
    "MAX_VERSION_RETENTION_S",
    "MAX_SESSION_TTL_S",
    "MAX_STORE_DESCRIPTION_CHARS",
    "MAX_STORE_NAME_CHARS",
    "SEARCH_MODEL_ENV",
    "TOKEN_ENV",
    "CONSOLIDATE_MODEL",
    "DEFAULT_DREAM_DECAY_BELOW",
    "DREAM_HEARTBEAT_S",
    "DREAM_STALE_S",
    "MAX_DREAM_INSTRUCTIONS_CHARS",
    "MAX_DREAM_SESSIONS",
    "MAX_DREAM_MODEL_ID_CHARS",
    "database_url",
    "DEFAULT_DREAM_MAX_TURNS",
    "DEFAULT_DREAM_NEAR_DUPLICATE",
    "DEFAULT_DREAM_TIME_LIMIT_S",
    "DREAM_MAX_OUTPUT_TOKENS",
    "MAX_DREAM_TRANSCRIPT_CHARS",
    "MAX_DREAM_LAYOUT_ENTRIES",
    "EVENT_STREAM_IDLE_S",
    "EVENT_STREAM_PING_S",
    "EVENT_STREAM_POLL_S",
    "MAX_EVENT_STREAM_IDLE_S",
    "dream_decay_below",
    "dream_endpoint",
    "dream_max_turns",
    "dream_near_duplicate",
    "dream_time_limit_s",
    "memfs_home",
    "memory_limit",
    "search_model_dir",
    "session_token",
    "sqlite_synchronous_full",
]

# SPEC §1 validation rules.
MAX_PATH_BYTES = 1024
MAX_SEGMENT_BYTES = 255  # Linux NAME_MAX
MAX_PATH_SEGMENTS = 20
MAX_CONTENT_BYTES = 102_400
MAX_METADATA_KEYS = 16
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512
MAX_STORE_NAME_CHARS = 255
MAX_STORE_DESCRIPTION_CHARS = 1024
MAX_INSTRUCTIONS_CHARS = 4096
MAX_STORES_PER_SESSION = 8
# SPEC §8: explicit (read-only) mounts per (identity, template) pair; a pair's session
# attaches its default store and every one of them, so it may hold 1 + 10 stores.
MAX_EXPLICIT_MOUNTS = 10
MAX_STORES_PER_PAIR_SESSION = 1 + MAX_EXPLICIT_MOUNTS
# Where a session's stores are mounted unless its creator says otherwise (api-contract
# §5.1 mount path rule: /mnt/memory/<slug>).
DEFAULT_SESSION_MOUNT_ROOT = "/mnt/memory"
# SPEC §8: where a pair's session is mounted (flat layout) unless another root is given.
DEFAULT_PAIR_MOUNT_ROOT = "/data/.qoder/awareness"
# Session tokens expire (SPEC §3 credential lifecycle): after a day unless a ttl is
# given at creation, and never later than 30 days after it.
DEFAULT_SESSION_TTL_S = 24 * 3600
MAX_SESSION_TTL_S = 30 * 24 * 3600
# The console (SPEC §12): a sign-in lasts this long (never past its session token's own
# expiry), then the person signs in again.
CONSOLE_SIGN_IN_TTL_S = 12 * 3600
# SPEC §2 retention: a store's version retention period is at most 100 years (a bound
# on input, not a promise); None, the default, keeps every version forever.
MAX_VERSION_RETENTION_S = 100 * 365 * 24 * 3600
# How often `memfs serve` prunes versions past their store's retention period.
DEFAULT_PRUNE_INTERVAL_S = 3600.0

# SPEC §1 limits: memories per store, configurable with MEMFS_MEMORY_LIMIT.
DEFAULT_MEMORY_LIMIT = 10_000

# SPEC §2: versions are kept at least 30 days after writing.
DEFAULT_VERSION_RETENTION_S = 30 * 24 * 3600

# api-contract §3 pagination.
DEFAULT_PAGE_LIMIT = 20
MAX_PAGE_LIMIT = 100
MAX_FULL_VIEW_PAGE_LIMIT = 20

# `memfs serve` defaults (SPEC §5).
DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8765

# SPEC §4 "One save, one version": how soon after a mount's own write (a temporary
# file's create, a delete) a later step of the same save may fold it away (a rename
# over a target, a create of the same name). Tools take milliseconds; 30 s leaves room
# for a loaded machine without making an old delete come back to life.
FOLD_WINDOW_S = 30.0

# Local content cache of a remote mount (SPEC §4).
DEFAULT_CACHE_SIZE_BYTES = 256 * 1024 * 1024

# Where a remote mount's session token may come from instead of argv (SPEC §3).
TOKEN_ENV = "MEMFS_TOKEN"


def memfs_home() -> Path:
    """The data directory: ``$MEMFS_HOME``, else ``~/.local/share/memfs`` (SPEC §5)."""
    env = os.environ.get("MEMFS_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".local" / "share" / "memfs"


def database_url(explicit: str | None = None) -> str:
    """The SQLAlchemy URL of the store database.

    Args:
        explicit: a ``postgresql://…`` URL, a ``sqlite:///…`` URL, or a file path; None
            means ``$MEMFS_DATABASE`` if set, else ``$MEMFS_HOME/memfs.db``.

    Returns:
        A URL for :func:`memfs.store.open_engine`. ``postgresql://`` is rewritten to the
        psycopg 3 driver (``postgresql+psycopg://``).
    """
    value = explicit or os.environ.get("MEMFS_DATABASE")
    if not value:
        return f"sqlite:///{memfs_home() / 'memfs.db'}"
    if value.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + value.split("://", 1)[1]
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def memory_limit() -> int:
    """Live memories allowed per store: ``$MEMFS_MEMORY_LIMIT``, else 10,000 (SPEC §1).

    Raises:
        ValueError: the variable is not an integer.
    """
    value = os.environ.get("MEMFS_MEMORY_LIMIT")
    return int(value) if value else DEFAULT_MEMORY_LIMIT


def sqlite_synchronous_full() -> bool:
    """``$MEMFS_SQLITE_SYNC``: True for ``full``, False for ``normal`` (the default).

    Raises:
        InvalidInput: any other value.
    """
    value = os.environ.get("MEMFS_SQLITE_SYNC", "normal").lower()
    if value not in ("full", "normal"):
        from memfs.core.errors import InvalidInput

        raise InvalidInput("MEMFS_SQLITE_SYNC must be 'full' or 'normal'")
    return value == "full"


SEARCH_MODEL_ENV = "MEMFS_SEARCH_MODEL_DIR"


def search_model_dir() -> Path | None:
    """``$MEMFS_SEARCH_MODEL_DIR``: the directory of a locally installed embedding model
    for semantic search (SPEC §7), or None when unset or empty."""
    value = os.environ.get(SEARCH_MODEL_ENV)
    return Path(value) if value else None


def session_token() -> str | None:
    """``$MEMFS_TOKEN``: a remote mount's session token, or None when unset or empty."""
    return os.environ.get(TOKEN_ENV) or None


# --- Dreams (SPEC §11, api-contract §7.4).

# The model id of the dreamer that needs no language model (memfs.dreams.consolidate).
CONSOLIDATE_MODEL = "memfs-consolidate"
# A dream reads at most this many sessions' transcripts (api-contract §7.4: 1..100).
MAX_DREAM_SESSIONS = 100
# A dream's instructions: 1 to 4,096 characters (api-contract §7.4).
MAX_DREAM_INSTRUCTIONS_CHARS = 4096
# A model id: 1 to 256 characters (api-contract §7.4).
MAX_DREAM_MODEL_ID_CHARS = 256
# The consolidating dreamer removes records whose decay_score (SPEC §6) is below this.
DEFAULT_DREAM_DECAY_BELOW = 0.05
# A running dream's job writes a heartbeat this often (seconds) ...
DREAM_HEARTBEAT_S = 5.0
# ... and a running dream whose heartbeat is older than this (seconds) has lost its job
# (its server stopped): the next dream runner to start marks it failed.
DREAM_STALE_S = 30.0


def dream_decay_below() -> float:
    """``$MEMFS_DREAM_DECAY_BELOW`` (0–1), else :data:`DEFAULT_DREAM_DECAY_BELOW`.

    Raises:
        ValueError: not a number from 0 to 1.
    """
    raw = os.environ.get("MEMFS_DREAM_DECAY_BELOW", "").strip()
    if not raw:
        return DEFAULT_DREAM_DECAY_BELOW
    value = float(raw)
    if not 0 <= value <= 1:
        raise ValueError("MEMFS_DREAM_DECAY_BELOW must be a number from 0 to 1")
    return value


def dream_endpoint(
    api_key: str | None = None, base_url: str | None = None
) -> tuple[str, str | None] | None:
    """The Messages API the language-model dreamer calls: ``(api key, base URL or None
    for the SDK's default)``. ``api_key`` and ``base_url`` (``memfs serve
    --dream-api-key-file``, ``--dream-base-url``) win over the anthropic SDK's own
    ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``; None when no key is configured."""
    key = (api_key or "").strip() or os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if not key:
        return None
    url = (base_url or "").strip() or os.environ.get("ANTHROPIC_BASE_URL", "").strip()
    return key, url or None


# A session's event stream (GET /v1/sessions/{id}/events/stream) ends after this many
# seconds without a new event (its ``timeout_s``; at most MAX_…), or when the session's
# dream has ended ...
EVENT_STREAM_IDLE_S = 300.0
MAX_EVENT_STREAM_IDLE_S = 3600.0
# ... sends a ``ping`` event after this many quiet seconds (proxies keep it open) ...
EVENT_STREAM_PING_S = 15.0
# ... and looks for new events this often (seconds).
EVENT_STREAM_POLL_S = 0.2

# The language-model dreamer (memfs.memory_tool.dreamer): at most this many model turns
# (one Messages API call each) ...
DEFAULT_DREAM_MAX_TURNS = 40
# ... and this much wall time (seconds) per dream; past either, the dream fails
# (``dream_turn_limit``, ``dream_time_limit``) with its output as far as it got.
DEFAULT_DREAM_TIME_LIMIT_S = 900.0
# ``max_tokens`` of each of its model turns (tokens).
DREAM_MAX_OUTPUT_TOKENS = 8192
# Transcript text put in its context, all sessions together (characters); the rest is
# cut, and the context says so.
MAX_DREAM_TRANSCRIPT_CHARS = 200_000
# The store's layout in its context lists at most this many files (the model can view
# the rest).
MAX_DREAM_LAYOUT_ENTRIES = 2000
# The consolidating dreamer merges two memories whose embeddings' cosine similarity is
# at least this (SPEC §7's local model; only when one is configured).
DEFAULT_DREAM_NEAR_DUPLICATE = 0.95


def _positive_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = float(raw)
    if value <= 0:
        raise ValueError(f"{name} must be a positive number")
    return value


def dream_max_turns() -> int:
    """``$MEMFS_DREAM_MAX_TURNS``, else :data:`DEFAULT_DREAM_MAX_TURNS`.

    Raises:
        ValueError: not a positive whole number.
    """
    value = _positive_env("MEMFS_DREAM_MAX_TURNS", DEFAULT_DREAM_MAX_TURNS)
    if value != int(value):
        raise ValueError("MEMFS_DREAM_MAX_TURNS must be a positive whole number")
    return int(value)


def dream_time_limit_s() -> float:
    """``$MEMFS_DREAM_TIME_LIMIT`` (seconds), else :data:`DEFAULT_DREAM_TIME_LIMIT_S`.

    Raises:
        ValueError: not a positive number.
    """
    return _positive_env("MEMFS_DREAM_TIME_LIMIT", DEFAULT_DREAM_TIME_LIMIT_S)


def dream_near_duplicate() -> float:
    """``$MEMFS_DREAM_NEAR_DUPLICATE`` (a cosine similarity, above 0 and at most 1),
    else :data:`DEFAULT_DREAM_NEAR_DUPLICATE`.

    Raises:
        ValueError: not a number in (0, 1].
    """
    value = _positive_env("MEMFS_DREAM_NEAR_DUPLICATE", DEFAULT_DREAM_NEAR_DUPLICATE)
    if value > 1:
        raise ValueError("MEMFS_DREAM_NEAR_DUPLICATE must be a number above 0, at most 1")
    return value
