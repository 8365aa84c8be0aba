"""``memfs identity mount|unmount|mounts|default|session`` and ``memfs store
archive|delete --force`` (SPEC §8), the real command in a subprocess."""

from __future__ import annotations

from _support.cli import Cli

IDN, TMPL = "idn_alice", "tmpl_writer"


def test_mount_list_unmount_and_the_default_store(cli: Cli) -> None:
    team = cli.create_store("Team Wiki")
    cli.create_store("Style Guide")
    assert cli.run("identity", "mount", IDN, TMPL, "Team Wiki").stdout == (
        f'mounted "Team Wiki" ({team["id"]}) on {IDN}/{TMPL} read-only\n'
    )
    assert "was already mounted" in cli.run("identity", "mount", IDN, TMPL, "team-wiki").stdout
    default = cli.run("identity", "default", IDN, TMPL, "--json").json()
    assert (default["name"], default["system_managed"], default["identity_id"]) == (
        f"default:{IDN}:{TMPL}",
        True,
        IDN,
    )
    assert cli.run("identity", "default", IDN, TMPL).stdout.startswith("exists: default store")
    cli.run("identity", "mount", IDN, TMPL, "Style Guide")
    listed = cli.run("identity", "mounts", IDN, TMPL, "--json").json()["data"]
    assert [(m["name"], m["access"], m["system_managed"]) for m in listed] == [
        (f"default:{IDN}:{TMPL}", "read_write", True),
        ("Team Wiki", "read_only", False),
        ("Style Guide", "read_only", False),
    ]
    table = cli.run("identity", "mounts", IDN, TMPL).lines
    assert table[0].split()[:4] == ["IDENTITY", "TEMPLATE", "STORE", "NAME"]
    assert len(table) == 1 + 3
    by_store = cli.run("identity", "mounts", "--store", "Team Wiki", "--json").json()["data"]
    assert [(m["identity_id"], m["template_id"]) for m in by_store] == [(IDN, TMPL)]
    assert "unmounted" in cli.run("identity", "unmount", IDN, TMPL, "Style Guide").stdout
    assert "is not mounted on" in cli.error("identity", "unmount", IDN, TMPL, "Style Guide")
    assert "can't be unmounted" in cli.error("identity", "unmount", IDN, TMPL, default["id"])
    assert "identity_id must be idn_" in cli.error("identity", "mounts", "alice", TMPL)


def test_a_bound_store_needs_force_to_be_archived_or_deleted(cli: Cli) -> None:
    cli.create_store("Team Wiki")
    cli.run("identity", "mount", IDN, TMPL, "Team Wiki")
    refused = cli.error("store", "archive", "Team Wiki")
    assert f"is mounted on 1 (identity, template) pair(s): {IDN}/{TMPL}" in refused
    assert "can't be deleted while mounted" in cli.error("store", "delete", "Team Wiki", "--yes")
    assert "archived store" in cli.run("store", "archive", "Team Wiki", "--force").stdout
    assert "deleted store" in cli.run("store", "delete", "Team Wiki", "--yes", "--force").stdout
    assert cli.run("identity", "mounts", IDN, TMPL, "--json").json()["data"] == []


def test_a_pair_session_from_the_command_line(cli: Cli) -> None:
    cli.create_store("Team Wiki")
    cli.run("identity", "mount", IDN, TMPL, "Team Wiki")
    session = cli.run("identity", "session", IDN, TMPL, "--ttl", "1h", "--json").json()
    assert session["token"].startswith("memfs_st_")
    assert session["layout"] == "flat"
    assert [(r["name"], r["access"], r["mount_path"]) for r in session["resources"]] == [
        (f"default:{IDN}:{TMPL}", "read_write", "/data/.qoder/awareness"),
        ("Team Wiki", "read_only", "/data/.qoder/awareness"),
    ]
    note = cli.run("prompt", "--session", session["id"]).stdout
    assert "All stores are merged into one directory tree" in note
    assert "creating anything directly in the mount root" not in note
