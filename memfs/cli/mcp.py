"""``memfs mcp``: the MCP server on stdio (issue 13; SPEC §5).

Embedded (``--store NAME[:ro]…``, the database of ``--database``, else
``$MEMFS_DATABASE``, else ``$MEMFS_HOME/memfs.db``): the stores are attached to a new
session, and every version the server writes is that session's (``session_actor``).
Remote (``--api URL --token SESSION_TOKEN``, the token also from ``$MEMFS_TOKEN``): the
session's stores and access modes, enforced by the server too.

An MCP client starts it as a subprocess, e.g.
``{"command": "memfs", "args": ["mcp", "--store", "Notes"]}``; stdout carries only the
protocol, logs go to stderr. The same server over streamable HTTP is ``/mcp`` under
``memfs serve``.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Annotated

import typer

__all__ = ["register"]

TOKEN_ENV = "MEMFS_TOKEN"


def register(app: typer.Typer) -> None:
    """Adds ``mcp`` to ``app``."""
    app.command("mcp")(mcp)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"memfs: error: {message}", err=True)
    return typer.Exit(1)


def mcp(
    store: Annotated[
        list[str] | None,
        typer.Option(
            "--store",
            "-s",
            help="NAME_OR_ID[:ro]; repeat for several stores (each is /memories/<slug>/; "
            "one store is /memories itself).",
        ),
    ] = None,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL or SQLite file.")
    ] = None,
    api: Annotated[
        str | None, typer.Option("--api", help="URL of a memfs serve (needs --token).")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar=TOKEN_ENV, help=f"Session token (or ${TOKEN_ENV})."),
    ] = None,
) -> None:
    """Serve the memory stores to an MCP client over stdio: the memory tool's commands
    (view, create, str_replace, insert, delete, rename), list_stores, and every memory
    as a resource memfs://<store>/<path>."""
    import anyio

    from memfs.cli.server import _parse_store_spec
    from memfs.mcp.stdio import serve_stdio
    from memfs.memory_tool.access import HttpAccess, StoreAccess, open_embedded
    from memfs.memory_tool.refusals import Refused

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    stores = [_parse_store_spec(s) for s in store or []]
    engine = None
    access: StoreAccess
    if api is not None:
        if database is not None or stores:
            raise _fail("--api takes the session's stores; --store and --database go without it")
        if not token:
            raise _fail(f"--api needs --token (or ${TOKEN_ENV})")
        from memfs.remote.client import MemfsClient

        access = HttpAccess(MemfsClient(api, token))
    else:
        if token is not None and os.environ.get(TOKEN_ENV) != token:
            raise _fail("--token needs --api URL")
        if not stores:
            raise _fail("give at least one --store (or --api URL --token T)")
        from memfs.store import open_engine

        engine = open_engine(database)
        access = open_embedded(engine, stores, title="memfs mcp")
    try:
        anyio.run(serve_stdio, access)
    except Refused as refused:
        raise _fail(refused.text) from None
    finally:
        if engine is not None:
            engine.close()
