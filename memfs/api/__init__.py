"""The REST API, wire-compatible with ``anthropic`` SDK memory stores (api-contract).

The only package that knows HTTP. Modules, one concern each:

=================  ============================================================
``app``            the FastAPI application factory, request-id and body-size
                   middleware, error handlers, ``/openapi.json``
``routes/``        the endpoints, one module per resource (stores, memories,
                   versions, the change feed, sessions; api-contract §0, SPEC §2
                   deletion modes, the remote-mount extensions of SPEC §4)
``changes``        the long polls of the change feed
``auth``           credentials → :class:`~memfs.api.auth.Principal`; scope table
``errors``         the error envelope, by the one table of :mod:`memfs.wire.errors`
``serve``          ``memfs serve``: Hypercorn on trio
=================  ============================================================
"""

from memfs.api.app import create_app
from memfs.api.serve import serve

__all__ = ["create_app", "serve"]
