"""Signing in and out, and the sessions and keys page (SPEC §12, §3).

Sign-in takes an API key secret or a session token in a form (never in a URL), checks
it as the API does (:func:`memfs.api.auth.authenticate`; ``--insecure-dev`` gives the
console nothing: a real credential is always needed), and makes a server-side sign-in
(:mod:`memfs.store.sign_ins`) whose random id goes into the cookie. A failed attempt
is counted against the client's address (:class:`~memfs.console.guard.SignInThrottle`).

The sessions and keys page lists and revokes credentials; it needs an ``admin`` key
(the API lists sessions to any reader of their stores, but keys only exist on the CLI,
and revoking is administration). Every signed-in person sees which credential they
are signed in with, and until when.
"""

from __future__ import annotations

from http import HTTPStatus

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memfs.api.auth import authenticate
from memfs.console.guard import (
    CONSOLE_PATH,
    CSRF_FIELD,
    PAGE_HEADERS,
    PRE_SIGN_IN_COOKIE,
    SIGN_IN_COOKIE,
    cookie_header,
    expired_cookie_header,
    new_pre_sign_in_token,
    same_token,
)
from memfs.console.view import (
    Console,
    Page,
    error_page,
    foreign_origin,
    form_fields,
    page,
    render,
)
from memfs.core.errors import AuthenticationFailed, MemfsError, PermissionDenied
from memfs.core.model import ConsoleSignIn, Scope

__all__ = ["credentials_page", "revoke_key", "revoke_session", "sign_in", "sign_in_form",
           "sign_out"]

# What the sign-in page says when it is shown after a sign-in ended (``?ended=code``).
ENDED_MESSAGES = {
    "credential_revoked": "Your sign-in ended: its API key or session was revoked.",
    "credential_expired": "Your sign-in ended: its session token expired.",
    "authentication_failed": "Your sign-in ended (it expired or you signed out). Sign in again.",
}


def _sign_in_page(
    console: Console, request: Request, *, message: str | None, status: int = HTTPStatus.OK
) -> Response:
    """The sign-in form with a fresh double-submit token (cookie and hidden field)."""
    token = new_pre_sign_in_token()
    response = render(console, "sign_in.html", status=status, title="Sign in",
                      csrf=token, message=message, signed_in=False)
    response.headers.append(
        "set-cookie",
        cookie_header(PRE_SIGN_IN_COOKIE, token, secure=request.url.scheme == "https"),
    )
    return response


async def sign_in_form(request: Request) -> Response:
    """GET /console/sign-in: the form (and why the last sign-in ended, if it did)."""
    console: Console = request.app.state.console
    ended = request.query_params.get("ended")
    return _sign_in_page(console, request, message=ENDED_MESSAGES.get(ended or ""))


async def sign_in(request: Request) -> Response:
    """POST /console/sign-in: checks the credential, makes the sign-in, sets the cookie.

    Refused (nothing made) when the form's token is not the double-submit cookie's or
    the request comes from another site (403), when this address failed too often (429),
    or when the credential is unknown, revoked or expired (401, counted as a failure).
    """
    console: Console = request.app.state.console
    address = request.client.host if request.client is not None else "unknown"
    try:
        fields = form_fields(await request.body())
    except MemfsError as exc:
        return error_page(console, exc, signed_in=False)
    if foreign_origin(request) or not same_token(
        fields.get(CSRF_FIELD), request.cookies.get(PRE_SIGN_IN_COOKIE, "")
    ):
        refused = PermissionDenied(
            "the sign-in form is out of date or came from another site; reload it",
            code="csrf_token_invalid",
        )
        return error_page(console, refused, signed_in=False)
    token = fields.get("credential", "").strip()
    engine = console.engine

    def work() -> tuple[ConsoleSignIn, str]:
        console.throttle.check(address)
        try:
            if not token:
                raise AuthenticationFailed("enter an API key or a session token")
            principal = authenticate(engine, token)
        except AuthenticationFailed:
            console.throttle.failed(address)
            raise
        return engine.console_sign_ins.create(
            api_key=principal.api_key, session=principal.session
        )

    try:
        _, sign_in_id = await anyio.to_thread.run_sync(work)
    except AuthenticationFailed as refused:
        return _sign_in_page(console, request, message=str(refused),
                             status=HTTPStatus.UNAUTHORIZED)
    except MemfsError as exc:
        response = error_page(console, exc, signed_in=False)
        retry_after_s = getattr(exc, "retry_after_s", None)
        if isinstance(retry_after_s, float):
            response.headers["retry-after"] = str(max(1, round(retry_after_s)))
        return response
    secure = request.url.scheme == "https"
    response = RedirectResponse(f"{CONSOLE_PATH}/", status_code=HTTPStatus.SEE_OTHER,
                                headers=PAGE_HEADERS)
    response.headers.append("set-cookie", cookie_header(SIGN_IN_COOKIE, sign_in_id, secure=secure))
    response.headers.append("set-cookie", expired_cookie_header(PRE_SIGN_IN_COOKIE, secure=secure))
    return response


async def sign_out(request: Request) -> Response:
    """POST /console/sign-out: ends the sign-in (server-side) and clears the cookie.
    Needs the CSRF token like every change (a foreign page can't sign you out)."""
    def handler(current: Page) -> Response:
        sign_in_id = request.cookies.get(SIGN_IN_COOKIE, "")
        current.engine.console_sign_ins.delete(sign_in_id)
        response = current.redirect(f"{CONSOLE_PATH}/sign-in")
        response.headers.append(
            "set-cookie",
            expired_cookie_header(SIGN_IN_COOKIE, secure=request.url.scheme == "https"),
        )
        return response

    return await page(handler)(request)


def _require_admin(current: Page) -> None:
    current.principal.require(Scope.ADMIN, agents=False)


def credentials_page(current: Page) -> Response:
    """GET /console/credentials: the signed-in credential; for an ``admin`` key also
    every API key and the sessions (newest first, paginated), each with revoke."""
    admin = current.may(Scope.ADMIN, agents=False)
    keys = current.engine.api_keys.list() if admin else []
    sessions = None
    if admin:
        sessions = current.engine.sessions.list(
            include_archived=False, limit=50, cursor=current.query.get("page") or None
        )
    return current.render(
        "credentials.html",
        title="Sessions and keys",
        admin=admin,
        keys=keys,
        sessions=sessions,
        sign_in=current.sign_in,
        principal=current.principal,
    )


def revoke_key(current: Page) -> Response:
    """POST /console/credentials/keys/{api_key_id}/revoke (``admin``): the key and
    every session it created stop working at once, console sign-ins included."""
    _require_admin(current)
    current.engine.api_keys.revoke(current.params["api_key_id"])
    return current.redirect(f"{CONSOLE_PATH}/credentials")


def revoke_session(current: Page) -> Response:
    """POST /console/credentials/sessions/{session_id}/revoke (``admin``)."""
    _require_admin(current)
    current.engine.sessions.revoke(current.params["session_id"])
    return current.redirect(f"{CONSOLE_PATH}/credentials")

