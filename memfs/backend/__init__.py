"""The store as a mount sees it: the :class:`Backend` port, its values, the embedded one.

==========================  ====================================================
module                      concern
==========================  ====================================================
``protocol``                the ``Backend`` Protocol; ``MemoryChange``,
                            ``AttachmentSpec``, ``BackendEvent``,
                            ``BackendStatistics``
``embedded``                ``EmbeddedBackend``: an in-process store engine (import
                            it from ``memfs.backend.embedded``: this package's face
                            is the port only, so code that needs the port does not
                            load the store)
``naming``                  conflict-copy names (SPEC §4), shared by FUSE and remote
``steps``                   ``fold_by_steps``: the atomic save in ordinary writes,
                            for a backend that can't fold (SPEC §4)
==========================  ====================================================

Layering (tests/test_layers.py): ``memfs.fuse`` and ``memfs.remote`` import this
package; it imports neither of them, nor the API.
"""

from memfs.backend.naming import conflict_name
from memfs.backend.protocol import (
    AsOfPoint,
    AttachmentSpec,
    Backend,
    BackendEvent,
    BackendStatistics,
    MemoryChange,
)
from memfs.backend.steps import fold_by_steps
from memfs.core.errors import BackendUnavailable

__all__ = [
    "AsOfPoint",
    "AttachmentSpec",
    "Backend",
    "BackendEvent",
    "BackendStatistics",
    "BackendUnavailable",
    "MemoryChange",
    "conflict_name",
    "fold_by_steps",
]
