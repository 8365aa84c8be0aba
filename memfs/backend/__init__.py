"""The store as a mount sees it: the :class:`Backend` port, its values, the embedded one.

==========================  ====================================================
module                      concern
==========================  ====================================================
``protocol``                the ``Backend`` Protocol; ``MemoryChange``,
                            ``AttachmentSpec``, ``BackendEvent``,
                            ``BackendStatistics``
``embedded``                ``EmbeddedBackend``: an in-process store engine
``naming``                  conflict-copy names (SPEC §4), shared by FUSE and remote
==========================  ====================================================

Layering (tests/test_layers.py): ``memfs.fuse`` and ``memfs.remote`` import this
package; it imports neither of them, nor the API.
"""

from memfs.backend.embedded import EmbeddedBackend
from memfs.backend.naming import conflict_name
from memfs.backend.protocol import (
    AttachmentSpec,
    Backend,
    BackendEvent,
    BackendStatistics,
    MemoryChange,
)
from memfs.core.errors import BackendUnavailable

__all__ = [
    "AttachmentSpec",
    "Backend",
    "BackendEvent",
    "BackendStatistics",
    "BackendUnavailable",
    "EmbeddedBackend",
    "MemoryChange",
    "conflict_name",
]
