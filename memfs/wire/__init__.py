"""The api-contract shapes, in one place: used by the HTTP server, the remote client
and the CLI's ``--json`` output, so all three speak the same objects.

``serialize``  model → wire objects of api-contract §4 (plain dicts, JSON-ready)
"""

from memfs.wire.serialize import *  # noqa: F403  (the public surface is serialize's __all__)
from memfs.wire.serialize import __all__ as __all__
