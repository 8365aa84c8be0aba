"""The console over HTTP (SPEC §12): sign-in and its cookie, CSRF, read-only
credentials, escaping of untrusted content, security headers, revocation."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from _support.console import ConsoleClient, csrf_of

from memfs.console.guard import SignInThrottle
from memfs.core.errors import TooManyAttempts
from memfs.core.model import Access, Actor, Scope
from memfs.store import Engine, ResourceSpec

HOSTILE = (
    '<script>alert("x")</script>\n'
    '"><img src=x onerror=alert(1)>\n'
    "[click](javascript:alert(1)) <a href=\"javascript:alert(1)\">link</a>\n"
)


def _store_with(engine: Engine, content: str, path: str = "/notes/hostile.md") -> tuple[str, str]:
    store = engine.stores.create('<b>store</b>"><script>')
    memory = engine.for_caller(actor=Actor.api_key("apikey_seed")).memories.create(
        store.id, path, content, metadata={"k": "<i>meta</i>"}
    )
    return store.id, memory.id


def test_signing_in_sets_only_a_strict_http_only_cookie(
    console: ConsoleClient, admin_secret: str
) -> None:
    response = console.sign_in(admin_secret)
    assert response.status_code == HTTPStatus.SEE_OTHER
    cookies = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
    sign_in = next(c for c in cookies if c.startswith("memfs_console="))
    assert "HttpOnly" in sign_in
    assert "SameSite=Strict" in sign_in
    assert "Path=/console" in sign_in
    assert "Secure" not in sign_in  # plain HTTP here; under TLS it is Secure
    assert admin_secret not in " ".join(cookies)
    assert console.http.get("/console/").status_code == HTTPStatus.OK


def test_the_cookie_is_secure_under_tls(engine: Engine, admin_secret: str) -> None:
    from starlette.testclient import TestClient

    from memfs.api.app import create_app
    from memfs.console import create_console

    app = create_app(engine, mounts={"/console": create_console})
    with TestClient(app, base_url="https://testserver") as client:
        response = ConsoleClient(client).sign_in(admin_secret)
    cookie = next(v for k, v in response.headers.multi_items()
                  if k == "set-cookie" and v.startswith("memfs_console="))
    assert "Secure" in cookie


def test_pages_need_a_sign_in(console: ConsoleClient) -> None:
    response = console.http.get("/console/", follow_redirects=False)
    assert response.status_code == HTTPStatus.SEE_OTHER
    assert response.headers["location"] == "/console/sign-in"


def test_a_wrong_credential_is_refused_and_failures_are_limited(engine: Engine) -> None:
    from starlette.testclient import TestClient

    from memfs.api.app import create_app
    from memfs.console import create_console

    now = [0.0]
    throttle = SignInThrottle(max_failures=3, window_s=60, clock=lambda: now[0])
    app = create_app(engine, mounts={
        "/console": lambda e, insecure: create_console(e, throttle=throttle)})
    _, secret = engine.api_keys.create("reader", [Scope.READ])
    with TestClient(app) as client:
        browser = ConsoleClient(client)
        for _ in range(3):
            assert browser.sign_in("memfs_sk_wrong").status_code == HTTPStatus.UNAUTHORIZED
        refused = browser.sign_in(secret)
        assert refused.status_code == HTTPStatus.TOO_MANY_REQUESTS
        assert int(refused.headers["retry-after"]) >= 1
        now[0] += 61
        assert browser.sign_in(secret).status_code == HTTPStatus.SEE_OTHER
    for _ in range(3):
        throttle.check("10.0.0.1")
        throttle.failed("10.0.0.1")
    with pytest.raises(TooManyAttempts):
        throttle.check("10.0.0.1")


def test_security_headers_on_every_page(console: ConsoleClient, admin_secret: str) -> None:
    for response in (console.http.get("/console/sign-in"),):
        _check_headers(response.headers)
    console.sign_in(admin_secret)
    _check_headers(console.http.get("/console/").headers)
    _check_headers(console.http.get("/console/credentials").headers)


def _check_headers(headers: object) -> None:
    csp = headers["content-security-policy"]  # type: ignore[index]
    assert "default-src 'self'" in csp
    assert "script-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert headers["x-frame-options"] == "DENY"  # type: ignore[index]
    assert headers["cache-control"] == "no-store"  # type: ignore[index]
    assert headers["x-content-type-options"] == "nosniff"  # type: ignore[index]


def test_hostile_content_renders_inert(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id, memory_id = _store_with(engine, HOSTILE, path="/x/<script>.md")
    console.sign_in(admin_secret)
    pages = [
        console.http.get("/console/").text,
        console.http.get(f"/console/stores/{store_id}?prefix=/x/").text,
        console.http.get(f"/console/stores/{store_id}/memories/{memory_id}").text,
        console.http.get(f"/console/stores/{store_id}?q=alert").text,
    ]
    for html in pages:
        assert "<script" not in html
        assert "<img" not in html
        assert 'href="javascript:' not in html
        assert "<b>store</b>" not in html
        assert "<i>meta</i>" not in html
    memory_page = pages[2]
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in memory_page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in memory_page


def test_a_post_without_the_csrf_token_changes_nothing(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id, memory_id = _store_with(engine, "kept")
    console.sign_in(admin_secret)
    head = engine.memories.get(store_id, memory_id)
    url = f"/console/stores/{store_id}/memories/{memory_id}"
    forged = {"content": "forged", "expected_sha256": head.content_sha256}
    missing = console.http.post(url, data=forged, follow_redirects=False)
    wrong = console.http.post(url, data={**forged, "csrf_token": "0" * 64},
                              follow_redirects=False)
    page = console.http.get(url).text
    cross_site = console.http.post(
        url, data={**forged, "csrf_token": csrf_of(page)},
        headers={"origin": "https://evil.example"}, follow_redirects=False,
    )
    for response in (missing, wrong, cross_site):
        assert response.status_code == HTTPStatus.FORBIDDEN
    deleted = console.http.post(f"/console/stores/{store_id}/delete",
                                data={"confirm_name": engine.stores.get(store_id).name})
    assert deleted.status_code == HTTPStatus.FORBIDDEN
    assert engine.memories.get(store_id, memory_id).content == "kept"
    assert engine.stores.get(store_id).archived_at is None


def test_a_read_only_credential_sees_no_edit_controls_and_forged_posts_get_403(
    engine: Engine, console: ConsoleClient
) -> None:
    store_id, memory_id = _store_with(engine, "read me")
    _, reader = engine.api_keys.create("reader", [Scope.READ])
    console.sign_in(reader)
    url = f"/console/stores/{store_id}/memories/{memory_id}"
    page = console.http.get(url)
    assert page.status_code == HTTPStatus.OK
    assert "read me" in page.text
    assert "<textarea" not in page.text
    assert "Delete (restorable)" not in page.text
    assert "Rename" not in page.text
    head = engine.memories.get(store_id, memory_id)
    token = csrf_of(page.text)  # the sign-out form's: a valid token
    for action, fields in (
        (url, {"content": "forged", "expected_sha256": head.content_sha256}),
        (url + "/delete", {}),
        (url + "/rename", {"path": "/moved.md"}),
        (f"/console/stores/{store_id}/archive", {}),
        ("/console/stores", {"name": "new"}),
    ):
        response = console.http.post(action, data={"csrf_token": token, **fields},
                                      follow_redirects=False)
        assert response.status_code == HTTPStatus.FORBIDDEN, action
    assert engine.memories.get(store_id, memory_id).content == "read me"
    assert [s.name for s in engine.stores.list().items] == [engine.stores.get(store_id).name]


def test_a_read_only_session_attachment_gets_403(engine: Engine, console: ConsoleClient) -> None:
    store_id, memory_id = _store_with(engine, "attached")
    _, token = engine.sessions.create([ResourceSpec(store_id, access=Access.READ_ONLY)])
    assert token is not None
    console.sign_in(token)
    url = f"/console/stores/{store_id}/memories/{memory_id}"
    page = console.http.get(url)
    assert "<textarea" not in page.text
    head = engine.memories.get(store_id, memory_id)
    response = console.http.post(url, data={
        "csrf_token": csrf_of(page.text), "content": "x", "expected_sha256": head.content_sha256})
    assert response.status_code == HTTPStatus.FORBIDDEN


def test_a_revoked_key_s_sign_in_dies(
    engine: Engine, console: ConsoleClient
) -> None:
    key, secret = engine.api_keys.create("soon revoked", [Scope.READ])
    console.sign_in(secret)
    assert console.http.get("/console/").status_code == HTTPStatus.OK
    engine.api_keys.revoke(key.id)
    response = console.http.get("/console/", follow_redirects=False)
    assert response.status_code == HTTPStatus.SEE_OTHER
    assert response.headers["location"] == "/console/sign-in?ended=credential_revoked"
    assert "revoked" in console.http.get(response.headers["location"]).text


def test_signing_out_ends_the_sign_in_on_the_server(
    console: ConsoleClient, admin_secret: str
) -> None:
    console.sign_in(admin_secret)
    cookie = console.http.cookies.get("memfs_console")
    assert cookie
    console.post_form("/console/", "/console/sign-out")
    console.http.cookies.set("memfs_console", cookie, path="/console")  # a stolen copy
    response = console.http.get("/console/", follow_redirects=False)
    assert response.status_code == HTTPStatus.SEE_OTHER


def test_an_edit_is_a_version_attributed_to_the_credential(
    engine: Engine, console: ConsoleClient
) -> None:
    store_id, memory_id = _store_with(engine, "old")
    key, secret = engine.api_keys.create("writer", [Scope.READ, Scope.WRITE])
    console.sign_in(secret)
    url = f"/console/stores/{store_id}/memories/{memory_id}"
    head = engine.memories.get(store_id, memory_id)
    response = console.post_form(url, url, content="new\r\ntext",
                                 expected_sha256=head.content_sha256)
    assert response.status_code == HTTPStatus.SEE_OTHER
    assert engine.memories.get(store_id, memory_id).content == "new\ntext"
    newest = engine.versions.list(store_id, memory_id=memory_id).items[0]
    assert newest.created_by == Actor.api_key(key.id)


def test_a_stale_save_shows_the_conflict_and_overwrites_nothing(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id, memory_id = _store_with(engine, "base")
    console.sign_in(admin_secret)
    url = f"/console/stores/{store_id}/memories/{memory_id}"
    page = console.http.get(url).text
    stale = engine.memories.get(store_id, memory_id).content_sha256
    engine.for_caller(actor=Actor.api_key("apikey_other")).memories.update(
        store_id, memory_id, content="theirs")
    response = console.http.post(url, data={"csrf_token": csrf_of(page), "content": "mine",
                                            "expected_sha256": stale})
    assert response.status_code == HTTPStatus.CONFLICT
    assert "theirs" in response.text
    assert "mine" in response.text
    assert engine.memories.get(store_id, memory_id).content == "theirs"


def test_every_page_of_a_store_renders(
    engine: Engine, console: ConsoleClient, admin_secret: str
) -> None:
    store_id, memory_id = _store_with(engine, "one\ntwo\n")
    writer = engine.for_caller(actor=Actor.api_key("apikey_seed"))
    writer.memories.update(store_id, memory_id, content="one\nthree\n")
    versions = engine.versions.list(store_id, memory_id=memory_id).items
    console.sign_in(admin_secret)
    base = f"/console/stores/{store_id}"
    for url in (
        base, base + "/deleted", base + "/audit", base + "/delete",
        f"{base}/memories/{memory_id}/versions",
        f"{base}/memories/{memory_id}/diff?a={versions[1].id}&b={versions[0].id}",
        f"{base}/memories/{memory_id}/diff?a={versions[1].id}&b={versions[0].id}&layout=side",
        f"{base}/versions/{versions[1].id}", f"{base}/versions/{versions[1].id}/redact",
        "/console/credentials",
    ):
        response = console.http.get(url)
        assert response.status_code == HTTPStatus.OK, (url, response.text[:500])
