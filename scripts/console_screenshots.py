"""Screenshots of the console for the README (docs/console/*.png), made again by
``scripts/console-screenshots``: the demo's content (the example notes of
``scripts/demo``, read from its here-documents, and ``/usr/share/common-licenses``)
imported with ``memfs import`` into a fresh home, a bad session and a dream on top,
``memfs serve`` on it, and Debian's ``chromium`` driven by Playwright, 1000 px wide.

Each PNG is the first screen of a page (:data:`WIDTH_PX` × :data:`MAX_HEIGHT_PX`),
checked to be under 150 KB."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _support.serve import ServeProcess  # noqa: E402
from playwright.sync_api import Error as PlaywrightError  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from memfs.core.config import database_url  # noqa: E402
from memfs.core.model import Actor, Scope  # noqa: E402
from memfs.store import Engine  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
OUT = ROOT / "docs" / "console"
WIDTH_PX = 1000
MAX_HEIGHT_PX = 760
MAX_BYTES = 150 * 1024
NOTES_STORE = "Project Memory"
HEREDOC = re.compile(r"""cat > "\$DEMO_DIR/notes/([^"]+)" <<'EOF'\n(.*?)\nEOF\n""", re.S)


def demo_notes(folder: Path) -> None:
    """The example notes of scripts/demo, written under ``folder``."""
    found = HEREDOC.findall((ROOT / "scripts" / "demo").read_text())
    assert found, "scripts/demo has no example notes"
    for relative, text in found:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")


def memfs(home: Path, *args: str) -> None:
    env = {**os.environ, "MEMFS_HOME": str(home)}
    env.pop("MEMFS_DATABASE", None)
    subprocess.run([str(ROOT / ".venv" / "bin" / "memfs"), *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def seed(home: Path, database: Path) -> tuple[str, str, str]:
    """The demo's stores, then history to show; returns (key secret, store id, memory id
    of /projects/memfs.md)."""
    demo_notes(home / "notes")
    memfs(home, "store", "create", NOTES_STORE, "--description",
          "What the agent learned about the user and the project")
    memfs(home, "store", "create", "Licenses", "--description",
          "Debian common-licenses, reference texts")
    memfs(home, "import", "/usr/share/common-licenses", "--store", "Licenses")
    memfs(home, "import", str(home / "notes"), "--store", NOTES_STORE)
    engine = Engine(database_url(str(database)))
    try:
        store = engine.stores.find(NOTES_STORE)
        by_path = {m.path: m for m in engine.memories.all(store.id)}
        agent = engine.for_caller(actor=Actor.api_key("apikey_agent"))
        project = by_path["/projects/memfs.md"]
        engine.snapshots.create(store.id, "before-session",
                                description="before the agent's session of the afternoon")
        text = engine.memories.get(store.id, project.id).content or ""
        agent.memories.update(store.id, project.id, content=text.replace(
            "- 2026-11-16: license: Apache-2.0 (the text is in the Licenses store).",
            "- 2026-11-16: license: MIT.\n- 2026-11-20: drop PostgreSQL support.",
        ))
        agent.memories.create(store.id, "/inbox/todo-copy.md",
                              engine.memories.get(store.id, by_path["/inbox/todo.md"].id)
                              .content or "")
        _, secret = engine.api_keys.create("reviewer", [Scope.ADMIN])
        return secret, store.id, project.id
    finally:
        engine.close()


def shoot(page: object, name: str) -> None:
    path = OUT / f"{name}.png"
    page.wait_for_load_state()  # type: ignore[attr-defined]
    try:
        page.screenshot(path=str(path))  # type: ignore[attr-defined]
    except PlaywrightError:  # Chromium sometimes can't capture on a loaded machine: once more
        page.screenshot(path=str(path))  # type: ignore[attr-defined]
    size = path.stat().st_size
    print(f"{path.relative_to(ROOT)}: {size // 1024} KB")
    assert size < MAX_BYTES, f"{path} is {size} bytes, over {MAX_BYTES}"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        home = Path(temporary)
        database = home / "memfs.db"
        secret, store_id, project_id = seed(home, database)
        server = ServeProcess(database, log_dir=home)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                     args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": WIDTH_PX, "height": MAX_HEIGHT_PX})
                url = server.url
                base = f"{url}/console/stores/{store_id}"
                page.goto(f"{url}/console/")
                shoot(page, "sign-in")
                page.get_by_label("API key or session token").fill(secret)
                page.get_by_role("button", name="Sign in").click()
                expect(page.get_by_role("heading", name="Stores")).to_be_visible()
                page.goto(base)
                page.get_by_label("Search this store").fill("license")
                page.get_by_role("button", name="Search").click()
                expect(page.get_by_role("heading", name="Hits for")).to_be_visible()
                shoot(page, "tree-search")
                page.goto(f"{base}/memories/{project_id}")
                shoot(page, "memory-editor")
                page.goto(f"{base}/memories/{project_id}/versions")
                page.locator("input[name=a]").nth(1).check()
                page.locator("input[name=b]").nth(0).check()
                page.get_by_role("button", name="Compare").click()
                shoot(page, "version-diff")
                page.goto(f"{base}/memories/{project_id}")
                page.get_by_label("Content").fill("# Project: memfs\n\nMy edit.\n")
                engine = Engine(database_url(str(database)))
                try:
                    writer = engine.for_caller(actor=Actor.api_key("apikey_agent"))
                    current = engine.memories.get(store_id, project_id).content or ""
                    writer.memories.update(store_id, project_id,
                                           content=current + "\n- 2026-11-21: the agent again.\n")
                finally:
                    engine.close()
                page.get_by_role("button", name="Save").click()
                shoot(page, "conflict")
                page.goto(f"{base}/diff?from=before-session&to=now")
                shoot(page, "store-diff")
                page.goto(f"{base}/restore?to=before-session")
                shoot(page, "restore-plan")
                page.goto(f"{base}/dreams")
                page.get_by_role("button", name="Start the dream").click()
                expect(page.locator(".dream-status")).to_have_text("completed", timeout=60_000)
                shoot(page, "dream-review")
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
