"""Seed 002's chat-derived records through ``memfs import --format jsonl`` and ``memfs
export --format records-jsonl`` (SPEC §6): each becomes a record file with its header,
a bad one is refused naming the key, vectors are ignored, relations between imported
records resolve, and the seed's example record round-trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _support.cli import Cli

STORE = "Project Notes"

# Seed 002's example record, as valid JSON (the seed elides the vector and leaves a
# user id unquoted).
SEED_EXAMPLE: dict[str, Any] = {
    "memory_id": "user_id_xxx_mem_002",
    "tenant_id": "app",
    "user_id": "user_id_xxx",
    "agent_id": "worker_agent",
    "type": "preference",
    "scope": "private",
    "content": {
        "raw": "簡潔かつユーモラスな口調で話してください。",
        "summary": "User prefers concise and humorous tone in conversations",
        "structured": {
            "tone": ["concise", "humorous"],
            "communication_style": "casual",
            "priority": "high",
        },
    },
    "embedding": {"model": "e5-large", "vector": [0.123, 0.456, 0.789]},
    "metadata": {
        "importance": 0.92,
        "confidence": 0.96,
        "tags": ["preference", "tone", "style"],
        "source": "explicit_user_input",
        "version": 1,
    },
    "time": {
        "created_at": "2026-04-20T10:00:00Z",
        "updated_at": "2026-04-25T08:00:00Z",
        "last_accessed": "2026-04-25T08:00:00Z",
        "decay_score": 0.95,
    },
    "relations": [{"type": "related_to", "target_memory_id": "user_id_xxx_mem_001"}],
    "access_control": {
        "visibility": "private",
        "allowed_users": ["user_id_xxx"],
        "allowed_roles": ["admin", "editor"],
    },
}
PATH = "/users/user_id_xxx/user_id_xxx_mem_002.md"


def write_jsonl(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def test_the_seed_example_round_trips(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chat.jsonl", SEED_EXAMPLE)
    result = cli.run("import", str(source), "--store", STORE, "--prefix", "/users/", "--json")
    assert [(f["path"], f["status"]) for f in result.json()["files"]] == [(PATH, "created")]
    content = cli.content(STORE, PATH)
    # A file an agent reads and edits: the header, then the raw text.
    assert content.startswith("---\ntype: preference\nscope: private\n")
    assert content.endswith("---\n簡潔かつユーモラスな口調で話してください。\n")
    assert "vector" not in content
    assert "e5-large" not in content
    (record,) = cli.run("record", "ls", "--json").json()["data"]
    assert record["path"] == PATH
    assert record["record"]["relations"][0]["dangling"] is True
    exported = cli.run("export", STORE, "-", "--format", "records-jsonl").lines
    (line,) = exported
    back = json.loads(line)
    expected = {k: v for k, v in SEED_EXAMPLE.items() if k != "embedding"}
    assert back["time"].pop("last_accessed") > "2026-12"  # memfs's own: the import's time
    assert 0.91 < back["time"].pop("decay_score") <= 0.92
    expected_time = {
        k: v for k, v in SEED_EXAMPLE["time"].items() if k in ("created_at", "updated_at")
    }
    assert back == {**expected, "time": expected_time}
    # Exported records import again, to the same bytes.
    again = write_jsonl(tmp_path / "again.jsonl", back)
    cli.create_store("Copy")
    cli.run("import", str(again), "--store", "Copy", "--prefix", "/users/", "--format", "jsonl")
    assert cli.content("Copy", PATH) == content


def test_relations_between_imported_records_resolve(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    first = {**SEED_EXAMPLE, "memory_id": "user_id_xxx_mem_001", "relations": []}
    first["content"] = {"raw": "hi, 私はLouisです。"}
    source = write_jsonl(tmp_path / "chat.jsonl", SEED_EXAMPLE, first)
    cli.run("import", str(source), "--store", STORE)
    shown = cli.run("record", "show", "/user_id_xxx/user_id_xxx_mem_002.md", "--store", STORE)
    assert "related_to → /user_id_xxx/user_id_xxx_mem_001.md: /user_id_xxx/" in shown.stdout
    assert cli.run("fsck", "--records").lines[-1] == (
        "fsck: records: 2 records, 0 dangling relation(s) (reported, not refused)"
    )


def test_a_bad_seed_record_is_refused_naming_the_key(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    bad = {**SEED_EXAMPLE, "metadata": {**SEED_EXAMPLE["metadata"], "importance": 1.7}}
    no_id = {k: v for k, v in SEED_EXAMPLE.items() if k != "memory_id"}
    source = write_jsonl(tmp_path / "chat.jsonl", bad, no_id)
    files = cli.run("import", str(source), "--store", STORE, "--json").json()["files"]
    assert [(f["status"], f["code"]) for f in files] == [
        ("refused", "invalid_record"),
        ("refused", "invalid_input"),
    ]
    assert "importance: must be a number from 0 to 1" in files[0]["reason"]
    assert "memory_id must be a non-empty string" in files[1]["reason"]
    assert cli.paths(STORE) == []
