"""Remote mounts: a mount daemon that talks to a ``memfs serve`` elsewhere (SPEC §4, §5).

==========================  ==========================================================
module                      what it holds
==========================  ==========================================================
:mod:`.records`             wire objects as frozen records (no engine internals)
:mod:`.client`              async HTTP client of the API; error envelopes → typed errors
:mod:`.cache`               local content-addressed cache (SHA-256 named files, LRU)
:mod:`.outbox`              durable, ordered journal of writes the server has not confirmed
:mod:`.replay`              applies one write idempotently; replays the outbox in order
:mod:`.backend`             ``RemoteBackend``: the FUSE backend Protocol over the above
==========================  ==========================================================

Nothing here imports :mod:`memfs.api` or :mod:`memfs.store`: the daemon knows the
server only through its wire format. :mod:`.backend` imports only
:mod:`memfs.backend` (the Protocol it implements), which does not import pyfuse3.
"""

from memfs.remote.client import MemfsClient, ServerUnavailable

__all__ = ["MemfsClient", "ServerUnavailable"]
