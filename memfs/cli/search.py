"""``memfs search QUERY``: ranked full-text search over stores (SPEC §7).

The query language is :mod:`memfs.query`'s (README "Search"). Without ``--store`` the
search covers every store of the database (the CLI is the operator). ``--semantic``
asks for semantic search, which needs an embedding model: without one it is the
engine's SearchUnavailable, one error line naming the setting.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    command_engine,
    fail,
    print_json,
    print_table,
)
from memfs.query import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Adds ``memfs search`` to the ``memfs`` app."""
    app.command("search")(search_command)


def search_command(
    query: Annotated[
        str, typer.Argument(help='Words, "phrases", prefix*, -excluded; all must match.')
    ],
    store: Annotated[
        list[str] | None,
        typer.Option("--store", help="Store name, slug or id; repeat for several. Default: all."),
    ] = None,
    path_prefix: Annotated[
        str, typer.Option("--path-prefix", help="Only memories below this prefix (ends with /).")
    ] = "/",
    text: Annotated[bool, typer.Option("--text", help="Full-text search (the default).")] = False,
    semantic: Annotated[
        bool, typer.Option("--semantic", help="Semantic search (needs an embedding model).")
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_SEARCH_LIMIT, help="At most this many hits.")
    ] = DEFAULT_SEARCH_LIMIT,
    record_type: Annotated[
        str | None, typer.Option("--type", help="Only records of this type (SPEC §6).")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only records with this tag.")] = None,
    min_importance: Annotated[
        float | None,
        typer.Option("--min-importance", help="Only records of at least this importance."),
    ] = None,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Find memories by words, best first: score, store, path and a highlighted snippet.

    Japanese and other text written without spaces is found by substring (記憶 finds
    長期記憶). A bad query, prefix or store is one error line, exit status 1.
    """
    if text and semantic:
        fail("--text and --semantic exclude each other")
    from memfs.records import RecordFilter
    from memfs.wire import search_hit_to_wire

    record_filter = RecordFilter.of(record_type=record_type, tag=tag, min_importance=min_importance)
    with command_engine(database) as engine:
        store_ids = [engine.find_store(name).id for name in store] if store else None
        hits = engine.search(
            query,
            store_ids,
            path_prefix=path_prefix,
            limit=limit,
            semantic=semantic,
            record_filter=record_filter,
        )
        names = {hit.store_id: engine.get_store(hit.store_id).name for hit in hits}
    if as_json:
        print_json({"data": [search_hit_to_wire(hit) for hit in hits]})
        return
    print_table(
        ["SCORE", "STORE", "PATH", "SNIPPET"],
        [(f"{hit.score:.3f}", names[hit.store_id], hit.path, hit.snippet) for hit in hits],
        empty="no memory matches",
    )
