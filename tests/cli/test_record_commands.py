"""``memfs record ls|show|forget`` (SPEC §6 curation) through the real command:
filters and sorts, relations both ways with dangling targets named, decay per store
half-life, forget as a dry run unless --apply (soft delete, restorable)."""

from __future__ import annotations

from typing import Any

from _support.cli import Cli

STORE = "Project Notes"


def header(kind: str, importance: float, *extra: str) -> str:
    return "\n".join(["---", f"type: {kind}", f"importance: {importance}", *extra, "---", "body"])


def test_ls_filters_and_sorts(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", header("preference", 0.5, "tags: [tone]"))
    cli.put(STORE, "/b.md", header("episodic", 0.9, "tags: [trip, tone]", "user_id: u1"))
    cli.put(STORE, "/c.md", header("profile", 0.1))
    cli.put(STORE, "/plain.md", "---\ntype: post\n---\n")
    table = cli.run("record", "ls").lines
    assert table[0].split() == [
        "STORE",
        "PATH",
        "TYPE",
        "SCOPE",
        "IMPORTANCE",
        "DECAY",
        "LAST",
        "ACCESSED",
        "TAGS",
    ]
    assert [line.split()[2] for line in table[1:]] == ["/a.md", "/b.md", "/c.md"]

    def paths(*args: str) -> list[str]:
        page = cli.run("record", "ls", "--json", *args).json()
        return [item["path"] for item in page["data"]]

    assert paths("--sort", "importance") == ["/b.md", "/a.md", "/c.md"]
    assert paths("--sort", "decay") == ["/b.md", "/a.md", "/c.md"]
    assert paths("--type", "episodic") == ["/b.md"]
    assert paths("--tag", "tone") == ["/a.md", "/b.md"]
    assert paths("--min-importance", "0.4", "--store", STORE) == ["/a.md", "/b.md"]
    assert paths("--user-id", "u1") == ["/b.md"]
    assert cli.error("record", "ls", "--type", "post").startswith("record_type must be one of")


def test_show_lists_relations_both_ways(cli: Cli, store: dict[str, Any]) -> None:
    target = cli.put(STORE, "/old.md", "an older note")
    source = cli.put(
        STORE,
        "/new.md",
        header(
            "semantic",
            0.7,
            "relations:",
            "  - {type: supersedes, target: /old.md}",
            "  - {type: related_to, target: /missing.md}",
        ),
    )
    shown = cli.run("record", "show", "/new.md", "--store", STORE).stdout
    assert f"supersedes → /old.md: /old.md ({target['id']})" in shown
    assert "related_to → /missing.md: dangling: no live memory there" in shown
    back = cli.run("record", "show", "/old.md", "--store", STORE).stdout
    assert "not a record" in back
    assert f"supersedes ← /new.md ({source['id']})" in back
    as_json = cli.run("record", "show", source["id"], "--json").json()
    assert [r["dangling"] for r in as_json["record"]["relations"]] == [False, True]
    assert cli.error("record", "show", "/new.md") == (
        "a path needs exactly one --store (or give the memory's mem_… id)"
    )


def test_forget_by_decay_is_a_dry_run_unless_applied(cli: Cli, store: dict[str, Any]) -> None:
    cli.create_store("Scratch")
    # A half-life of a nanosecond-scale fraction of a day: decayed to 0 by the time
    # the command runs, whatever the machine's speed; the other store keeps 30 days.
    cli.run("store", "update", "Scratch", "--metadata", "record_half_life_days=1e-9")
    cli.put(STORE, "/kept.md", header("semantic", 0.9))
    gone = cli.put("Scratch", "/gone.md", header("semantic", 0.9))
    dry = cli.run("record", "forget", "--below", "0.1").lines
    assert dry == [
        f"would forget /gone.md ({gone['id']}, decay 0.000)",
        "1 record(s) below 0.1; nothing changed (add --apply)",
    ]
    assert cli.paths("Scratch") == ["/gone.md"]
    applied = cli.run("record", "forget", "--below", "0.1", "--apply").lines
    assert applied[-1] == "1 record(s) soft-deleted"
    assert cli.paths("Scratch") == []
    assert cli.paths(STORE) == ["/kept.md"]
    assert [r["path"] for r in cli.run("record", "ls", "--json").json()["data"]] == ["/kept.md"]
    deleted = cli.versions("Scratch", memory_id=gone["id"])[0]
    assert (deleted["operation"], deleted["reason"]) == ("deleted", "decay_score below 0.1")
    cli.run("memory", "restore", "Scratch", gone["id"])
    assert cli.paths("Scratch") == ["/gone.md"]


def test_fsck_records_reports_dangling_relations_without_failing(
    cli: Cli, store: dict[str, Any]
) -> None:
    source = cli.put(
        STORE, "/r.md", header("semantic", 0.5, "relations: [{type: related_to, target: /t.md}]")
    )
    lines = cli.run("fsck", "--records").lines
    assert lines[-2:] == [
        f"fsck: record /r.md ({source['id']}, store {store['id']}): relation related_to → "
        "/t.md is dangling (no live memory there)",
        "fsck: records: 1 records, 1 dangling relation(s) (reported, not refused)",
    ]
    cli.put(STORE, "/t.md", "the target arrives")
    assert cli.run("fsck", "--records").lines[-1] == (
        "fsck: records: 1 records, 0 dangling relation(s) (reported, not refused)"
    )
    assert "dangling" not in cli.run("fsck").stdout


def test_prompt_explains_the_header_only_when_a_store_holds_records(
    cli: Cli, store: dict[str, Any]
) -> None:
    cli.put(STORE, "/plain.md", "---\ntype: post\n---\n")
    assert "long-term memory records" not in cli.run("prompt", "--store", STORE).stdout
    cli.put(STORE, "/r.md", header("profile", 0.5))
    note = cli.run("prompt", "--store", STORE).stdout
    assert "Some files are long-term memory records: they start with a YAML header" in note
    assert "a bad value is refused" in note


def test_search_filters(cli: Cli, store: dict[str, Any]) -> None:
    cli.put(STORE, "/a.md", header("preference", 0.8, "tags: [tone]") + " kernel")
    cli.put(STORE, "/b.md", header("episodic", 0.2) + " kernel")
    cli.put(STORE, "/c.md", "kernel")

    def paths(*args: str) -> list[str]:
        page = cli.run("search", "kernel", "--json", *args).json()
        return sorted(hit["path"] for hit in page["data"])

    assert paths() == ["/a.md", "/b.md", "/c.md"]
    assert paths("--type", "episodic") == ["/b.md"]
    assert paths("--tag", "tone", "--min-importance", "0.5") == ["/a.md"]
