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
    """``memfs serve`` on a fresh SQLite database, and an engine of the same file;
    ``fsck`` finds nothing once the server stopped."""
    database = tmp_path / "store.db"
    engine = Engine(database_url(str(database)))
    server = ServeProcess(database, log_dir=tmp_path)
    try:
        yield server, engine
        server.stop()
        findings = list(engine.iter_fsck_findings())
        assert findings == [], "fsck found problems after the test:\n" + "\n".join(findings)
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


def test_snapshot_then_restore_a_store_and_see_it_as_it_was(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("person", [Scope.READ, Scope.WRITE, Scope.DELETE])
    store = engine.stores.create("notes")
    writer = engine.for_caller(actor=SEED)
    memory = writer.memories.create(store.id, "/plan.md", "ship on Friday\n")
    _sign_in(page, server.url, secret)
    page.get_by_role("link", name="notes").click()
    page.get_by_role("navigation", name="Store notes").get_by_role("link", name="History").click()
    page.get_by_label("Snapshot name", exact=True).fill("before-session")
    page.get_by_label("Snapshot description").fill("before the bad session")
    page.get_by_role("button", name="Take the snapshot").click()
    expect(page.get_by_role("cell", name="before the bad session")).to_be_visible()
    # A bad session: one memory changed, one added.
    writer.memories.update(store.id, memory.id, content="ship never\n")
    writer.memories.create(store.id, "/junk.md", "junk\n")
    page.get_by_label("Point: a snapshot name").fill("before-session")
    page.get_by_role("button", name="Show the store then").click()
    expect(page.get_by_role("status")).to_contain_text("Read only")
    expect(page.get_by_role("link", name="plan.md")).to_be_visible()
    expect(page.get_by_role("link", name="junk.md")).to_have_count(0)
    page.get_by_role("link", name="plan.md").click()
    expect(page.locator("pre.content")).to_have_text("ship on Friday\n")
    expect(page.get_by_role("textbox")).to_have_count(0)  # nothing to edit then
    page.get_by_role("navigation", name="Store notes").get_by_role("link", name="History").click()
    page.get_by_label("From").fill("before-session")
    page.get_by_role("button", name="Show the diff").click()
    expect(page.get_by_text("1 added, 1 modified")).to_be_visible()
    expect(page.locator("pre.diff .removed")).to_contain_text(["ship on Friday"])
    page.get_by_role("link", name="side by side").click()
    changed = page.locator("table.side tr.changed", has_text="ship on Friday").locator("td")
    expect(changed).to_have_text(["ship on Friday", "ship never"])
    page.get_by_role("navigation", name="Store notes").get_by_role("link", name="History").click()
    page.get_by_label("To the point").fill("before-session")
    page.get_by_role("button", name="Show the restore plan").click()
    expect(page.get_by_role("cell", name="/junk.md")).to_be_visible()
    assert engine.memories.get(store.id, memory.id).content == "ship never\n"  # a plan only
    page.get_by_role("button", name="Restore the store to before-session").click()
    expect(page.get_by_role("status")).to_contain_text("Done: 2 memories changed")
    page.get_by_role("link", name="See the store").click()
    expect(page.get_by_role("link", name="plan.md")).to_be_visible()
    expect(page.get_by_role("link", name="junk.md")).to_have_count(0)
    assert engine.memories.get(store.id, memory.id).content == "ship on Friday\n"


def test_fork_change_and_merge_with_its_plan(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("person", [Scope.READ, Scope.WRITE, Scope.DELETE])
    store = engine.stores.create("notes")
    memory = engine.for_caller(actor=SEED).memories.create(store.id, "/plan.md", "draft\n")
    _sign_in(page, server.url, secret)
    page.goto(f"{server.url}/console/stores/{store.id}/history")
    page.get_by_label("The fork's name").fill("notes-trial")
    page.get_by_role("button", name="Fork").click()
    expect(page.get_by_role("heading", name="History of notes-trial")).to_be_visible()
    expect(page.get_by_text("A fork of")).to_be_visible()
    page.get_by_role("navigation", name="Store notes-trial").get_by_role(
        "link", name="Memories").click()
    page.get_by_role("link", name="plan.md").click()
    page.get_by_label("Content").fill("final\n")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_label("Content")).to_have_value("final\n")
    page.get_by_role("navigation", name="Store notes-trial").get_by_role(
        "link", name="History").click()
    page.get_by_role("link", name="Merge into notes…").click()
    expect(page.get_by_role("cell", name="update")).to_be_visible()
    assert engine.memories.get(store.id, memory.id).content == "draft\n"
    page.get_by_role("button", name="Merge into notes").click()
    expect(page.get_by_role("status")).to_contain_text("Done: 1 memory merged")
    assert engine.memories.get(store.id, memory.id).content == "final\n"


def test_a_dream_is_started_followed_reviewed_and_applied(served, browser_page) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("person", [Scope.READ, Scope.WRITE, Scope.DELETE])
    store = engine.stores.create("notes")
    for path in ("/coffee.md", "/inbox/coffee-copy.md"):
        engine.for_caller(actor=SEED).memories.create(store.id, path, "Alice drinks it black.\n")
    _sign_in(page, server.url, secret)
    page.goto(f"{server.url}/console/stores/{store.id}/dreams")
    expect(page.get_by_label("Model")).to_have_value("memfs-consolidate")
    page.get_by_role("button", name="Start the dream").click()
    # The page reloads itself while the dream runs (no script): wait for its end.
    expect(page.locator(".dream-status")).to_have_text("completed")
    expect(page.get_by_text("1 memory differs")).to_be_visible()
    expect(page.locator("pre.diff .removed")).to_contain_text(["Alice drinks it black."])
    page.get_by_role("link", name="Apply it to notes…").click()
    expect(page.get_by_role("cell", name="delete")).to_be_visible()
    assert len(engine.memories.all(store.id)) == 2
    page.get_by_role("button", name="Merge into notes").click()
    expect(page.get_by_role("status")).to_contain_text("Done: 1 memory merged")
    assert len(engine.memories.all(store.id)) == 1


def test_export_then_import(served, browser_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server, engine = served
    page = browser_page
    _, secret = engine.api_keys.create("person", [Scope.READ, Scope.WRITE])
    source = engine.stores.create("source")
    target = engine.stores.create("target")
    for path, text in {"/a.md": "alpha\n", "/d/b.md": "beta\n"}.items():
        engine.for_caller(actor=SEED).memories.create(source.id, path, text)
    _sign_in(page, server.url, secret)
    for kind, label in (("zip", "a zip of the files"), ("jsonl", "JSON Lines")):
        page.goto(f"{server.url}/console/stores/{source.id}/transfer")
        page.get_by_role("radio", name=label).check()
        with page.expect_download() as download:
            page.get_by_role("button", name="Download").click()
        saved = tmp_path / f"source.{kind}"
        download.value.save_as(saved)
        page.goto(f"{server.url}/console/stores/{target.id}/transfer")
        page.get_by_label("Into the directory").fill(f"/{kind}/")
        page.get_by_label("A JSON Lines file").set_input_files(str(saved))
        page.get_by_role("button", name="Import").click()
        expect(page.get_by_role("status")).to_contain_text("2 created")
    copied = {m.path: engine.memories.get(target.id, m.id).content
              for m in engine.memories.all(target.id)}
    assert copied == {"/jsonl/a.md": "alpha\n", "/jsonl/d/b.md": "beta\n",
                      "/zip/a.md": "alpha\n", "/zip/d/b.md": "beta\n"}
