"""The memory tool on an embedded store: versions and their attribution, the limits and
rules of SPEC §1 in the tool's words, read-only and archived stores, several stores, the
precondition of edits, and the async tool on trio."""

from __future__ import annotations

import pytest
from _support.scripts import script_process
from memory_helpers import InterferingAccess, arun, live, run, versions

from memfs.core.config import MAX_CONTENT_BYTES
from memfs.core.model import Access, ActorType, Operation
from memfs.memory_tool import AsyncMemfsMemoryTool, MemfsMemoryTool, MemoryFiles
from memfs.memory_tool.files import MAX_EDIT_ATTEMPTS
from memfs.memory_tool.port import open_embedded
from memfs.store import Engine

READ_ONLY_TEXT = "Cannot modify {path}: the memory store 'Team' is attached read-only"


def test_every_mutating_command_is_one_version_of_the_tool_session(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        steps = [
            ("create", {"path": "/memories/a.md", "file_text": "one\ntwo\n"}, Operation.CREATED),
            (
                "str_replace",
                {"path": "/memories/a.md", "old_str": "two", "new_str": "2"},
                Operation.MODIFIED,
            ),
            (
                "insert",
                {"path": "/memories/a.md", "insert_line": 1, "insert_text": "1.5"},
                Operation.MODIFIED,
            ),
            (
                "rename",
                {"old_path": "/memories/a.md", "new_path": "/memories/b/a.md"},
                Operation.MODIFIED,
            ),
            ("delete", {"path": "/memories/b/a.md"}, Operation.DELETED),
        ]
        for name, fields, operation in steps:
            before = versions(engine, store.id)
            assert run(tool, name, **fields)[0] == "ok"
            after = versions(engine, store.id)
            assert len(after) == len(before) + 1, name
            assert after[-1].operation is operation
        written = versions(engine, store.id)
    actors = {v.created_by for v in written}
    assert len(actors) == 1
    (actor,) = actors
    assert actor is not None
    assert actor.type is ActorType.SESSION
    assert engine.sessions.get(actor.id).resources[0].memory_store_id == store.id
    # A rename keeps the id; the delete is a soft delete (restorable).
    assert len({v.memory_id for v in written}) == 1
    assert [v.path for v in written] == ["/a.md"] * 3 + ["/b/a.md"] * 2
    assert engine.memories.deleted(store.id)[0].id == written[0].memory_id


def test_an_edit_that_changes_nothing_writes_no_version(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    engine.memories.create(store.id, "/a.md", "same\n")
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        outcome = run(tool, "str_replace", path="/memories/a.md", old_str="same", new_str="same")
    assert outcome[0] == "ok"
    assert len(versions(engine, store.id)) == 1


def test_directory_delete_and_rename_write_one_version_per_memory(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    for path in ("/d/a.md", "/d/e/b.md", "/keep.md"):
        engine.memories.create(store.id, path, path)
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        assert run(tool, "rename", old_path="/memories/d", new_path="/memories/x/d") == (
            "ok",
            "Successfully renamed /memories/d to /memories/x/d",
        )
        assert live(engine, store.id) == {
            "/x/d/a.md": "/d/a.md",
            "/x/d/e/b.md": "/d/e/b.md",
            "/keep.md": "/keep.md",
        }
        assert len(versions(engine, store.id)) == 5
        assert run(tool, "delete", path="/memories/x") == ("ok", "Successfully deleted /memories/x")
    assert live(engine, store.id) == {"/keep.md": "/keep.md"}
    assert [v.operation for v in versions(engine, store.id)[5:]] == [Operation.DELETED] * 2


@pytest.mark.parametrize(
    ("file_text", "expected"),
    [
        (
            "text\x00with a NUL",
            "Cannot write /memories/bin.dat: content contains the control character U+0000 at "
            "character offset 4; only \\n, \\r and \\t are allowed. Memory files hold UTF-8 "
            "text only.",
        ),
        (
            "x" * (MAX_CONTENT_BYTES + 1),
            f"Cannot write /memories/bin.dat: content is {MAX_CONTENT_BYTES + 1} bytes; the "
            f"limit is {MAX_CONTENT_BYTES} bytes. A memory file holds at most 102,400 bytes "
            "(100 KB).",
        ),
    ],
    ids=["binary", "over-100-KB"],
)
def test_content_rules_answer_in_the_tool_words(
    engine: Engine, file_text: str, expected: str
) -> None:
    store = engine.stores.create("Notes")
    engine.memories.create(store.id, "/big.md", "x" * MAX_CONTENT_BYTES)
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        assert run(tool, "create", path="/memories/bin.dat", file_text=file_text) == (
            "error",
            expected,
        )
        # An edit that would go over the limit is refused too, and changes nothing.
        kind, text = run(tool, "insert", path="/memories/big.md", insert_line=0, insert_text="y")
        assert kind == "error"
        assert text.startswith("Cannot write /memories/big.md: content is")
    assert live(engine, store.id) == {"/big.md": "x" * MAX_CONTENT_BYTES}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/memories/cafe\u0301.md", "segment 'cafe\u0301.md' is not in Unicode NFC"),
        ("/memories/ lead.md", "segment ' lead.md' has leading or trailing whitespace"),
        ("/memories/a\\b.md", "segment 'a\\\\b.md' contains a backslash"),
        ("/memories/" + "n" * 256, "path segment is longer than 255 bytes"),
        ("/memories/" + "/".join("d" * 21), "path has 21 segments; the limit is 20"),
    ],
    ids=["not-nfc", "whitespace", "backslash", "name-too-long", "too-deep"],
)
def test_path_rules_answer_in_the_tool_words(engine: Engine, path: str, problem: str) -> None:
    store = engine.stores.create("Notes")
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        for name, fields in [
            ("create", {"path": path, "file_text": "x"}),
            ("view", {"path": path}),
        ]:
            kind, text = run(tool, name, **fields)
            assert kind == "error"
            assert text == f"Invalid path {path}: {problem}", text
    assert live(engine, store.id) == {}


def test_several_stores_are_directories_and_read_only_ones_refuse(engine: Engine) -> None:
    notes = engine.stores.create("Notes")
    team = engine.stores.create("Team")
    engine.memories.create(team.id, "/rules.md", "be kind\n")
    before = versions(engine, team.id)
    with MemfsMemoryTool.embedded(engine, ["Notes", ("Team", Access.READ_ONLY)]) as tool:
        assert run(tool, "view", path="/memories") == (
            "ok",
            "Here're the files and directories up to 2 levels deep in /memories, excluding "
            "hidden items:\n4K\t/memories\n4K\t/memories/notes/\n4K\t/memories/team/\n"
            "8B\t/memories/team/rules.md",
        )
        assert run(tool, "view", path="/memories/team/rules.md")[0] == "ok"
        assert run(tool, "create", path="/memories/notes/a.md", file_text="a")[0] == "ok"
        rules, new = "/memories/team/rules.md", "/memories/team/new.md"
        for name, fields, path in [
            ("create", {"path": new, "file_text": "x"}, new),
            ("str_replace", {"path": rules, "old_str": "kind", "new_str": "mean"}, rules),
            ("insert", {"path": rules, "insert_line": 0, "insert_text": "x"}, rules),
            ("delete", {"path": rules}, rules),
            ("delete", {"path": "/memories/team"}, "/memories/team"),
            ("rename", {"old_path": rules, "new_path": "/memories/team/r.md"}, rules),
        ]:
            assert run(tool, name, **fields) == ("error", READ_ONLY_TEXT.format(path=path)), name
        # Nothing lives beside the store directories; a move across stores is refused.
        assert run(tool, "create", path="/memories/loose.md", file_text="x") == (
            "error",
            "Cannot modify /memories/loose.md: /memories holds one directory per memory "
            "store (/memories/notes, /memories/team); write inside one of them",
        )
        assert run(
            tool, "rename", old_path="/memories/notes/a.md", new_path="/memories/team/a.md"
        ) == ("error", READ_ONLY_TEXT.format(path="/memories/team/a.md"))
        assert run(tool, "view", path="/memories/nostore/x.md") == (
            "error",
            "The path /memories/nostore/x.md does not exist. Please provide a valid path.",
        )
    assert versions(engine, team.id) == before
    assert live(engine, notes.id) == {"/a.md": "a"}


def test_a_store_directory_is_not_deleted_by_one_call(engine: Engine) -> None:
    """One ``delete`` must not empty a whole store (there is no bulk restore): a
    store's own directory is refused, its subdirectories are not."""
    notes = engine.stores.create("Notes")
    engine.stores.create("Team")
    engine.memories.create(notes.id, "/a.md", "a")
    engine.memories.create(notes.id, "/old/b.md", "b")
    with MemfsMemoryTool.embedded(engine, ["Notes", "Team"]) as tool:
        assert run(tool, "delete", path="/memories/notes") == (
            "error",
            "Cannot delete /memories/notes: it is the directory of a memory store; delete "
            "the files or subdirectories in it instead",
        )
        assert live(engine, notes.id) == {"/a.md": "a", "/old/b.md": "b"}
        assert run(tool, "delete", path="/memories/notes/old") == (
            "ok",
            "Successfully deleted /memories/notes/old",
        )
    assert live(engine, notes.id) == {"/a.md": "a"}


def test_an_archived_store_refuses_writes(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    engine.memories.create(store.id, "/a.md", "a\n")
    with MemfsMemoryTool.embedded(engine, ["Notes"]) as tool:
        engine.stores.archive(store.id)
        assert run(tool, "insert", path="/memories/a.md", insert_line=0, insert_text="b") == (
            "error",
            "Cannot modify /memories/a.md: its memory store is archived (read-only)",
        )
        assert run(tool, "view", path="/memories/a.md")[0] == "ok"
    assert live(engine, store.id) == {"/a.md": "a\n"}


async def test_a_change_between_read_and_write_is_kept_and_the_edit_redone(
    engine: Engine,
) -> None:
    store = engine.stores.create("Notes")
    memory = engine.memories.create(store.id, "/a.md", "first\nsecond\nthird\n")

    async def other_writer() -> None:
        current = engine.memories.get(store.id, memory.id)
        assert current.content is not None
        engine.memories.update(
            store.id,
            memory.id,
            content=current.content.replace("third", "THIRD"),
        )

    inner = open_embedded(engine, [("Notes", Access.READ_WRITE)])
    access = InterferingAccess(inner, other_writer)
    tool = AsyncMemfsMemoryTool(await MemoryFiles.open(access))
    try:
        outcome = await arun(
            tool, "str_replace", path="/memories/a.md", old_str="first", new_str="FIRST"
        )
    finally:
        await tool.aclose()
    assert outcome[0] == "ok"
    assert access.updates_tried == 2  # refused once by the precondition, then redone
    assert live(engine, store.id) == {"/a.md": "FIRST\nsecond\nTHIRD\n"}
    assert [v.content for v in versions(engine, store.id)] == [
        "first\nsecond\nthird\n",
        "first\nsecond\nTHIRD\n",
        "FIRST\nsecond\nTHIRD\n",
    ]


async def test_an_edit_losing_every_race_is_reported_and_overwrites_nothing(
    engine: Engine,
) -> None:
    store = engine.stores.create("Notes")
    memory = engine.memories.create(store.id, "/a.md", "0\n")
    counter = 0

    async def other_writer() -> None:
        nonlocal counter
        counter += 1
        engine.memories.update(store.id, memory.id, content=f"{counter}\n")

    inner = open_embedded(engine, [("Notes", Access.READ_WRITE)])
    access = InterferingAccess(inner, other_writer, times=MAX_EDIT_ATTEMPTS)
    tool = AsyncMemfsMemoryTool(await MemoryFiles.open(access))
    try:
        outcome = await arun(tool, "insert", path="/memories/a.md", insert_line=1, insert_text="x")
    finally:
        await tool.aclose()
    assert outcome == (
        "error",
        "The file /memories/a.md was changed by another writer while this edit was made; "
        "nothing was overwritten. View it again and retry.",
    )
    assert live(engine, store.id) == {"/a.md": f"{MAX_EDIT_ATTEMPTS}\n"}
    assert all(v.created_by is None for v in versions(engine, store.id))


async def test_a_redone_edit_refuses_when_its_text_is_gone(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    memory = engine.memories.create(store.id, "/a.md", "keep\nold\n")

    async def other_writer() -> None:
        engine.memories.update(store.id, memory.id, content="keep\nnew\n")

    inner = open_embedded(engine, [("Notes", Access.READ_WRITE)])
    tool = AsyncMemfsMemoryTool(await MemoryFiles.open(InterferingAccess(inner, other_writer)))
    try:
        outcome = await arun(tool, "str_replace", path="/memories/a.md", old_str="old", new_str="x")
    finally:
        await tool.aclose()
    assert outcome == (
        "error",
        "No replacement was performed, old_str `old` did not appear verbatim in /memories/a.md.",
    )
    assert live(engine, store.id) == {"/a.md": "keep\nnew\n"}


async def test_the_async_tool_runs_every_command_on_trio(engine: Engine) -> None:
    store = engine.stores.create("Notes")
    tool = await AsyncMemfsMemoryTool.embedded(engine, ["Notes"])
    try:
        assert await arun(tool, "create", path="/memories/a.md", file_text="a\n") == (
            "ok",
            "File created successfully at: /memories/a.md",
        )
        assert await arun(tool, "insert", path="/memories/a.md", insert_line=1, insert_text="b")
        assert await arun(tool, "str_replace", path="/memories/a.md", old_str="b", new_str="c")
        assert await arun(tool, "view", path="/memories/a.md") == (
            "ok",
            "Here's the content of /memories/a.md with line numbers:\n"
            "     1\ta\n     2\tc\n     3\t",
        )
        assert await arun(tool, "rename", old_path="/memories/a.md", new_path="/memories/b.md")
        assert await arun(tool, "delete", path="/memories/b.md") == (
            "ok",
            "Successfully deleted /memories/b.md",
        )
        # What the SDK's tool runner calls: a plain dict through call().
        assert await tool.call({"command": "view", "path": "/memories"}) == (
            "Here're the files and directories up to 2 levels deep in /memories, excluding "
            "hidden items:\n4K\t/memories"
        )
    finally:
        await tool.aclose()
    assert len(versions(engine, store.id)) == 5
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}


@pytest.mark.parametrize("closing", ["", "tool.close()\n", "del tool\n"])
def test_a_tool_used_without_with_lets_the_interpreter_exit(
    tmp_path, closing: str
) -> None:
    """The SDK's own memory tool is used without a ``with`` block; memfs's must not keep
    the interpreter from exiting when nobody closes it (its loop thread is a daemon
    thread and the tool closes itself at exit), and its write is committed."""
    from memfs.store import open_engine

    database = tmp_path / "memfs.db"
    with open_engine(f"sqlite:///{database}", create=True) as setup:
        store = setup.stores.create("notes")
    mode = {"": "none", "tool.close()\n": "close", "del tool\n": "del"}[closing]
    done = script_process("memory_tool_exit", f"sqlite:///{database}", mode)
    assert done.returncode == 0, done.stderr
    assert "File created successfully at: /memories/a.md" in done.stdout
    with open_engine(f"sqlite:///{database}") as check:
        assert check.memories.get_by_path(store.id, "/a.md", with_content=True).content == "a\n"
