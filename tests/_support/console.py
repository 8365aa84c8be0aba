"""A browser-like client of the console over HTTP (cookies kept, forms posted with
their CSRF token), for tests/console."""

from __future__ import annotations

import re

from httpx import Response
from starlette.testclient import TestClient

__all__ = ["ConsoleClient", "csrf_of"]

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = CSRF.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


class ConsoleClient:
    """A browser-like client of the console: cookies kept, forms posted with their
    token."""

    def __init__(self, client: TestClient) -> None:
        self.http = client

    def sign_in(self, credential: str) -> Response:
        form = self.http.get("/console/sign-in")
        return self.http.post(
            "/console/sign-in",
            data={"csrf_token": csrf_of(form.text), "credential": credential},
            follow_redirects=False,
        )

    def post_form(self, page_url: str, action: str, **fields: str) -> Response:
        """Posts ``fields`` to ``action`` with the CSRF token of ``page_url``."""
        page = self.http.get(page_url)
        return self.http.post(action, data={"csrf_token": csrf_of(page.text), **fields},
                              follow_redirects=False)
