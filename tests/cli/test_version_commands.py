"""``memfs version ls|show|redact``: history with attribution, filters, redaction."""

from __future__ import annotations

import getpass
from typing import Any

from _support.cli import Cli

STORE = "Project Notes"


def test_ls_shows_operation_path_author_and_time(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "1")
    cli.put(STORE, "/a.md", "22")
    cli.run("memory", "mv", STORE, "/a.md", "/b.md")
    cli.run("memory", "rm", STORE, "/b.md")
    plain = cli.run("version", "ls", STORE)
    assert plain.lines[0].split() == ["VERSION", "TIME", "OPERATION", "PATH", "AUTHOR", "SIZE"]
    rows = [line.split() for line in plain.lines[1:]]
    author = f"user_actor:{getpass.getuser()}"
    assert [row[2:] for row in rows] == [
        ["deleted", "/b.md", author],
        ["modified", "/b.md", author, "2"],
        ["modified", "/a.md", "user_actor:test-setup", "2"],
        ["created", "/a.md", "user_actor:test-setup", "1"],
    ]
    assert all(row[0].startswith("memver_") and row[1].endswith("Z") for row in rows)

    page = cli.run("version", "ls", STORE, "--json").json()
    assert page["next_page"] is None
    assert [v["operation"] for v in page["data"]] == ["deleted", "modified", "modified", "created"]
    assert set(page["data"][0]) >= {
        "id",
        "type",
        "memory_id",
        "memory_store_id",
        "operation",
        "created_at",
        "content",
        "content_sha256",
        "content_size_bytes",
        "path",
        "created_by",
        "redacted_at",
        "redacted_by",
    }


def test_ls_filters(cli: Cli, store: dict[str, Any]) -> None:
    a = cli.put(STORE, "/a.md", "a")
    cli.put(STORE, "/b.md", "b")
    cli.put(STORE, "/a.md", "aa")
    with cli.engine() as engine:
        store_id = engine.stores.find(STORE).id
        engine.memories.update(store_id, a["id"], path="/renamed.md")

    def paths(*args: str) -> list[tuple[str, str]]:
        data = cli.run("version", "ls", STORE, "--json", *args).json()["data"]
        return [(v["operation"], v["path"]) for v in data]

    # --path follows the memory living there through its renames ...
    assert paths("--path", "/renamed.md") == [
        ("modified", "/renamed.md"),
        ("modified", "/a.md"),
        ("created", "/a.md"),
    ]
    # ... and a path nothing lives at any more shows what was written there.
    assert paths("--path", "/a.md") == [("modified", "/a.md"), ("created", "/a.md")]
    assert paths("--memory", a["id"], "--operation", "created") == [("created", "/a.md")]
    assert paths("--operation", "created") == [("created", "/b.md"), ("created", "/a.md")]
    assert len(paths("--limit", "2")) == 2
    limited = cli.run("version", "ls", STORE, "--limit", "1")
    assert "see more with --limit 0" in limited.stderr
    assert paths("--session", "sesn_nobody") == []


def test_show_and_raw(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "first\n")
    version = cli.run("version", "ls", STORE, "--json").json()["data"][0]
    shown = cli.run("version", "show", STORE, version["id"])
    assert shown.lines[0].split() == ["id", version["id"]]
    assert "operation  created" in shown.lines
    assert "path       /a.md" in shown.lines
    assert shown.stdout.endswith("\nfirst\n")
    assert cli.run("version", "show", STORE, version["id"], "--raw").stdout == "first\n"
    full = cli.run("version", "show", STORE, version["id"], "--json").json()
    assert full["content"] == "first\n"
    assert cli.error("version", "show", STORE, "memver_unknown").startswith("memory version")


def test_redact_scrubs_old_versions_only(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "secret")
    cli.put(STORE, "/a.md", "public")
    head, old = cli.run("version", "ls", STORE, "--json").json()["data"]

    assert "head version" in cli.error("version", "redact", STORE, head["id"])
    redacted = cli.run("version", "redact", STORE, old["id"], "--json").json()
    assert redacted["redacted_at"] is not None
    assert redacted["redacted_by"] == {"type": "user_actor", "user_id": getpass.getuser()}
    assert redacted["created_by"] == old["created_by"]  # kept (SPEC §2)
    assert (redacted["path"], redacted["content_sha256"], redacted["content_size_bytes"]) == (
        None,
        None,
        None,
    )
    # Idempotent, and shown as redacted.
    cli.run("version", "redact", STORE, old["id"])
    assert "(redacted)" in cli.run("version", "ls", STORE).lines[2]
    assert cli.run("version", "show", STORE, old["id"]).stdout.endswith("\n(redacted)\n")
    assert cli.error("version", "show", STORE, old["id"], "--raw").endswith("(redacted)")
    assert cli.content(STORE, "/a.md") == "public"
