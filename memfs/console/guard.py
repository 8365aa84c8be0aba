"""The console's security (SPEC §12), in one place: the sign-in cookie, the CSRF token,
the rate limit of failed sign-ins, and the headers of every response.

* **Cookie.** The browser holds only :data:`SIGN_IN_COOKIE`: a random id (see
  :mod:`memfs.store.sign_ins`: the server keeps its SHA-256), ``HttpOnly`` (no script
  reads it), ``SameSite=Strict`` (no other site's page sends it), ``Path=/console``, and
  ``Secure`` when the request came over TLS. It never holds the credential.
* **CSRF.** Every form that changes something carries :func:`csrf_token` of the sign-in,
  a SHA-256 of the cookie's id under a label of its own: a page of another site can
  neither read it nor compute it. A POST without the right token changes nothing (403).
  The sign-in form, before any sign-in exists, uses a double-submit cookie
  (:data:`PRE_SIGN_IN_COOKIE`). A POST whose ``Origin`` names another site is refused
  too (defence in depth behind ``SameSite``).
* **Failed sign-ins** are counted per client address in a sliding window
  (:class:`SignInThrottle`); past the limit, sign-ins from that address are refused
  with :class:`~memfs.core.errors.TooManyAttempts` (429) until the window moves on.
  Limitation: the count lives in the server process (several ``memfs serve`` behind one
  address count separately), and behind a reverse proxy every client has its address.
* **Headers** (:data:`SECURITY_HEADERS`): a Content-Security-Policy allowing nothing but
  this server's own stylesheet (no script at all, no inline anything, no framing),
  ``X-Frame-Options: DENY``, ``nosniff``, no referrer to other sites (with
  ``no-referrer`` Chromium sends ``Origin: null`` on our own forms), and
  ``Cache-Control: no-store`` on pages (memory content must not linger in caches).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from http.cookies import SimpleCookie

from memfs.core.errors import TooManyAttempts
from memfs.core.ids import sha256_of

__all__ = [
    "CONSOLE_PATH",
    "CSRF_FIELD",
    "PAGE_HEADERS",
    "PRE_SIGN_IN_COOKIE",
    "SECURITY_HEADERS",
    "SIGN_IN_COOKIE",
    "SignInThrottle",
    "cookie_header",
    "csrf_token",
    "expired_cookie_header",
    "new_pre_sign_in_token",
    "same_token",
]

CONSOLE_PATH = "/console"
SIGN_IN_COOKIE = "memfs_console"
PRE_SIGN_IN_COOKIE = "memfs_console_pre"
CSRF_FIELD = "csrf_token"
_CSRF_LABEL = "memfs console csrf\x00"

# Default limit of failed sign-ins: this many per client address within the window.
MAX_FAILED_SIGN_INS = 10
FAILED_SIGN_IN_WINDOW_S = 300.0

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
}
# Pages (everything but the stylesheet): never stored by a browser or a proxy.
PAGE_HEADERS = {**SECURITY_HEADERS, "cache-control": "no-store"}


def csrf_token(sign_in_id: str) -> str:
    """The CSRF token of the sign-in whose cookie holds ``sign_in_id``: derived, so
    nothing more is stored; not the stored hash (which differs by its label)."""
    return sha256_of(_CSRF_LABEL + sign_in_id)


def same_token(given: str | None, expected: str) -> bool:
    """True when ``given`` is ``expected``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def new_pre_sign_in_token() -> str:
    """A random value for the sign-in form's double-submit cookie and hidden field."""
    return secrets.token_urlsafe(32)


def cookie_header(name: str, value: str, *, secure: bool, max_age_s: int | None = None) -> str:
    """A ``Set-Cookie`` value: HttpOnly, SameSite=Strict, Path=/console, Secure under
    TLS; a session cookie unless ``max_age_s``."""
    cookie: SimpleCookie = SimpleCookie()
    cookie[name] = value
    morsel = cookie[name]
    morsel["path"] = CONSOLE_PATH
    morsel["httponly"] = True
    morsel["samesite"] = "Strict"
    if secure:
        morsel["secure"] = True
    if max_age_s is not None:
        morsel["max-age"] = max_age_s
    return morsel.OutputString()


def expired_cookie_header(name: str, *, secure: bool) -> str:
    """A ``Set-Cookie`` value that makes the browser forget cookie ``name``."""
    return cookie_header(name, "", secure=secure, max_age_s=0)


class SignInThrottle:
    """Failed sign-ins per client address in a sliding window (thread-safe).

    Args:
        max_failures: failures allowed within ``window_s``; the next attempt is refused.
        window_s: the window, in seconds.
        clock: monotonic seconds (a fake one in tests).
    """

    def __init__(
        self,
        max_failures: int = MAX_FAILED_SIGN_INS,
        window_s: float = FAILED_SIGN_IN_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, address: str) -> None:
        """Refuses an attempt from ``address`` while it has too many recent failures.

        Raises:
            TooManyAttempts: with ``retry_after_s`` until the oldest failure leaves the
                window.
        """
        with self._lock:
            recent = self._recent(address)
            if len(recent) >= self.max_failures:
                retry_after_s = recent[0] + self.window_s - self._clock()
                raise TooManyAttempts(
                    f"too many failed sign-ins from this address; try again in "
                    f"{max(1, round(retry_after_s))} s",
                    retry_after_s=max(1.0, retry_after_s),
                )

    def failed(self, address: str) -> None:
        """Counts one failed sign-in of ``address``."""
        with self._lock:
            self._recent(address).append(self._clock())

    def _recent(self, address: str) -> deque[float]:
        now = self._clock()
        recent = self._failures.setdefault(address, deque())
        while recent and recent[0] <= now - self.window_s:
            recent.popleft()
        if len(self._failures) > 10_000:  # forget idle addresses; bounded memory
            for idle in [a for a, times in self._failures.items() if not times][:5_000]:
                del self._failures[idle]
        return recent
