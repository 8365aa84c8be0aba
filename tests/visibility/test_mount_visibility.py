"""Visibility through a real mount (SPEC §6): a remote mount made with
a session for user alice over a shared store shows her private records and every
shared one, and nothing of bob's (not in ``readdir``, ``ENOENT`` by name), also for
records written elsewhere while it runs; writing a record she could not see is refused
at close (``EACCES``) and nothing of it reaches the store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support.mount import MEMFS, Mounter, errno_of, run, wait_until
from _support.serve import ServeProcess

from memfs.core.model import Access, Actor
from memfs.core.visibility import UserPrincipal
from memfs.store import Engine, ResourceSpec

pytestmark = pytest.mark.fuse
ACTOR = Actor.api_key("apikey_tests")


def record(user: str, scope: str = "private") -> str:
    return f"---\ntype: preference\nscope: {scope}\nuser_id: {user}\n---\n{user} likes tea\n"


def test_a_mount_for_alice_shows_her_records_and_shared_ones_only(
    mounter: Mounter, store_engine: Engine, server: ServeProcess
) -> None:
    store = store_engine.stores.create("Shared")
    for path, content in {
        "/alice.md": record("alice"),
        "/bob.md": record("bob"),
        "/team.md": record("bob", "share"),
        "/notes/plain.md": "no header\n",
        "/bob-only/deep.md": record("bob"),
    }.items():
        store_engine.for_caller(actor=ACTOR).memories.create(store.id, path, content)
    _, token = store_engine.sessions.create(
        [ResourceSpec(store.id, Access.READ_WRITE)], principal=UserPrincipal(user_id="alice")
    )
    assert token is not None
    mount = mounter.mount_remote(server.url, token, layout="flat")
    root = Path(mount.path)

    assert sorted(os.listdir(root)) == ["alice.md", "notes", "team.md"]
    assert (root / "alice.md").read_text() == record("alice")
    assert errno_of(f"open({str(root / 'bob.md')!r})") == "ENOENT"
    assert errno_of(f"os.stat({str(root / 'bob-only')!r})") == "ENOENT"
    assert run("find", str(root), "-type", "f").stdout.count("\n") == 3

    # Written elsewhere meanwhile: bob's private record never appears, a shared one does.
    store_engine.for_caller(actor=ACTOR).memories.create(store.id, "/bob2.md", record("bob"))
    store_engine.for_caller(actor=ACTOR).memories.create(
        store.id, "/shared2.md", record("bob", "share")
    )
    wait_until(lambda: (root / "shared2.md").exists(), "the shared record to appear")
    assert "bob2.md" not in os.listdir(root)
    # A record of hers turned private for bob disappears from her mount.
    alice_memory = store_engine.memories.get_by_path(store.id, "/alice.md")
    store_engine.for_caller(actor=ACTOR).memories.update(
        store.id, alice_memory.id, content=record("bob")
    )
    wait_until(lambda: not (root / "alice.md").exists(), "alice.md to disappear")

    # Alice writes her own record; one for bob is refused at close and not stored.
    run("cp", "/dev/stdin", str(root / "mine.md"), input=record("alice"))
    assert store_engine.memories.get_by_path(store.id, "/mine.md").content == record("alice")
    mount.expect_log("record_not_visible", "invisible to its writer")
    refused = errno_of(
        f"""
        with open({str(root / 'mine.md')!r}, 'w') as f:
            f.write({record('bob')!r})
        """
    )
    assert refused == "EACCES"
    assert store_engine.memories.get_by_path(store.id, "/mine.md").content == record("alice")
    log = mount.log_file.read_text()
    assert "invisible to its writer" in log
    assert "user_id: alice" in log
    # `memfs status` names the refusal; the bytes are kept under rejected/ (SPEC §4).
    assert "invisible to its writer" in run(MEMFS, "status", str(root)).stdout


def test_an_embedded_mount_with_a_principal_sees_what_its_user_sees(
    mounter: Mounter, store_engine: Engine
) -> None:
    store = store_engine.stores.create("Shared")
    for path, content in {
        "/alice.md": record("alice"),
        "/bob.md": record("bob"),
        "/team.md": record("bob", "share"),
        "/support.md": "---\ntype: procedural\nuser_id: bob\nallowed_roles: [support]\n"
        "---\nhow to escalate\n",
    }.items():
        store_engine.for_caller(actor=ACTOR).memories.create(store.id, path, content)
    mount = mounter.mount(
        "Shared", layout="flat", extra_args=("--user-id", "alice", "--role", "support")
    )
    root = Path(mount.path)
    assert sorted(os.listdir(root)) == ["alice.md", "support.md", "team.md"]
    assert errno_of(f"open({str(root / 'bob.md')!r})") == "ENOENT"
    sessions = store_engine.sessions.list(store.id).items
    assert [s.principal for s in sessions] == [
        UserPrincipal(user_id="alice", roles=("support",))
    ]
    store_engine.for_caller(actor=ACTOR).memories.create(store.id, "/bob2.md", record("bob"))
    store_engine.for_caller(actor=ACTOR).memories.create(
        store.id, "/team2.md", record("bob", "share")
    )
    wait_until(lambda: (root / "team2.md").exists(), "the shared record to appear")
    assert "bob2.md" not in os.listdir(root)
    mount.expect_log("invisible to its writer")
    assert errno_of(
        f"""
        with open({str(root / 'alice.md')!r}, 'w') as f:
            f.write({record('bob')!r})
        """
    ) == "EACCES"
    assert store_engine.memories.get_by_path(store.id, "/alice.md").content == record("alice")
    # A rename onto the path of a record she can't see does not replace (delete) it.
    assert errno_of(
        f"os.rename({str(root / 'alice.md')!r}, {str(root / 'bob.md')!r})"
    ) == "EEXIST"
    assert store_engine.memories.get_by_path(store.id, "/bob.md").content == record("bob")
    assert (root / "alice.md").read_text() == record("alice")
    # Without a principal an embedded mount is local: it shows every record.
    everything = mounter.mount("Shared", layout="flat")
    wait_until(
        lambda: "bob2.md" in os.listdir(everything.path), "the local mount to list bob2.md"
    )
    assert "bob.md" in os.listdir(everything.path)
