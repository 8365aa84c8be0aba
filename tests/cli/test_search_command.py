"""``memfs search`` (SPEC §7): ranked hits by words, Japanese by substring,
store and prefix filters, JSON output, named errors (semantic without a model)."""

from __future__ import annotations

from typing import Any

from _support.cli import Cli

from memfs.core.config import SEARCH_MODEL_ENV

STORE = "Project Notes"


def test_ranked_hits_as_a_table(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/best.md", "kernel kernel kernel")
    cli.put(STORE, "/other.md", "one kernel among many other words here")
    cli.put(STORE, "/none.md", "nothing")
    result = cli.run("search", "kernel")
    assert result.lines[0].split() == ["SCORE", "STORE", "PATH", "SNIPPET"]
    rows = result.lines[1:]
    assert [row.split()[3] for row in rows] == ["/best.md", "/other.md"]
    assert "**kernel** **kernel** **kernel**" in rows[0]


def test_japanese_json_store_and_prefix(cli: Cli, store: dict[str, Any]) -> None:
    cli.create_store("Other")
    cli.put(STORE, "/jp/kioku.md", "長期記憶の設計について")
    cli.put(STORE, "/en/memory.md", "long-term memory")
    cli.put("Other", "/jp/also.md", "記憶")
    page = cli.run("search", "記憶", "--store", STORE, "--json").json()
    assert [(h["path"], h["memory_store_id"]) for h in page["data"]] == [
        ("/jp/kioku.md", store["id"])
    ]
    assert page["data"][0]["snippet"] == "長期**記憶**の設計について"
    both = cli.run("search", "記憶", "--store", STORE, "--store", "Other", "--json").json()
    assert {h["path"] for h in both["data"]} == {"/jp/kioku.md", "/jp/also.md"}
    assert cli.run("search", "記憶", "--path-prefix", "/en/", "--json").json() == {"data": []}
    assert len(cli.run("search", "記憶", "--limit", "1", "--json").json()["data"]) == 1


def test_errors_are_one_line(cli: Cli, store: dict[str, Any]) -> None:
    assert "unterminated quote" in cli.error("search", '"open')
    assert "at least one term that is not negated" in cli.error("search", "--", "-x")
    assert (
        cli.error("search", "x", "--store", "nope")
        == "no memory store is named or has the id 'nope'"
    )
    result = cli.run("search", "x", "--semantic", env={SEARCH_MODEL_ENV: ""}, expect=1)
    semantic = result.stderr.strip().removeprefix("memfs: error: ")
    assert semantic.startswith(f"semantic search is not configured: {SEARCH_MODEL_ENV}")
    assert cli.error("search", "x", "--text", "--semantic") == (
        "--text and --semantic exclude each other"
    )
