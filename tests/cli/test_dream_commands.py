"""``memfs dream create --wait`` into a fork (``create_new``), reviewed with ``memfs
diff`` and applied with ``memfs dream apply`` (SPEC §11), in subprocesses."""

from __future__ import annotations

from typing import Any

from _support.cli import Cli

STORE = "Project Notes"


def test_a_dream_into_a_fork_is_reviewed_then_applied(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", "Alice takes her coffee black.\n")
    cli.put(STORE, "/b.md", "Alice takes her coffee black.\n")
    cli.put(STORE, "/c.md", "Something else.\n")
    dream = cli.run("dream", "create", STORE, "--wait", "--json").json()
    assert dream["status"] == "completed"
    [output] = dream["outputs"]
    assert output["memory_store_id"] != store["id"]
    # The input is untouched until the dream is applied.
    assert cli.run("memory", "ls", STORE).stdout.count(".md") == 3
    review = cli.run("diff", STORE, output["memory_store_id"], expect=1)
    assert "/b.md" in review.stdout
    applied = cli.run("dream", "apply", dream["id"])
    assert applied.stdout.startswith(f"applied dream {dream['id']} to {store['id']}: ")
    assert "snapshot auto-merge-" in applied.stdout
    listed = cli.run("memory", "ls", STORE).stdout
    assert "/a.md" in listed
    assert "/b.md" not in listed
    again = cli.run("dream", "apply", dream["id"])
    assert "no change" in again.stdout or "keep" in again.stdout
