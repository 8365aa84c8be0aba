"""``memfs memory ls|cat|put|mv|rm|restore``: paths, exact bytes, versions written."""

from __future__ import annotations

import getpass
import hashlib
from typing import Any

from cli_runner import Cli

STORE = "Project Notes"


def versions(cli: Cli, *extra: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = cli.run(
        "version", "ls", STORE, "--limit", "0", "--json", *extra
    ).json()["data"]
    return data


def test_put_then_cat_round_trips_exact_bytes(cli: Cli, store: dict[str, Any]) -> None:
    text = "Ünïcode ✓\r\nno final newline\ttab"
    created = cli.run("memory", "put", STORE, "/notes/a.md", "--content", text, "--json").json()
    assert created["type"] == "memory"
    assert created["path"] == "/notes/a.md"
    assert created["content"] is None  # basic view, as the API's default
    assert created["content_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert created["content_size_bytes"] == len(text.encode())
    assert cli.run("memory", "cat", STORE, "/notes/a.md").stdout_bytes == text.encode()
    assert cli.run("memory", "cat", STORE, created["id"]).stdout_bytes == text.encode()


def test_put_reads_stdin_and_writes_no_version_when_unchanged(
    cli: Cli, store: dict[str, Any]
) -> None:
    first = cli.run("memory", "put", STORE, "/a.md", input="one\n")
    assert first.stdout.startswith("created /a.md (4 bytes, mem_")
    again = cli.run("memory", "put", STORE, "/a.md", input="one\n")
    assert again.stdout.startswith("unchanged /a.md")
    changed = cli.run("memory", "put", STORE, "/a.md", input="two\n")
    assert changed.stdout.startswith("updated /a.md")
    assert [v["operation"] for v in versions(cli)] == ["modified", "created"]


def test_put_refuses_bad_input_and_changes_nothing(cli: Cli, store: dict[str, Any]) -> None:
    assert cli.error("memory", "put", STORE, "/bin", input=b"\xff\xfeabc") == (
        "content is not valid UTF-8 text (byte offset 0)"
    )
    assert "U+0000" in cli.error("memory", "put", STORE, "/nul", input=b"a\x00b")
    assert cli.error("memory", "put", STORE, "/big", input=b"a" * 102_401) == (
        "content is 102401 bytes; the limit is 102400 bytes"
    )
    assert cli.error("memory", "put", STORE, "relative.md", "--content", "x") == (
        "path 'relative.md' must start with '/'"
    )
    assert "whitespace" in cli.error("memory", "put", STORE, "/a /b", "--content", "x")
    assert "NFC" in cli.error("memory", "put", STORE, "/e\u0301", "--content", "x")
    assert versions(cli) == []


def test_put_precondition(cli: Cli, store: dict[str, Any]) -> None:
    memory = cli.run("memory", "put", STORE, "/a.md", "--content", "v1", "--json").json()
    message = cli.error(
        "memory", "put", STORE, "/a.md", "--content", "v2", "--expected-sha256", "0" * 64
    )
    assert "sha256" in message or "precondition" in message
    cli.run(
        "memory",
        "put",
        STORE,
        "/a.md",
        "--content",
        "v2",
        "--expected-sha256",
        memory["content_sha256"],
    )
    assert cli.run("memory", "cat", STORE, "/a.md").stdout == "v2"


def test_path_conflicts_name_the_blocker(cli: Cli, store: dict[str, Any]) -> None:
    cli.run("memory", "put", STORE, "/a/b.md", "--content", "x")
    assert "/a/b.md" in cli.error("memory", "put", STORE, "/a", "--content", "x")
    assert "/a/b.md" in cli.error("memory", "put", STORE, "/a/b.md/c", "--content", "x")


def test_ls_plain_json_and_depth(cli: Cli, store: dict[str, Any]) -> None:
    for path in ("/b.md", "/a/one.md", "/a/deep/two.md"):
        cli.run("memory", "put", STORE, path, "--content", path)
    plain = cli.run("memory", "ls", STORE)
    assert plain.lines[0].split() == ["PATH", "SIZE", "UPDATED", "ID"]
    assert [line.split()[0] for line in plain.lines[1:]] == ["/a/deep/two.md", "/a/one.md", "/b.md"]

    top = cli.run("memory", "ls", STORE, "--depth", "1", "--json").json()
    assert [(i["type"], i["path"]) for i in top["data"]] == [
        ("memory_prefix", "/a/"),
        ("memory", "/b.md"),
    ]
    assert top["next_page"] is None
    below = cli.run("memory", "ls", STORE, "/a", "--depth", "1").lines
    assert [line.split()[0] for line in below[1:]] == ["/a/deep/", "/a/one.md"]
    assert cli.run("memory", "ls", STORE, "/nothing/").stdout == ""


def test_mv_renames_keeping_the_id_and_moves_directories(cli: Cli, store: dict[str, Any]) -> None:
    memory = cli.run("memory", "put", STORE, "/old.md", "--content", "x", "--json").json()
    moved = cli.run("memory", "mv", STORE, "/old.md", "/new.md")
    assert moved.stdout == f"moved /old.md -> /new.md ({memory['id']})\n"
    assert cli.run("memory", "put", STORE, "/new.md", "--content", "x").stdout.startswith(
        f"unchanged /new.md (1 bytes, {memory['id']}"
    )
    cli.run("memory", "put", STORE, "/dir/a.md", "--content", "a")
    cli.run("memory", "put", STORE, "/dir/sub/b.md", "--content", "b")
    assert cli.run("memory", "mv", STORE, "/dir", "/moved").stdout == (
        "moved 2 memories from /dir/ to /moved/\n"
    )
    paths = [m["path"] for m in cli.run("memory", "ls", STORE, "--json").json()["data"]]
    assert paths == ["/moved/a.md", "/moved/sub/b.md", "/new.md"]
    assert "no memory at /nowhere" in cli.error("memory", "mv", STORE, "/nowhere", "/x")
    assert "/new.md" in cli.error("memory", "mv", STORE, "/moved/a.md", "/new.md")


def test_rm_soft_delete_and_restore(cli: Cli, store: dict[str, Any]) -> None:
    memory = cli.run("memory", "put", STORE, "/a.md", "--content", "keep me", "--json").json()
    removed = cli.run("memory", "rm", STORE, "/a.md", "--reason", "tidy up")
    assert removed.stdout == (
        f"deleted /a.md ({memory['id']}; restore with: "
        f"memfs memory restore 'Project Notes' {memory['id']})\n"
    )
    assert cli.error("memory", "cat", STORE, "/a.md").startswith("no memory at '/a.md'")
    assert cli.run("memory", "ls", STORE).stdout == ""
    deleted = cli.run("memory", "ls", STORE, "--deleted", "--json").json()["data"]
    assert [m["id"] for m in deleted] == [memory["id"]]

    restored = cli.run("memory", "restore", STORE, "/a.md", "--json").json()
    assert restored["id"] == memory["id"]
    assert cli.run("memory", "cat", STORE, "/a.md").stdout == "keep me"
    history = versions(cli)
    assert [v["operation"] for v in history][1:] == ["deleted", "created"]
    assert history[1]["reason"] == "tidy up"
    assert "no soft-deleted memory" in cli.error("memory", "restore", STORE, "/a.md")


def test_rm_redact_and_hard_delete(cli: Cli, store: dict[str, Any]) -> None:
    cli.run("memory", "put", STORE, "/secret.md", "--content", "password=hunter2")
    cli.run("memory", "put", STORE, "/secret.md", "--content", "password=hunter3")
    memory = cli.run("memory", "ls", STORE, "--json").json()["data"][0]
    cli.run("memory", "rm", STORE, "/secret.md", "--mode", "redact", "--reason", "leak")
    history = versions(cli, "--memory", memory["id"])
    assert [v["content_sha256"] for v in history if v["redacted_at"] is None] == [
        v["content_sha256"] for v in history if v["operation"] == "deleted"
    ]
    for version in history:
        full = cli.run("version", "show", STORE, version["id"], "--json").json()
        assert "hunter" not in (full["content"] or "")
    assert "no soft-deleted memory" in cli.error("memory", "restore", STORE, memory["id"])

    cli.run("memory", "put", STORE, "/gone.md", "--content", "bye")
    cli.run("memory", "rm", STORE, "/gone.md", "--mode", "hard_delete")
    assert [v for v in versions(cli) if v["path"] == "/gone.md"] == []


def test_rm_precondition(cli: Cli, store: dict[str, Any]) -> None:
    cli.run("memory", "put", STORE, "/a.md", "--content", "x")
    cli.error("memory", "rm", STORE, "/a.md", "--expected-sha256", "0" * 64)
    cli.run("memory", "cat", STORE, "/a.md")  # still there


def test_writes_are_attributed_to_the_os_user(cli: Cli, store: dict[str, Any]) -> None:
    cli.run("memory", "put", STORE, "/a.md", "--content", "x")
    (version,) = versions(cli)
    assert version["created_by"] == {"type": "user_actor", "user_id": getpass.getuser()}
