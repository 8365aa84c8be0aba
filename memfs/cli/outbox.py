"""``memfs outbox ls|replay``: the queued writes of remote mounts, outside any mount.

A remote mount queues each write it could not send in its session's outbox
(``$MEMFS_HOME/outbox/<session_id>``, memfs.remote.outbox) and replays it when that
session is mounted again. When the session can't be mounted again — its token was
revoked or has expired (SPEC §3 credential lifecycle) — ``memfs outbox replay`` sends
the queue under another session's token, with the same rules as a mount's replay
(memfs.remote.replay: in order, once, a conflict copy instead of an overwrite), so
nothing a user wrote is stranded. Entries the server refuses for good are kept under
``$MEMFS_HOME/rejected/<session_id>/``, as a mount keeps them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import trio
import typer

from memfs.cli import short_help
from memfs.cli._common import fail, print_table, secure_home
from memfs.core.config import TOKEN_ENV, memfs_home, session_token
from memfs.core.errors import MemfsError
from memfs.home import rejected_directory
from memfs.remote.client import MemfsClient
from memfs.remote.outbox import Outbox, WriteOutcome, read_pending
from memfs.remote.replay import ReplayReport, replay_outbox

__all__ = ["register"]

outbox_app = typer.Typer(help=short_help("outbox"))


def register(app: typer.Typer) -> None:
    """Adds the ``outbox`` sub-app to the ``memfs`` app."""
    outbox_app.info.no_args_is_help = True
    app.add_typer(outbox_app, name="outbox")


def _outbox_root() -> Path:
    return memfs_home() / "outbox"


@outbox_app.command("ls")
def ls() -> None:
    """List the outboxes under $MEMFS_HOME with the number of writes each still holds."""
    secure_home()
    root = _outbox_root()
    rows = []
    if root.is_dir():
        for directory in sorted(path for path in root.iterdir() if path.is_dir()):
            rows.append([directory.name, str(len(read_pending(directory))), str(directory)])
    print_table(["SESSION", "QUEUED", "OUTBOX"], rows, empty="no outboxes")


@outbox_app.command("replay")
def replay(
    session_id: Annotated[str, typer.Argument(help="The session whose outbox to replay.")],
    api: Annotated[str, typer.Option("--api", help="URL of the memfs serve to send to.")],
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=TOKEN_ENV,
            help=f"A session token (or ${TOKEN_ENV}) attached read-write to the outbox's "
            "stores; usually a new session, when the old one was revoked or expired.",
        ),
    ] = None,
) -> None:
    """Send the writes queued in SESSION_ID's outbox with another token, in order.

    Exits 1 if any write stays queued (the server is unreachable or refused the token)
    or was refused for good (kept under rejected/, as a mount keeps it)."""
    secure_home()
    token = token or session_token()
    if not token:
        fail(f"give --token (or ${TOKEN_ENV}): a session token that can write the stores")
    directory = _outbox_root() / session_id
    if not directory.is_dir():
        fail(f"there is no outbox {directory} (see `memfs outbox ls`)")
    try:
        outbox = Outbox(directory, rejected_dir=rejected_directory(session_id))
    except MemfsError as exc:  # OutboxLocked: a mount of that session is running
        fail(f"{exc.message}; it replays its outbox itself")
    with outbox:
        queued = len(outbox)
        if queued == 0:
            typer.echo(f"the outbox {directory} is empty")
            return
        report = trio.run(_replay, outbox, api, token, session_id)
        left = len(outbox)
    applied = queued - left - len(report.rejected)
    conflicts = report.count(WriteOutcome.CONFLICT)
    typer.echo(
        f"replayed {applied} of {queued} write(s) from {directory} to {api}"
        + (f" ({conflicts} kept as conflict copies)" if conflicts else "")
    )
    for entry, error in report.rejected:
        write = entry.write
        typer.echo(f"refused: {write.operation} {write.path}: {error.message}", err=True)
    if report.rejected:
        fail(f"{len(report.rejected)} write(s) refused; kept in {rejected_directory(session_id)}")
    if left:
        reason = report.stopped_by.message if report.stopped_by is not None else "stopped"
        fail(f"{left} write(s) still queued in {directory}: {reason}")


async def _replay(outbox: Outbox, api: str, token: str, session_id: str) -> ReplayReport:
    client = MemfsClient(api, token)
    try:
        return await replay_outbox(outbox, client, session_id=session_id)
    finally:
        await client.aclose()
