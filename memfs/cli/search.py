"""``memfs search QUERY`` and ``memfs search reindex``: ranked search over stores (SPEC §7).

The query language is :mod:`memfs.core.query`'s (README "Search"). Without ``--store`` the
search covers every store of the database (the CLI is the operator). With an embedding
model configured (``$MEMFS_SEARCH_MODEL_DIR``) the ranking is hybrid (full text and
vectors fused) unless ``--text`` or ``--semantic`` forces one; ``--semantic`` without a
model is the engine's SearchUnavailable, one error line naming the setting.

``memfs search reindex [--store …]`` rebuilds the full-text documents from the heads and
embeds every memory again (a changed model, an upgraded database), with a progress bar.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    command_engine,
    fail,
    print_json,
    print_table,
)
from memfs.core.query import (
    DEFAULT_SEARCH_LIMIT,
    MAX_SEARCH_LIMIT,
    SEARCH_AUTO,
    SEARCH_SEMANTIC,
    SEARCH_TEXT,
)

__all__ = ["register"]


class _QueryByDefault(TyperGroup):
    """``memfs search QUERY …`` runs ``memfs search query QUERY …``: only a first word
    naming a subcommand (``reindex``) or ``--help`` alone is something else."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args != ["--help"]:
            args = ["query", *args]
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    """Adds ``memfs search`` (a query, or ``reindex``) to the ``memfs`` app."""
    group = typer.Typer(
        cls=_QueryByDefault,
        help="Find memories by words or meaning across stores: memfs search QUERY [OPTIONS] "
        "(the same as memfs search query QUERY, whose --help lists the options); "
        "memfs search reindex rebuilds the indexes.",
        no_args_is_help=True,
    )
    group.command("query")(search_command)
    group.command("reindex")(reindex_command)
    app.add_typer(group, name="search")


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
    text: Annotated[
        bool, typer.Option("--text", help="Full text only (the default without a model).")
    ] = False,
    semantic: Annotated[
        bool, typer.Option("--semantic", help="By meaning only (needs an embedding model).")
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
    """Find memories by words or meaning, best first: score, store, path and a snippet.

    Japanese and other text written without spaces is found by substring (記憶 finds
    長期記憶). With an embedding model the ranking is hybrid (words and meaning); memories
    still waiting for their vector are found by words only, and a note on stderr says
    how many. A bad query, prefix or store is one error line, exit status 1.
    """
    if text and semantic:
        fail("--text and --semantic exclude each other")
    from memfs.core.records import RecordFilter
    from memfs.wire import search_hit_to_wire

    mode = SEARCH_TEXT if text else SEARCH_SEMANTIC if semantic else SEARCH_AUTO
    record_filter = RecordFilter.of(record_type=record_type, tag=tag, min_importance=min_importance)
    with command_engine(database) as engine:
        store_ids = [engine.stores.find(name).id for name in store] if store else None
        hits = engine.search.query(
            query,
            store_ids,
            path_prefix=path_prefix,
            limit=limit,
            mode=mode,
            record_filter=record_filter,
        )
        names = {hit.store_id: engine.stores.get(hit.store_id).name for hit in hits}
        lag = engine.search.index_lag() if mode != SEARCH_TEXT else None
    if lag is not None and lag.model is not None and lag.pending:
        typer.echo(
            f"note: {lag.pending} memories wait for their vector (oldest "
            f"{lag.oldest_seconds:.1f} s): a mount's daemon or memfs serve embeds them, "
            "or memfs search reindex",
            err=True,
        )
    if as_json:
        print_json({"data": [search_hit_to_wire(hit) for hit in hits]})
        return
    print_table(
        ["SCORE", "STORE", "PATH", "SNIPPET"],
        [(f"{hit.score:.3f}", names[hit.store_id], hit.path, hit.snippet) for hit in hits],
        empty="no memory matches",
    )


def reindex_command(
    store: Annotated[
        list[str] | None,
        typer.Option("--store", help="Store name, slug or id; repeat for several. Default: all."),
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Rebuild the search indexes from the memories' heads: full text, then vectors.

    For a changed embedding model or an upgraded database. The vectors are computed
    here, with a progress bar, when MEMFS_SEARCH_MODEL_DIR names a model; without one
    they wait in the queue for one.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from memfs.core.config import search_model_dir

    with command_engine(database) as engine:
        store_ids = [engine.stores.find(name).id for name in store] if store else None
        columns = (
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, transient=False) as progress:
            words = progress.add_task("full text", total=None)
            count = engine.search.reindex(store_ids)
            progress.update(words, total=count, completed=count)
            if search_model_dir() is None:
                embedded = None
            else:
                vectors = progress.add_task("vectors", total=engine.search.index_lag().pending)
                embedded = engine.search.embed_pending(lambda done: progress.advance(vectors, done))
    if embedded is None:
        typer.echo(
            f"reindexed {count} memories by words; their vectors wait for an embedding "
            "model (MEMFS_SEARCH_MODEL_DIR is not set)"
        )
    else:
        typer.echo(f"reindexed {count} memories: full text and {embedded} vectors")
