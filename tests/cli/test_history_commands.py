"""``memfs snapshot create|ls|rm``, ``memfs memory ls|cat --at``, ``memfs diff``: history
you can use from the command line (SPEC §10), in subprocesses."""

from __future__ import annotations

import subprocess
from typing import Any

from _support.cli import RUN_TIMEOUT_S, Cli, memfs_command

STORE = "Project Notes"


def _scene(cli: Cli) -> dict[str, Any]:
    """Two memories, a snapshot ``before``, then an edit, a rename, a delete and a new one."""
    a = cli.put(STORE, "/notes/a.md", "one\ntwo\n")
    b = cli.put(STORE, "/notes/b.md", "bee\n")
    old = cli.put(STORE, "/old.md", "old\n")
    cli.run("snapshot", "create", STORE, "before", "--description", "before the agent")
    cli.put(STORE, "/notes/a.md", "one\n2\n")
    cli.run("memory", "mv", STORE, "/notes/b.md", "/notes/c.md")
    cli.run("memory", "rm", STORE, "/old.md")
    new = cli.put(STORE, "/new.md", "new\n")
    return {"a": a, "b": b, "old": old, "new": new}


def test_snapshot_create_ls_rm(cli: Cli, store: dict[str, Any]) -> None:
    memory = cli.put(STORE, "/a.md", "a")
    created = cli.run("snapshot", "create", STORE, "first", "-d", "the start", "--json").json()
    assert created["type"] == "memory_store_snapshot"
    assert created["name"] == "first"
    assert created["description"] == "the start"
    assert created["memory_version_id"] == memory["memory_version_id"]
    assert created["memory_store_id"] == store["id"]
    assert created["created_by"]["type"] == "user_actor"
    plain = cli.run("snapshot", "create", STORE, "second")
    assert plain.stdout.startswith("created snapshot second (snap_")
    listed = cli.run("snapshot", "ls", STORE)
    assert [line.split()[0] for line in listed.lines] == ["NAME", "second", "first"]
    assert cli.run("snapshot", "ls", STORE, "--json").json()["data"][1] == created

    assert cli.error("snapshot", "create", STORE, "first") == (
        f"memory store {store['id']!r} already has a snapshot named 'first'"
    )
    for reserved, why in [
        ("now", "invalid snapshot name 'now': it names the present"),
        ("auto-restore-x", "names starting with 'auto-' are reserved for the snapshots memfs"),
        ("snap_x", "invalid snapshot name 'snap_x': it would read as a snapshot id"),
    ]:
        refused = cli.run("snapshot", "create", STORE, reserved, expect=2)  # a usage error
        assert why in " ".join(refused.stderr.split()), refused.stderr
    removed = cli.run("snapshot", "rm", STORE, "first")
    assert removed.stdout == f"deleted snapshot first ({created['id']}) of {STORE}\n"
    cli.run("snapshot", "rm", STORE, created["id"], expect=1)
    assert [s["name"] for s in cli.run("snapshot", "ls", STORE, "--json").json()["data"]] == [
        "second"
    ]


def test_memory_ls_and_cat_read_the_store_as_it_was(cli: Cli, store: dict[str, Any]) -> None:
    made = _scene(cli)
    then = cli.run("memory", "ls", STORE, "--at", "before")
    assert [line.split()[0] for line in then.lines] == [
        "PATH",
        "/notes/a.md",
        "/notes/b.md",
        "/old.md",
    ]
    page = cli.run("memory", "ls", STORE, "/notes/", "--at", "before", "--json").json()
    assert [m["path"] for m in page["data"]] == ["/notes/a.md", "/notes/b.md"]
    assert page["data"][0]["memory_version_id"] == made["a"]["memory_version_id"]
    assert cli.run("memory", "cat", STORE, "/notes/a.md", "--at", "before").stdout == "one\ntwo\n"
    assert cli.run("memory", "cat", STORE, made["b"]["id"], "--at", "before").stdout == "bee\n"
    assert cli.run("memory", "cat", STORE, "/notes/a.md", "--at", "now").stdout == "one\n2\n"
    version = made["a"]["memory_version_id"]
    assert cli.run("memory", "cat", STORE, "/notes/a.md", "--at", version).stdout == "one\ntwo\n"
    assert cli.run("memory", "ls", STORE, "--at", "2001-01-01T00:00:00Z").stdout == ""
    missing = cli.error("memory", "cat", STORE, "/old.md", "--at", "now")
    assert missing == f"no memory at '/old.md' in memory store {store['id']!r} at now"


def test_a_bad_point_exits_2_naming_it(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "a")
    for point, message in [
        ("a/b", "point 'a/b' is not 'now', an RFC 3339 time, a memver_ id"),
        ("2026-02-30T00:00:00Z", "point '2026-02-30T00:00:00Z' is not a valid time"),
        ("2999-01-01T00:00:00Z", "point '2999-01-01T00:00:00Z' is in the future"),
        ("nope", f"point 'nope': memory store {store['id']!r} has no snapshot of that name"),
        ("memver_0", f"point 'memver_0': memory store {store['id']!r} has no such version"),
        ("snap_0", f"point 'snap_0': memory store {store['id']!r} has no snapshot of that id"),
        (
            "2026-12-06T01:02:03+25:00",
            "point '2026-12-06T01:02:03+25:00': UTC offset +25:00 is out of range",
        ),
    ]:
        for args in (("memory", "ls", STORE), ("memory", "cat", STORE, "/a.md")):
            result = cli.run(*args, "--at", point, expect=2)
            assert result.stderr.startswith(f"memfs: error: {message}"), result.stderr
            assert result.stdout == ""


def test_diff_prints_a_unified_diff_and_exits_as_diff_does(
    cli: Cli, store: dict[str, Any]
) -> None:
    made = _scene(cli)
    patch = cli.run("diff", f"{STORE}@before", STORE, expect=1)
    assert patch.stdout == (
        "diff --memfs a/new.md b/new.md\n"
        f"new memory {made['new']['id']}\n"
        "--- /dev/null\n+++ b/new.md\n@@ -0,0 +1 @@\n+new\n"
        "diff --memfs a/notes/a.md b/notes/a.md\n"
        "--- a/notes/a.md\n+++ b/notes/a.md\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        "diff --memfs a/notes/b.md b/notes/c.md\n"
        "rename from /notes/b.md\nrename to /notes/c.md\n"
        "diff --memfs a/old.md b/old.md\n"
        f"deleted memory {made['old']['id']}\n"
        "--- a/old.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
    )
    assert cli.run("diff", f"{STORE}@before", "--name-only", expect=1).lines == [
        "/new.md",
        "/notes/a.md",
        "/notes/c.md",
        "/old.md",
    ]
    assert cli.run("diff", f"{STORE}@before", "--stat", expect=1).lines == [
        " /new.md                    | 1 +",
        " /notes/a.md                | 2 +-",
        " /notes/b.md => /notes/c.md | 0",
        " /old.md                    | 1 -",
        " 4 memories changed, 2 insertions(+), 2 deletions(-)",
    ]
    as_json = cli.run("diff", f"{STORE}@before", f"{STORE}@now", "--json", expect=1).json()
    assert as_json["type"] == "memory_store_diff"
    assert as_json["from"] == {"memory_store_id": store["id"], "point": "before"}
    assert [e["status"] for e in as_json["entries"]] == ["added", "modified", "renamed", "removed"]
    assert as_json["stat"] == {"changed": 4, "insertions": 2, "deletions": 2}

    assert cli.run("diff", f"{STORE}@now", STORE).stdout == ""  # exit 0: equal
    bad = cli.run("diff", f"{STORE}@nope", expect=2)
    assert bad.stderr == (
        f"memfs: error: point 'nope': memory store {store['id']!r} has no snapshot of that name\n"
    )
    assert cli.run("diff", "No Such Store@now", expect=2).stderr.startswith("memfs: error: ")


def test_redacted_content_never_shows_in_any_history_output(
    cli: Cli, store: dict[str, Any]
) -> None:
    secret = cli.put(STORE, "/secret.md", "the password is hunter2\n")
    cli.run("snapshot", "create", STORE, "leaky")
    cli.put(STORE, "/secret.md", "rotated\n")
    cli.run("version", "redact", STORE, secret["memory_version_id"])
    outputs = [
        cli.run("memory", "ls", STORE, "--at", "leaky", "--json").stdout,
        cli.run("memory", "cat", STORE, secret["id"], "--at", "leaky", expect=1).stderr,
        cli.run("diff", f"{STORE}@leaky", STORE, expect=1).stdout,
        cli.run("diff", f"{STORE}@leaky", STORE, "--json", expect=1).stdout,
        cli.run("diff", f"{STORE}@leaky", STORE, "--stat", expect=1).stdout,
    ]
    assert not any("hunter2" in output for output in outputs)
    assert "redacted content: not shown" in outputs[2]
    assert "is the redacted version" in outputs[1]


def test_store_restore_dry_run_then_restore_then_undo(cli: Cli, store: dict[str, Any]) -> None:
    made = _scene(cli)
    after_agent = cli.paths(STORE)
    dry = cli.run("store", "restore", STORE, "--to", "before", "--dry-run")
    assert dry.lines == [
        f"would restore {STORE} to before:",
        f"  delete      /new.md  {made['new']['id']}",
        f"  change      /notes/a.md (content)  {made['a']['id']}",
        f"  change      /notes/c.md -> /notes/b.md  {made['b']['id']}",
        f"  bring back  /old.md  {made['old']['id']}",
        "2 changed, 1 deleted, 1 brought back, 0 kept (dry run: nothing changed)",
    ]
    assert cli.paths(STORE) == after_agent
    done = cli.run("store", "restore", STORE, "--to", "before", "--reason", "undo", "--json").json()
    assert done["type"] == "memory_store_restore"
    assert done["applied"] is True
    assert done["snapshot"]["name"].startswith("auto-restore-")
    assert cli.paths(STORE) == ["/notes/a.md", "/notes/b.md", "/old.md"]
    assert cli.content(STORE, "/notes/a.md") == "one\ntwo\n"
    cli.run("diff", f"{STORE}@before")  # exit 0: equal
    cli.run("store", "restore", STORE, "--to", done["snapshot"]["name"])
    assert cli.paths(STORE) == after_agent
    bad = cli.run("store", "restore", STORE, "--to", "nope", expect=2)
    assert "has no snapshot of that name" in bad.stderr


def test_store_fork_then_diff_with_its_origin(cli: Cli, store: dict[str, Any]) -> None:
    _scene(cli)
    forked = cli.run("store", "fork", f"{STORE}@before", "--name", "Try")
    assert forked.stdout.startswith(f"forked {STORE}@before into Try (memstore_")
    assert ": 3 memories, base memver_" in forked.stdout
    shown = cli.run("store", "show", "Try", "--json").json()
    assert shown["forked_from"] == store["id"]
    assert shown["fork_base"].startswith("memver_")
    assert cli.run("memory", "cat", "Try", "/notes/a.md").stdout == "one\ntwo\n"
    # The fork matches its origin by origin id: the origin's later edits show as such.
    diff = cli.run("diff", "Try", STORE, "--name-only", expect=1)
    assert diff.lines == ["/new.md", "/notes/a.md", "/notes/c.md", "/old.md"]
    stat = cli.run("diff", "Try", STORE, "--json", expect=1).json()
    assert {(e["status"], e["new_path"] or e["old_path"]) for e in stat["entries"]} == {
        ("added", "/new.md"),
        ("modified", "/notes/a.md"),
        ("renamed", "/notes/c.md"),
        ("removed", "/old.md"),
    }
    assert cli.run("diff", "Try", f"{STORE}@before").stdout == ""
    by_id = cli.run("snapshot", "ls", STORE, "--json").json()["data"][0]["id"]
    assert cli.run("diff", "Try", f"{STORE}@{by_id}").stdout == ""  # a snapshot by id
    taken = cli.error("store", "fork", f"{STORE}@{by_id}", "--name", "Try")
    assert taken == "a memory store is already named 'Try': give the fork another name"
    refused = cli.run("store", "fork", f"{STORE}@nope", "--name", "X", expect=2)
    assert refused.stderr.startswith(
        f"memfs: error: point 'nope': memory store {store['id']!r} has no snapshot of that name"
    )
    assert [s["name"] for s in cli.run("store", "list", "--json").json()["data"]] == [
        "Try",
        STORE,
    ]


def test_store_merge_dry_run_then_merge(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/notes/a.md", "one\n")
    cli.put(STORE, "/notes/b.md", "bee\n")
    cli.run("store", "fork", STORE, "--name", "Try")
    cli.put("Try", "/notes/a.md", "one by the fork\n")
    cli.put("Try", "/notes/b.md", "bee by the fork\n")
    cli.put(STORE, "/notes/b.md", "bee by the origin\n")
    cli.put("Try", "/new.md", "new\n")

    dry = cli.run("store", "merge", "Try", "--into", STORE, "--dry-run")
    assert dry.lines[0].startswith(f"would merge Try into {STORE} (base memver_")
    assert dry.lines[1:4] == [
        "  add       /new.md",
        "  update    /notes/a.md",
        dry.lines[3],
    ]
    assert dry.lines[3].startswith("  conflict  /notes/b.conflict-")
    assert dry.lines[-1] == (
        "1 update, 1 add, 0 delete, 1 conflict, 0 keep (dry run: nothing changed)"
    )
    assert cli.run("memory", "cat", STORE, "/notes/a.md").stdout == "one\n"

    done = cli.run("store", "merge", "Try", "--into", STORE, "--json").json()
    assert done["type"] == "memory_store_merge"
    assert done["applied"] is True
    assert done["snapshot"]["name"].startswith("auto-merge-")
    assert cli.run("memory", "cat", STORE, "/notes/a.md").stdout == "one by the fork\n"
    assert cli.run("memory", "cat", STORE, "/notes/b.md").stdout == "bee by the origin\n"
    [copy] = [s["path"] for s in done["steps"] if s["action"] == "conflict_copy"]
    assert cli.run("memory", "cat", STORE, copy).stdout == "bee by the fork\n"
    refused = cli.run("store", "merge", STORE, "--into", "Try", expect=1)
    assert "is not a fork: there is nothing to merge" in refused.stderr


def test_memory_revert_and_version_diff(cli: Cli, store: dict[str, Any]) -> None:
    made = _scene(cli)
    listed = cli.run("memory", "ls", STORE, "--json").json()["data"]
    [a_now] = [m for m in listed if m["path"] == "/notes/a.md"]
    diff = cli.run("version", "diff", STORE, made["a"]["memory_version_id"], expect=1)
    assert diff.stdout == (
        f"--- a/notes/a.md ({made['a']['memory_version_id']})\n"
        f"+++ b/notes/a.md ({a_now['memory_version_id']})\n"
        "@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    )
    head = a_now["memory_version_id"]
    same = cli.run("version", "diff", STORE, head, head)
    assert same.stdout == ""
    cli.run("version", "diff", STORE, "memver_0", expect=2)

    reverted = cli.run("memory", "revert", STORE, "/notes/a.md", "--to", "before")
    assert reverted.stdout.startswith(f"reverted /notes/a.md ({made['a']['id']}) to before: ")
    assert cli.run("memory", "cat", STORE, "/notes/a.md").stdout == "one\ntwo\n"
    # A memory deleted since, named by its path then, comes back under its id.
    back = cli.run("memory", "revert", STORE, "/old.md", "--to", "before", "--json").json()
    assert (back["id"], back["path"]) == (made["old"]["id"], "/old.md")
    moved = cli.run(
        "memory", "revert", STORE, made["b"]["id"], "--to", made["b"]["memory_version_id"]
    )
    assert moved.stdout.startswith(f"reverted /notes/b.md ({made['b']['id']})")
    refused = cli.run("memory", "revert", STORE, "/new.md", "--to", "before", expect=1)
    assert f"memory {made['new']['id']!r} of memory store" in refused.stderr
    assert refused.stderr.endswith("was not live at before\n")


def test_diff_output_that_can_not_be_written_is_trouble_as_diff_says(
    cli: Cli, store: dict[str, Any]
) -> None:
    """``memfs diff``/``version diff`` exit as diff(1): 1 means "different", so output
    that can't be written (``> /dev/full``) is 2, with one line (a trial found 1)."""
    made = _scene(cli)
    for args in (
        ("diff", f"{STORE}@before", STORE),
        ("version", "diff", STORE, made["a"]["memory_version_id"]),
    ):
        with open("/dev/full", "wb") as full:
            done = subprocess.run(
                memfs_command(*args), stdout=full, stderr=subprocess.PIPE, env=cli.env,
                timeout=RUN_TIMEOUT_S,
            )
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode() == (
            "memfs: error: cannot write the output: No space left on device\n"
        )
