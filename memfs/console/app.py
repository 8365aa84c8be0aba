"""The console's ASGI application: its routes, its templates, its stylesheet.

``memfs serve`` mounts it at ``/console`` beside the API (:func:`memfs.api.app.create_app`'s
``mounts``, handed in by the composition root), on the same engine. Every page is
:func:`memfs.console.view.page`; the sign-in form alone is open.

The stylesheet is the console's own (``static/console.css``); there is no script at all,
so the Content-Security-Policy allows none.
"""

from __future__ import annotations

from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memfs.console import account, dreams, history, memories, stores, transfer
from memfs.console.guard import SECURITY_HEADERS, SignInThrottle
from memfs.console.view import Console, page
from memfs.store import Engine

__all__ = ["STYLESHEET_MAX_AGE_S", "create_console"]

# How long a browser may keep the stylesheet (it changes only with memfs).
STYLESHEET_MAX_AGE_S = 3600


def _templates() -> Environment:
    """The templates, every value autoescaped (memory content, paths, metadata and store
    names are untrusted, SPEC §12); an undefined name is an error, not an empty string."""
    return Environment(
        loader=PackageLoader("memfs.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


async def _stylesheet(request: Request) -> Response:
    """GET /console/static/console.css."""
    css = resources.files("memfs.console").joinpath("static/console.css").read_bytes()
    headers = {**SECURITY_HEADERS, "cache-control": f"max-age={STYLESHEET_MAX_AGE_S}"}
    return Response(css, media_type="text/css", headers=headers)


def _routes() -> list[Route]:
    s = "/stores/{store_id}"
    m = s + "/memories/{memory_id}"
    v = s + "/versions/{version_id}"
    get, post = ["GET"], ["POST"]
    return [
        Route("/static/console.css", _stylesheet, methods=get),
        Route("/sign-in", account.sign_in_form, methods=get),
        Route("/sign-in", account.sign_in, methods=post),
        Route("/sign-out", account.sign_out, methods=post),
        Route("/credentials", page(account.credentials_page), methods=get),
        Route("/credentials/keys/{api_key_id}/revoke", page(account.revoke_key), methods=post),
        Route("/credentials/sessions/{session_id}/revoke", page(account.revoke_session),
              methods=post),
        Route("/", page(stores.stores_page), methods=get),
        Route("/stores", page(stores.create_store), methods=post),
        Route(s, page(stores.store_page), methods=get),
        Route(s + "/archive", page(stores.archive_store), methods=post),
        Route(s + "/delete", page(stores.delete_store_form), methods=get),
        Route(s + "/delete", page(stores.delete_store), methods=post),
        Route(s + "/deleted", page(stores.deleted_page), methods=get),
        Route(s + "/audit", page(stores.audit_page), methods=get),
        Route(s + "/history", page(history.history_page), methods=get),
        Route(s + "/snapshots", page(history.create_snapshot), methods=post),
        Route(s + "/snapshots/{snapshot_id}/delete", page(history.delete_snapshot_form),
              methods=get),
        Route(s + "/snapshots/{snapshot_id}/delete", page(history.delete_snapshot),
              methods=post),
        Route(s + "/as-of", page(history.as_of_page), methods=get),
        Route(s + "/as-of/memories/{memory_id}", page(history.as_of_memory_page), methods=get),
        Route(s + "/diff", page(history.store_diff_page), methods=get),
        Route(s + "/restore", page(history.restore_plan_page), methods=get),
        Route(s + "/restore", page(history.restore_store), methods=post),
        Route(s + "/fork", page(history.fork_store), methods=post),
        Route(s + "/merge", page(history.merge_plan_page), methods=get),
        Route(s + "/merge", page(history.merge_fork), methods=post),
        Route(s + "/transfer", page(transfer.transfer_page), methods=get),
        Route(s + "/export", page(transfer.export_store), methods=get),
        Route(s + "/import", page(transfer.import_into_store), methods=post),
        Route(s + "/dreams", page(dreams.store_dreams_page), methods=get),
        Route(s + "/dreams", page(dreams.start_dream), methods=post),
        Route("/dreams/{dream_id}", page(dreams.dream_page), methods=get),
        Route("/dreams/{dream_id}/cancel", page(dreams.cancel_dream), methods=post),
        Route("/dreams/{dream_id}/discard", page(dreams.discard_dream), methods=post),
        Route("/dreams/{dream_id}/apply", page(dreams.apply_plan_page), methods=get),
        Route("/dreams/{dream_id}/apply", page(dreams.apply_dream), methods=post),
        Route(m, page(memories.memory_page), methods=get),
        Route(m, page(memories.save_memory), methods=post),
        Route(m + "/rename", page(memories.rename_memory), methods=post),
        Route(m + "/delete", page(memories.delete_memory), methods=post),
        Route(m + "/restore", page(stores.restore_memory), methods=post),
        Route(m + "/versions", page(memories.versions_page), methods=get),
        Route(m + "/diff", page(memories.diff_page), methods=get),
        Route(v, page(memories.version_page), methods=get),
        Route(v + "/redact", page(memories.redact_version_form), methods=get),
        Route(v + "/redact", page(memories.redact_version), methods=post),
        Route(v + "/revert", page(memories.revert_to_version), methods=post),
    ]


def create_console(
    engine: Engine, insecure_dev: bool = False, *, throttle: SignInThrottle | None = None
) -> Starlette:
    """The console over ``engine``, to be mounted at ``/console``.

    Args:
        engine: the store engine (the API's: the caller opens and closes it).
        insecure_dev: ignored: the console always needs a real credential (the
            signature is the API's endpoint factory's).
        throttle: the failed sign-in counter (a default one unless given: tests pass
            one with a fake clock).
    """
    app = Starlette(routes=_routes())
    app.state.console = Console(
        engine=engine, templates=_templates(), throttle=throttle or SignInThrottle()
    )
    return app
