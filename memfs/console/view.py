"""How every console page runs: the sign-in resolved, the CSRF token checked, one
handler in a worker thread, the engine's errors turned into a page.

A page handler is a plain function ``handler(page: Page) -> Response`` wrapped by
:func:`page`; it runs in a worker thread (engine calls block; the event loop never
waits on them) and calls the engine's facades exactly as the API's routes do: the
scope check of :class:`~memfs.api.auth.Principal` first, then one facade call through
``page.caller`` (``engine.for_caller(actor=…, viewer=…)``), so every change is a version
attributed to the signed-in credential, audited, and bounded by its scopes, store
restriction, read-only attachments and record visibility (SPEC §3, §6).

The status of an error page is the API's for the same error
(:func:`memfs.wire.errors.wire_error`: the one table), so a forged POST of a read-only
credential is a 403 here as there.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio.to_thread
from jinja2 import Environment
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from memfs.api.auth import Principal
from memfs.console.guard import (
    CONSOLE_PATH,
    CSRF_FIELD,
    PAGE_HEADERS,
    SIGN_IN_COOKIE,
    SignInThrottle,
    csrf_token,
    expired_cookie_header,
    same_token,
)
from memfs.core.errors import (
    AuthenticationFailed,
    ContentTooLarge,
    InvalidInput,
    MemfsError,
    NotFound,
    PermissionDenied,
)
from memfs.core.model import ConsoleSignIn, Scope
from memfs.store import Caller, Engine
from memfs.wire.errors import wire_error

__all__ = [
    "MAX_FORM_BYTES",
    "MAX_UPLOAD_BYTES",
    "STORE_SECTIONS",
    "Console",
    "Endpoint",
    "Page",
    "error_page",
    "foreign_origin",
    "form_fields",
    "page",
    "render",
    "sign_in_url",
    "who",
]

log = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]

# The largest form a page takes (a memory is at most 102,400 bytes; a textarea's text
# grows up to threefold in URL encoding), and the largest upload (a multipart form with
# a file: an import), in bytes; a larger body is refused with 413 before it is parsed.
MAX_FORM_BYTES = 1024 * 1024
MAX_UPLOAD_BYTES = 64 * 1024 * 1024

# The sections of a store's navigation: (label, path below /console/stores/{id}).
STORE_SECTIONS: tuple[tuple[str, str], ...] = (
    ("Memories", ""),
    ("History", "/history"),
    ("Dreams", "/dreams"),
    ("Deleted", "/deleted"),
    ("Import and export", "/transfer"),
    ("Audit trail", "/audit"),
)


@dataclass
class Console:
    """What the console's pages share (``app.state.console``).

    Attributes:
        engine: the store engine (the API's own).
        templates: the Jinja2 environment (autoescaping on).
        throttle: the failed sign-in counter.
    """

    engine: Engine
    templates: Environment
    throttle: SignInThrottle


@dataclass
class Page:
    """One request to a signed-in page, as its handler sees it.

    Attributes:
        params: the path parameters.
        query: the query string (first value of each name).
        form: the form fields of a POST (first value of each name), CSRF checked.
        files: the files of a multipart POST: field name → (file name, bytes).
        principal: the signed-in credential.
        sign_in: the sign-in record (its expiry).
        csrf: the CSRF token every form of the page must carry.
    """

    console: Console
    method: str
    path: str
    params: Mapping[str, str]
    query: Mapping[str, str]
    form: Mapping[str, str]
    principal: Principal
    sign_in: ConsoleSignIn
    csrf: str
    files: Mapping[str, tuple[str, bytes]] = field(default_factory=dict)
    _caller: Caller | None = field(default=None, repr=False)

    @property
    def engine(self) -> Engine:
        """The store engine (unrestricted: only for what the API, too, reads unbound)."""
        return self.console.engine

    @property
    def caller(self) -> Caller:
        """The engine's facades acting for the signed-in credential."""
        if self._caller is None:
            self._caller = self.principal.caller(self.console.engine)
        return self._caller

    def may(self, scope: Scope, store_id: str | None = None, *, agents: bool = True) -> bool:
        """True when the credential may act with ``scope`` on ``store_id`` (the check of
        :meth:`Principal.require`): which controls a page shows. The action itself is
        checked again when it is posted."""
        try:
            self.principal.require(scope, store_id, agents=agents)
        except (PermissionDenied, NotFound):
            return False
        return True

    def render(self, template: str, status: int = HTTPStatus.OK, **values: Any) -> Response:
        """``template`` rendered with ``values`` and what every page shows."""
        return render(
            self.console,
            template,
            status=status,
            csrf=self.csrf,
            who=who(self.principal),
            signed_in=True,
            store_sections=STORE_SECTIONS,
            **values,
        )

    def redirect(self, url: str) -> Response:
        """303 See Other to ``url`` (after a POST: a reload does not post again)."""
        return RedirectResponse(url, status_code=HTTPStatus.SEE_OTHER, headers=PAGE_HEADERS)


def who(principal: Principal) -> str:
    """How the signed-in credential is named on every page."""
    if principal.api_key is not None:
        return f"API key {principal.api_key.name} ({principal.api_key.id})"
    if principal.session is not None:
        return f"session {principal.session.title or ''} ({principal.session.id})".replace(
            "session  (", "session ("
        )
    return "nobody"


def render(
    console: Console, template: str, *, status: int = HTTPStatus.OK, **values: Any
) -> Response:
    """An HTML response of ``template`` with the page headers (CSP, no-store, …)."""
    text = console.templates.get_template(template).render(**values)
    return HTMLResponse(text, status_code=status, headers=PAGE_HEADERS)


def sign_in_url(ended: str | None = None) -> str:
    """The sign-in page; ``ended`` names why the last sign-in ended (an error code,
    never a credential)."""
    base = f"{CONSOLE_PATH}/sign-in"
    return f"{base}?{urlencode({'ended': ended})}" if ended else base


def form_fields(body: bytes) -> dict[str, str]:
    """The fields of an ``application/x-www-form-urlencoded`` body (first value each).

    Raises:
        InvalidInput: the body is not UTF-8.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("the form is not UTF-8") from None
    return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


async def _capped_body(request: Request, limit: int) -> bytes:
    """The request's body, refused past ``limit`` bytes (by its declared length first,
    then as it arrives).

    Raises:
        ContentTooLarge: ``upload_too_large`` (413).
    """
    refusal = ContentTooLarge(
        f"the form is larger than {limit:,} bytes, the most this page takes",
        code="upload_too_large",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise refusal
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise refusal
        chunks.append(chunk)
    return b"".join(chunks)


async def _posted(request: Request) -> tuple[dict[str, str], dict[str, tuple[str, bytes]]]:
    """A POST's fields (first value each) and files: URL-encoded up to
    :data:`MAX_FORM_BYTES`, multipart (an upload) up to :data:`MAX_UPLOAD_BYTES`."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        return form_fields(await _capped_body(request, MAX_FORM_BYTES)), {}
    request._body = await _capped_body(request, MAX_UPLOAD_BYTES)  # read once, capped
    fields: dict[str, str] = {}
    files: dict[str, tuple[str, bytes]] = {}
    try:
        async with request.form(max_files=4, max_fields=50) as parsed:
            for name, value in parsed.multi_items():
                if isinstance(value, str):
                    fields.setdefault(name, value)
                elif name not in files:
                    files[name] = (value.filename or "upload", await value.read())
    except HTTPException as exc:  # malformed multipart, too many parts
        raise InvalidInput(f"the form can't be read: {exc.detail}") from None
    return fields, files


def foreign_origin(request: Request) -> bool:
    """True when a POST says it comes from a page of another site (``Origin`` names
    another host than the request's)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin == "null"
    return urlsplit(origin).netloc != request.headers.get("host", "")


def _ended(console: Console, request: Request, reason: str | None) -> Response:
    response = RedirectResponse(
        sign_in_url(reason), status_code=HTTPStatus.SEE_OTHER, headers=PAGE_HEADERS
    )
    if reason is not None:
        response.headers.append(
            "set-cookie",
            expired_cookie_header(SIGN_IN_COOKIE, secure=request.url.scheme == "https"),
        )
    return response


def error_page(console: Console, exc: MemfsError, **values: Any) -> Response:
    """The page of an error the engine raised, with the API's status for it."""
    status = wire_error(type(exc)).status
    return render(console, "error.html", status=status, message=str(exc), code=exc.code,
                  title=HTTPStatus(status).phrase, **values)


def page(handler: Callable[[Page], Response]) -> Endpoint:
    """The endpoint of a signed-in page: not signed in (or the sign-in ended: expired,
    signed out, its credential revoked) → the sign-in page; a POST must carry the
    sign-in's CSRF token and come from no other site (else 403, nothing changed); then
    ``handler`` in a worker thread, its MemfsError shown as an error page."""

    async def endpoint(request: Request) -> Response:
        console: Console = request.app.state.console
        sign_in_id = request.cookies.get(SIGN_IN_COOKIE)
        if not sign_in_id:
            return _ended(console, request, None)
        try:
            sign_in = await anyio.to_thread.run_sync(
                console.engine.console_sign_ins.resolve, sign_in_id
            )
        except AuthenticationFailed as ended:
            return _ended(console, request, ended.code)
        principal = (
            Principal.of_key(sign_in.api_key)
            if sign_in.api_key is not None
            else Principal.of_session(sign_in.session)  # type: ignore[arg-type]
        )
        csrf = csrf_token(sign_in_id)
        form: dict[str, str] = {}
        files: dict[str, tuple[str, bytes]] = {}
        common = {"csrf": csrf, "who": who(principal), "signed_in": True,
                  "store_sections": STORE_SECTIONS}
        if request.method == "POST":
            try:
                form, files = await _posted(request)
            except MemfsError as exc:
                return error_page(console, exc, **common)
            if foreign_origin(request) or not same_token(form.get(CSRF_FIELD), csrf):
                refused = PermissionDenied(
                    "this form is out of date or came from another site (CSRF token "
                    "missing or wrong); nothing was changed: reload the page and try again",
                    code="csrf_token_invalid",
                )
                return error_page(console, refused, **common)
        current = Page(
            console=console,
            method=request.method,
            path=request.url.path,
            params=dict(request.path_params),
            query={k: v for k, v in request.query_params.items()},
            form=form,
            files=files,
            principal=principal,
            sign_in=sign_in,
            csrf=csrf,
        )
        try:
            return await anyio.to_thread.run_sync(handler, current)
        except AuthenticationFailed as ended:  # the credential died during the request
            return _ended(console, request, ended.code)
        except MemfsError as exc:
            return error_page(console, exc, **common)

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint
