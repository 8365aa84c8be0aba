"""``memfs serve``: the REST API (anthropic SDK compatible) with Hypercorn on trio.

The server itself is :mod:`memfs.api.serve`; this module is its command line.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memfs.cli._common import DatabaseOption
from memfs.config import DEFAULT_API_HOST, DEFAULT_API_PORT

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Adds ``memfs serve`` to the ``memfs`` app."""
    app.command("serve")(serve_command)


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = DEFAULT_API_HOST,
    port: Annotated[
        int, typer.Option(help="TCP port; 0 picks a free one.", min=0, max=65535)
    ] = DEFAULT_API_PORT,
    database: DatabaseOption = None,
    insecure_dev: Annotated[
        bool,
        typer.Option(
            "--insecure-dev",
            help="Development only, loopback only: requests without a valid credential "
            "act as an admin.",
        ),
    ] = False,
) -> None:
    """Serve the REST API (anthropic SDK compatible) with Hypercorn on trio.

    Prints 'memfs: serving on http://HOST:PORT' once listening; SIGINT/SIGTERM stop it.
    A port in use or a database that can't be opened is one error line, exit status 1.
    """
    from memfs.api.serve import serve

    serve(database, host=host, port=port, insecure_dev=insecure_dev)
