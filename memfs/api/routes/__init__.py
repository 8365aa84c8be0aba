"""The routes, one module per resource, joined into the one :data:`router`.

=============  ===================================================================
``stores``     memory stores (api-contract §5.1–5.6) and their audit trail
``memories``   memories (§5.7–5.11), SPEC §2 deletion modes, forget, restore,
               directory rename (``rename_prefix``)
``versions``   memory versions (§5.12–5.14)
``history``    snapshots of a store and the diff of two points (SPEC §10, extension)
``feed``       a store's change feed, the long poll remote mounts follow (SPEC §4)
``sessions``   sessions and their tokens (api-contract §7, SPEC §3)
``search``     full-text search of one store and across stores (SPEC §7, extension)
``identities`` mounts on (identity, template) pairs, default stores (SPEC §8, extension)
``dreams``     dreams and sessions' transcripts (api-contract §7.4, SPEC §11)
``by_memory``  seed 004's store-less delete, forget and restore (``/v1/memories/{id}``)
``_common``    what they share: :func:`~memfs.api.routes._common.run`, query types
=============  ===================================================================

Every route gets the dependencies of :data:`~memfs.api.routes._common.ROUTER_DEPENDENCIES`:
authentication first (:func:`authenticate_request`), the documented credentials, the NUL
check of the URL.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute

from memfs.api.routes import (
    by_memory,
    dreams,
    feed,
    history,
    identities,
    memories,
    search,
    sessions,
    stores,
    versions,
)
from memfs.api.routes._common import ROUTER_DEPENDENCIES, authenticate_request

__all__ = ["allowed_methods", "authenticate_request", "router"]

_MODULES = (
    stores, memories, versions, history, feed, sessions, dreams, search, identities, by_memory
)

router = APIRouter(dependencies=ROUTER_DEPENDENCIES)
for _module in _MODULES:
    router.include_router(_module.router)


def allowed_methods(path: str) -> list[str]:
    """Every method the routes of ``path`` have (sorted): the ``Allow`` header of a 405
    (RFC 9110 §15.5.6), empty when no route has that path.

    A literal path wins over a parameterized one, as in routing: the methods of
    ``…/memories/rename_prefix`` are its own, not those of ``…/memories/{memory_id}``.
    """
    matching = [
        route
        for module in _MODULES
        for route in module.router.routes
        if isinstance(route, APIRoute) and route.include_in_schema and route.path_regex.match(path)
    ]
    if not matching:
        return []
    fewest = min(route.path.count("{") for route in matching)
    return sorted(
        {
            method
            for route in matching
            if route.path.count("{") == fewest
            for method in route.methods or ()
        }
    )
