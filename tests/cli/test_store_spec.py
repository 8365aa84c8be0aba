"""The ``NAME_OR_ID[:ro|:rw]`` store spec: one parser (``memfs.core.rules.parse_store_spec``)
for ``memfs mount``, ``memfs session create`` and ``memfs prompt``, with its edge cases."""

from __future__ import annotations

from typing import Any

import pytest
from _support.cli import Cli

from memfs.core.errors import InvalidInput
from memfs.core.rules import StoreSpec, parse_store_spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("notes", StoreSpec("notes", False)),
        ("notes:ro", StoreSpec("notes", True)),
        ("notes:rw", StoreSpec("notes", False)),
        ("memstore_01ABC:ro", StoreSpec("memstore_01ABC", True)),
        ("a:b", StoreSpec("a:b", False)),  # only :ro / :rw are suffixes
        ("notes:RO", StoreSpec("notes:RO", False)),  # lower case only
        ("x:ro:ro", StoreSpec("x:ro", True)),  # one suffix: a name ending in :ro
        ("x:ro:rw", StoreSpec("x:ro", False)),
        ("Project Notes:ro", StoreSpec("Project Notes", True)),
        (" :ro", StoreSpec(" ", True)),  # names are not trimmed (the lookup decides)
        ("ro", StoreSpec("ro", False)),
    ],
)
def test_store_spec_parses(spec: str, expected: StoreSpec) -> None:
    assert parse_store_spec(spec) == expected


@pytest.mark.parametrize("spec", ["", ":ro", ":rw"])
def test_a_spec_without_a_name_is_refused_by_name(spec: str) -> None:
    with pytest.raises(InvalidInput, match="give a store name or id"):
        parse_store_spec(spec)


def test_every_command_refuses_an_empty_store_name_in_one_line(
    cli: Cli, store: dict[str, Any], tmp_path: Any
) -> None:
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    for args in (
        ("mount", str(mountpoint), "--store", ":ro"),
        ("session", "create", "--store", ":ro"),
        ("prompt", "--store", ":ro"),
    ):
        assert "give a store name or id" in cli.error(*args), args


def test_every_command_reads_ro_the_same_way(cli: Cli, store: dict[str, Any]) -> None:
    session = cli.run("session", "create", "--store", "Project Notes:ro", "--json").json()
    assert [r["access"] for r in session["resources"]] == ["read_only"]
    prompt = cli.run("prompt", "--store", "Project Notes:ro").stdout
    assert "read-only" in prompt or "read_only" in prompt, prompt
