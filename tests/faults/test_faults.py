"""Faults lose nothing (SPEC §4: nothing is silently lost), with real processes: a
``memfs serve`` killed with SIGKILL and restarted on the same port, mount daemons killed
with SIGKILL, two mounts racing on one file. Each test ends with ``fsck`` clean on the
server's database (the ``mounter`` fixture)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from _support.mount import (
    COMMAND_TIMEOUT_S,
    MEMFS,
    Mount,
    Mounter,
    errno_of,
    live,
    run,
    run_script,
    versions,
    wait_until,
)
from _support.scripts import script_command, script_env
from faults_helpers import (
    PROPAGATION_DEADLINE_S,
    Server,
    backend_status,
    kill_daemon,
    memfs_status,
    mount_remote,
    reads,
    wait_live,
    wait_outbox_empty,
)

from memfs.core.model import MemoryStore, Operation
from memfs.fuse import mounts
from memfs.fuse.status import status_path
from memfs.remote.outbox import read_pending
from memfs.store import Engine

WRITES = 50
KILL_AFTER = 15  # the server dies while the writer goes on
PAUSE_AFTER = 35  # the writer waits here until the server is back



def lines(count: int) -> str:
    return "".join(f"line {i:02d}\n" for i in range(count))


def contents_in_order(engine: Engine, store_id: str, memory_id: str) -> list[str]:
    return [
        engine.versions.get(store_id, v.id).content or ""
        for v in versions(engine, store_id, memory_id)
    ]


def test_a_server_killed_mid_stream_of_writes_loses_none_and_repeats_none(
    server: Server,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_remote_mount: Callable[..., Mount],
) -> None:
    notes = make_store("Notes")
    mount = make_remote_mount(notes)
    mount.expect_log("the server is unreachable")
    target = mount / "notes/stream.md"
    writer = subprocess.Popen(
        script_command("stream_writer", target, WRITES, PAUSE_AFTER), env=script_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert writer.stdout is not None
    assert writer.stdin is not None
    done = -1
    try:
        while done < PAUSE_AFTER - 1:
            line = writer.stdout.readline()
            assert line, f"the writer stopped: {writer.wait()} {writer.stderr}"
            done = int(line)
            if done == KILL_AFTER - 1:
                server.kill()  # while the writer keeps writing
        # The writes made since the kill returned from close() all the same: queued.
        wait_until(lambda: backend_status(mount)["outbox_depth"] > 0, "writes in the outbox")
        assert backend_status(mount)["server_state"] == "unreachable"
        server.start()  # the same port
        writer.stdin.write("go\n")
        writer.stdin.flush()
        out, err = writer.communicate(timeout=COMMAND_TIMEOUT_S)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, err
    assert out.split()[-1] == str(WRITES - 1)

    wait_outbox_empty(mount)
    memory = store_engine.memories.get_by_path(notes.id, "/stream.md")
    assert memory.content == lines(WRITES)
    # Every close made exactly one version, in the order of the closes.
    assert contents_in_order(store_engine, notes.id, memory.id) == [
        lines(count) for count in range(1, WRITES + 1)
    ]
    assert [v.operation for v in versions(store_engine, notes.id, memory.id)] == [
        Operation.CREATED, *[Operation.MODIFIED] * (WRITES - 1)
    ]
    assert target.read_text() == lines(WRITES)
    assert list(live(store_engine, notes.id)) == ["/stream.md"]  # no conflict copy
    status = mount.status
    assert status["conflict_count"] == 0
    assert status["rejected_count"] == 0
    assert any("unreachable" in e["message"] for e in status["last_errors"])


def test_a_daemon_killed_with_writes_in_its_outbox_replays_them_after_a_remount(
    mounter: Mounter,
    server: Server,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_session: Callable[..., str],
    memfs_home: Path,
) -> None:
    notes = make_store("Notes", {"/log.md": "start\n"})
    token = make_session(notes)
    first = mount_remote(mounter, server, token)
    session_id = first.session_id
    first.expect_log("the server is unreachable")
    assert (first / "notes/log.md").read_text() == "start\n"  # cached: appendable offline
    server.kill()

    for i in range(3):
        with open(first / "notes/log.md", "a") as file:
            file.write(f"offline {i}\n")
    (first / "notes/new.md").write_text("created offline\n")
    (first / "notes/log.md").rename(first / "notes/renamed.md")
    # close() returned 0: each write is in the durable outbox.
    outbox = memfs_home / "outbox" / session_id
    assert len(read_pending(outbox)) == 5
    kill_daemon(first)
    assert errno_of(f"os.stat({str(first / 'notes')!r})") == "ENOTCONN"
    assert "stale (daemon gone)" in run(MEMFS, "status", first.path, check=False).stdout

    # Remount while the server is still down: the daemon waits for it.
    second = mount_remote(mounter, server, token, path=first.path, wait=False)
    second.expect_log("waiting up to", "removing the stale mount", "the server is unreachable")
    wait_until(lambda: "waiting up to" in second.log_file.read_text(),
               "the new daemon to wait for the server")
    server.start()
    wait_live(second)
    wait_outbox_empty(second)

    assert {p: m.content for p, m in live(store_engine, notes.id).items()} == {
        "/renamed.md": "start\n" + "".join(f"offline {i}\n" for i in range(3)),
        "/new.md": "created offline\n",
    }
    renamed = store_engine.memories.get_by_path(notes.id, "/renamed.md")
    assert contents_in_order(store_engine, notes.id, renamed.id) == [
        "start\n" + "".join(f"offline {i}\n" for i in range(count)) for count in range(4)
    ] + ["start\n" + "".join(f"offline {i}\n" for i in range(3))]  # the rename
    assert read_pending(outbox) == []
    assert sorted(os.listdir(second / "notes")) == ["new.md", "renamed.md"]
    assert (second / "notes/new.md").read_text() == "created offline\n"


def test_two_mounts_racing_on_one_file_keep_both_contents(
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_remote_mount: Callable[..., Mount],
) -> None:
    notes = make_store("Notes", {"/plan.md": "base\n"})
    first = make_remote_mount(notes)
    second = make_remote_mount(notes)
    second.expect_log("conflict: /plan.md")
    # Both open the same version; the first close wins the head.
    run_script("two_writers", first / "notes/plan.md", second / "notes/plan.md")

    files = {p: m.content for p, m in live(store_engine, notes.id).items()}
    assert files.pop("/plan.md") == "from the first mount\n"
    ((copy_path, copy),) = files.items()
    assert copy == "from the second mount\n"
    assert copy_path.startswith("/plan.conflict-")
    assert copy_path.endswith(f"-{second.session_id}.md")
    name = copy_path[1:]
    for mount in (first, second):
        wait_until(reads(mount / "notes" / name, copy), f"the conflict copy in {mount.path}",
                   PROPAGATION_DEADLINE_S)
        wait_until(reads(mount / "notes/plan.md", "from the first mount\n"),
                   f"the head in {mount.path}", PROPAGATION_DEADLINE_S)
    assert second.status["conflict_count"] == 1
    assert f"/plan.md -> {copy_path}" in memfs_status(second)
    assert "conflict: /plan.md was changed by another writer" in second.log_file.read_text()


def test_two_mounts_writing_one_file_while_the_server_is_down_keep_both(
    server: Server,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_remote_mount: Callable[..., Mount],
) -> None:
    notes = make_store("Notes", {"/plan.md": "base\n"})
    first = make_remote_mount(notes)
    second = make_remote_mount(notes)
    for mount in (first, second):
        mount.expect_log("the server is unreachable", "conflict on /plan.md")
    server.kill()
    (first / "notes/plan.md").write_text("first, offline\n")
    (second / "notes/plan.md").write_text("second, offline\n")
    server.start()
    for mount in (first, second):
        wait_outbox_empty(mount)

    files = {p: m.content or "" for p, m in live(store_engine, notes.id).items()}
    head = files.pop("/plan.md")
    ((copy_path, copy),) = files.items()
    assert {head, copy} == {"first, offline\n", "second, offline\n"}
    loser = first if copy == "first, offline\n" else second
    assert copy_path.endswith(f"-{loser.session_id}.md")
    wait_until(lambda: loser.status["conflict_count"] == 1, "the conflict in memfs status")
    event = loser.status["conflicts"][0]
    assert (event["path"], event["conflict_path"]) == ("/plan.md", copy_path)
    loser_status = memfs_status(loser)
    assert "conflict" in loser_status
    assert copy_path in loser_status
    for mount in (first, second):
        wait_until(reads(mount / "notes" / copy_path[1:], copy),
                   f"the conflict copy in {mount.path}")


def test_umount_cleans_up_a_mount_whose_daemon_is_gone(
    make_store: Callable[..., MemoryStore],
    make_remote_mount: Callable[..., Mount],
) -> None:
    notes = make_store("Notes", {"/a.md": "a\n"})
    mount = make_remote_mount(notes)
    kill_daemon(mount)
    assert mounts.is_stale(str(mount.path))

    out = run(MEMFS, "umount", mount.path).stdout
    assert "removed stale mount" in out
    assert not mounts.is_mounted(str(mount.path))
    assert not status_path(str(mount.path)).exists()
    assert os.listdir(mount.path) == []
    mount.unmounted = True
