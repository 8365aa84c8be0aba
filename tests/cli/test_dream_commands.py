"""``memfs dream create --wait`` into a fork (``create_new``), reviewed with ``memfs
dream diff`` (= ``memfs diff INPUT OUTPUT``) and applied with ``memfs dream apply``
(SPEC §11), in subprocesses; a language-model dream with ``--dream-base-url`` against a
scripted endpoint that STANDS IN FOR A MODEL (tests/_support/scripted_model.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _support.cli import Cli
from _support.scripted_model import ScriptedModel, text, tool, turn

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
    # memfs dream diff DREAM is that same diff.
    assert cli.run("dream", "diff", dream["id"], expect=1).stdout == review.stdout
    named = cli.run("dream", "diff", dream["id"], "--name-only", expect=1).stdout
    assert named.split() == ["/b.md"]
    applied = cli.run("dream", "apply", dream["id"])
    assert applied.stdout.startswith(f"applied dream {dream['id']} to {store['id']}: ")
    assert "snapshot auto-merge-" in applied.stdout
    assert "1 note of what a kept memory absorbed (memfs_absorbed) carried" in applied.stdout
    listed = cli.run("memory", "ls", STORE).stdout
    assert "/a.md" in listed
    assert "/b.md" not in listed
    shown = cli.run("memory", "ls", STORE, "--json").json()
    kept = next(m for m in shown["data"] if m["path"] == "/a.md")
    assert kept["metadata"] == {"memfs_absorbed": "/b.md"}
    again = cli.run("dream", "apply", dream["id"])
    assert "no change" in again.stdout or "keep" in again.stdout


def test_dream_diff_of_an_update_existing_dream_starts_at_its_snapshot(
    cli: Cli, store: dict[str, Any]
) -> None:
    cli.put(STORE, "/a.md", "same\n")
    cli.put(STORE, "/b.md", "same\n")
    dream = cli.run("dream", "create", STORE, "--update-existing", "--wait", "--json").json()
    assert dream["status"] == "completed"
    diffed = cli.run("dream", "diff", dream["id"], "--stat", expect=1).stdout
    assert "/b.md | 1 -" in diffed


def test_a_language_model_dream_runs_embedded(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    cli.put(STORE, "/city.md", "Alice lives in Lyon.\n")
    key_file = tmp_path / "key"
    key_file.write_text("sk-ant-scripted\n")
    script = [
        turn(tool("str_replace", path="/memories/city.md", old_str="Lyon", new_str="Paris")),
        turn(text("Updated the city.")),
    ]
    with ScriptedModel(script) as model:
        made = cli.run("dream", "create", STORE, "--model", "claude-opus-4-7", "--wait",
                       "--dream-base-url", model.url, "--dream-api-key-file", str(key_file),
                       "--json")
    dream = json.loads(made.stdout)
    assert dream["status"] == "completed"
    assert dream["usage"]["input_tokens"] == 200
    assert "turn 1: asking claude-opus-4-7" in made.stderr
    assert "memory str_replace /memories/city.md" in made.stderr
    [output] = dream["outputs"]
    assert cli.run("memory", "cat", output["memory_store_id"], "/city.md").stdout == (
        "Alice lives in Paris.\n")
    assert len(model.requests) == 2
    unread = cli.run("dream", "create", STORE, "--model", "claude-opus-4-7", "--wait",
                     "--dream-api-key-file", str(tmp_path / "missing"), expect=1)
    assert "can't read --dream-api-key-file" in unread.stderr
