"""The console in a real browser (SPEC §12): headless Chromium from Debian's ``chromium``
package, driven by Playwright (no browser download), against ``memfs serve`` in a
subprocess. Another writer works on the same database through an engine of its own.
Every wait is one of Playwright's auto-waiting expectations; nothing sleeps."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.serve import ServeProcess

from memfs.core.config import database_url
from memfs.core.model import Actor, Scope
from memfs.store import Engine

CHROMIUM = "/usr/bin/chromium"
# How long an action or expectation waits for its condition (a loaded 2-core machine).
PLAYWRIGHT_TIMEOUT_MS = 15_000

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (scripts/setup installs it)"
)
pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason=f"{CHROMIUM} is absent: Debian's chromium package (scripts/setup installs it)",
)
expect = playwright_api.expect
SEED = Actor.api_key("apikey_seed")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServeProcess, Engine]]:
    """``memfs serve`` on a fresh SQLite database, and an engine of the same file."""
    database = tmp_path / "store.db"
    engine = Engine(database_url(str(database)))
    server = ServeProcess(database, log_dir=tmp_path)
    try:
        yield server, engine
    finally:
        server.stop()
        engine.close()


@pytest.fixture
def browser_page() -> Iterator[object]:
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_default_timeout(PLAYWRIGHT_TIMEOUT_MS)
            expect.set_options(timeout=PLAYWRIGHT_TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def _sign_in(page: object, url: str, secret: str) -> None:
    page.goto(f"{url}/console/")  # type: ignore[attr-defined]
    page.get_by_label("API key or session token").fill(secret)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
    expect(page.get_by_role("heading", name="Stores")).to_be_visible()  # type: ignore[attr-defined]


def test_sign_in_browse_search_edit_and_sign_out(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("person", [Scope.READ, Scope.WRITE, Scope.DELETE])
    store = engine.stores.create("notes")
    writer = engine.for_caller(actor=SEED)
    memory = writer.memories.create(store.id, "/projects/alpha/plan.md", "ship the walrus feature")
    writer.memories.create(store.id, "/projects/beta.md", "\nstarts with a blank line\n")
    _sign_in(page, server.url, secret)
    # The editor holds the text exactly, a leading newline included (HTML drops one
    # newline right after <textarea>: the template gives it one of its own).
    page.get_by_role("link", name="notes").click()
    page.get_by_role("link", name="projects/").click()
    page.get_by_role("link", name="beta.md").click()
    expect(page.get_by_label("Content")).to_have_value("\nstarts with a blank line\n")
    page.go_back()
    page.go_back()
    page.go_back()
    page.get_by_role("link", name="notes").click()
    page.get_by_role("link", name="projects/").click()
    page.get_by_role("link", name="alpha/").click()
    page.get_by_role("link", name="plan.md").click()
    expect(page.get_by_role("heading", name="/projects/alpha/plan.md")).to_be_visible()
    page.get_by_role("navigation", name="Store notes").get_by_role("link", name="Memories").click()
    page.get_by_label("Search this store").fill("walrus")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="/projects/alpha/plan.md").click()
    page.get_by_label("Content").fill("ship the walrus feature on Friday")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_label("Content")).to_have_value("ship the walrus feature on Friday")
    assert engine.memories.get(store.id, memory.id).content == "ship the walrus feature on Friday"
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto(f"{server.url}/console/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_a_conflicting_save_shows_both_texts_and_overwrites_nothing(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("person", [Scope.READ, Scope.WRITE])
    store = engine.stores.create("notes")
    memory = engine.for_caller(actor=SEED).memories.create(store.id, "/a.md", "base text")
    _sign_in(page, server.url, secret)
    page.goto(f"{server.url}/console/stores/{store.id}/memories/{memory.id}")
    page.get_by_label("Content").fill("my text")
    engine.for_caller(actor=SEED).memories.update(store.id, memory.id, content="their text")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Conflict: /a.md changed meanwhile")).to_be_visible()
    expect(page.locator("#theirs")).to_have_text("their text")
    expect(page.get_by_label("Your text (edit it to merge both)")).to_have_value("my text")
    assert engine.memories.get(store.id, memory.id).content == "their text"
    page.get_by_label("Your text (edit it to merge both)").fill("their text and my text")
    page.get_by_role("button", name="Save mine over theirs").click()
    expect(page.get_by_label("Content")).to_have_value("their text and my text")


def test_diff_redact_revert_and_restore(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("admin", [Scope.ADMIN])
    store = engine.stores.create("notes")
    writer = engine.for_caller(actor=SEED)
    memory = writer.memories.create(store.id, "/a.md", "line one\nsecret line\n")
    writer.memories.update(store.id, memory.id, content="line one\nline two\n")
    versions = engine.versions.list(store.id, memory_id=memory.id).items
    oldest = versions[-1]
    _sign_in(page, server.url, secret)
    page.goto(f"{server.url}/console/stores/{store.id}/memories/{memory.id}/versions")
    page.get_by_label("side by side").check()
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("table.side tr.changed").first).to_contain_text("secret line")
    page.get_by_role("link", name="inline").click()
    expect(page.locator("pre.diff .added")).to_have_text("+line two")
    # Revert to the first version: a new version with its content.
    page.goto(f"{server.url}/console/stores/{store.id}/versions/{oldest.id}")
    page.get_by_role("button", name="Revert to this version").click()
    expect(page.get_by_label("Content")).to_have_value("line one\nsecret line\n")
    assert len(engine.versions.list(store.id, memory_id=memory.id).items) == 3
    # Redact the middle version (not the head), after confirming.
    middle = engine.versions.list(store.id, memory_id=memory.id).items[1]
    page.goto(f"{server.url}/console/stores/{store.id}/versions/{middle.id}")
    page.get_by_role("link", name="Redact…").click()
    page.get_by_label("Yes, erase this version's content").check()
    page.get_by_role("button", name="Redact").click()
    expect(page.get_by_text("No content (redacted).")).to_be_visible()
    assert engine.versions.get(store.id, middle.id).content is None
    # Delete, then restore from the deleted page.
    page.goto(f"{server.url}/console/stores/{store.id}/memories/{memory.id}")
    page.get_by_role("button", name="Delete (restorable)").click()
    page.get_by_role("button", name="Restore /a.md").click()
    expect(page.get_by_role("heading", name="/a.md")).to_be_visible()
    assert engine.memories.get(store.id, memory.id).content == "line one\nsecret line\n"


def test_revoking_a_key_ends_its_sign_in(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, admin = engine.api_keys.create("admin", [Scope.ADMIN])
    victim, victim_secret = engine.api_keys.create("victim", [Scope.READ])
    _sign_in(page, server.url, admin)
    page.get_by_role("link", name="Sessions and keys").click()
    page.get_by_role("button", name="Revoke key victim").click()
    expect(page.get_by_role("button", name="Revoke key victim")).to_have_count(0)
    assert engine.api_keys.list()[0].revoked_at is not None or any(
        k.revoked_at for k in engine.api_keys.list() if k.id == victim.id)
    # A browser signed in with the revoked key is signed out at its next page.
    other = page.context.browser.new_page()
    try:
        other.goto(f"{server.url}/console/")
        other.get_by_label("API key or session token").fill(victim_secret)
        other.get_by_role("button", name="Sign in").click()
        expect(other.get_by_role("alert")).to_contain_text("revoked")
    finally:
        other.close()
