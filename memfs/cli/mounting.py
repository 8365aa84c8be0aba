"""``memfs mount`` (SPEC §5 components); ``memfs umount`` and ``memfs status``, in
:mod:`memfs.cli.unmounting`, are registered with it.

Two kinds of mount, one filesystem (SPEC §5):

* embedded: ``memfs mount DIR --store NAME…`` opens the database itself
  (``--database``, else ``$MEMFS_DATABASE``, else ``$MEMFS_HOME/memfs.db``);
* remote: ``memfs mount DIR --api URL --token SESSION_TOKEN`` talks to a
  ``memfs serve`` and holds nothing but the session token (SPEC §3). It mounts exactly
  the session's stores, with their access modes and mount paths, reads through the
  local content cache (``$MEMFS_HOME/cache``) and queues writes in a durable outbox
  (``$MEMFS_HOME/outbox/<session>``) while the server is unreachable. The token may
  come from ``$MEMFS_TOKEN`` instead of the command line (which other users can read
  in ``/proc``).

``mount`` without ``--foreground`` starts the daemon as a child process in its own
session, logging to ``$MEMFS_HOME/logs/mount-<key>.log``, and returns once the mount is
live: the child writes ``ready`` (or ``error: …``) to a pipe whose write end it
inherits (``--ready-fd``, hidden). The token reaches the child in its environment,
never in its arguments. The child runs ``python -P -m memfs.cli.mounting`` (``-P``:
never a ``memfs`` of the working directory): these three commands alone, which start
faster than the whole ``memfs`` command.
"""

from __future__ import annotations

import gc
import logging
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from memfs.cli._common import (
    DatabaseOption,
    LogFormatOption,
    check_log_format,
    fail,
    os_reason,
    secure_home,
)
from memfs.core.config import TOKEN_ENV, memory_limit, session_token

__all__ = ["register"]

# How long `memfs mount` waits for the daemon to report readiness.
MOUNT_READY_TIMEOUT_S = 60.0
# How long a remote mount starting while its server is unreachable keeps trying.
DEFAULT_SERVER_WAIT_S = 30.0
# The daemon's readiness line for a failure that exits 2 (else ``error: …``).
_USAGE_ERROR = "usage error: "
_LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def register(app: typer.Typer) -> None:
    """Adds ``mount``, ``umount`` and ``status`` to ``app``."""
    from memfs.cli.unmounting import status, umount

    app.command("mount")(mount)
    app.command("umount")(umount)
    app.command("status")(status)


def mount(
    mountpoint: Annotated[str, typer.Argument(help="An existing empty directory.")],
    store: Annotated[
        list[str] | None,
        typer.Option(
            "--store", "-s",
            help="NAME_OR_ID[:ro], or NAME_OR_ID@POINT: the store as it was at POINT "
            "(now, an RFC 3339 time, a snapshot name or id, a memver_ id), read-only, "
            "in the directory NAME@LABEL; repeat for several stores. With --api: "
            "default every store of the session.",
        ),
    ] = None,
    api: Annotated[
        str | None,
        typer.Option("--api", help="URL of a memfs serve to mount from (needs --token)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", envvar=TOKEN_ENV, show_envvar=True,
            help="The session token (memfs_st_…) of a remote mount.",
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            help="per-store (a directory per store) or flat. Default: per-store; with "
            "--api, the session's layout (flat for an (identity, template) pair's).",
        ),
    ] = None,
    foreground: Annotated[
        bool, typer.Option("--foreground", "-f", help="Serve in this process until unmounted.")
    ] = False,
    database: DatabaseOption = None,
    wait_for_server_s: Annotated[
        float,
        typer.Option(
            "--wait-for-server",
            help="Seconds a remote mount waits for an unreachable server at start.",
        ),
    ] = DEFAULT_SERVER_WAIT_S,
    debug: Annotated[bool, typer.Option("--debug", help="Log every request.")] = False,
    nonempty: Annotated[
        bool,
        typer.Option(
            "--nonempty", help="Mount over a directory that holds files (hidden while mounted)."
        ),
    ] = False,
    allow_other: Annotated[
        bool,
        typer.Option(
            "--allow-other",
            help="Let other uids use the mount (the kernel then checks modes: "
            "default_permissions). A non-root mounter needs user_allow_other in "
            "/etc/fuse.conf.",
        ),
    ] = False,
    uid: Annotated[
        str | None, typer.Option("--uid", help="Owner (uid or user name) files show.")
    ] = None,
    gid: Annotated[
        str | None, typer.Option("--gid", help="Group (gid or group name) files show.")
    ] = None,
    umask: Annotated[
        str | None,
        typer.Option("--umask", help="Octal bits cleared from every mode (default 022)."),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-o",
            help="mount(8)-style options: allow_other, default_permissions, uid=, gid=, "
            "umask=, store=, ro, layout=, database=, api=, home= (README: Running in a "
            "sandbox or container).",
        ),
    ] = None,
    user_id: Annotated[
        str | None,
        typer.Option(
            "--user-id",
            help="Embedded: mount as this user; its session carries the principal and "
            "the mount shows only the records that user may see (SPEC §6).",
        ),
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option("--role", help="Embedded: a role of that user; repeatable."),
    ] = None,
    log_format: LogFormatOption = "text",
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port", min=0, max=65535,
            help="Serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0: a free "
            "port, shown by memfs status). Without it: memfs status --prometheus.",
        ),
    ] = None,
    ready_fd: Annotated[int | None, typer.Option("--ready-fd", hidden=True)] = None,
) -> None:
    """Mount memory stores as a directory tree (FUSE): from the database, or from a
    memfs server with a session token (--api URL --token T)."""
    from memfs.cli.mount_options import MountOptions
    from memfs.core.errors import InvalidInput, InvalidPoint
    from memfs.core.points import parse_mount_store

    try:
        options = _options(option or [], allow_other, uid, gid, umask)
    except InvalidInput as exc:
        fail(exc.message)
    assert isinstance(options, MountOptions)
    stores = options.store_arguments(store or [])
    layout = options.layout or layout
    database = options.database or database
    api = options.api or api
    nonempty = nonempty or options.nonempty
    debug = debug or options.debug
    layout_value = _layout_option(layout, remote=api is not None)
    for spec in stores:
        try:
            parse_mount_store(spec)
        except InvalidInput as exc:
            fail(exc.message, 2 if isinstance(exc, InvalidPoint) else 1)
    check_log_format(log_format)
    _check_principal(api, user_id, role or [])
    _check_source(api, token, database, stores)
    if not nonempty:
        _refuse_non_empty(mountpoint)
    if ready_fd is None:  # not the daemon `memfs mount` starts: that one checked already
        secure_home()
        _warn_if_stock_pyfuse3()
    request = _MountRequest(
        mountpoint=str(mountpoint),
        stores=stores,
        layout=layout_value,
        database=database,
        api=api,
        token=token if api is not None else None,
        wait_for_server_s=wait_for_server_s,
        debug=debug,
        access=_access(options),
        user_id=user_id,
        roles=list(role or []),
        metrics_port=metrics_port,
        log_format=log_format,
    )
    if not foreground:
        _mount_in_background(request)
        return
    _mount_in_foreground(request, ready_fd)


def _layout_option(layout: str | None, *, remote: bool) -> Any:
    """The ``--layout`` given, as a Layout; None for a remote mount that leaves it to
    its session (SPEC §8: a pair's session is flat); per-store otherwise."""
    from memfs.core.model import Layout

    if layout is None:
        return None if remote else Layout.PER_STORE
    try:
        return Layout(layout)
    except ValueError:
        fail(f"--layout must be per-store or flat, not {layout!r}")


def _check_principal(api: str | None, user_id: str | None, roles: list[str]) -> None:
    """Fails unless ``--user-id``/``--role`` make a valid principal of an embedded mount
    (SPEC §6); a remote mount's principal is its session's."""
    from memfs.core.errors import InvalidInput
    from memfs.core.visibility import make_principal

    try:
        make_principal(user_id, roles)
    except InvalidInput as exc:
        fail(exc.message)
    if api is not None and user_id is not None:
        fail("--user-id is for embedded mounts: a remote mount sees what its session's "
             "principal sees (memfs session create --user-id)")


@dataclass(frozen=True)
class _MountRequest:
    mountpoint: str
    stores: list[str]
    layout: Any
    database: str | None
    api: str | None
    token: str | None
    wait_for_server_s: float
    debug: bool
    access: Any  # memfs.fuse.sandbox.MountAccess
    user_id: str | None = None
    roles: list[str] = field(default_factory=list)
    metrics_port: int | None = None
    log_format: str = "text"


def _check_source(
    api: str | None, token: str | None, database: str | None, stores: list[str]
) -> None:
    """Refuses a mount that is neither embedded with stores nor remote with a token."""
    if api is not None:
        if database is not None:
            fail("--api and --database exclude each other")
        if not token:
            fail(f"a remote mount needs --token (or ${TOKEN_ENV})")
    elif token is not None and session_token() != token:
        fail("--token needs --api URL")
    elif not stores:
        fail("give at least one --store (or --api URL --token T)")


def _options(
    strings: list[str], allow_other: bool, uid: str | None, gid: str | None,
    umask: str | None,
) -> Any:
    """The ``-o`` strings and the flags of the same meaning, as one
    :class:`memfs.cli.mount_options.MountOptions` (a flag wins over ``-o``); ``home=``
    is applied to this process's environment at once (the daemon inherits it).

    Raises:
        InvalidInput: a bad option (named).
    """
    from memfs.cli import mount_options

    options = mount_options.MountOptions()
    for text in strings:
        mount_options.parse_option_string(text, into=options)
    options.allow_other = options.allow_other or allow_other
    if uid is not None:
        options.uid = mount_options.parse_user(uid)
    if gid is not None:
        options.gid = mount_options.parse_group(gid)
    if umask is not None:
        options.umask = mount_options.parse_umask(umask)
    if options.home is not None:
        os.environ["MEMFS_HOME"] = os.path.abspath(options.home)
    return options


def _access(options: Any) -> Any:
    """The :class:`memfs.fuse.sandbox.MountAccess` of parsed options."""
    from memfs.fuse.sandbox import MountAccess

    try:
        return MountAccess(
            allow_other=options.allow_other,
            default_permissions=options.default_permissions,
            uid=options.uid,
            gid=options.gid,
            umask=0o022 if options.umask is None else options.umask,
        )
    except ValueError as exc:
        fail(str(exc))


def _access_arguments(access: Any) -> list[str]:
    """The ``memfs mount`` options that give the daemon ``access``."""
    arguments = ["--umask", f"{access.umask:03o}"]
    if access.allow_other:
        arguments.append("--allow-other")
    if access.default_permissions:
        arguments += ["-o", "default_permissions"]
    if access.uid is not None:
        arguments += ["--uid", str(access.uid)]
    if access.gid is not None:
        arguments += ["--gid", str(access.gid)]
    return arguments


def _refuse_non_empty(mountpoint: str) -> None:
    """Refuses a mount point that holds files: mounting would hide them (fuse3 mounts
    over them without a word). A path that is already a mount point, missing or not a
    directory is left to the daemon, which reports those precisely."""
    from memfs.fuse import mounts

    target = os.path.realpath(mountpoint)
    if not os.path.isdir(target) or mounts.is_mounted(target):
        return
    try:
        with os.scandir(target) as entries:
            holds_files = any(True for _ in entries)
    except OSError:
        return
    if holds_files:
        fail(
            f"{target} is not empty (its files would be hidden while mounted); "
            "give --nonempty to mount over them anyway"
        )


def _warn_if_stock_pyfuse3() -> None:
    """One line on stderr when pyfuse3 lacks memfs's patch (README "Installing")."""
    from memfs.fuse.capabilities import stock_pyfuse3_warning

    warning = stock_pyfuse3_warning()
    if warning is not None:
        typer.echo(f"memfs: warning: {warning}", err=True)


def _backend(request: _MountRequest) -> Any:
    """The mount's backend: remote (``--api``) or embedded."""
    if request.api is not None:
        from memfs.remote import MemfsClient
        from memfs.remote.backend import RemoteBackend

        assert request.token is not None
        client = MemfsClient(request.api, request.token)
        return RemoteBackend(client, startup_wait_s=request.wait_for_server_s)
    from memfs import metrics
    from memfs.backend.embedded import EmbeddedBackend
    from memfs.core.errors import MemfsError
    from memfs.core.visibility import make_principal
    from memfs.store import open_engine

    principal = make_principal(request.user_id, request.roles)
    engine = open_engine(request.database)
    engine.observe_writes(metrics.write_transaction)
    engine.start_indexer()  # the full-text index, off the write path
    try:
        engine.start_embedder()  # semantic search's vectors, when a model is configured
    except MemfsError as exc:  # a broken model must not stop the mount
        typer.echo(f"memfs: warning: semantic search is off: {exc.message}", err=True)
    return EmbeddedBackend(engine, principal=principal)


def _mount_in_foreground(request: _MountRequest, ready_fd: int | None) -> None:
    # Starting up leaves some 170,000 container objects for the collector at 10,000
    # memories (modules, the engine, the tree), none of them garbage: it would scan
    # them again and again to find nothing. It stays off until the mount is ready.
    gc.disable()
    try:
        _serve_in_foreground(request, ready_fd)
    finally:
        gc.enable()


def _serve_in_foreground(request: _MountRequest, ready_fd: int | None) -> None:
    from memfs import logs
    from memfs.core.errors import InvalidPoint, MemfsError
    from memfs.fuse.daemon import DaemonLogHandler, MountConfig, StoreRequest, run
    from memfs.store import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX

    logging.basicConfig(
        level=logging.DEBUG if request.debug else logging.INFO,
        handlers=[logs.configure(
            DaemonLogHandler(sys.stderr), request.log_format,
            secret_prefixes=(API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX),
            text_format=_LOG_FORMAT,
        )],
    )
    if not request.debug:
        # One line per HTTP request would drown the mount's own story (long polls).
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("httpcore").setLevel(logging.WARNING)

    def report(line: str) -> None:
        if ready_fd is not None:
            try:
                os.write(ready_fd, line.encode() + b"\n")
                os.close(ready_fd)
            except OSError:
                pass

    def ready() -> None:
        # What start-up allocated lives as long as the mount: keep it out of every
        # future collection (refcounting still frees it), then collect again.
        gc.freeze()
        gc.enable()
        report("ready")

    config = MountConfig(
        mountpoint=request.mountpoint,
        stores=[StoreRequest.parse(s) for s in request.stores],
        layout=request.layout,
        memory_limit=memory_limit(),
        access=request.access,
        metrics_port=request.metrics_port,
    )
    try:
        run(_backend(request), config, on_ready=ready)
    except (MemfsError, RuntimeError, OSError) as exc:
        # A point that names no moment (SPEC §10) is what was typed: exit 2.
        status = 2 if isinstance(exc, InvalidPoint) else 1
        report(f"{_USAGE_ERROR if status == 2 else 'error: '}{exc}")
        logging.getLogger("memfs.mount").error(
            "mount of %s failed: %s", request.mountpoint, exc
        )
        fail(str(exc), status)


def _daemon_command(request: _MountRequest, target: str, ready_fd: int) -> list[str]:
    """The ``memfs mount --foreground`` command line of the daemon a background mount
    starts (the token goes in its environment, never here)."""
    command = [
        # -P: the daemon imports the installed memfs, never a `memfs/` in the directory
        # the user happens to be in (that would run someone else's code as them).
        sys.executable, "-P", "-m", "memfs.cli.mounting",
        "mount", target, "--foreground",
        "--ready-fd", str(ready_fd), "--nonempty",  # checked above, before the start
    ]
    if request.layout is not None:  # else the session's (a remote mount)
        command += ["--layout", request.layout.value]
    for argument in request.stores:
        command += ["--store", argument]
    command += _access_arguments(request.access)
    if request.database:
        command += ["--database", request.database]
    if request.api is not None:
        command += ["--api", request.api, "--wait-for-server", str(request.wait_for_server_s)]
    if request.debug:
        command.append("--debug")
    if request.user_id is not None:
        command += ["--user-id", request.user_id]
    for role in request.roles:
        command += ["--role", role]
    if request.metrics_port is not None:
        command += ["--metrics-port", str(request.metrics_port)]
    if request.log_format != "text":
        command += ["--log-format", request.log_format]
    return command


def _mount_in_background(request: _MountRequest) -> None:
    from memfs.fuse.status import log_path
    from memfs.home import hold_mount_lock, open_private, private_directory

    target = os.path.realpath(request.mountpoint)
    log_file = log_path(target)
    env = dict(os.environ)
    if request.api is not None:
        assert request.token is not None
        env[TOKEN_ENV] = request.token  # never in argv: /proc/<pid>/cmdline is public
    try:
        # The daemon inherits the lock of its log for its lifetime: a redaction made
        # while no daemon runs scrubs this log itself (memfs.home.scrub_stopped_mounts).
        private_directory(log_file.parent)
        lock = hold_mount_lock(log_file)
        log_fd = open_private(log_file, os.O_WRONLY | os.O_APPEND)
    except OSError as exc:
        # A read-only or full $MEMFS_HOME: said in one line, nothing mounted.
        fail(
            f"cannot write the mount's log {log_file}: {os_reason(exc)} (a background "
            "mount logs under $MEMFS_HOME; --foreground logs to standard error instead)"
        )
    read_end, write_end = os.pipe()
    command = _daemon_command(request, target, write_end)
    try:
        with open(log_fd, "ab") as log:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                pass_fds=(write_end,) if lock is None else (write_end, lock),
                start_new_session=True,
            )
    finally:
        if lock is not None:
            os.close(lock)
    os.close(write_end)
    try:
        message = _read_until_eof(read_end, MOUNT_READY_TIMEOUT_S)
    finally:
        os.close(read_end)
    if message.startswith("ready"):
        typer.echo(f"mounted {target} (daemon pid {process.pid}, log {log_file})")
        return
    if not message or process.poll() is None:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.terminate()  # not ready in time: don't leave it mounting behind us
            process.wait(timeout=30)
        if not message:
            message = (
                f"the mount daemon exited with status {process.returncode}; see {log_file}"
            )
    if message.startswith(_USAGE_ERROR):
        fail(message.strip().removeprefix(_USAGE_ERROR), 2)
    fail(message.strip().removeprefix("error: "))


def _read_until_eof(fd: int, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "error: the mount daemon did not report readiness in time"
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(chunks).decode(errors="replace")
        chunks.append(chunk)


def _standalone() -> None:
    """``python -m memfs.cli.mounting``: only mount, umount and status."""
    app = typer.Typer(name="memfs", add_completion=False, pretty_exceptions_enable=False)
    register(app)
    app()


if __name__ == "__main__":
    _standalone()
