"""``memfs key list`` and ``memfs session show``: the same table output as the admin commands."""

from __future__ import annotations

import re
from typing import Any

from _support.cli import Cli
from test_import_export import run_on_terminal


def _columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_key_list_prints_aligned_columns_with_a_header_on_a_pipe(
    cli: Cli, store: dict[str, Any]
) -> None:
    assert cli.run("key", "list").stdout == ""  # nothing listed, nothing printed on a pipe
    limited = cli.run(
        "key", "create", "--scope", "memory:read", "--store", store["id"], "--name", "reader"
    )
    limited_id = limited.lines[0].split()[1]
    cli.run("key", "create", "--scope", "admin", "--name", "ops team")
    revoked_id = cli.run("key", "create", "--scope", "memory:write").lines[0].split()[1]
    cli.run("key", "revoke", revoked_id)

    lines = cli.run("key", "list").lines
    assert _columns(lines[0]) == ["ID", "STATE", "SCOPES", "STORES", "CREATED", "NAME", "USER"]
    assert "\t" not in "\n".join(lines)
    rows = {_columns(line)[0]: _columns(line) for line in lines[1:]}
    assert len(rows) == 3
    assert rows[limited_id][1:4] == ["active", "memory:read", store["id"]]
    assert rows[limited_id][5] == "reader"
    assert rows[revoked_id][1] == "revoked"
    assert sorted(row[5] for row in rows.values() if row[3] == "all") == ["cli", "ops team"]
    # Aligned: every column starts at the same offset on every line.
    starts = [lines[0].index(header) for header in ("STATE", "SCOPES", "STORES", "CREATED")]
    for line in lines[1:]:
        assert all(line[start - 2 : start] == "  " and line[start] != " " for start in starts)


def test_session_show_prints_its_stores_as_a_table(cli: Cli, store: dict[str, Any]) -> None:
    cli.create_store("Team Wiki")
    created = cli.run("session", "create", "--store", "Project Notes", "--store", "Team Wiki:ro")
    session_id = created.lines[0].split()[1]
    shown = cli.run("session", "show", session_id).lines
    assert shown[0] == f"session: {session_id}"
    assert shown[1].startswith("created: ")
    header = shown.index(next(line for line in shown if line.startswith("MOUNT PATH")))
    assert _columns(shown[header]) == ["MOUNT PATH", "ACCESS", "STORE", "NAME"]
    assert [_columns(line) for line in shown[header + 1 :]] == [
        ["/mnt/memory/project-notes", "read_write", store["id"], "Project Notes"],
        ["/mnt/memory/team-wiki", "read_only", _store_id(cli, "Team Wiki"), "Team Wiki"],
    ]
    assert "\t" not in "\n".join(shown)


def test_key_list_and_session_show_draw_rich_tables_on_a_terminal(
    cli: Cli, store: dict[str, Any]
) -> None:
    cli.run("key", "create", "--scope", "admin")
    session_id = cli.run("session", "create", "--store", "Project Notes").lines[0].split()[1]
    for args, header in ((("key", "list"), "SCOPES"), (("session", "show", session_id), "ACCESS")):
        output = run_on_terminal(cli, *args)
        assert header in output
        assert "─" in output  # rich's rule under the header (box.SIMPLE_HEAD)


def _store_id(cli: Cli, name: str) -> str:
    with cli.engine() as engine:
        return engine.stores.find(name).id
