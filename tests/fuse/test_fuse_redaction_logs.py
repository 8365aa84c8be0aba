"""A redaction erases the memory's path from the mount's own files too (SPEC §2, issue 11
item 4): its log and status file under ``$MEMFS_HOME`` hold no trace of the name."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from _support.mount import Mounter, exists, wait_until

from memfs.local import scrub_file
from memfs.model import DeleteMode
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
    memory = store_engine.get_memory_by_path(store.id, f"/{SECRET}.md", with_content=False)
    store_engine.delete_memory(store.id, memory.id, actor=None, mode=DeleteMode.REDACT)
    wait_until(lambda: not exists(secret_file), "the mount to apply the redaction")

    wait_until(lambda: not _files_holding(SECRET, memfs_home),
               f"no file under $MEMFS_HOME to hold {SECRET!r}")
    log = mount.log_file.read_text()
    assert f"committed <redacted {memory.id}> (" in log
    # The daemon still logs to the (new) log file afterwards.
    (mount / "notes" / "after.md").write_text("x\n")
    wait_until(lambda: "committed /notes/after.md" in mount.log_file.read_text(),
               "a later commit to be logged in the scrubbed file")


def test_scrub_file_loses_no_line_appended_meanwhile(tmp_path: Path) -> None:
    """Lines appended through an fd (as the daemon's stderr) while the file is scrubbed
    again and again all end up in the file at the path, scrubbed, in order."""
    path = tmp_path / "mount.log"
    path.write_bytes(b"")
    appender = os.open(path, os.O_WRONLY | os.O_APPEND)
    lock = threading.Lock()  # the logging handler's lock
    lines = 2000
    done = threading.Event()

    def write() -> None:
        for n in range(lines):
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
