"""A redaction erases the memory's path from the mount's own files too (SPEC §2: a
redaction erases content and path everywhere memfs keeps them): its log and status file
under ``$MEMFS_HOME`` hold no trace of the name."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from _support.mount import MEMFS, Mounter, exists, run, wait_until

from memfs.core.model import DeleteMode
from memfs.home import hold_mount_lock, scrub_file, scrub_stopped_mounts
from memfs.store import Engine

SECRET = "top-secret-name-XYZ"


def _files_holding(needle: str, directory: Path) -> list[str]:
    """``grep -ral needle directory``: the files whose content holds ``needle``."""
    result = subprocess.run(
        ["grep", "-ral", needle, str(directory)], capture_output=True, text=True, check=False
    )
    assert result.returncode in (0, 1), result.stderr
    return result.stdout.split()


def test_a_redaction_scrubs_the_path_from_the_mount_log_and_status(
    mounter: Mounter, make_store, store_engine: Engine, memfs_home: Path
) -> None:
    store = make_store("Notes", {"/hello.md": "hello\n"})
    mount = mounter.mount("Notes", background=True)
    assert mount.log_file.is_relative_to(memfs_home)
    secret_file = mount / "notes" / f"{SECRET}.md"
    secret_file.write_text("the content\n")
    wait_until(lambda: f"committed /notes/{SECRET}.md" in mount.log_file.read_text(),
               "the commit to be logged")
    memory = store_engine.memories.get_by_path(store.id, f"/{SECRET}.md", with_content=False)
    store_engine.memories.delete(store.id, memory.id, mode=DeleteMode.REDACT)
    wait_until(lambda: not exists(secret_file), "the mount to apply the redaction")

    wait_until(lambda: not _files_holding(SECRET, memfs_home),
               f"no file under $MEMFS_HOME to hold {SECRET!r}")
    log = mount.log_file.read_text()
    assert f"committed <redacted {memory.id}> (" in log
    # The daemon still logs to the (new) log file afterwards.
    (mount / "notes" / "after.md").write_text("x\n")
    wait_until(lambda: "committed /notes/after.md" in mount.log_file.read_text(),
               "a later commit to be logged in the scrubbed file")


def test_a_redaction_scrubs_every_earlier_path_from_the_log_of_a_stopped_mount(
    mounter: Mounter, make_store, store_engine: Engine, memfs_home: Path
) -> None:
    """No daemon is there to follow the change feed: the redacting command scrubs the
    stopped mount's log itself, with every path the memory ever had (before a rename
    too), and leaves the log of a mount still running to its daemon."""
    make_store("Notes", {"/hello.md": "hello\n"})
    stopped = mounter.mount("Notes", background=True)
    first = stopped / "notes" / f"{SECRET}-draft.md"
    first.write_text("the content\n")
    first.rename(stopped / "notes" / f"{SECRET}.md")
    wait_until(lambda: f"renamed to /{SECRET}.md" in stopped.log_file.read_text(),
               "the rename to be logged")
    mounter.unmount(stopped)
    assert f"{SECRET}-draft" in stopped.log_file.read_text()

    run(MEMFS, "memory", "rm", "Notes", f"/{SECRET}.md", "--mode", "redact")

    assert not _files_holding(SECRET, memfs_home)
    assert "<redacted mem_" in stopped.log_file.read_text()


def test_the_log_of_a_running_daemon_is_left_to_it(tmp_path: Path) -> None:
    """A daemon holds the lock beside its log for its lifetime; the log is then never
    rewritten from outside (the daemon appends to it)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    running, stopped = logs / "mount-a.log", logs / "mount-b.log"
    for log in (running, stopped):
        log.write_text("committed /notes/secret.md\n")
    held = hold_mount_lock(running)
    assert held is not None
    try:
        before = running.stat().st_ino
        assert hold_mount_lock(running, wait_s=0.05) is None  # another daemon's lock
        assert scrub_stopped_mounts({"/notes/secret.md": "<redacted mem_1>"}, tmp_path) == 1
        assert running.stat().st_ino == before
        assert "secret" in running.read_text()
        assert stopped.read_text() == "committed <redacted mem_1>\n"
    finally:
        os.close(held)
    assert scrub_stopped_mounts({"/notes/secret.md": "<redacted mem_1>"}, tmp_path) == 1
    assert "secret" not in running.read_text()


def test_scrub_file_loses_no_line_appended_meanwhile(tmp_path: Path) -> None:
    """Lines appended through an fd (as the daemon's stderr) while the file is scrubbed
    again and again all end up in the file at the path, scrubbed, in order."""
    path = tmp_path / "mount.log"
    path.write_bytes(b"")
    appender = os.open(path, os.O_WRONLY | os.O_APPEND)
    lock = threading.Lock()  # the logging handler's lock
    lines = 2000
    done = threading.Event()
    scrubbed_once = threading.Event()

    def write() -> None:
        for n in range(lines):
            if n == lines // 10:
                # A busy machine may run this whole loop before the scrubber's first
                # turn: go on only once a scrub happened while lines were coming.
                scrubbed_once.wait(timeout=60)
            with lock:
                os.write(appender, f"{n} committed /notes/secret.md\n".encode())
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    scrubs = 0
    try:
        while not done.is_set():
            with lock:
                scrubs += scrub_file(path, {"/notes/secret.md": "<redacted mem_1>"},
                                     redirect_fds=(appender,))
            if scrubs:
                scrubbed_once.set()
        writer.join()
        with lock:
            scrub_file(path, {"/notes/secret.md": "<redacted mem_1>"}, redirect_fds=(appender,))
        os.write(appender, b"after\n")
    finally:
        writer.join()
        os.close(appender)
    assert scrubs >= 1
    expected = [f"{n} committed <redacted mem_1>" for n in range(lines)] + ["after"]
    assert path.read_text().splitlines() == expected
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_scrub_file_leaves_a_file_without_the_strings_alone(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text("nothing to see\n")
    before = path.stat().st_ino
    assert not scrub_file(path, {"/secret.md": "<redacted mem_1>"})
    assert path.stat().st_ino == before
    assert not scrub_file(tmp_path / "missing", {"/secret.md": "x"})
