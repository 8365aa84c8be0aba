"""systemd's readiness protocol, sd_notify(3), with the standard library.

The mount unit is ``Type=notify`` (``systemd/memfs-mount@.service``): the daemon sends
``READY=1`` once the mount is live, so units ordered after it start only when files are
visible, and ``STOPPING=1`` when it begins to unmount. Without ``$NOTIFY_SOCKET``
(not started by systemd) nothing is sent.
"""

from __future__ import annotations

import logging
import os
import socket

__all__ = ["NOTIFY_SOCKET_ENV", "notify"]

NOTIFY_SOCKET_ENV = "NOTIFY_SOCKET"

log = logging.getLogger(__name__)


def notify(state: str) -> bool:
    """Sends ``state`` (e.g. ``"READY=1\\nSTATUS=mounted"``) to ``$NOTIFY_SOCKET``.

    The socket is a path or, with a leading ``@``, an abstract name (sd_notify(3)).
    Returns whether it was sent; a failure is logged, never raised (the mount works
    without systemd knowing). Never blocks (a full socket is a failure): it is called
    on the trio loop.
    """
    address = os.environ.get(NOTIFY_SOCKET_ENV)
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(
            socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
        ) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        log.warning("could not notify systemd (%s) of %r: %s", address, state, exc)
        return False
    return True
