"""``memfs key create|list|revoke`` and ``memfs session create|show|list|revoke``.

They work directly on the database (``--database``, else ``$MEMFS_DATABASE``, else
``$MEMFS_HOME/memfs.db``), so a fresh server can be bootstrapped without a running
server: ``memfs key create --scope admin`` prints the first secret. Secrets and session
tokens are printed once, at creation; only their SHA-256 is stored.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    PAGE_LIMIT,
    DatabaseOption,
    all_pages,
    command_engine,
    page_json,
    print_json,
    print_table,
)
from memfs.core.errors import InvalidInput, InvalidTtl
from memfs.core.model import Access, Scope, Session, format_timestamp, utcnow
from memfs.core.rules import parse_duration_s, parse_store_spec
from memfs.core.visibility import UserPrincipal, make_principal
from memfs.store import ResourceSpec
from memfs.wire import api_key_to_wire, session_to_wire

__all__ = ["register"]

key_app = typer.Typer(help=short_help("key"))
session_app = typer.Typer(help=short_help("session"))
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON object.")]
# The principal of a new key or session (SPEC §6 visibility; fixed for its life).
UserIdOption = Annotated[
    str | None,
    typer.Option(
        "--user-id", help="The user it speaks for: sees that user's private records."
    ),
]
RoleOption = Annotated[
    list[str] | None,
    typer.Option("--role", help="A role of that user (needs --user-id); repeatable."),
]


def _principal_text(principal: UserPrincipal | None) -> str:
    """``alice`` or ``alice (support, admin-desk)``, ``-`` for none."""
    if principal is None:
        return "-"
    return principal.user_id + (f" ({', '.join(principal.roles)})" if principal.roles else "")


def register(app: typer.Typer) -> None:
    """Adds the ``key`` and ``session`` sub-apps to the ``memfs`` app."""
    key_app.info.no_args_is_help = True
    session_app.info.no_args_is_help = True
    app.add_typer(key_app, name="key")
    app.add_typer(session_app, name="session")


def _parse_scopes(values: list[str]) -> list[Scope]:
    scopes = []
    for value in values:
        try:
            scopes.append(Scope(value))
        except ValueError:
            names = ", ".join(scope.value for scope in Scope)
            raise InvalidInput(f"unknown scope {value!r}; scopes are {names}") from None
    return scopes


@key_app.command("create")
def key_create(
    scope: Annotated[
        list[str],
        typer.Option(
            "--scope",
            help="memory:read, memory:write, memory:delete, memory:hard_delete or admin; "
            "repeat for several.",
        ),
    ],
    store: Annotated[
        list[str] | None,
        typer.Option("--store", help="Limit the key to this store (name or id); repeatable."),
    ] = None,
    name: Annotated[str, typer.Option(help="A label for humans.")] = "cli",
    user_id: UserIdOption = None,
    role: RoleOption = None,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key and print its secret (shown this once). With --user-id it
    speaks for that user (sees its private records, SPEC §6); an admin key sees all."""
    scopes = _parse_scopes(scope)
    principal = make_principal(user_id, role or ())
    with command_engine(database, create=True) as engine:  # a new server's first key
        store_ids = [engine.stores.find(value).id for value in store or []]
        key, secret = engine.api_keys.create(name, scopes, store_ids, principal=principal)
    if as_json:
        print_json(api_key_to_wire(key, secret))
        return
    typer.echo(f"id:      {key.id}")
    typer.echo(f"scopes:  {' '.join(s.value for s in key.scopes)}")
    typer.echo(f"stores:  {' '.join(key.store_ids) or 'all'}")
    if key.principal is not None:
        typer.echo(f"user:    {_principal_text(key.principal)}")
    typer.echo(f"secret:  {secret}")
    typer.echo("The secret is shown only now; memfs stores only its hash.", err=True)


@key_app.command("list")
def key_list(database: DatabaseOption = None, as_json: JsonOption = False) -> None:
    """List API keys, newest first (never their secrets)."""
    with command_engine(database) as engine:
        keys = engine.api_keys.list()
    if as_json:
        print_json({"data": [api_key_to_wire(k) for k in keys], "next_page": None})
        return
    print_table(
        ("ID", "STATE", "SCOPES", "STORES", "CREATED", "NAME", "USER"),
        [
            (
                key.id,
                "revoked" if key.revoked_at else "active",
                ",".join(s.value for s in key.scopes),
                ",".join(key.store_ids) or "all",
                format_timestamp(key.created_at),
                key.name,
                _principal_text(key.principal),
            )
            for key in keys
        ],
        empty="no API keys (create one with `memfs key create --scope admin`)",
    )


@key_app.command("revoke")
def key_revoke(
    api_key_id: Annotated[str, typer.Argument(help="The apikey_… id.")],
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key (idempotent); requests with it get 401 from then on."""
    with command_engine(database) as engine:
        key = engine.api_keys.revoke(api_key_id)
    if as_json:
        print_json(api_key_to_wire(key))
    else:
        typer.echo(f"{key.id} revoked")


# ----------------------------------------------------------------- sessions


def _parse_ttl(value: str | None) -> int | None:
    """``--ttl``: seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``90m``,
    ``12h``, ``30d``) → seconds (:func:`memfs.core.rules.parse_duration_s`). The range (1 s
    to 30 days) is the engine's rule.

    Raises:
        InvalidTtl: not of that form.
    """
    if value is None:
        return None
    try:
        return parse_duration_s(value)
    except InvalidInput:
        raise InvalidTtl(
            f"--ttl {value!r}: give seconds or a number with s, m, h or d (e.g. 12h)"
        ) from None


def _session_state(session: Session) -> str:
    """archived, revoked, expired or active (what a request with its token meets)."""
    if session.archived_at is not None:
        return "archived"
    if session.revoked_at is not None:
        return "revoked"
    if session.expires_at is not None and session.expires_at <= utcnow():
        return "expired"
    return "active"


def _session_json(session: Session, token: str | None = None) -> dict[str, Any]:
    """The API's session object, with its lifecycle fields and (at creation) its token."""
    record = session_to_wire(session)
    for key in ("expires_at", "revoked_at", "archived_at"):
        value = getattr(session, key)
        record.setdefault(key, format_timestamp(value) if value is not None else None)
    if token is not None:
        record["token"] = token
    return record


def _print_session(session: Session, token: str | None, as_json: bool) -> None:
    if as_json:
        print_json(_session_json(session, token))
        return
    typer.echo(f"session: {session.id}")
    if token is not None:
        typer.echo(f"token:   {token}")
    if session.title:
        typer.echo(f"title:   {session.title}")
    typer.echo(f"created: {format_timestamp(session.created_at)}")
    if session.expires_at is not None:
        typer.echo(f"expires: {format_timestamp(session.expires_at)}")
    if session.principal is not None:
        typer.echo(f"user:    {_principal_text(session.principal)}")
    state = _session_state(session)
    if state != "active":
        typer.echo(f"state:   {state}")
    print_table(
        ("MOUNT PATH", "ACCESS", "STORE", "NAME"),
        [
            (r.mount_path, r.access.value, r.memory_store_id, r.name)
            for r in session.resources
        ],
        empty="no stores attached",
    )


@session_app.command("create")
def session_create(
    store: Annotated[
        list[str],
        typer.Option(
            "--store",
            help="Store name or id, ':ro' for read_only (default read_write); repeatable, "
            "at most 8.",
        ),
    ],
    instructions: Annotated[
        list[str] | None,
        typer.Option(
            "--instructions",
            help="Guidance for the agent; the n-th --instructions goes with the n-th --store.",
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="A title for humans.")] = None,
    mount_root: Annotated[
        str, typer.Option(help="Where the stores are mounted in the sandbox.")
    ] = "/mnt/memory",
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            help="How long the token works: seconds, or e.g. 90m, 12h, 7d "
            "(default 24h, at most 30d).",
            show_default=False,
        ),
    ] = None,
    user_id: UserIdOption = None,
    role: RoleOption = None,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a session over the given stores and print its id, token, expiry and
    resources. With --user-id it speaks for that user (SPEC §6 visibility)."""
    ttl_s = _parse_ttl(ttl)
    principal = make_principal(user_id, role or ())
    texts = list(instructions or [])
    if len(texts) > len(store):
        raise InvalidInput("there are more --instructions than --store options")
    with command_engine(database) as engine:
        specs = []
        for position, value in enumerate(store):
            name_or_id, read_only = parse_store_spec(value)
            access = Access.READ_ONLY if read_only else Access.READ_WRITE
            store_id = engine.stores.find(name_or_id).id
            text = texts[position] if position < len(texts) else None
            specs.append(ResourceSpec(store_id, access, text))
        session, token = engine.sessions.create(
            specs, mount_root=mount_root, title=title, ttl_s=ttl_s, principal=principal
        )
    _print_session(session, token, as_json)


@session_app.command("show")
def session_show(
    session_id: Annotated[str, typer.Argument(help="The sesn_… id.")],
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a session and its resources (its token is never shown again)."""
    with command_engine(database) as engine:
        session = engine.sessions.get(session_id)
    _print_session(session, None, as_json)


@session_app.command("revoke")
def session_revoke(
    session_id: Annotated[str, typer.Argument(help="The sesn_… id.")],
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke a session (idempotent): its token gets 401 from now on, and a remote mount
    using it stops writing to the server (its queued writes are kept)."""
    with command_engine(database) as engine:
        session = engine.sessions.revoke(session_id)
    if as_json:
        print_json(_session_json(session))
    else:
        typer.echo(f"{session.id} revoked")


@session_app.command("list")
def session_list(
    store: Annotated[
        str | None, typer.Option("--store", help="Only sessions attaching this store.")
    ] = None,
    include_archived: Annotated[
        bool, typer.Option("--archived", help="Include archived sessions.")
    ] = False,
    database: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """List sessions, newest first, with their state (active, expired, revoked,
    archived) and expiry (never their tokens)."""
    with command_engine(database) as engine:
        store_id = engine.stores.find(store).id if store is not None else None
        sessions = list(
            all_pages(
                lambda cursor: engine.sessions.list(
                    store_id, include_archived=include_archived, limit=PAGE_LIMIT, cursor=cursor
                )
            )
        )
    if as_json:
        print_json(page_json([_session_json(s) for s in sessions]))
        return
    print_table(
        ("ID", "STATE", "EXPIRES", "STORES", "TITLE", "USER"),
        [
            (
                s.id,
                _session_state(s),
                format_timestamp(s.expires_at) if s.expires_at else "never",
                ",".join(r.memory_store_id for r in s.resources),
                s.title or "",
                _principal_text(s.principal),
            )
            for s in sessions
        ],
        empty="no sessions",
    )
