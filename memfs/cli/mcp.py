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

import contextlib
import logging
import os
import sys
from typing import Annotated

import typer

from memfs.cli._common import DatabaseOption, command_engine, fail

__all__ = ["register"]

TOKEN_ENV = "MEMFS_TOKEN"


def register(app: typer.Typer) -> None:
    """Adds ``mcp`` to ``app``."""
    app.command("mcp")(mcp)


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
    database: DatabaseOption = None,
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

    from memfs.core.model import Access
    from memfs.core.rules import parse_store_spec
    from memfs.mcp.stdio import serve_stdio
    from memfs.memory_tool.access import HttpAccess, StoreAccess, open_embedded
    from memfs.memory_tool.refusals import Refused

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    stores = [
        (spec.name_or_id, Access.READ_ONLY if spec.read_only else Access.READ_WRITE)
        for spec in map(parse_store_spec, store or [])
    ]
    with contextlib.ExitStack() as resources:
        access: StoreAccess
        if api is not None:
            if database is not None or stores:
                fail("--api takes the session's stores; --store and --database go without it")
            if not token:
                fail(f"--api needs --token (or ${TOKEN_ENV})")
            from memfs.remote.client import MemfsClient

            access = HttpAccess(MemfsClient(api, token))
        else:
            if token is not None and os.environ.get(TOKEN_ENV) != token:
                fail("--token needs --api URL")
            if not stores:
                fail("give at least one --store (or --api URL --token T)")
            engine = resources.enter_context(command_engine(database))
            access = open_embedded(engine, stores, title="memfs mcp")
        try:
            anyio.run(serve_stdio, access)
        except Refused as refused:
            fail(refused.text)
