"""``memfs serve``: the REST API (anthropic SDK compatible) with Hypercorn on trio.

The server itself is :mod:`memfs.api.serve`; this module is its command line.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memfs.cli._common import DatabaseOption, LogFormatOption, check_log_format, secure_home
from memfs.cli.dreams import DreamBaseUrlOption, DreamKeyFileOption, language_dreamer
from memfs.core.config import DEFAULT_API_HOST, DEFAULT_API_PORT
from memfs.core.rules import parse_duration_s

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
    certfile: Annotated[
        str | None,
        typer.Option(
            "--certfile", help="PEM certificate (chain) to serve HTTPS with (needs --keyfile)."
        ),
    ] = None,
    keyfile: Annotated[
        str | None, typer.Option("--keyfile", help="PEM private key of --certfile.")
    ] = None,
    prune_interval: Annotated[
        str,
        typer.Option(
            "--prune-interval",
            help="Prune versions past their store's retention period (memfs store update "
            "--retention) at start-up and this often, e.g. 1h, 10m; 'never' turns it off.",
        ),
    ] = "1h",
    no_console: Annotated[
        bool,
        typer.Option(
            "--no-console",
            help="Do not serve the web console at /console/ (SPEC §12).",
        ),
    ] = False,
    log_format: LogFormatOption = "text",
    dream_base_url: DreamBaseUrlOption = None,
    dream_api_key_file: DreamKeyFileOption = None,
) -> None:
    """Serve the REST API (anthropic SDK compatible) with Hypercorn on trio.

    Prints 'memfs: serving on http://HOST:PORT' once listening; SIGINT/SIGTERM stop it.
    A port in use or a database that can't be opened is one error line, exit status 1.
    Dreams of a language model (SPEC §11) call the Messages API of --dream-base-url with
    the key in --dream-api-key-file (default: $ANTHROPIC_BASE_URL, $ANTHROPIC_API_KEY).
    """
    from memfs.api.serve import serve
    from memfs.console import create_console
    from memfs.mcp.http import McpHttpEndpoint

    check_log_format(log_format)
    interval_s = None if prune_interval.strip() == "never" else parse_duration_s(prune_interval)
    secure_home()
    dreamer = language_dreamer(dream_base_url, dream_api_key_file)
    serve(
        database, host=host, port=port, insecure_dev=insecure_dev,
        certfile=certfile, keyfile=keyfile, prune_interval_s=interval_s,
        log_format=log_format,
        # The MCP server over streamable HTTP, beside the API (SPEC §5).
        endpoints={"/mcp": lambda engine, insecure: McpHttpEndpoint(engine, insecure_dev=insecure)},
        # The web console (SPEC §12) on the same engine and credentials.
        mounts={} if no_console else {"/console": create_console},
        language_dreamer=dreamer,
    )
