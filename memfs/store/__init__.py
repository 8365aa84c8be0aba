"""The store: the only package with SQL. Use it through this face only.

:class:`Engine` is the facade (one transaction per call) over one module per aggregate
(see :mod:`memfs.store.engine`); nothing outside ``memfs/store`` imports those modules,
``engine`` or ``_db`` (tests/test_layers.py checks it).
"""

from memfs.store.access import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, ResourceSpec
from memfs.store.engine import Engine

__all__ = [
    "API_KEY_SECRET_PREFIX",
    "SESSION_TOKEN_PREFIX",
    "Engine",
    "ResourceSpec",
    "open_engine",
]


def open_engine(database: str | None = None, *, memory_limit: int | None = None) -> Engine:
    """Opens the configured database (see :func:`memfs.config.database_url`)."""
    from memfs.config import database_url

    return Engine(database_url(database), memory_limit=memory_limit)
