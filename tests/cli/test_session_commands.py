"""SPEC §3 credential lifecycle, the CLI side: ``memfs session create --ttl`` prints the expiry,
``memfs session revoke`` ends a token, ``memfs session list`` shows each session's state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from _support.cli import Cli

from memfs.core.errors import CredentialRevoked


def _expiry(lines: list[str]) -> datetime:
    [line] = [line for line in lines if line.startswith("expires: ")]
    return datetime.fromisoformat(line.removeprefix("expires: ").replace("Z", "+00:00"))


def _near(when: datetime, delta: timedelta) -> bool:
    return abs(when - (datetime.now(UTC) + delta)) < timedelta(minutes=5)


def test_a_session_expires_after_a_day_by_default(cli: Cli, store: dict[str, Any]) -> None:
    created = cli.run("session", "create", "--store", "Project Notes")
    assert _near(_expiry(created.lines), timedelta(hours=24)), created.stdout


@pytest.mark.parametrize(
    ("ttl", "delta"),
    [("2h", timedelta(hours=2)), ("90m", timedelta(minutes=90)), ("7d", timedelta(days=7)),
     ("3600", timedelta(hours=1)), ("30d", timedelta(days=30))],
)  # fmt: skip
def test_ttl_sets_the_expiry(cli: Cli, store: dict[str, Any], ttl: str, delta: timedelta) -> None:
    created = cli.run("session", "create", "--store", "Project Notes", "--ttl", ttl, "--json")
    expires = datetime.fromisoformat(created.json()["expires_at"].replace("Z", "+00:00"))
    assert _near(expires, delta)


@pytest.mark.parametrize("ttl", ["31d", "0", "abc", "12x", "-1h"])
def test_a_ttl_out_of_range_or_malformed_is_one_error_line(
    cli: Cli, store: dict[str, Any], ttl: str
) -> None:
    assert cli.error("session", "create", "--store", "Project Notes", "--ttl", ttl)
    with cli.engine() as engine:
        assert engine.sessions.list(limit=100).items == []  # nothing was created


def test_revoke_ends_the_token_and_list_says_so(cli: Cli, store: dict[str, Any]) -> None:
    created = cli.run("session", "create", "--store", "Project Notes", "--json").json()
    other = cli.create_store("Other")
    kept = cli.run("session", "create", "--store", "Other", "--title", "kept", "--json").json()
    assert cli.run("session", "revoke", created["id"]).stdout == f"{created['id']} revoked\n"
    with cli.engine() as engine, pytest.raises(CredentialRevoked):
        engine.sessions.authenticate(created["token"])
    listed = {s["id"]: s for s in cli.run("session", "list", "--json").json()["data"]}
    assert listed.keys() == {created["id"], kept["id"]}
    assert listed[created["id"]]["revoked_at"] is not None
    assert listed[kept["id"]]["revoked_at"] is None
    assert "token" not in listed[kept["id"]]
    table = cli.run("session", "list").lines
    assert table[0].split() == ["ID", "STATE", "EXPIRES", "STORES", "TITLE", "USER"]
    states = {line.split()[0]: line.split()[1] for line in table[1:]}
    assert states == {created["id"]: "revoked", kept["id"]: "active"}
    only_other = cli.run("session", "list", "--store", "Other", "--json").json()["data"]
    assert [s["id"] for s in only_other] == [kept["id"]]
    assert only_other[0]["resources"][0]["memory_store_id"] == other["id"]
    # Revoking again is fine; an unknown id is one error line.
    cli.run("session", "revoke", created["id"])
    assert cli.error("session", "revoke", "sesn_nope")
