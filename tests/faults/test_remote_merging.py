"""SPEC §4 concurrent writers across both backends: appenders on two embedded mounts
and a remote mount (``memfs mount --api`` against a real ``memfs serve``) of one store
lose no line and make no conflict copy: every save that meets another's is merged."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from _support.mount import Mount, Mounter, live, versions
from _support.scripts import script_command, script_env
from faults_helpers import Server, memfs_status, wait_outbox_empty

from memfs.core.model import MemoryStore
from memfs.store import Engine

LINES = 100


def test_three_appenders_on_embedded_and_remote_mounts_keep_every_line(
    mounter: Mounter,
    server: Server,
    store_engine: Engine,
    make_store: Callable[..., MemoryStore],
    make_remote_mount: Callable[..., Mount],
) -> None:
    store = make_store("Notes", {"/log.md": "start\n"})
    memory_id = store_engine.memories.get_by_path(store.id, "/log.md", with_content=False).id
    first, second = mounter.mount("Notes"), mounter.mount("Notes")
    remote = make_remote_mount(store)
    mounts = {"a": first, "b": second, "r": remote}
    processes = [
        subprocess.Popen(
            script_command("merge_writers", "append_lines", mount / "notes" / "log.md", tag,
                           LINES),
            env=script_env(), stdout=subprocess.DEVNULL,
        )
        for tag, mount in mounts.items()
    ]
    assert [p.wait(timeout=600) for p in processes] == [0, 0, 0]
    wait_outbox_empty(remote)
    memories = live(store_engine, store.id)
    assert list(memories) == ["/log.md"]  # no conflict copy
    assert memories["/log.md"].id == memory_id
    lines = (memories["/log.md"].content or "").splitlines()
    assert lines[0] == "start"
    for tag in mounts:  # every line once, each appender's in its order
        assert [line for line in lines if line.startswith(f"{tag}-")] == [
            f"{tag}-{i}" for i in range(1, LINES + 1)
        ]
    assert len(lines) == 1 + 3 * LINES
    # One save, one version: each close made exactly one, merges included.
    assert len(versions(store_engine, store.id, memory_id)) == 1 + 3 * LINES
    for mount in mounts.values():
        status = mount.status
        assert status["conflict_count"] == 0
        assert f"merges: {status['merge_count']}\n" in memfs_status(mount)
