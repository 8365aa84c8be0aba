"""A pair's session mounted for real (SPEC §8, §4 flat layout): ``memfs mount --api URL``
with the session's token and no ``--layout`` mounts it flat; the default store shadows
a mounted store's file of the same path, a write to a mounted store's file is copied
up into the default store, deleting it is EROFS, and ``memfs prompt`` states the flat
rules. Real tools (cat, ls, sed -i, rm, sh) in subprocesses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.mount import (
    FUSE_UNAVAILABLE_REASON,
    MEMFS,
    Mounter,
    errno_of,
    live,
    run,
    wait_until,
)
from identity_helpers import IdentityServer

from memfs.core.model import Actor, Layout
from memfs.store import open_engine

IDN, TMPL = "idn_user42", "tmpl_support_agent"
PAIR = f"/v1/identities/{IDN}/templates/{TMPL}"
SETUP = Actor.user("test-setup")
WRITE_TIMEOUT_S = 10.0


@pytest.fixture
def mounter(identity_server: IdentityServer, tmp_path: Path) -> Iterator[Mounter]:
    """Real mounts, unmounted (and their logs checked) before the server stops."""
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)
    mounter = Mounter(tmp_path, identity_server.engine)
    try:
        yield mounter
    finally:
        mounter.close()


def ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def test_a_pair_session_mounts_flat_with_shadowing_and_copy_up(
    identity_server: IdentityServer, mounter: Mounter, tmp_path: Path
) -> None:
    engine = identity_server.engine
    team = engine.stores.create("Team Wiki", "What the team knows")
    engine.for_caller(actor=SETUP).memories.create(team.id, "/notes/shared.md", "team version\n")
    engine.for_caller(actor=SETUP).memories.create(team.id, "/guide.md", "use tabs\n")
    with identity_server.http() as http:
        ok(http.post(f"{PAIR}/mounts", json={"memory_store_id": team.id}))
        default_id = ok(http.post(f"{PAIR}/default_store"))["id"]
        engine.for_caller(actor=SETUP).memories.create(
            default_id, "/notes/shared.md", "my version\n"
        )
        session = ok(http.post("/v1/sessions", json={"identity_id": IDN, "template_id": TMPL}))
    mount = mounter.mount_remote(identity_server.url, session["token"], layout=None)
    assert mount.status["layout"] == "flat"
    assert run("ls", mount.path).stdout.split() == ["guide.md", "notes"]
    # The default store wins over the mounted store (shadowing).
    assert run("cat", mount / "notes/shared.md").stdout == "my version\n"
    assert run("cat", mount / "guide.md").stdout == "use tabs\n"
    # A write to the mounted store's file is copied up into the default store.
    run("sed", "-i", "s/tabs/spaces/", mount / "guide.md")
    assert run("cat", mount / "guide.md").stdout == "use spaces\n"
    wait_until(
        lambda: "/guide.md" in live(engine, default_id),
        "the copy-up in the default store",
        WRITE_TIMEOUT_S,
    )
    assert live(engine, default_id)["/guide.md"].content == "use spaces\n"
    assert live(engine, team.id)["/guide.md"].content == "use tabs\n"
    # New files go to the default store, at the root too (flat: the root takes files).
    run("sh", "-c", f"echo 'remember me' > {mount / 'todo.md'}")
    wait_until(
        lambda: "/todo.md" in live(engine, default_id), "the new file", WRITE_TIMEOUT_S
    )
    assert "/todo.md" not in live(engine, team.id)
    # Deleting a file that only the read-only store holds is refused.
    engine.for_caller(actor=SETUP).memories.create(team.id, "/policy.md", "no deleting\n")
    wait_until(lambda: (mount / "policy.md").exists(), "the team's new file", WRITE_TIMEOUT_S)
    assert errno_of(f"os.unlink({str(mount / 'policy.md')!r})") == "EROFS"
    # Deleting my copy of the shadowed file shows the team's again (no whiteouts).
    run("rm", mount / "notes/shared.md")
    wait_until(
        lambda: run("cat", mount / "notes/shared.md").stdout == "team version\n",
        "the team's file behind my deleted copy",
        WRITE_TIMEOUT_S,
    )
    database = str(identity_server.database)
    note = run(MEMFS, "prompt", "--mount", mount.path, "--database", database).stdout
    assert "All stores are merged into one directory tree" in note
    assert "creating anything directly in the mount root" not in note
    assert f'"default:{IDN}:{TMPL}" at {mount.path}/ (read-write)' in note
    assert f'"Team Wiki" at {mount.path}/ (read-only)' in note
    session_note = run(MEMFS, "prompt", "--session", session["id"], "--database", database)
    assert "All stores are merged into one directory tree" in session_note.stdout
    assert '"Team Wiki" at /data/.qoder/awareness/ (read-only)' in session_note.stdout
    mounter.unmount(mount)


def test_an_embedded_flat_mount_records_a_flat_session(memfs_home: Path, tmp_path: Path) -> None:
    """``memfs mount --layout flat`` on the database: its session says ``flat`` and every
    resource's mount path is the mount point itself (it used to say ``<root>/<slug>``)."""
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)
    with open_engine() as engine:
        mine = engine.stores.create("Mine")
        engine.stores.create("Theirs")
        mounter = Mounter(tmp_path, engine)
        try:
            mount = mounter.mount("Mine", "Theirs:ro", layout="flat")
            session = engine.sessions.get(mount.session_id)
            note = run(MEMFS, "prompt", "--session", session.id).stdout
            mounter.unmount(mount)
        finally:
            mounter.close()
        assert session.layout is Layout.FLAT
        assert [(r.memory_store_id == mine.id, r.mount_path) for r in session.resources] == [
            (True, str(mount.path)),
            (False, str(mount.path)),
        ]
        assert "All stores are merged into one directory tree" in note
        assert list(engine.iter_fsck_findings()) == []
