"""SPEC §4 concurrent writers: a close commits with a precondition on the content the
file was opened with; if another writer changed it meanwhile, both contents are kept."""

from __future__ import annotations

import re

from fuse_helpers import live, run_python, versions

from memfs.model import Actor
from memfs.store import Engine


def test_a_close_after_another_writer_keeps_both_contents(mount, store_engine: Engine) -> None:
    mount.expect_log("conflict: /hello.md was changed by another writer")
    store_id = str(mount.status["stores"][0]["id"])
    path = mount / "notes" / "hello.md"
    out = run_python(f"""
        from memfs.model import Actor
        from memfs.store import open_engine
        f = open({str(path)!r}, "r+")
        assert f.read() == "hello\\n"
        engine = open_engine()  # another writer, through the engine (like the API)
        memory = engine.get_memory_by_path({store_id!r}, "/hello.md")
        engine.update_memory({store_id!r}, memory.id, content="theirs\\n",
                             actor=Actor.api_key("apikey_other"))
        engine.close()
        f.seek(0)
        f.write("mine\\n")
        f.truncate()
        f.close()  # succeeds: nothing is lost
        print("closed")
    """)
    assert out == "closed\n"
    memories = live(store_engine, store_id)
    assert memories["/hello.md"].content == "theirs\n"  # the head keeps the other content
    [copy_path] = [p for p in memories if p not in ("/hello.md", "/projects/plan.md")]
    assert re.fullmatch(
        rf"/hello\.conflict-\d{{8}}T\d{{6}}\.\d{{6}}Z-{mount.session_id}\.md", copy_path
    ), copy_path
    assert memories[copy_path].content == "mine\n"
    [created] = versions(store_engine, store_id, memories[copy_path].id)
    assert created.created_by == Actor.session(mount.session_id)
    assert (mount / "notes" / "hello.md").read_text() == "theirs\n"
    assert (mount / "notes" / copy_path[1:]).read_text() == "mine\n"
    status = mount.status
    assert status["conflict_count"] == 1
    assert status["conflicts"][0]["conflict_path"] == copy_path


def test_a_file_deleted_elsewhere_while_written_is_created_again(mount, store_engine) -> None:
    mount.expect_log("was deleted elsewhere while open")
    store_id = str(mount.status["stores"][0]["id"])
    old_id = store_engine.get_memory_by_path(store_id, "/hello.md", with_content=False).id
    path = mount / "notes" / "hello.md"
    out = run_python(f"""
        from memfs.store import open_engine
        f = open({str(path)!r}, "a")
        f.write("appended\\n")
        f.flush()
        engine = open_engine()
        engine.delete_memory({store_id!r}, {old_id!r}, actor=None)
        engine.close()
        f.close()  # nothing is lost: the content is stored again
        print("closed")
    """)
    assert out == "closed\n"
    memory = store_engine.get_memory_by_path(store_id, "/hello.md")
    assert memory.content == "hello\nappended\n"
    assert memory.id != old_id
    assert [v.operation for v in versions(store_engine, store_id, memory.id)] == ["created"]
