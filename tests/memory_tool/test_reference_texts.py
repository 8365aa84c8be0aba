"""The memory tool answers what the SDK's reference implementation answers.

The same commands, built with the SDK's own command types, go to
``BetaLocalFilesystemMemoryTool`` (a local folder) and to ``MemfsMemoryTool`` (one memfs
store, flat at ``/memories``); every result and every error text must be the same, word
for word. Only the sizes ``view`` prints for directories are masked (a local folder's
depend on its filesystem; memfs prints ``4K``, the size of an ext4 directory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
from memory_helpers import live, mask_directory_sizes, run, versions

from memfs.memory_tool import MemfsMemoryTool
from memfs.store import Engine

# (command, fields): every command, and every error case of the reference.
SEQUENCE: list[tuple[str, dict[str, Any]]] = [
    ("create", {"path": "/memories/notes.md", "file_text": "alpha\nbeta\ngamma\n"}),
    ("create", {"path": "/memories/projects/plan.md", "file_text": "# Plan\n\n- one\n- two\n"}),
    ("create", {"path": "/memories/projects/deep/er/x.md", "file_text": "x"}),
    ("create", {"path": "/memories/.hidden.md", "file_text": "secret"}),
    ("create", {"path": "/memories/crlf.txt", "file_text": "a\r\nb\r\n"}),
    ("create", {"path": "/memories/twice.md", "file_text": "a a\nb\na\n"}),
    ("create", {"path": "/memories/notes.md", "file_text": "again"}),  # exists
    ("create", {"path": "/memories/projects", "file_text": "x"}),  # a directory
    ("view", {"path": "/memories"}),
    ("view", {"path": "/memories/projects"}),
    ("view", {"path": "/memories/notes.md"}),
    ("view", {"path": "/memories/notes.md", "view_range": [2, -1]}),
    ("view", {"path": "/memories/notes.md", "view_range": [2, 2]}),
    ("view", {"path": "/memories/crlf.txt"}),
    ("view", {"path": "/memories/missing.md"}),
    ("view", {"path": "/etc/passwd"}),
    ("view", {"path": "/memories/../etc/passwd"}),
    ("str_replace", {"path": "/memories/notes.md", "old_str": "beta", "new_str": "BETA"}),
    ("str_replace", {"path": "/memories/notes.md", "old_str": "delta", "new_str": "x"}),
    ("str_replace", {"path": "/memories/twice.md", "old_str": "a", "new_str": "x"}),
    ("str_replace", {"path": "/memories/missing.md", "old_str": "a", "new_str": "b"}),
    ("str_replace", {"path": "/memories/projects", "old_str": "a", "new_str": "b"}),
    ("str_replace", {"path": "/memories/notes.md", "old_str": "BETA", "new_str": "beta\nmore"}),
    ("insert", {"path": "/memories/notes.md", "insert_line": 0, "insert_text": "top\n"}),
    ("insert", {"path": "/memories/notes.md", "insert_line": 5, "insert_text": "end"}),
    ("insert", {"path": "/memories/notes.md", "insert_line": 99, "insert_text": "x"}),
    ("insert", {"path": "/memories/notes.md", "insert_line": -1, "insert_text": "x"}),
    ("insert", {"path": "/memories/crlf.txt", "insert_line": 1, "insert_text": "mid"}),
    ("insert", {"path": "/memories/x/missing.md", "insert_line": 0, "insert_text": "x"}),
    ("insert", {"path": "/memories/projects", "insert_line": 0, "insert_text": "x"}),
    ("view", {"path": "/memories/notes.md"}),
    ("view", {"path": "/memories/crlf.txt"}),
    ("rename", {"old_path": "/memories/notes.md", "new_path": "/memories/projects/notes.md"}),
    ("rename", {"old_path": "/memories/twice.md", "new_path": "/memories/crlf.txt"}),
    ("rename", {"old_path": "/memories/missing.md", "new_path": "/memories/other.md"}),
    ("rename", {"old_path": "/memories", "new_path": "/memories/x"}),
    ("rename", {"old_path": "/memories/projects", "new_path": "/memories/archive/projects"}),
    ("view", {"path": "/memories"}),
    ("delete", {"path": "/memories/archive/projects/deep"}),
    ("delete", {"path": "/memories/twice.md"}),
    ("delete", {"path": "/memories/twice.md"}),
    ("delete", {"path": "/memories"}),
    ("delete", {"path": "/tmp/x"}),
    ("view", {"path": "/memories"}),
    ("view", {"path": "/memories/archive/projects/notes.md"}),
]


def test_every_result_and_error_text_is_the_reference_one(engine: Engine, tmp_path: Path) -> None:
    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "reference"))
    store = engine.stores.create("Notes")
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as memfs_tool:
        for name, fields in SEQUENCE:
            viewed = fields.get("path", "")
            expected = mask_directory_sizes(run(reference, name, **fields), viewed)
            before = len(versions(engine, store.id))
            got = mask_directory_sizes(run(memfs_tool, name, **fields), viewed)
            assert got == expected, f"{name} {fields}"
            if got[0] == "error":  # a refusal changes nothing
                assert len(versions(engine, store.id)) == before, f"{name} {fields}"
    # The folder and the store hold the same files (hidden ones included).
    folder = tmp_path / "reference" / "memories"
    files = {
        "/" + str(p.relative_to(folder)): p.read_bytes().decode()
        for p in folder.rglob("*")
        if p.is_file()
    }
    assert live(engine, store.id) == files


def test_directories_show_the_size_of_an_ext4_directory(engine: Engine) -> None:
    engine.stores.create("Notes")
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        run(tool, "create", path="/memories/a/b.md", file_text="12345")
        assert run(tool, "view", path="/memories") == (
            "ok",
            "Here're the files and directories up to 2 levels deep in /memories, excluding "
            "hidden items:\n4K\t/memories\n4K\t/memories/a/\n5B\t/memories/a/b.md",
        )
