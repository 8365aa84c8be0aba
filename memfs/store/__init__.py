"""The store engine: the only package with SQL. See :class:`memfs.store.engine.Engine`."""

from memfs.store.engine import Engine, ResourceSpec

__all__ = ["Engine", "ResourceSpec", "open_engine"]


def open_engine(database: str | None = None, *, memory_limit: int | None = None) -> Engine:
    """Opens the configured database (see :func:`memfs.config.database_url`)."""
    from memfs.config import database_url

    return Engine(database_url(database), memory_limit=memory_limit)
