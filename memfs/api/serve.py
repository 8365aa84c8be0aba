"""``memfs serve``: the API served by Hypercorn on trio (api-contract, SPEC §5).

One process, one event loop, engine calls in worker threads. SIGINT or SIGTERM stops
accepting connections and lets requests in flight finish (up to
:data:`GRACEFUL_TIMEOUT_S`), then the engine is closed. Long polls of the change feed
parked at that moment answer at once (with what they have, usually nothing), so that the
mounts waiting on them learn of the shutdown instead of a dropped connection.

Once listening, one line ``memfs: serving on http://HOST:PORT`` is printed to stdout
(flushed), with the real port when ``--port 0`` asked the kernel for a free one; tests and
scripts wait for it.

Startup failures are one :class:`~memfs.core.errors.MemfsError` each (the CLI prints its
message as one line, exit status 1), never a traceback: the database is opened, and the
listening socket bound, before the event loop starts, so their errors are plain
exceptions rather than Hypercorn's nested exception groups.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import signal
import ssl
import sys
from collections.abc import Mapping
from typing import Any

import trio
from hypercorn.config import Config, Sockets
from hypercorn.trio.run import worker_serve
from hypercorn.utils import wrap_app

from memfs import logs
from memfs.api.app import EndpointFactory, create_app
from memfs.core.config import DEFAULT_API_HOST, DEFAULT_API_PORT, DEFAULT_PRUNE_INTERVAL_S
from memfs.core.errors import InvalidInput, MemfsError
from memfs.core.model import format_timestamp
from memfs.dreams.runner import LanguageDreamer
from memfs.store import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, Engine, open_engine

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


async def _wait_for_signal(app: Any, signals: Any) -> None:
    """Hypercorn's shutdown trigger: returns at the first SIGINT or SIGTERM that
    ``signals`` (a receiver opened before the server said it was ready) received."""
    async for signum in signals:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        app.state.change_notifier.close()
        return


def _reason(exc: BaseException) -> str:
    """The first line of an exception's text, without SQLAlchemy's ``(module.Class)`` tag."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
        return text[:1].lower() + text[1:]
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    return re.sub(r"^\([\w.]+\) ", "", lines[0])


def _open_engine(database: str | None) -> Engine:
    """Opens the store database, or raises MemfsError with one line saying why not.

    Raises:
        MemfsError: the database can't be opened (unreachable PostgreSQL server, bad
            credentials, a URL of an unsupported kind, an unwritable SQLite file…).
    """
    try:
        return open_engine(database)
    except MemfsError:
        raise
    except (ImportError, ValueError) as exc:  # no driver, or a URL SQLAlchemy can't parse
        raise MemfsError(
            f"cannot open the store database: {_reason(exc)} (use a SQLite file path, "
            "sqlite:///PATH or postgresql://USER@HOST/DB)",
            code="database_unavailable",
        ) from exc
    except Exception as exc:  # any other failure to open is the setup's
        raise MemfsError(
            f"cannot open the store database: {_reason(exc)}", code="database_unavailable"
        ) from exc


def _use_tls(config: Config, certfile: str | None, keyfile: str | None) -> None:
    """Sets the certificate and key (both or neither) and loads them once, so that an
    unreadable or mismatched pair is one error line before anything listens.

    Raises:
        InvalidInput: only one of the two, or a pair that can't be loaded.
    """
    if (certfile is None) != (keyfile is None):
        raise InvalidInput("TLS needs both --certfile and --keyfile")
    if certfile is None:
        return
    config.certfile = certfile
    config.keyfile = keyfile
    try:
        config.create_ssl_context()
    except (OSError, ssl.SSLError) as exc:
        raise InvalidInput(
            f"cannot use the TLS certificate {certfile} with the key {keyfile}: {_reason(exc)}"
        ) from exc


def _listen(config: Config, host: str, port: int) -> Sockets:
    """Binds and listens on ``config.bind`` before the event loop starts.

    Raises:
        MemfsError: the address is in use, not local, or the host name is unknown;
            the message reads ``cannot listen on HOST:PORT: <reason>``.
    """
    try:
        sockets = config.create_sockets()
        for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
            sock.listen(config.backlog)
    except (OSError, OverflowError) as exc:
        raise MemfsError(
            f"cannot listen on {_bind(host, port)}: {_reason(exc)}", code="cannot_listen"
        ) from exc
    return sockets


async def _prune_on_schedule(engine: Engine, interval_s: float) -> None:
    """Prunes versions past their store's retention period (SPEC §2) now and then every
    ``interval_s`` seconds, in a worker thread, until cancelled. A failed prune (the
    database busy or unreachable) is logged and tried again at the next turn: retention
    is housekeeping and never stops the server."""
    while True:
        try:
            results = await trio.to_thread.run_sync(engine.retention.prune)
        except Exception as exc:  # any failure: the next turn tries again
            log.warning("version retention: prune failed, retrying in %g s: %s", interval_s, exc)
        else:
            for result in results:
                if result.versions:
                    log.info(
                        "version retention: pruned %d versions of %s written before %s",
                        result.versions,
                        result.store_id,
                        format_timestamp(result.cutoff),
                    )
        await trio.sleep(interval_s)


async def _serve(
    app: Any, config: Config, sockets: Sockets, prune_interval_s: float | None
) -> None:
    # SIGINT and SIGTERM are caught from before the ready line on: a stop asked for the
    # moment the server says it is ready is a clean shutdown, not the signal's default
    # (death by SIGTERM), which Hypercorn's own trigger would give until it first runs.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            # hypercorn.trio.serve() minus its own socket creation: the sockets are bound
            # already (the path Hypercorn's own multi-worker runner takes).
            async def serve_then_stop(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
                try:
                    await worker_serve(
                        wrap_app(app, config.wsgi_max_body_size, None),
                        config,
                        sockets=sockets,
                        shutdown_trigger=functools.partial(_wait_for_signal, app, signals),
                        task_status=task_status,
                    )
                finally:  # the server stopped: so do the background tasks
                    nursery.cancel_scope.cancel()

            binds = await nursery.start(serve_then_stop)
            if prune_interval_s:
                nursery.start_soon(
                    _prune_on_schedule, app.state.engine, prune_interval_s, name="version retention"
                )
            for bind in binds:
                print(f"{READY_PREFIX}{bind}", flush=True)


def serve(
    database: str | None = None,
    *,
    host: str = DEFAULT_API_HOST,
    port: int = DEFAULT_API_PORT,
    insecure_dev: bool = False,
    certfile: str | None = None,
    keyfile: str | None = None,
    prune_interval_s: float | None = DEFAULT_PRUNE_INTERVAL_S,
    endpoints: Mapping[str, EndpointFactory] | None = None,
    mounts: Mapping[str, EndpointFactory] | None = None,
    log_format: str = "text",
    language_dreamer: LanguageDreamer | None = None,
) -> None:
    """Serves the API until SIGINT or SIGTERM (blocking; runs its own trio loop).

    With ``certfile`` and ``keyfile`` it speaks HTTPS only (TLS 1.2 or later; the ready
    line says ``https://``). Without them on a non-loopback host it warns once: bearer
    tokens would cross the network in clear text (SPEC §3: a token is the credential).

    Args:
        database: SQLite path, ``sqlite:///`` or ``postgresql://`` URL; None means the
            default of :func:`memfs.core.config.database_url`.
        host: address to listen on.
        port: TCP port; 0 picks a free one (printed on the ready line).
        insecure_dev: see :mod:`memfs.api.auth`; refused unless ``host`` is loopback.
        endpoints: other front ends' endpoints, as :func:`memfs.api.app.create_app`.
        mounts: other front ends' applications by path prefix (the console), as
            :func:`memfs.api.app.create_app`.
        certfile, keyfile: PEM files of the server's certificate (chain) and its key.
        log_format: ``text`` or ``json`` (one object per line, :mod:`memfs.logs`); the
            access log (logger ``memfs.access``) is in it either way.
        language_dreamer: runs language-model dreams, as
            :func:`memfs.api.app.create_app`.
        prune_interval_s: prune versions past their store's retention period (SPEC §2)
            at start-up and then this often, in seconds; None or 0 never does.

    Raises:
        InvalidInput: ``insecure_dev`` on a non-loopback host; only one of ``certfile``
            and ``keyfile``; a certificate or key that can't be read or don't match.
        MemfsError: the database can't be opened (``cannot open the store database:
            …``) or the address can't be listened on (``cannot listen on HOST:PORT: …``).
    """
    if insecure_dev and not _is_loopback(host):
        raise InvalidInput(f"--insecure-dev is only allowed on a loopback host, not {host!r}")
    config = Config()
    config.bind = [_bind(host, port)]
    config.accesslog = None
    # A Logger (not "-") so Hypercorn adds no handler of its own beside basicConfig's.
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = GRACEFUL_TIMEOUT_S
    _use_tls(config, certfile, keyfile)
    # Bind and open before logging is configured, so that a startup failure is the one
    # error line alone (not after the INFO lines of the schema migrations).
    sockets = _listen(config, host, port)
    try:
        engine = _open_engine(database)
        try:
            logging.basicConfig(
                level=logging.INFO,
                handlers=[logs.configure(
                    logging.StreamHandler(sys.stderr), log_format,
                    secret_prefixes=(API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX),
                    text_format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                )],
            )
            engine.start_indexer()  # the full-text index, off the write path
            try:
                engine.start_embedder()  # semantic search's vectors, with a model configured
            except MemfsError as exc:  # a broken model must not stop the server
                log.warning("semantic search is off: %s", exc.message)
            if insecure_dev:
                log.warning("--insecure-dev: requests without a valid credential act as an admin")
            if not config.ssl_enabled and not _is_loopback(host):
                log.warning(
                    "serving on %s without TLS: bearer tokens and memories cross the network "
                    "in clear text; give --certfile and --keyfile, or put a TLS reverse proxy "
                    "in front (README, 'TLS')",
                    host,
                )
            app = create_app(
                engine, insecure_dev=insecure_dev, endpoints=endpoints, mounts=mounts,
                language_dreamer=language_dreamer,
            )
            trio.run(_serve, app, config, sockets, prune_interval_s)
        finally:
            engine.close()
    finally:
        for sock in (*sockets.secure_sockets, *sockets.insecure_sockets):
            sock.close()
