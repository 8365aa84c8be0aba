"""The kernel's caches over a mount (SPEC §4): entries and attributes are cached for
ENTRY_TIMEOUT_S/ATTR_TIMEOUT_S, longer than any wait in these tests, so every check
here passes only if the mount invalidated exactly what changed (SPEC §4: "kernel
caches are invalidated for exactly the changed entries")."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest
from _support.mount import MEMFS, Mounter, live, run, run_script, wait_until
from _support.serve import ServeProcess

from memfs.core.model import Scope
from memfs.fuse import capabilities
from memfs.fuse.operations import ATTR_TIMEOUT_S, ENTRY_TIMEOUT_S
from memfs.store import Engine

# The waits below must be shorter than the kernel's timeouts, or expiry would hide a
# missed invalidation.
assert min(ENTRY_TIMEOUT_S, ATTR_TIMEOUT_S) > 5.0


def _updated_at_us(engine: Engine, store_id: str, path: str) -> int:
    memory = engine.memories.get_by_path(store_id, path, with_content=False)
    return int(memory.updated_at.timestamp() * 1_000_000)


def test_stat_after_close_shows_the_committed_version(mount, store_engine: Engine) -> None:
    """A stat between the last write and close hands the kernel the local mtime; the
    commit at close moves mtime to the version's updated_at, and the kernel's copy must
    be dropped then, not when its timeout runs out."""
    store_id = mount.status["stores"][0]["id"]
    target = mount / "notes" / "hello.md"
    run_script("fuse_kernel_cache", "append_with_cached_attributes", target)
    # The invalidation is delivered by the notice task right after close returns (never
    # from inside a handler); the wait is shorter than the kernel's timeout.
    assert os.stat(target).st_size == len("hello\none more line\n")
    committed_us = _updated_at_us(store_engine, store_id, "/hello.md")
    wait_until(lambda: os.stat(target).st_mtime_ns // 1000 == committed_us,
               "the committed mtime")

    created = mount / "notes" / "touched.md"
    run("touch", created)  # create, no write: the commit happens at release (async)
    wait_until(lambda: "/touched.md" in live(store_engine, store_id), "touch's commit")
    assert os.stat(created).st_size == 0
    committed_us = _updated_at_us(store_engine, store_id, "/touched.md")
    wait_until(lambda: os.stat(created).st_mtime_ns // 1000 == committed_us,
               "the committed mtime of a touched file")


def test_rename_and_metadata_changes_refresh_cached_mtime(mount, store_engine: Engine) -> None:
    store_id = mount.status["stores"][0]["id"]
    notes = mount / "notes"
    os.stat(notes / "hello.md")
    renamed = notes / "renamed.md"
    run("mv", notes / "hello.md", renamed)
    committed_us = _updated_at_us(store_engine, store_id, "/renamed.md")
    wait_until(lambda: os.stat(renamed).st_mtime_ns // 1000 == committed_us,
               "the mtime of the rename")
    run("setfattr", "-n", "user.meta.topic", "-v", "greetings", renamed)
    committed_us = _updated_at_us(store_engine, store_id, "/renamed.md")
    wait_until(lambda: os.stat(renamed).st_mtime_ns // 1000 == committed_us,
               "the mtime of the metadata change")


def test_a_change_elsewhere_refreshes_cached_attributes_and_pages(
    mount, store_engine: Engine
) -> None:
    store_id = mount.status["stores"][0]["id"]
    target = mount / "notes" / "hello.md"
    assert target.read_text() == "hello\n"  # entry, attributes and pages now cached
    os.stat(target)
    hello = store_engine.memories.get_by_path(store_id, "/hello.md")
    store_engine.memories.update(store_id, hello.id, content="hello from elsewhere\n")
    wait_until(lambda: os.stat(target).st_size == len("hello from elsewhere\n"),
               "the new size (attribute invalidation)")
    assert target.read_text() == "hello from elsewhere\n"
    committed_us = _updated_at_us(store_engine, store_id, "/hello.md")
    wait_until(lambda: os.stat(target).st_mtime_ns // 1000 == committed_us,
               "the mtime of the change elsewhere")


def test_a_big_directory_lists_every_entry_once(mounter: Mounter, make_store) -> None:
    """Listing a directory takes many readdir calls (one per kernel page); each continues
    from the previous cursor in one snapshot of the directory."""
    names = [f"note-{i:04d}-{'x' * 40}.md" for i in range(1500)]
    make_store("Big", {f"/d/{name}": f"{name}\n" for name in names})
    mount = mounter.mount("Big")
    listed = run("ls", "-f", mount / "big" / "d").stdout.split()
    assert sorted(n for n in listed if n not in (".", "..")) == names
    listed_again = run("find", mount / "big" / "d", "-type", "f", "-printf", "%f\n").stdout
    assert sorted(listed_again.split()) == names


def test_entries_removed_during_a_listing_are_not_returned(
    mounter: Mounter, make_store
) -> None:
    """readdir continues over a snapshot, but skips what was removed since (a deleted
    name returned would be an entry no lookup can find). getdents64(2) with a small
    buffer, so each call is one readdir request from a new cursor."""
    names = [f"n{i:04d}.md" for i in range(400)]
    make_store("Big", {f"/d/{name}": "x\n" for name in names})
    mount = mounter.mount("Big")
    output = run_script("fuse_kernel_cache", "list_while_removing", mount / "big" / "d")
    first_line, rest_line = output.split("\n")[:2]
    first = [n for n in first_line.split() if n not in (".", "..")]
    rest = [n for n in rest_line.split() if n not in (".", "..")]
    assert 0 < len(first) < 100
    assert rest == []
    assert sorted(os.listdir(mount / "big" / "d")) == sorted(first)


# ---------------------------------------------------- the patched pyfuse3
# With the patched pyfuse3 (third_party/pyfuse3), read-only opens skip FLUSH and the
# kernel keeps directory listings, under long entry/attribute timeouts; each listing is
# dropped by a full invalidation of the directory when its entries change.

def _flushes(mount) -> dict[str, int] | None:
    kernel = mount.status.get("kernel_cache")
    return None if kernel is None else kernel["flushes"]


@pytest.mark.parametrize("kernel_cache", [True, False], ids=["patched", "stock"])
def test_read_only_opens_skip_flush_and_a_write_still_commits_at_close(
    mounter: Mounter, make_store, store_engine: Engine, monkeypatch, kernel_cache: bool
) -> None:
    if not kernel_cache:  # the daemon runs as with stock pyfuse3: a FLUSH per close
        monkeypatch.setenv(capabilities.DISABLE_ENV, "0")
    store = make_store("Notes", {"/hello.md": "hello\n"})
    mount = mounter.mount("Notes")
    assert mount.status["kernel_cache"]["noflush"] is kernel_cache
    target = mount / "notes" / "hello.md"
    for _ in range(3):
        assert run("cat", target).stdout == "hello\n"
    run_script("files", "append", target, "more\n")
    # The commit point is still the FLUSH of close(2): done when close returned.
    assert live(store_engine, store.id)["/hello.md"].content == "hello\nmore\n"
    # The status counts the flushes of the daemon in order: once the writable open's
    # one shows, every earlier read-only close's would too.
    flushes = wait_until(
        lambda: (counts := _flushes(mount)) and counts["writable"] >= 1 and counts,
        "the flush of the writable open in the status",
    )
    assert flushes == {"read_only": 0 if kernel_cache else 3, "writable": 1}


def _ls(directory: Path) -> list[str]:
    return run("ls", directory).stdout.split()


def _changes_from(
    source: str, mounter: Mounter, stack: contextlib.ExitStack, engine: Engine,
    store_id: str, old_id: str, memfs_home: Path, tmp_path: Path,
) -> tuple[Callable[[], object], Callable[[], object]]:
    """Two changes of Notes:/d made by ``source``: create new.md, delete old.md."""
    if source == "other mount":
        other = mounter.mount("Notes") / "notes" / "d"
        return (lambda: (other / "new.md").write_text("new\n"),
                lambda: os.unlink(other / "old.md"))
    if source == "api":
        server = ServeProcess(memfs_home / "memfs.db", tmp_path)
        stack.callback(server.stop)
        _, secret = engine.api_keys.create("test", [Scope.ADMIN])
        client = stack.enter_context(
            anthropic.Anthropic(api_key=secret, base_url=server.url, timeout=30)
        )
        memories = client.beta.memory_stores.memories
        return (lambda: memories.create(store_id, path="/d/new.md", content="new\n"),
                lambda: memories.delete(old_id, memory_store_id=store_id))
    return (lambda: run(MEMFS, "memory", "put", "Notes", "/d/new.md", "--content", "new\n"),
            lambda: run(MEMFS, "memory", "rm", "Notes", "/d/old.md"))


@pytest.mark.parametrize("source", ["other mount", "api", "cli"])
def test_a_listed_directory_shows_changes_made_elsewhere(
    mounter: Mounter, make_store, store_engine: Engine, memfs_home: Path, tmp_path: Path,
    source: str,
) -> None:
    """A new file, then a deleted one, show in ``ls`` of a directory listed (and so
    cached by the kernel) before, within the propagation time and well inside the
    timeouts. The new name alone is the hard case: no entry the kernel knows changes,
    only the directory's invalidation drops its cached listing."""
    store = make_store("Notes", {"/d/a.md": "a\n", "/d/old.md": "old\n"})
    mount = mounter.mount("Notes")
    directory = mount / "notes" / "d"
    assert _ls(directory) == ["a.md", "old.md"]
    assert _ls(directory) == ["a.md", "old.md"]  # the second listing: the kernel's cache
    assert run("ls", "-l", directory).stdout.count(".md") == 2
    old = live(store_engine, store.id)["/d/old.md"]
    with contextlib.ExitStack() as stack:
        create, delete = _changes_from(source, mounter, stack, store_engine, store.id, old.id,
                                       memfs_home, tmp_path)
        create()
        wait_until(lambda: _ls(directory) == ["a.md", "new.md", "old.md"], f"the {source}'s file")
        delete()
        wait_until(lambda: _ls(directory) == ["a.md", "new.md"], f"the {source}'s deletion")
    assert (directory / "new.md").read_text() == "new\n"
    assert not os.path.exists(directory / "old.md")
    assert run("ls", "-l", directory).stdout.count(".md") == 2


def test_timeouts_are_long_only_with_cached_listings() -> None:
    """Without cached listings (stock pyfuse3) the timeouts stay as before; with them,
    an expired attribute would cost a LOOKUP per entry of a cached listing."""
    if capabilities.KERNEL_CACHE.cached_listings:
        assert min(ENTRY_TIMEOUT_S, ATTR_TIMEOUT_S) >= 3600
    else:
        assert ENTRY_TIMEOUT_S == ATTR_TIMEOUT_S == 10.0
