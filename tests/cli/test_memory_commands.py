"""``memfs memory ls|cat|put|mv|rm|restore``: paths, exact bytes, versions written."""

from __future__ import annotations

import getpass
import hashlib
import os
import subprocess
from typing import Any

import pytest
from _support.cli import RUN_TIMEOUT_S, Cli, memfs_command

STORE = "Project Notes"


def test_put_then_cat_round_trips_exact_bytes(cli: Cli, store: dict[str, Any]) -> None:
    text = "Ünïcode ✓\r\nno final newline\ttab"
    created = cli.run("memory", "put", STORE, "/notes/a.md", "--content", text, "--json").json()
    assert created["type"] == "memory"
    assert created["path"] == "/notes/a.md"
    assert created["content"] is None  # basic view, as the API's default
    assert created["content_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert created["content_size_bytes"] == len(text.encode())
    assert cli.content(STORE, "/notes/a.md") == text
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
    assert [v["operation"] for v in cli.versions(STORE)] == ["modified", "created"]
    assert cli.content(STORE, "/a.md") == "two\n"


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
    assert cli.versions(STORE) == []


def test_put_precondition(cli: Cli, store: dict[str, Any]) -> None:
    memory = cli.put(STORE, "/a.md", "v1")
    message = cli.error(
        "memory", "put", STORE, "/a.md", "--content", "v2", "--expected-sha256", "0" * 64
    )
    assert memory["content_sha256"] in message  # names the actual digest
    assert cli.content(STORE, "/a.md") == "v1"
    cli.run(
        "memory", "put", STORE, "/a.md", "--content", "v2",
        "--expected-sha256", memory["content_sha256"],
    )  # fmt: skip
    assert cli.content(STORE, "/a.md") == "v2"


def test_path_conflicts_name_the_blocker(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a/b.md", "x")
    assert "/a/b.md" in cli.error("memory", "put", STORE, "/a", "--content", "x")
    assert "/a/b.md" in cli.error("memory", "put", STORE, "/a/b.md/c", "--content", "x")


def test_ls_plain_json_and_depth(cli: Cli, store: dict[str, Any]) -> None:
    for path in ("/b.md", "/a/one.md", "/a/deep/two.md"):
        cli.put(STORE, path, path)
    plain = cli.run("memory", "ls", STORE)
    assert plain.lines[0].split() == ["PATH", "SIZE", "UPDATED", "ID"]
    assert [line.split()[:2] for line in plain.lines[1:]] == [
        ["/a/deep/two.md", "14"],
        ["/a/one.md", "9"],
        ["/b.md", "5"],
    ]
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
    memory = cli.put(STORE, "/old.md", "x")
    moved = cli.run("memory", "mv", STORE, "/old.md", "/new.md")
    assert moved.stdout == f"moved /old.md -> /new.md ({memory['id']})\n"
    cli.put(STORE, "/dir/a.md", "a")
    cli.put(STORE, "/dir/sub/b.md", "b")
    assert cli.run("memory", "mv", STORE, "/dir", "/moved").stdout == (
        "moved 2 memories from /dir/ to /moved/\n"
    )
    assert cli.paths(STORE) == ["/moved/a.md", "/moved/sub/b.md", "/new.md"]
    with cli.engine() as engine:
        store_id = engine.stores.find(STORE).id
        assert engine.memories.get_by_path(store_id, "/new.md").id == memory["id"]
    assert "no memory at /nowhere" in cli.error("memory", "mv", STORE, "/nowhere", "/x")
    assert "/new.md" in cli.error("memory", "mv", STORE, "/moved/a.md", "/new.md")


def test_rm_soft_delete_and_restore(cli: Cli, store: dict[str, Any]) -> None:
    memory = cli.put(STORE, "/a.md", "keep me")
    removed = cli.run("memory", "rm", STORE, "/a.md", "--reason", "tidy up")
    assert removed.stdout == (
        f"deleted /a.md ({memory['id']}; restore with: "
        f"memfs memory restore 'Project Notes' {memory['id']})\n"
    )
    assert cli.paths(STORE) == []
    assert cli.error("memory", "cat", STORE, "/a.md").startswith("no memory at '/a.md'")
    deleted = cli.run("memory", "ls", STORE, "--deleted", "--json").json()["data"]
    assert [m["id"] for m in deleted] == [memory["id"]]

    restored = cli.run("memory", "restore", STORE, "/a.md", "--json").json()
    assert restored["id"] == memory["id"]
    assert cli.content(STORE, "/a.md") == "keep me"
    history = cli.versions(STORE)
    assert [v["operation"] for v in history][1:] == ["deleted", "created"]
    assert history[1]["reason"] == "tidy up"
    assert "no soft-deleted memory" in cli.error("memory", "restore", STORE, "/a.md")


def test_rm_redact_and_hard_delete(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/secret.md", "password=hunter2")
    memory = cli.put(STORE, "/secret.md", "password=hunter3")
    cli.run("memory", "rm", STORE, "/secret.md", "--mode", "redact", "--reason", "leak")
    history = cli.versions(STORE, memory_id=memory["id"])
    assert len(history) == 3
    assert all("hunter" not in (v["content"] or "") for v in history)
    assert "no soft-deleted memory" in cli.error("memory", "restore", STORE, memory["id"])

    cli.put(STORE, "/gone.md", "bye")
    cli.run("memory", "rm", STORE, "/gone.md", "--mode", "hard_delete")
    assert [v for v in cli.versions(STORE) if v["path"] == "/gone.md"] == []


def test_rm_precondition(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "x")
    cli.error("memory", "rm", STORE, "/a.md", "--expected-sha256", "0" * 64)
    assert cli.paths(STORE) == ["/a.md"]


def test_writes_are_attributed_to_the_os_user(cli: Cli, store: dict[str, Any]) -> None:
    cli.run("memory", "put", STORE, "/a.md", "--content", "x")
    (version,) = cli.versions(STORE)
    assert version["created_by"] == {"type": "user_actor", "user_id": getpass.getuser()}


def test_an_argument_that_is_not_utf8_is_one_usage_error(
    cli: Cli, store: dict[str, Any]
) -> None:
    """The shell passes bytes; a store name or path that is not UTF-8 is what was typed
    (status 2, one line), not a traceback from the database driver."""
    cli.put("Project Notes", "/a.md", "hello")
    not_utf8 = os.fsdecode(b"\xffnotes")  # as Python decodes argv (PEP 383)
    for args in (
        ("store", "show", not_utf8),
        ("memory", "cat", not_utf8, "/a.md"),
        ("memory", "ls", not_utf8),
    ):
        result = cli.run(*args, expect=2)
        assert result.stderr == (
            "memfs: error: the argument b'\\xffnotes' is not valid UTF-8: memfs's store "
            "names, paths and content are UTF-8\n"
        ), result.stderr


@pytest.mark.parametrize(
    "args",
    [("memory", "cat", "Project Notes", "/a.md"), ("memory", "ls", "Project Notes")],
)
def test_output_that_can_not_be_written_is_one_error_line(
    cli: Cli, store: dict[str, Any], args: tuple[str, ...]
) -> None:
    """``> /dev/full``: the command says it could not write its output (status 1), with
    no traceback and no "Exception ignored" from the interpreter's last flush."""
    cli.put("Project Notes", "/a.md", "hello\n" * 2000)
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            memfs_command(*args), stdout=full, stderr=subprocess.PIPE, env=cli.env,
            timeout=RUN_TIMEOUT_S,
        )
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "memfs: error: cannot write the output: No space left on device\n"
    )


def test_a_prefix_without_its_leading_slash_is_refused_with_the_one_meant(
    cli: Cli, store: dict[str, Any]
) -> None:
    """`memfs memory ls STORE notes` named the '/' the CLI adds at the end in its error
    (a trial read "path_prefix 'notes/' must start and end with '/'")."""
    assert cli.error("memory", "ls", STORE, "notes") == (
        "a path prefix starts with '/': 'notes' is not one (did you mean '/notes/'?)"
    )
