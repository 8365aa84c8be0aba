"""``memfs store create|list|show|update|archive|delete`` against a real database."""

from __future__ import annotations

from typing import Any

from _support.cli import Cli

STORE_FIELDS = [
    "id",
    "type",
    "name",
    "description",
    "metadata",
    "created_at",
    "updated_at",
    "archived_at",
    "entry_count",
    "total_size",
    "version_retention_seconds",
    "status",
    "system_managed",
    "identity_id",
    "binding_info",
    "forked_from",
    "fork_base",
]


def test_create_json_is_the_api_object(cli: Cli) -> None:
    created = cli.run(
        "store",
        "create",
        "User Preferences",
        "--description",
        "likes",
        "-m",
        "team=core",
        "--json",
    ).json()
    assert list(created) == STORE_FIELDS
    assert created["id"].startswith("memstore_")
    assert created["type"] == "memory_store"
    assert created["name"] == "User Preferences"
    assert created["description"] == "likes"
    assert created["metadata"] == {"team": "core"}
    assert created["archived_at"] is None
    assert created["created_at"].endswith("Z")
    assert (created["entry_count"], created["total_size"]) == (0, 0)


def test_show_by_id_name_and_slug(cli: Cli, store: dict[str, Any]) -> None:
    for reference in (store["id"], "Project Notes", "project-notes"):
        shown = cli.run("store", "show", reference, "--json").json()
        assert shown == store


def test_show_human_output(cli: Cli, store: dict[str, Any]) -> None:
    lines = cli.run("store", "show", "Project Notes").lines
    assert lines[0].split() == ["id", store["id"]]
    assert lines[1] == "name         Project Notes"
    assert lines[2] == "description  Notes on the project"
    assert "memories     0" in lines
    assert lines[-1] == "archived     no"


def test_list_plain_and_json(cli: Cli) -> None:
    first = cli.create_store("Alpha")
    second = cli.create_store("Beta")
    listed = cli.run("store", "list", "--json").json()
    assert listed == {"data": [second, first], "next_page": None}  # newest first

    plain = cli.run("store", "list")
    assert plain.lines[0].split() == ["ID", "NAME", "MEMORIES", "SIZE", "CREATED", "STATE"]
    assert [line.split()[:2] for line in plain.lines[1:]] == [
        [second["id"], "Beta"],
        [first["id"], "Alpha"],
    ]
    assert "\x1b[" not in plain.stdout  # no terminal styling on a pipe


def test_list_of_nothing_prints_nothing(cli: Cli) -> None:
    with cli.engine():
        pass  # an empty database (a missing one is an error: test_database_errors.py)
    assert cli.run("store", "list").stdout == ""
    assert cli.run("store", "list", "--json").json() == {"data": [], "next_page": None}


def test_update_patches_metadata_and_fields(cli: Cli, store: dict[str, Any]) -> None:
    cli.run("store", "update", "Project Notes", "-m", "a=1", "-m", "b=2")
    updated = cli.run(
        "store",
        "update",
        store["id"],
        "--name",
        "Team Notes",
        "--description",
        "",
        "-m",
        "a=3",
        "--unset-metadata",
        "b",
        "--json",
    ).json()
    assert updated["name"] == "Team Notes"
    assert updated["description"] == ""
    assert updated["metadata"] == {"a": "3"}
    assert updated["updated_at"] > store["updated_at"]


def test_archive_makes_the_store_read_only(cli: Cli, store: dict[str, Any]) -> None:
    cli.put("Project Notes", "/kept.md", "kept")
    archived = cli.run("store", "archive", "Project Notes", "--json").json()
    assert archived["archived_at"] is not None

    message = cli.error("memory", "put", "Project Notes", "/new.md", "--content", "x")
    assert "archived" in message
    # Reading still works, and archive is hidden from the default listing.
    assert cli.run("memory", "cat", "Project Notes", "/kept.md").stdout == "kept"
    assert cli.run("store", "list", "--json").json()["data"] == []
    assert [s["id"] for s in cli.run("store", "list", "--archived", "--json").json()["data"]] == [
        store["id"]
    ]
    assert "archived" in cli.run("store", "list", "--archived").lines[1]


def test_delete_needs_yes_off_a_terminal(cli: Cli, store: dict[str, Any]) -> None:
    message = cli.error("store", "delete", "Project Notes")
    assert message == 'refusing to delete store "Project Notes" without --yes'
    cli.run("store", "show", store["id"])  # still there

    deleted = cli.run("store", "delete", "Project Notes", "--yes", "--json").json()
    assert deleted == {"id": store["id"], "type": "memory_store_deleted"}
    assert cli.error("store", "show", store["id"]).startswith("no memory store")


def test_invalid_store_fields_are_named(cli: Cli) -> None:
    assert "control" in cli.error("store", "create", "bad\x07name")
    assert "description" in cli.error("store", "create", "ok", "--description", "x" * 1025)
    assert "metadata" in cli.error("store", "create", "ok", "-m", "=empty-key")
    assert cli.run("store", "list", "--json").json()["data"] == []  # nothing was created


def test_ambiguous_name_lists_the_ids(cli: Cli) -> None:
    one = cli.create_store("Twin")
    two = cli.create_store("Twin")
    message = cli.error("store", "show", "Twin")
    assert one["id"] in message
    assert two["id"] in message
    assert cli.run("store", "show", one["id"], "--json").json() == one


def test_metadata_option_must_be_key_value(cli: Cli) -> None:
    result = cli.run("store", "create", "x", "-m", "novalue", expect=2)
    assert "KEY=VALUE" in result.stderr


def test_a_name_another_store_has_is_accepted_with_a_note(cli: Cli) -> None:
    """Names need not be unique (api-contract §5.1), but the CLI finds stores by name:
    a create or rename that makes one ambiguous says so, with the id to use (a trial
    found an existing `--store Docs` failing after another `store create Docs`)."""
    first = cli.run("store", "create", "Docs", "--json")
    assert first.stderr == ""
    second = cli.run("store", "create", "Docs", "--json")
    second_id = second.json()["id"]
    assert second.stderr == (
        "memfs: note: another memory store is named 'Docs' too; commands that name this "
        f"store need its id ({second_id})\n"
    )
    third = cli.run("store", "create", "other", "--json")
    assert third.stderr == ""
    renamed = cli.run("store", "update", third.json()["id"], "--name", "docs!", "--json")
    assert renamed.stderr == (
        "memfs: note: another memory store's name has the same slug, 'docs'; commands "
        f"that name this store need its id ({third.json()['id']})\n"
    )
    assert "several memory stores are named 'Docs'" in cli.error("store", "show", "Docs")
