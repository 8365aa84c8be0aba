"""`memfs mount`, `memfs status`, `memfs umount`: readiness, sessions, stale mounts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from _support.mount import MEMFS, Mounter, live, run, versions, wait_until
from _support.scripts import script_command, script_env

from memfs.core.model import Access, Actor
from memfs.fuse import mounts
from memfs.store import Engine


def test_background_mount_returns_once_ready_and_umount_unmounts(
    mounter: Mounter, make_store, store_engine: Engine
) -> None:
    make_store("Notes", {"/hello.md": "hello\n"})
    mount = mounter.mount("Notes", background=True)
    # No waiting: `memfs mount` returned only after the mount was live.
    assert (mount / "notes" / "hello.md").read_text() == "hello\n"
    assert mount.log_file.exists()
    mounter.unmount(mount)
    assert not (mount.path / "notes").exists()


def test_umount_ends_the_mount_session(mounter: Mounter, make_store, store_engine) -> None:
    """An embedded mount's session lasts as long as the mount: once unmounted it is
    archived, so `memfs session list` does not show it as active forever."""
    make_store("Notes")
    mount = mounter.mount("Notes", background=True)
    session_id = json.loads(run(MEMFS, "status", mount.path, "--json").stdout)["session_id"]
    assert store_engine.sessions.get(session_id).archived_at is None
    mounter.unmount(mount)
    assert store_engine.sessions.get(session_id).archived_at is not None


def test_status_names_daemon_session_and_stores(mounter: Mounter, make_store, store_engine) -> None:
    notes = make_store("Notes")
    prefs = make_store("User Preferences")
    mount = mounter.mount("Notes", f"{prefs.id}:ro", cli=True)  # `memfs mount --foreground`
    completed = run(MEMFS, "status", mount.path, "--json")
    record = json.loads(completed.stdout)
    assert record["state"] == "running"
    assert record["pid"] == mount.pid
    assert record["session_id"].startswith("sesn_")
    assert [(s["id"], s["directory"], s["access"]) for s in record["stores"]] == [
        (notes.id, "notes", "read_write"),
        (prefs.id, "user-preferences", "read_only"),
    ]
    assert record["rejected_count"] == 0
    assert record["last_errors"] == []
    text = run(MEMFS, "status", mount.path).stdout
    assert f"daemon pid:   {mount.pid}" in text
    assert "user-preferences" in text
    # The session is real, with the attachments' access modes.
    session = store_engine.sessions.get(record["session_id"])
    assert [(r.memory_store_id, r.access) for r in session.resources] == [
        (notes.id, Access.READ_WRITE),
        (prefs.id, Access.READ_ONLY),
    ]


def test_status_of_a_path_that_is_not_mounted_exits_1(tmp_path, memfs_home) -> None:
    completed = run(MEMFS, "status", tmp_path, check=False)
    assert completed.returncode == 1
    assert "not mounted" in completed.stdout


def test_writes_are_attributed_to_the_mount_session(mount, store_engine: Engine) -> None:
    (mount / "notes" / "new.md").write_text("new\n")
    store_id = mount.status["stores"][0]["id"]
    [version] = [v for v in versions(store_engine, store_id) if v.path == "/new.md"]
    assert version.created_by == Actor.session(mount.session_id)


def _holds(pid: int, name: str) -> bool:
    """Whether process ``pid`` has a descriptor of a file called ``name`` open. A
    descriptor listed in /proc can close before its link is read (the interpreter
    starting up opens and closes files): it is skipped, not an error."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").endswith(name):
                return True
        except FileNotFoundError:
            continue
    return False


def test_umount_of_a_busy_mount_fails_and_leaves_it_mounted(
    mounter: Mounter, mount, store_engine
) -> None:
    holder = subprocess.Popen(
        script_command("hold_open", mount / "notes" / "hello.md", "a", "held\n"),
        env=script_env(), stdin=subprocess.PIPE,
    )
    try:
        wait_until(lambda: _holds(holder.pid, "hello.md"), "the holder to open the file")
        completed = run(MEMFS, "umount", mount.path, check=False)
        assert completed.returncode == 1
        assert "busy" in completed.stderr
        assert "--lazy" in completed.stderr
        assert mounts.is_mounted(str(mount.path))
    finally:
        holder.communicate(b"", timeout=10)
    # The write held open was not lost: it committed when its file was closed.
    store_id = mount.status["stores"][0]["id"]
    assert live(store_engine, store_id)["/hello.md"].content == "hello\nheld\n"
    mounter.unmount(mount)


def test_umount_cleans_up_a_stale_mount_whose_daemon_died(mounter: Mounter, mount) -> None:
    assert mount.process is not None
    mount.process.kill()
    mount.process.wait()
    assert mounts.is_stale(str(mount.path))
    completed = run(MEMFS, "umount", mount.path)
    assert "stale" in completed.stdout
    assert not mounts.is_mounted(str(mount.path))
    mount.unmounted = True
    # The status file of the dead daemon is gone too.
    assert "not mounted" in run(MEMFS, "status", mount.path, check=False).stdout


def test_mounting_over_a_stale_mount_replaces_it(mounter: Mounter, mount) -> None:
    """What a restart after a crash needs (systemd Restart=on-failure)."""
    assert mount.process is not None
    mount.process.kill()
    mount.process.wait()
    mount.unmounted = True
    assert mounts.is_stale(str(mount.path))
    again = mounter.mount("Notes", path=mount.path)
    again.expect_log("removing the stale mount")
    assert (again / "notes" / "hello.md").read_text() == "hello\n"


def test_sigterm_unmounts_cleanly(mounter: Mounter, mount) -> None:
    assert mount.process is not None
    mount.process.send_signal(signal.SIGTERM)
    assert mount.process.wait(timeout=30) == 0
    assert not mounts.is_mounted(str(mount.path))
    mount.unmounted = True


def _start_writer(path) -> subprocess.Popen[bytes]:
    """A process that writes to ``path``, says so, and closes the file when told."""
    writer = subprocess.Popen(
        script_command("hold_open", path, "w", "pending\n", "announce"), env=script_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == b"written\n"
    return writer


def test_sigterm_commits_pending_writes_before_exiting(mount, store_engine: Engine) -> None:
    store_id = mount.status["stores"][0]["id"]
    writer = _start_writer(mount / "notes" / "pending.md")
    assert "/pending.md" not in {m.path for m in store_engine.memories.all(store_id)}
    assert mount.process is not None
    mount.process.send_signal(signal.SIGTERM)
    assert mount.process.wait(timeout=30) == 0
    mount.unmounted = True
    assert store_engine.memories.get_by_path(store_id, "/pending.md").content == "pending\n"
    writer.communicate(b"", timeout=10)  # its close fails: the mount is gone


def test_lazy_umount_lets_open_files_finish(mounter: Mounter, mount, store_engine) -> None:
    store_id = mount.status["stores"][0]["id"]
    writer = _start_writer(mount / "notes" / "late.md")
    completed = run(MEMFS, "umount", "--lazy", mount.path)
    assert "detached" in completed.stdout
    assert not mounts.is_mounted(str(mount.path))
    out, _ = writer.communicate(b"", timeout=10)
    assert out == b""  # the close succeeded
    assert mount.process is not None
    assert mount.process.wait(timeout=30) == 0
    mount.unmounted = True
    assert store_engine.memories.get_by_path(store_id, "/late.md").content == "pending\n"


def test_umount_of_a_path_that_is_not_mounted_fails(tmp_path, memfs_home) -> None:
    completed = run(MEMFS, "umount", tmp_path, check=False)
    assert completed.returncode == 1
    assert "is not mounted" in completed.stderr


@pytest.mark.parametrize(
    ("store_argument", "message"),
    [("no-such-store", "no-such-store"), ("Archived", "archived")],
)
def test_mount_errors_are_reported_and_nothing_is_mounted(
    fuse_available, tmp_path, make_store, store_engine: Engine, store_argument: str, message: str
) -> None:
    archived = make_store("Archived")
    store_engine.stores.archive(archived.id)
    target = tmp_path / "mnt"
    target.mkdir()
    started = time.monotonic()
    completed = run(MEMFS, "mount", target, "--store", store_argument, check=False)
    assert completed.returncode == 1
    assert message in completed.stderr.lower()
    assert not mounts.is_mounted(str(target))
    assert time.monotonic() - started < 30


def test_mount_on_a_missing_directory_fails(fuse_available, tmp_path, make_store) -> None:
    make_store("Notes")
    completed = run(MEMFS, "mount", tmp_path / "nowhere", "--store", "Notes", check=False)
    assert completed.returncode == 1
    assert "is not a directory" in completed.stderr


def test_mount_on_a_non_empty_directory_is_refused_unless_nonempty(
    mounter: Mounter, make_store, tmp_path
) -> None:
    make_store("Notes", {"/hello.md": "hello\n"})
    target = tmp_path / "busy"
    target.mkdir()
    (target / "mine.txt").write_text("not memfs\n")
    for extra in ((), ("--foreground",)):
        completed = run(MEMFS, "mount", target, "--store", "Notes", *extra, check=False)
        assert completed.returncode == 1
        assert completed.stderr.splitlines() == [
            f"memfs: error: {target} is not empty (its files would be hidden while "
            "mounted); give --nonempty to mount over them anyway"
        ]
        assert not mounts.is_mounted(str(target))
    mount = mounter.mount("Notes", path=target, background=True, extra_args=("--nonempty",))
    assert (mount / "notes" / "hello.md").read_text() == "hello\n"
    mounter.unmount(mount)
    assert (target / "mine.txt").read_text() == "not memfs\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs to refuse needs root")
def test_umount_refuses_a_mount_that_is_not_memfs(tmp_path, memfs_home) -> None:
    """root may unmount anything; `memfs umount` unmounts only memfs mounts (a trial
    unmounted a tmpfs with it)."""
    target = tmp_path / "tmpfs"
    target.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "none", str(target)], check=True)
    try:
        (target / "file").write_text("kept\n")
        completed = run(MEMFS, "umount", target, check=False)
        assert completed.returncode == 1
        assert completed.stderr == (
            f"memfs: error: {target} is not a memfs mount (it is tmpfs); nothing was "
            "unmounted\n"
        )
        assert (target / "file").read_text() == "kept\n"
        assert mounts.mount_points()[str(target)] == "tmpfs"
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_umount_refuses_a_timeout_under_a_second(mount) -> None:
    completed = run(MEMFS, "umount", mount.path, "--timeout", "0.001", check=False)
    assert completed.returncode == 2
    assert "--timeout" in completed.stderr
    assert mounts.is_mounted(str(mount.path))
