"""``memfs serve``: the API served by Hypercorn on trio (issue 3).

One process, one event loop, engine calls in worker threads. SIGINT or SIGTERM stops
accepting connections and lets requests in flight finish (up to
:data:`GRACEFUL_TIMEOUT_S`), then the engine is closed. Long polls of the change feed
parked at that moment answer at once (with what they have, usually nothing), so that the
mounts waiting on them learn of the shutdown instead of a dropped connection.

Once listening, one line ``memfs: serving on http://HOST:PORT`` is printed to stdout
(flushed), with the real port when ``--port 0`` asked the kernel for a free one; tests and
scripts wait for it.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import signal
import sys
from typing import Any

import hypercorn.trio
import trio
from hypercorn.config import Config

from memfs.api.app import create_app
from memfs.config import DEFAULT_API_HOST, DEFAULT_API_PORT
from memfs.errors import InvalidInput
from memfs.store import open_engine

__all__ = ["GRACEFUL_TIMEOUT_S", "READY_PREFIX", "serve"]

log = logging.getLogger(__name__)

GRACEFUL_TIMEOUT_S = 5.0
READY_PREFIX = "memfs: serving on "


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return f"{host}:{port}"


async def _wait_for_signal(app: Any) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("received %s, shutting down", signal.Signals(signum).name)
            app.state.change_notifier.close()
            return


async def _serve(app: Any, config: Config) -> None:
    async with trio.open_nursery() as nursery:
        serve = functools.partial(
            hypercorn.trio.serve,
            app,
            config,
            shutdown_trigger=functools.partial(_wait_for_signal, app),
        )
        binds = await nursery.start(serve)
        for bind in binds:
            print(f"{READY_PREFIX}{bind}", flush=True)


def serve(
    database: str | None = None,
    *,
    host: str = DEFAULT_API_HOST,
    port: int = DEFAULT_API_PORT,
    insecure_dev: bool = False,
) -> None:
    """Serves the API until SIGINT or SIGTERM (blocking; runs its own trio loop).

    Args:
        database: SQLite path, ``sqlite:///`` or ``postgresql://`` URL; None means the
            default of :func:`memfs.config.database_url`.
        host: address to listen on.
        port: TCP port; 0 picks a free one (printed on the ready line).
        insecure_dev: see :mod:`memfs.api.auth`; refused unless ``host`` is loopback.

    Raises:
        InvalidInput: ``insecure_dev`` on a non-loopback host.
    """
    if insecure_dev and not _is_loopback(host):
        raise InvalidInput(f"--insecure-dev is only allowed on a loopback host, not {host!r}")
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if insecure_dev:
        log.warning("--insecure-dev: requests without a valid credential act as an admin")
    engine = open_engine(database)
    try:
        config = Config()
        config.bind = [_bind(host, port)]
        config.accesslog = None
        # A Logger (not "-") so Hypercorn adds no handler of its own beside basicConfig's.
        config.errorlog = logging.getLogger("hypercorn.error")
        config.graceful_timeout = GRACEFUL_TIMEOUT_S
        app = create_app(engine, insecure_dev=insecure_dev)
        trio.run(_serve, app, config)
    finally:
        engine.close()
