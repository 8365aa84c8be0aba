"""``memfs identity mount|unmount|mounts|default|session``: stores on (identity,
template) pairs (SPEC §8, seed 000).

A pair (``idn_…``, ``tmpl_…``, ids chosen by the platform) is one end user of one agent
definition. ``mount`` binds a store to it read-only (at most 10); ``default`` shows the
pair's system-managed default store, creating it the first time
(``default:<identity_id>:<template_id>``); ``session`` creates the pair's session (the
default store read-write plus every active mount read-only, flat, at
``/data/.qoder/awareness`` unless ``--mount-root``), whose token ``memfs mount --api URL
--token T`` then mounts flat. ``--json`` prints the API's objects.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memfs.cli import short_help
from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    StoreArgument,
    command_engine,
    format_time,
    print_json,
    print_table,
)
from memfs.core.config import DEFAULT_PAIR_MOUNT_ROOT
from memfs.core.model import IdentityMount
from memfs.wire import identity_mount_to_wire, store_to_wire

__all__ = ["register"]

identity_app = typer.Typer(help=short_help("identity"))

IdentityArgument = Annotated[str, typer.Argument(help="The identity id (idn_…).")]
TemplateArgument = Annotated[str, typer.Argument(help="The template id (tmpl_…).")]


def register(app: typer.Typer) -> None:
    """Adds ``memfs identity …`` to the ``memfs`` app."""
    identity_app.info.no_args_is_help = True
    app.add_typer(identity_app, name="identity")


def _print_mounts(mounts: list[IdentityMount], as_json: bool, *, empty: str) -> None:
    if as_json:
        print_json({"data": [identity_mount_to_wire(m) for m in mounts], "next_page": None})
        return
    print_table(
        ("IDENTITY", "TEMPLATE", "STORE", "NAME", "ACCESS", "DEFAULT", "STATUS", "MEMORIES",
         "MOUNTED"),
        [
            (
                m.identity_id, m.template_id, m.memory_store_id, m.name, m.access.value,
                "yes" if m.system_managed else "", m.status, f"{m.entry_count:,}",
                format_time(m.created_at),
            )
            for m in mounts
        ],
        empty=empty,
    )  # fmt: skip


@identity_app.command("mount")
def identity_mount(
    identity_id: IdentityArgument,
    template_id: TemplateArgument,
    store: StoreArgument,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Mount a store on the pair, read-only (at most 10 a pair; again: no change)."""
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        mount, created = engine.identities.mount(identity_id, template_id, found.id)
    if as_json:
        print_json(identity_mount_to_wire(mount))
    else:
        pair = f"{identity_id}/{template_id}"
        what = "mounted" if created else "was already mounted:"
        typer.echo(f'{what} "{found.name}" ({found.id}) on {pair} read-only')


@identity_app.command("unmount")
def identity_unmount(
    identity_id: IdentityArgument,
    template_id: TemplateArgument,
    store: StoreArgument,
    database: DatabaseOption = None,
) -> None:
    """Unmount a store from the pair (the store stays; the default store can't be)."""
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        engine.identities.unmount(identity_id, template_id, found.id)
    typer.echo(f'unmounted "{found.name}" ({found.id}) from {identity_id}/{template_id}')


@identity_app.command("mounts")
def identity_mounts(
    identity_id: Annotated[
        str | None, typer.Argument(help="The identity id (idn_…); or give --store.")
    ] = None,
    template_id: Annotated[str | None, typer.Argument(help="The template id (tmpl_…).")] = None,
    store: Annotated[
        str | None, typer.Option("--store", help="List the pairs this store is mounted on.")
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """A pair's mounts (the default store first, then by mount time), or a store's."""
    if (store is None) == (identity_id is None) or (identity_id is None) != (template_id is None):
        raise typer.BadParameter("give IDENTITY_ID TEMPLATE_ID, or --store STORE")
    with command_engine(database) as engine:
        if store is not None:
            found = engine.stores.find(store)
            mounts = engine.identities.store_mounts(found.id)
            empty = f'"{found.name}" is mounted on no (identity, template) pair'
        else:
            assert identity_id is not None
            assert template_id is not None
            mounts = engine.identities.pair_mounts(identity_id, template_id)
            empty = f"nothing is mounted on {identity_id}/{template_id}"
    _print_mounts(mounts, as_json, empty=empty)


@identity_app.command("default")
def identity_default(
    identity_id: IdentityArgument,
    template_id: TemplateArgument,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """The pair's system-managed default store, created the first time."""
    with command_engine(database) as engine:
        store, created = engine.identities.ensure_default_store(identity_id, template_id)
    if as_json:
        print_json(store_to_wire(store))
    else:
        verb = "created" if created else "exists:"
        typer.echo(f'{verb} default store "{store.name}" ({store.id})')


@identity_app.command("session")
def identity_session(
    identity_id: IdentityArgument,
    template_id: TemplateArgument,
    mount_root: Annotated[
        str, typer.Option("--mount-root", help="Where the sandbox mounts the stores (flat).")
    ] = DEFAULT_PAIR_MOUNT_ROOT,
    title: Annotated[str | None, typer.Option(help="A title for humans.")] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            help="How long the token works: seconds, or e.g. 90m, 12h, 7d "
            "(default 24h, at most 30d).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Create the pair's session: its default store read-write and every active mount
    read-only, flat; prints its id, token, expiry and resources."""
    from memfs.cli.credentials import _parse_ttl as parse_ttl
    from memfs.cli.credentials import _print_session as print_session

    ttl_s = parse_ttl(ttl)
    with command_engine(database) as engine:
        session, token = engine.identities.create_session(
            identity_id, template_id, mount_root=mount_root, title=title, ttl_s=ttl_s
        )
    print_session(session, token, as_json)
