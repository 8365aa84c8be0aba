"""``memfs audit ls``: the audit events of the API's deletions, forgets and
restores, filtered by store, memory, time and count, as a table or as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _support.cli import memfs_env, run_memfs

if TYPE_CHECKING:
    from tests.seedapi.conftest import Api


def _audit_ls(api: Api, home: Path, *args: str) -> Any:
    done = run_memfs("audit", "ls", "--database", api.database, *args, env=memfs_env(home))
    assert done.returncode == 0, done.stderr
    return done


def test_audit_ls_shows_the_events_with_their_filters(api: Api, store: Any, tmp_path: Path) -> None:
    memories = api.sdk().beta.memory_stores.memories
    first = memories.create(store.id, path="/a.md", content="a")
    second = memories.create(store.id, path="/b.md", content="b")
    with api.http() as http:
        http.delete(f"/v1/memories/{first.id}", params={"reason": "user-requested"})
        http.post(f"/v1/memories/{first.id}/restore", json={"metadata": {"ticket": "T-9"}})
        http.post(f"/v1/memories/{second.id}/forget", json={"reason": "pii"})

    listed = json.loads(_audit_ls(api, tmp_path, "--store", store.name, "--json").stdout)
    actions = [(e["action"], e["memory_id"], e["reason"], e["metadata"]) for e in listed["data"]]
    assert actions == [
        ("redact", second.id, "pii", {}),
        ("restore", first.id, None, {"ticket": "T-9"}),
        ("soft_delete", first.id, "user-requested", {}),
    ]
    assert listed["next_page"] is None
    one = json.loads(_audit_ls(api, tmp_path, "--memory", first.id, "--json").stdout)
    assert [e["action"] for e in one["data"]] == ["restore", "soft_delete"]
    newest = json.loads(
        _audit_ls(api, tmp_path, "--store", store.id, "--limit", "1", "--json").stdout
    )
    assert [e["action"] for e in newest["data"]] == ["redact"]
    later = json.loads(
        _audit_ls(
            api, tmp_path, "--store", store.id, "--since", "2999-01-01T00:00:00Z", "--json"
        ).stdout
    )
    assert later["data"] == []
    recent = json.loads(
        _audit_ls(api, tmp_path, "--store", store.id, "--since", "1h", "--json").stdout
    )
    assert len(recent["data"]) == 3

    table = _audit_ls(api, tmp_path, "--store", store.id).stdout
    for shown in ("soft_delete", "user-requested", '{"ticket": "T-9"}', first.id):
        assert shown in table
    assert "/a.md" not in table  # ids only, never a path


def test_audit_ls_refuses_a_bad_since(api: Api, tmp_path: Path) -> None:
    done = run_memfs(
        "audit", "ls", "--database", api.database, "--since", "yesterday", env=memfs_env(tmp_path)
    )
    assert done.returncode == 1
    assert "--since 'yesterday' is neither a time" in done.stderr
