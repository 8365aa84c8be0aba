"""The mount daemon runs the installed memfs, never a ``memfs`` package that happens to
sit in the directory ``memfs mount`` is run from (``python -P``): that would run
someone else's code as the mounting user, root included."""

from __future__ import annotations

import subprocess
from pathlib import Path

from _support.mount import MEMFS, read_status, run

from memfs.store import Engine


def test_a_memfs_package_in_the_working_directory_is_never_imported(
    tmp_path: Path, make_store, store_engine: Engine
) -> None:
    make_store("Notes", {"/hello.md": "hello\n"})
    planted = tmp_path / "planted"
    (planted / "memfs" / "cli").mkdir(parents=True)
    marker = tmp_path / "PWNED"
    (planted / "memfs" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').write('planted code ran')\n"
    )
    (planted / "memfs" / "cli" / "__init__.py").write_text("")
    (planted / "memfs" / "cli" / "mounting.py").write_text("raise SystemExit('planted')\n")
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()

    completed = subprocess.run(
        [MEMFS, "mount", str(mountpoint), "--store", "Notes"],
        cwd=planted, capture_output=True, text=True, timeout=120, check=False,
    )
    record = read_status(str(mountpoint))
    try:
        assert completed.returncode == 0, completed.stderr
        assert (mountpoint / "notes" / "hello.md").read_text() == "hello\n"
        assert not marker.exists()
    finally:
        if record is not None:
            run(MEMFS, "umount", mountpoint)
