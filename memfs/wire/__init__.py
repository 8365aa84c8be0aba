"""The api-contract shapes, in one place: used by the HTTP server, the remote client
and the CLI's ``--json`` output, so all three speak the same objects.

``serialize``   model → wire objects of api-contract §4 (plain dicts, JSON-ready)
``common``      shared vocabulary: digests, timestamps, SPEC §1 value rules, the bases
``stores``      ``memory_store`` (§4.1), its bodies (§5.1-§5.3), audit events
``memories``    ``memory``, ``memory_prefix`` (§4.3-§4.4), ``record`` (SPEC §6), bodies
``versions``    ``memory_version`` (§4.6) and actors (§4.7)
``identities``  (identity, template) pairs and their mounts (SPEC §8)
``sessions``    ``session`` (§7) and its body
``search``      ``search_hit`` and the search body (SPEC §7)
``changes``     ``memory_store_change``: a store's change feed (SPEC §4 remote mounts)
``history``     snapshots and diffs (SPEC §10)
``errors``      the error envelope (§2.1)

Only pydantic here: no HTTP framework (the layer test allows FastAPI and Starlette in
``memfs.api`` alone).
"""

from memfs.wire.serialize import *  # noqa: F403  (the public surface is serialize's __all__)
from memfs.wire.serialize import __all__ as __all__
