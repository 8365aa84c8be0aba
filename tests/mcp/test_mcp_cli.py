"""``memfs mcp``'s refusals before it serves: one line on stderr, exit status 1, nothing
on stdout (which belongs to the protocol)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.cli import memfs_env, run_memfs

from memfs.store import Engine


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "memfs: error: give at least one --store (or --api URL --token T)"),
        (("--store", "Nowhere"), "memfs: error: no memory store is named or has the id 'Nowhere'"),
        (("--api", "http://127.0.0.1:9"), "memfs: error: --api needs --token (or $MEMFS_TOKEN)"),
        (
            ("--api", "http://127.0.0.1:9", "--store", "Notes"),
            "memfs: error: --api takes the session's stores; --store and --database go without it",
        ),
    ],
    ids=["no-store", "unknown-store", "api-without-token", "api-with-store"],
)
def test_memfs_mcp_refuses_a_bad_command_line(
    memfs_home: Path, store_engine: Engine, args: tuple[str, ...], message: str
) -> None:
    store_engine.stores.create("Notes")
    result = run_memfs("mcp", *args, env=memfs_env(memfs_home))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == message
    assert result.stdout == ""


def test_memfs_mcp_reports_an_unreachable_server(memfs_home: Path) -> None:
    result = run_memfs(
        "mcp", "--api", "http://127.0.0.1:9", env=memfs_env(memfs_home, MEMFS_TOKEN="memfs_st_x")
    )
    assert result.returncode == 1
    assert result.stderr.startswith(
        "memfs: error: The memfs server can't be reached now, so /memories was not changed or "
        "read"
    )
    assert result.stdout == ""
