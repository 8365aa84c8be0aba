"""``memfs fsck``, ``memfs prompt`` and how every command reports errors."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _support.cli import Cli

from memfs.cli.prompt_note import plan_resources, render_prompt
from memfs.core.model import Access, Layout, MemoryStore, SessionResource, utcnow
from memfs.store import ResourceSpec, open_engine

STORE = "Project Notes"


def test_fsck_clean_after_writes(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "a")
    cli.put(STORE, "/a.md", "b")
    cli.put(STORE, "/c.md", "a")
    cli.run("memory", "rm", STORE, "/c.md")
    assert cli.run("fsck").stdout == (
        "fsck: clean (1 stores, 1 memories, 4 versions, 2 blobs checked)\n"
    )


def test_fsck_reports_each_finding_and_fails(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "a")
    database = sqlite3.connect(cli.home / "memfs.db")
    try:
        with database:
            database.execute("UPDATE stores SET entry_count = 7")
        result = cli.run("fsck", expect=1)
        assert result.stdout == f"fsck: store {store['id']}: entry_count 7 but 1 live memories\n"
        assert result.stderr == "memfs: error: fsck found 1 problem\n"
    finally:
        with database:
            database.execute("UPDATE stores SET entry_count = 1")
        database.close()


def test_every_user_error_is_one_line_without_traceback(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    # cli.error asserts: exit status 1, exactly one "memfs: error: …" line, no traceback.
    assert cli.error("store", "show", "nope") == "no memory store is named or has the id 'nope'"
    assert cli.error("memory", "cat", "nope", "/a")
    assert cli.error("memory", "cat", STORE, "/missing.md").startswith("no memory at '/missing.md'")
    assert cli.error("memory", "rm", STORE, "/missing.md")
    assert cli.error("memory", "restore", STORE, "/missing.md")
    assert cli.error("version", "redact", STORE, "memver_nope")
    assert cli.error("memory", "ls", STORE, "bad prefix")
    assert cli.error("prompt", "--store", "nope")
    assert cli.error("prompt", "--session", "sesn_nope")

    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    # A command that may create the database, where it can't be created:
    message = cli.error("store", "create", "x", "--database", str(blocked / "memfs.db"))
    assert message.startswith("cannot open the store database"), message
    # Any other command: the file is missing (opening never creates a database).
    message = cli.error("store", "list", "--database", str(blocked / "memfs.db"))
    assert message.startswith(f"no memfs database at {blocked / 'memfs.db'}"), message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory whatever its mode")
def test_unreadable_import_dir(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        assert cli.error("import", str(locked), "--store", STORE) == (
            f"cannot import {locked}: Permission denied"
        )
    finally:
        locked.chmod(0o755)


def test_usage_errors_exit_2(cli: Cli) -> None:
    assert "Missing argument" in cli.run("memory", "cat", expect=2).stderr
    assert (
        "Invalid value for '--mode'"
        in cli.run("memory", "rm", "s", "/a", "--mode", "bogus", expect=2).stderr
    )
    assert "give one of --mount, --store" in cli.run("prompt", expect=2).stderr


# ----------------------------------------------------------------- prompt


def _store(name: str, description: str = "", archived: bool = False) -> MemoryStore:
    now = utcnow()
    return MemoryStore(
        id=f"memstore_{name.lower().replace(' ', '')}",
        name=name,
        description=description,
        metadata={},
        created_at=now,
        updated_at=now,
        archived_at=now if archived else None,
        entry_count=0,
        total_size_bytes=0,
    )


def test_plan_resources_per_store_layout() -> None:
    prefs = _store("User Preferences", "How the user likes things")
    twin = _store("user_preferences")
    old = _store("Old", archived=True)
    resources = plan_resources(
        [
            (prefs, Access.READ_WRITE, "Update when the user corrects you."),
            (twin, Access.READ_ONLY, None),
            (old, Access.READ_WRITE, None),
        ],
        mount_root="/mnt/memory/",
    )
    assert [(r.mount_path, r.access) for r in resources] == [
        ("/mnt/memory/user-preferences", Access.READ_WRITE),
        ("/mnt/memory/user-preferences-2", Access.READ_ONLY),
        ("/mnt/memory/old", Access.READ_ONLY),  # archived stores mount read-only
    ]
    assert resources[0].instructions == "Update when the user corrects you."
    assert resources[0].description == "How the user likes things"


def test_plan_resources_flat_layout_has_one_writable_default() -> None:
    a, b, c = _store("A"), _store("B"), _store("C")
    resources = plan_resources(
        [(a, Access.READ_ONLY, None), (b, Access.READ_WRITE, None), (c, Access.READ_WRITE, None)],
        mount_root="/data/.qoder/awareness",
        flat=True,
    )
    assert {r.mount_path for r in resources} == {"/data/.qoder/awareness"}
    assert [r.access for r in resources] == [Access.READ_ONLY, Access.READ_WRITE, Access.READ_ONLY]
    text = render_prompt(resources)
    assert '/data/.qoder/awareness/ merges "A", "B", "C" into one directory' in text
    assert 'saved in "B"' in text


def test_render_prompt_names_every_field() -> None:
    resource = SessionResource(
        memory_store_id="memstore_x",
        access=Access.READ_ONLY,
        instructions="Line one.\nLine two.",
        name="Team Wiki",
        description="Shared reference",
        mount_path="/mnt/memory/team-wiki",
    )
    text = render_prompt([resource])
    assert text.startswith("## Memory\n")
    assert '- "Team Wiki" at /mnt/memory/team-wiki/ (read-only)\n' in text
    assert "  Description:\n    Shared reference\n" in text
    assert "  Instructions:\n    Line one.\n    Line two.\n" in text
    assert "102,400 bytes" in text
    assert render_prompt([]) == ""


def test_render_prompt_says_what_a_read_only_write_returns_for_the_mount_s_setup() -> None:
    """SPEC §4 Sandboxes: memfs answers EROFS; under --allow-other the kernel checks modes
    first and an agent that is not root gets EACCES."""
    resource = SessionResource(
        memory_store_id="memstore_x", access=Access.READ_ONLY, name="Wiki", instructions=None,
        description="", mount_path="/mnt/memory/wiki",
    )
    plain = render_prompt([resource])
    assert 'a read-only store fails with "Read-only file system" (EROFS);' in plain
    assert "EACCES" not in plain
    checked = render_prompt([resource], modes_checked=True)
    assert 'a read-only store fails with "Permission denied" (EACCES; "Read-only file ' \
        'system" (EROFS) when running as root);' in checked
    flat = render_prompt([resource, resource.model_copy(update={"name": "Other"})],
                         layout=Layout.FLAT, modes_checked=True)
    assert 'writing anything fails with "Permission denied" (EACCES;' in flat


def test_prompt_command_for_stores(cli: Cli, store: dict[str, Any]) -> None:
    cli.create_store("Team Wiki", "Shared reference")
    text = cli.run(
        "prompt",
        "--store",
        STORE,
        "--store",
        "team-wiki:ro",
        "--root",
        "/mnt/m",
        "--instructions",
        f"{STORE}=One file per topic.",
    ).stdout
    assert '- "Project Notes" at /mnt/m/project-notes/ (read-write)\n' in text
    assert "    Notes on the project\n  Instructions:\n    One file per topic.\n" in text
    assert '- "Team Wiki" at /mnt/m/team-wiki/ (read-only)\n' in text
    assert "(EACCES" not in text
    checked = cli.run("prompt", "--store", "team-wiki:ro", "--allow-other").stdout
    assert '"Permission denied" (EACCES;' in checked
    message = cli.error("prompt", "--store", STORE, "--instructions", "Other=x")
    assert message == "--instructions names a store that is not attached: Other"


def test_prompt_command_for_a_session(cli: Cli, store: dict[str, Any]) -> None:
    engine = open_engine(f"sqlite:///{cli.home / 'memfs.db'}")
    try:
        session, _ = engine.sessions.create(
            [ResourceSpec(store["id"], Access.READ_ONLY, "Read before answering.")],
            with_token=False,
        )
    finally:
        engine.close()
    text = cli.run("prompt", "--session", session.id).stdout
    assert '- "Project Notes" at /mnt/memory/project-notes/ (read-only)\n' in text
    assert "  Instructions:\n    Read before answering.\n" in text


@pytest.mark.fuse
@pytest.mark.skipif(
    not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None,
    reason="needs /dev/fuse and fusermount3",
)
def test_prompt_command_for_a_running_mount(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    cli.create_store("Team Wiki", "Shared reference")
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    cli.run("mount", str(mountpoint), "--store", STORE, "--store", "Team Wiki:ro")
    try:
        text = cli.run(
            "prompt", "--mount", str(mountpoint), "--instructions", "team-wiki=Cite it."
        ).stdout
    finally:
        cli.run("umount", str(mountpoint))
    target = os.path.realpath(mountpoint)
    assert f'- "Project Notes" at {target}/project-notes/ (read-write)\n' in text
    assert f'- "Team Wiki" at {target}/team-wiki/ (read-only)\n' in text
    assert "  Instructions:\n    Cite it.\n" in text
    message = cli.error("prompt", "--mount", str(mountpoint))
    assert message == f"{target} is not a memfs mount (see `memfs status {target}`)"
