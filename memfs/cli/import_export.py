"""``memfs import`` and ``memfs export``: folders and JSONL files in and out of a store.

The planning and the file work are :mod:`memfs.transfer`; this module reports progress
(a bar on a terminal), refusals and totals.
"""

from __future__ import annotations

import contextlib
import enum
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from memfs.cli._common import (
    DatabaseOption,
    JsonOption,
    StoreArgument,
    command_actor,
    command_engine,
    fail,
    format_size,
    is_terminal,
    listing_prefix,
    os_reason,
    print_json,
)
from memfs.core.errors import MemfsError, NotFound
from memfs.core.model import MemoryStore
from memfs.store import Engine

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Adds ``memfs import`` and ``memfs export`` to the ``memfs`` app."""
    app.command("import")(import_command)
    app.command("export")(export_command)


class ExportFormat(enum.StrEnum):
    FILES = "files"
    JSONL = "jsonl"
    RECORDS_JSONL = "records-jsonl"


class ImportFormat(enum.StrEnum):
    AUTO = "auto"
    FILES = "files"
    JSONL = "jsonl"
    ARCHIVE = "archive"


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress bar on a terminal; None (and silence) otherwise."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as progress:
        yield progress


def import_command(
    source: Annotated[
        Path,
        typer.Argument(
            help="A folder of text files, a .jsonl file as written by `memfs export`, or a "
            ".zip or .tar.gz of text files (as the console exports).",
            show_default=False,
        ),
    ],
    store: Annotated[str, typer.Option("--store", "-s", help="Target store (name or id).")],
    prefix: Annotated[
        str, typer.Option("--prefix", help="Memory directory to import into, e.g. /docs/.")
    ] = "/",
    create: Annotated[
        bool, typer.Option("--create", help="Create the store if no store has that name.")
    ] = False,
    include_hidden: Annotated[
        bool, typer.Option("--include-hidden", help="Also import names starting with '.'.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 if any file was refused.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print every file, not only refusals.")
    ] = False,
    input_format: Annotated[
        ImportFormat,
        typer.Option(
            "--format",
            help="files: a folder; jsonl: a JSON Lines file of memory objects or of seed 002 "
            "records (each becomes USER_ID/MEMORY_ID.md with its record header); archive: "
            "a zip or gzip'd tar of files, read in memory, never extracted; auto: jsonl "
            "for a .jsonl file, archive for a file starting like a zip or gzip.",
        ),
    ] = ImportFormat.AUTO,
    as_json: JsonOption = False,
    database: DatabaseOption = None,
) -> None:
    """Import a folder: DIR/a/b.txt becomes PREFIX/a/b.txt (a .jsonl file: PREFIX/PATH;
    a .zip or .tar.gz: its member a/b.txt becomes PREFIX/a/b.txt).

    Files that can't be memories (binary, over 102,400 bytes, invalid names, path conflicts,
    hidden or scratch files) are refused and reported with the reason; the rest is imported.
    Memories whose content is unchanged get no new version.
    Exit status 0 unless something fatal happened (or --strict and a file was refused).
    """
    from memfs import transfer

    target_prefix = listing_prefix(prefix)
    candidates = _plan_import(source, target_prefix, include_hidden, input_format)
    tally = _ImportTally()
    terminal = is_terminal() and not as_json
    with command_engine(database, create=create) as engine:
        found = _import_target(engine, store, create)
        with _progress(terminal) as progress:
            task = (
                progress.add_task(f"importing into {found.name}", total=len(candidates))
                if progress
                else None
            )
            say = _terminal_printer(progress.console) if progress else _stderr
            try:
                for outcome in transfer.import_candidates(
                    engine.for_caller(actor=command_actor()), found.id, candidates
                ):
                    tally.add(outcome)
                    if not as_json:
                        _report_outcome(outcome, verbose, say)
                    if progress is not None:
                        progress.advance(task)
            except MemfsError as exc:
                tally.fatal = exc
            except KeyboardInterrupt:
                tally.interrupted = True
    if as_json:
        print_json(
            {
                "memory_store_id": found.id,
                "source": str(source),
                "prefix": target_prefix,
                **{status.value: n for status, n in tally.counts.items()},
                "error": tally.fatal.message if tally.fatal else None,
                "files": [o.to_json() for o in tally.outcomes],
            }
        )
    else:
        typer.echo(f'imported {source} into "{found.name}": {tally.summary()}')
    _exit_after_import(tally, len(candidates) - len(tally.outcomes), strict)


def _plan_import(
    source: Path, prefix: str, include_hidden: bool, input_format: ImportFormat
) -> list[Any]:
    """The import candidates of a folder or a JSON Lines file; fails in one line when
    the source can't be read."""
    from memfs import transfer

    jsonl = input_format is ImportFormat.JSONL or (
        input_format is ImportFormat.AUTO and source.is_file() and source.suffix == ".jsonl"
    )
    try:
        if input_format is ImportFormat.ARCHIVE or (
            input_format is ImportFormat.AUTO and not jsonl and _looks_like_archive(source)
        ):
            try:
                return transfer.plan_archive_import(
                    source.read_bytes(),
                    source_name=source.name,
                    prefix=prefix,
                    include_hidden=include_hidden,
                )
            except MemfsError as exc:
                fail(f"cannot import {source}: {exc.message}")
        if jsonl:
            with open(source, encoding="utf-8") as stream:
                return transfer.plan_jsonl_import(stream, source_name=source.name, prefix=prefix)
        return transfer.plan_directory_import(source, prefix=prefix, include_hidden=include_hidden)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot import {source}: {os_reason(exc)}")


def _looks_like_archive(source: Path) -> bool:
    """Whether ``source`` is a file starting like a zip or a gzip stream (the console's
    exports; :func:`memfs.transfer.archive_kind`)."""
    from memfs import transfer

    if not source.is_file():
        return False
    with open(source, "rb") as stream:
        return transfer.archive_kind(stream.read(4)) is not None


def _import_target(engine: Engine, store: str, create: bool) -> MemoryStore:
    """The store to import into; with ``create``, a new one when none has that name.
    Raises NotFound."""
    try:
        return engine.stores.find(store)
    except NotFound:
        if not create:
            raise NotFound(
                f'no memory store named "{store}" (create it with --create or '
                "`memfs store create`)"
            ) from None
        return engine.stores.create(store)


@dataclass
class _ImportTally:
    """What an import did so far: outcomes, counts per status, bytes, how it ended."""

    outcomes: list[Any] = field(default_factory=list)
    counts: dict[Any, int] = field(default_factory=dict)
    total_bytes: int = 0
    fatal: MemfsError | None = None
    interrupted: bool = False

    def __post_init__(self) -> None:
        from memfs.transfer import ImportStatus

        self.counts = {status: 0 for status in ImportStatus}

    def add(self, outcome: Any) -> None:
        from memfs.transfer import ImportStatus

        self.outcomes.append(outcome)
        self.counts[outcome.status] += 1
        if outcome.status is not ImportStatus.REFUSED:
            self.total_bytes += outcome.size_bytes or 0

    @property
    def refused(self) -> int:
        from memfs.transfer import ImportStatus

        return self.counts[ImportStatus.REFUSED]

    def summary(self) -> str:
        from memfs.transfer import ImportStatus

        imported = len(self.outcomes) - self.refused
        return (
            f"{self.counts[ImportStatus.CREATED]} created, "
            f"{self.counts[ImportStatus.UPDATED]} updated, "
            f"{self.counts[ImportStatus.UNCHANGED]} unchanged, {self.refused} refused "
            f"({imported} files, {self.total_bytes:,} bytes)"
        )


def _exit_after_import(tally: _ImportTally, not_done: int, strict: bool) -> None:
    """Exit status 1 for a fatal error (or --strict and a refusal), 130 for Ctrl-C."""
    if tally.fatal is not None:
        fail(f"import stopped: {tally.fatal.message} ({not_done} entries not imported)")
    if tally.interrupted:
        typer.echo(f"memfs: error: import interrupted ({not_done} entries not imported)", err=True)
        raise typer.Exit(130)
    if strict and tally.refused:
        raise typer.Exit(1)


def _stderr(message: str) -> None:
    typer.echo(message, err=True)


def _terminal_printer(console: Any) -> Callable[[str], None]:
    """Prints lines above a live progress bar, verbatim (file names are not rich markup)."""

    def say(message: str) -> None:
        console.print(message, markup=False, highlight=False, soft_wrap=True)

    return say


def _report_outcome(outcome: Any, verbose: bool, say: Callable[[str], None]) -> None:
    from memfs.transfer import ImportStatus

    if outcome.status is ImportStatus.REFUSED:
        target = f" -> {outcome.path}" if outcome.path else ""
        say(f"refused {outcome.source}{target}: {outcome.reason}")
    elif verbose:
        say(f"{outcome.status.value} {outcome.path} ({format_size(outcome.size_bytes)} bytes)")


def export_command(
    store: StoreArgument,
    destination: Annotated[
        str,
        typer.Argument(help="Folder to write into, or a file (- for stdout) with --format jsonl."),
    ],
    prefix: Annotated[
        str, typer.Option("--prefix", help="Export only this memory directory.")
    ] = "/",
    chosen_format: Annotated[
        ExportFormat | None,
        typer.Option(
            "--format",
            help="files: one file per memory; jsonl: one API memory object per line "
            "(keeps metadata; `memfs import FILE.jsonl` reads it back); records-jsonl: "
            "one seed 002 record object per record (other memories are left out). "
            "Default: jsonl for a DEST ending in .jsonl, else files.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into a non-empty folder or over a file.")
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Write a store's memories out: PREFIX/a/b.txt becomes DEST/a/b.txt."""
    from memfs import transfer

    source_prefix = listing_prefix(prefix)
    output_format = chosen_format or (
        ExportFormat.JSONL if destination.endswith(".jsonl") else ExportFormat.FILES
    )
    to_stdout = destination == "-"
    target = Path(destination)
    _check_export_target(target, output_format, to_stdout=to_stdout, force=force)
    terminal = is_terminal() and not to_stdout
    count = 0
    total_bytes = 0
    selected = 0
    written: list[Path] = []
    with command_engine(database) as engine:
        found = engine.stores.find(store)
        with contextlib.ExitStack() as stack:
            progress = stack.enter_context(_progress(terminal))
            task = progress.add_task(f"exporting {found.name}", total=None) if progress else None

            def on_total(total: int) -> None:
                nonlocal selected
                selected = total
                if progress is not None:
                    progress.update(task, total=total)

            try:
                if output_format is not ExportFormat.FILES:
                    stream = (
                        sys.stdout
                        if to_stdout
                        else stack.enter_context(open(target, "w", encoding="utf-8"))
                    )
                    export = (
                        transfer.export_jsonl
                        if output_format is ExportFormat.JSONL
                        else transfer.export_records_jsonl
                    )
                    outcomes = export(
                        engine, found.id, stream, prefix=source_prefix, on_total=on_total
                    )
                else:
                    outcomes = transfer.export_tree(
                        engine, found.id, target, prefix=source_prefix, on_total=on_total
                    )
                for outcome in outcomes:
                    count += 1
                    total_bytes += outcome.size_bytes
                    if outcome.file is not None:
                        written.append(outcome.file)
                    if progress is not None:
                        progress.advance(task)
            except BrokenPipeError:
                raise  # the reader went away (`| head`): click exits quietly
            except OSError as exc:
                if progress is not None:
                    stack.close()  # take the progress bar down before printing
                _fail_export(exc, target, output_format, written, selected)
    if not to_stdout:
        typer.echo(
            f'exported {count} memories ({total_bytes:,} bytes) from "{found.name}" to {target}'
        )


def _check_export_target(
    target: Path, output_format: ExportFormat, *, to_stdout: bool, force: bool
) -> None:
    """Fails in one line for stdout without jsonl, or (without --force) a non-empty
    folder or an existing file."""
    if to_stdout:
        if output_format is ExportFormat.FILES:
            fail("exporting to stdout (-) needs --format jsonl")
        return
    if force:
        return
    if output_format is ExportFormat.FILES and target.is_dir() and any(target.iterdir()):
        fail(f"{target} is not empty (pass --force to write into it)")
    if output_format is not ExportFormat.FILES and target.exists():
        fail(f"{target} exists (pass --force to overwrite it)")


def _fail_export(
    exc: OSError, target: Path, output_format: ExportFormat, written: list[Path], selected: int
) -> NoReturn:
    """The one error line of a write that failed; in the files format, the files that
    were written first (each file is written whole or not at all)."""
    reason = f"cannot write {exc.filename or target}: {os_reason(exc)}"
    if output_format is ExportFormat.FILES:
        for file in written:
            _stderr(f"written {file}")
        reason += (
            f" (export stopped: {len(written)} of {selected} memories written"
            f"{', listed above' if written else ''})"
        )
    fail(reason)
