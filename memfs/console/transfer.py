"""A store's import and export from the browser (SPEC §12): the files ``memfs export``
writes and ``memfs import`` reads, through the same code (:mod:`memfs.transfer`).

* **Export** (``memory:read``): JSON Lines (one api-contract ``memory`` object with its
  content per line: ``memfs export --format jsonl``), or the files packed as a zip or a
  ``.tar.gz`` (the folder ``memfs export DIR`` writes), of the whole store or a
  directory. Only what the signed-in credential sees is exported (SPEC §6).
* **Import** (``memory:write``): an uploaded ``.jsonl`` file, or a zip or ``.tar.gz``
  of files, into a directory of the store: each file or line created, updated (only
  when its bytes differ, under a ``content_sha256`` precondition) or refused with its
  reason, as ``memfs import`` does; every version attributed to the signed-in
  credential. The upload is a multipart form with the CSRF token, at most
  :data:`~memfs.console.view.MAX_UPLOAD_BYTES` (413 ``upload_too_large`` past it).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from starlette.responses import Response

from memfs import transfer
from memfs.console.guard import PAGE_HEADERS
from memfs.console.view import MAX_UPLOAD_BYTES, Page
from memfs.core.errors import InvalidInput
from memfs.core.model import Scope

__all__ = ["SHOWN_OUTCOMES", "export_store", "import_into_store", "transfer_page"]

# Outcomes listed on the import's result page (the counts cover all of them).
SHOWN_OUTCOMES = 500

_EXPORTS = {
    "jsonl": ("application/x-ndjson", "jsonl"),
    "zip": ("application/zip", "zip"),
    "tar.gz": ("application/gzip", "tar.gz"),
}


def _prefix(text: str | None) -> str:
    prefix = (text or "").strip() or "/"
    if not prefix.startswith("/"):
        prefix = "/" + prefix
    return prefix if prefix.endswith("/") else prefix + "/"


def transfer_page(current: Page) -> Response:
    """GET /console/stores/{id}/transfer: the export links and the import form."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    return current.render(
        "transfer.html",
        title=f"Import and export {store.name}",
        store=store,
        may_import=store.archived_at is None and current.may(Scope.WRITE, store_id),
        max_upload_mib=MAX_UPLOAD_BYTES // (1024 * 1024),
        result=None,
    )


def export_store(current: Page) -> Response:
    """GET /console/stores/{id}/export?format=jsonl|zip|tar.gz&prefix=/a/: the store (or
    the directory) as a download named after the store."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.READ, store_id)
    store = current.caller.stores.get(store_id)
    kind = current.query.get("format") or "jsonl"
    if kind not in _EXPORTS:
        raise InvalidInput("format must be jsonl, zip or tar.gz")
    prefix = _prefix(current.query.get("prefix"))
    if kind == "jsonl":
        text = io.StringIO()
        for _ in transfer.export_jsonl(current.caller, store_id, text, prefix=prefix):
            pass
        body = text.getvalue().encode("utf-8")
    else:
        data = io.BytesIO()
        for _ in transfer.export_archive(
            current.caller, store_id, data, transfer.ArchiveKind(kind), prefix=prefix
        ):
            pass
        body = data.getvalue()
    media_type, extension = _EXPORTS[kind]
    filename = "".join(c if c.isalnum() or c in "-_." else "_" for c in store.name)[:80]
    headers = {
        **PAGE_HEADERS,
        "content-disposition": f'attachment; filename="{filename or store.id}.{extension}"',
    }
    return Response(body, media_type=media_type, headers=headers)


@dataclass(frozen=True)
class ImportResult:
    """What an import did: counts by status, and the outcomes listed (refused first)."""

    source: str
    counts: dict[str, int]
    outcomes: list[transfer.ImportOutcome]
    more: int


def import_into_store(current: Page) -> Response:
    """POST /console/stores/{id}/import (multipart: ``file``, ``prefix``): imports the
    uploaded JSON Lines file or archive of files, then shows what happened to each entry
    (400 ``no_file``, ``unknown_archive``, ``too_many_entries``; 413
    ``upload_too_large``)."""
    store_id = current.params["store_id"]
    current.principal.require(Scope.WRITE, store_id)
    store = current.caller.stores.get(store_id)
    upload = current.files.get("file")
    if upload is None or not upload[1]:
        raise InvalidInput("choose a file to import", code="no_file")
    name, data = upload
    prefix = _prefix(current.form.get("prefix"))
    if transfer.archive_kind(data) is not None:
        candidates = transfer.plan_archive_import(data, source_name=name, prefix=prefix)
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(
                f"{name} is neither JSON Lines (UTF-8 text) nor a zip or .tar.gz archive",
                code="unknown_archive",
            ) from None
        candidates = transfer.plan_jsonl_import(
            text.splitlines(), source_name=name, prefix=prefix
        )
    outcomes = list(transfer.import_candidates(current.caller, store_id, candidates))
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status.value] = counts.get(outcome.status.value, 0) + 1
    ordered = sorted(outcomes, key=lambda o: o.status is not transfer.ImportStatus.REFUSED)
    result = ImportResult(name, counts, ordered[:SHOWN_OUTCOMES],
                          max(0, len(ordered) - SHOWN_OUTCOMES))
    return current.render(
        "transfer.html",
        title=f"Imported into {store.name}",
        store=store,
        may_import=True,
        max_upload_mib=MAX_UPLOAD_BYTES // (1024 * 1024),
        result=result,
    )
