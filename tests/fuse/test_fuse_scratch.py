"""Scratch files at unmount: they live only in the mount (SPEC §4 atomic save), but
"nothing a user wrote is ever silently lost": the ones still holding bytes when the
mount ends are saved under the mount's local state, logged and listed by memfs status."""

from __future__ import annotations

import json
import os
from pathlib import Path

from _support.mount import MEMFS, Mounter, live, run


def test_scratch_files_holding_bytes_are_saved_at_unmount(
    mounter: Mounter, make_store, store_engine, memfs_home: Path
) -> None:
    store = make_store("Notes", {"/hello.md": "hello\n"})
    mount = mounter.mount("Notes")
    mount.expect_log("scratch file /notes/draft.tmp was never saved to memory")
    session_id = mount.session_id
    notes = mount / "notes"
    (notes / "draft.tmp").write_text("unsaved draft\n")
    (notes / "4913").write_bytes(b"")  # empty: nothing to save
    os.rename(notes / "hello.md", notes / "hello.md~")  # parked: the store still has it
    mounter.unmount(mount)
    saved = sorted((memfs_home / "rejected" / session_id).iterdir())
    assert [p.name.split("-", 1)[1] for p in saved] == ["draft.tmp"]
    assert saved[0].read_text() == "unsaved draft\n"
    log = mount.log_file.read_text()
    [line] = [line for line in log.splitlines() if "draft.tmp" in line]
    assert " WARNING " in line
    assert str(saved[0]) in line
    assert sorted(live(store_engine, store.id)) == ["/hello.md"]
    # memfs status lists it even though the mount is gone.
    completed = run(MEMFS, "status", mount.path, check=False)
    assert completed.returncode == 1
    assert "/notes/draft.tmp" in completed.stdout
    assert str(saved[0]) in completed.stdout
    record = json.loads(run(MEMFS, "status", mount.path, "--json", check=False).stdout)
    assert [(e["path"], e["saved_to"]) for e in record["saved_scratch"]] == [
        ("/notes/draft.tmp", str(saved[0]))
    ]
