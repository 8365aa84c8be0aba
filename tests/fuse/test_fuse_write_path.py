"""What a close costs (issue 17): the mount's own commits come back to it through the
change feed, and must not make it fetch the memory they wrote.

``cp`` creates each file with ``O_EXCL`` (committed at once, an empty version), then
writes and closes it (the content version). By the time the feed delivers the entry of
the empty version, the file already shows the newer one: without knowing its own
versions the mount fetched every copied memory back from the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _support.mount import Mount, run, wait_until

from memfs.store import Engine

FILES = 20


def _fetches(mount: Mount) -> int | None:
    kernel: dict[str, Any] | None = mount.status.get("kernel_cache")
    return None if kernel is None else int(kernel["change_fetches"])


def test_cp_of_new_files_fetches_nothing_back(
    mount: Mount, store_engine: Engine, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for index in range(FILES):
        (source / f"note-{index}.md").write_text(f"note {index}\n")
    run("cp", "-r", source, mount / "notes" / "copied")
    store_id = mount.status["stores"][0]["id"]
    copied = {
        m.path
        for m in store_engine.all_memories(store_id)
        if m.path.startswith("/copied/")
    }
    assert len(copied) == FILES
    # A change made elsewhere needs one fetch. The feed is applied in order, so once
    # the status counts it, every entry of the copy before it was applied too.
    store_engine.create_memory(store_id, "/elsewhere.md", "from the API\n", actor=None)
    fetches = wait_until(lambda: _fetches(mount), "the change made elsewhere in the status")
    assert fetches == 1, f"{fetches - 1} of the mount's own writes were fetched back"
    assert (mount / "notes" / "elsewhere.md").read_text() == "from the API\n"
