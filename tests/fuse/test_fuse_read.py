"""Reading a mount: SPEC §4 mapping row "open/read, stat, readdir", the per-store layout,
the read-only mount root, and changes made elsewhere appearing in the mount."""

from __future__ import annotations

import errno
import os
import stat

from _support.mount import Mounter, errno_of, exists, live, run, run_script, wait_until

from memfs.store import Engine


def test_cat_ls_grep_read_head_content(mount) -> None:
    notes = mount / "notes"
    assert run("cat", notes / "hello.md").stdout == "hello\n"
    listing = run("ls", "-R", mount.path).stdout
    assert listing.split("\n\n") == [
        f"{mount.path}:\nnotes",
        f"{notes}:\nhello.md\nprojects",
        f"{notes}/projects:\nplan.md\n",
    ]
    assert run("grep", "-r", "Plan", mount.path).stdout == f"{notes}/projects/plan.md:# Plan\n"


def test_stat_size_is_content_size_and_mtime_is_updated_at(mount, store_engine: Engine) -> None:
    store_id = mount.status["stores"][0]["id"]
    memory = store_engine.memories.get_by_path(store_id, "/projects/plan.md", with_content=False)
    info = os.stat(mount / "notes" / "projects" / "plan.md")
    assert stat.S_ISREG(info.st_mode)
    assert info.st_size == memory.content_size_bytes == len("# Plan\n")
    assert info.st_mtime_ns // 1000 == int(memory.updated_at.timestamp() * 1_000_000)
    assert stat.S_ISDIR(os.stat(mount / "notes" / "projects").st_mode)


def test_per_store_layout_uses_unique_slugs(mounter: Mounter, make_store) -> None:
    make_store("User Preferences", {"/a.md": "a\n"})
    second = make_store("user preferences!", {"/b.md": "b\n"})
    mount = mounter.mount("User Preferences", second.id)
    assert sorted(os.listdir(mount.path)) == ["user-preferences", "user-preferences-2"]
    assert (mount / "user-preferences-2" / "b.md").read_text() == "b\n"


def test_the_mount_root_is_read_only(mount) -> None:
    root = mount.path
    assert errno_of(f"open({str(root / 'x.md')!r}, 'w')") == "EROFS"
    assert errno_of(f"os.mkdir({str(root / 'dir')!r})") == "EROFS"
    assert errno_of(f"os.rmdir({str(root / 'notes')!r})") == "EROFS"
    assert errno_of(f"os.rename({str(root / 'notes')!r}, {str(root / 'other')!r})") == "EROFS"
    assert os.listdir(root) == ["notes"]


def test_reading_a_missing_file_is_enoent(mount) -> None:
    assert errno_of(f"open({str(mount / 'notes' / 'nope.md')!r})") == "ENOENT"


def test_changes_made_elsewhere_appear_within_a_second(mount, store_engine: Engine) -> None:
    notes = mount / "notes"
    store_id = mount.status["stores"][0]["id"]
    assert (notes / "hello.md").read_text() == "hello\n"  # now in the kernel's caches

    created = store_engine.memories.create(store_id, "/elsewhere/new.md", "new\n")
    wait_until(lambda: exists(notes / "elsewhere" / "new.md"), "a created memory")
    assert (notes / "elsewhere" / "new.md").read_text() == "new\n"

    hello = store_engine.memories.get_by_path(store_id, "/hello.md")
    store_engine.memories.update(store_id, hello.id, content="hello, world\n")
    wait_until(lambda: (notes / "hello.md").read_text() == "hello, world\n", "a modified memory")
    assert os.stat(notes / "hello.md").st_size == len("hello, world\n")

    store_engine.memories.update(store_id, created.id, path="/moved.md")
    wait_until(lambda: exists(notes / "moved.md"), "a renamed memory")
    wait_until(lambda: not exists(notes / "elsewhere"), "the emptied directory to go")
    assert (notes / "moved.md").read_text() == "new\n"

    store_engine.memories.delete(store_id, created.id)
    wait_until(lambda: not exists(notes / "moved.md"), "a deleted memory")


def test_two_mounts_of_one_store_see_each_others_closes(mounter: Mounter, make_store) -> None:
    make_store("Notes", {"/shared.md": "v1\n"})
    first = mounter.mount("Notes")
    second = mounter.mount("Notes")
    assert (second / "notes" / "shared.md").read_text() == "v1\n"
    (first / "notes" / "shared.md").write_text("v2\n")
    wait_until(lambda: (second / "notes" / "shared.md").read_text() == "v2\n",
               "the second mount to see the first one's close")
    (second / "notes" / "fresh.md").write_text("fresh\n")
    wait_until(lambda: exists(first / "notes" / "fresh.md"), "the first mount to see a create")


def test_a_cold_read_fetches_its_directory_ahead(mounter: Mounter, make_store) -> None:
    """A cache miss fetches the file's uncached siblings in the same store round trip
    (Operations._read_ahead), so `cat *` on a cold mount misses about once per batch of
    READ_AHEAD_FILES, not once per file; every byte is still the file's own."""
    contents = {f"/d/note-{i:02d}.md": f"note {i}\n" * (i + 1) for i in range(40)}
    make_store("Notes", contents)
    mount = mounter.mount("Notes")
    directory = mount / "notes" / "d"
    output = run("sh", "-c", 'for f in *; do cat "$f"; done', cwd=directory).stdout
    assert output == "".join(contents[p] for p in sorted(contents))

    def misses() -> int | None:
        cache = mount.status.get("memory_cache") or {}
        return cache.get("misses") if cache.get("entries") == len(contents) else None

    assert wait_until(misses, "the status file to show the cache") <= 3


def test_a_redaction_makes_the_bytes_unreadable_through_open_descriptors(
    mount, store_engine: Engine
) -> None:
    """SPEC §2: after a redaction the bytes are gone from every cache, including the
    content a descriptor opened (and read) before the redaction would read again."""
    store_id = mount.status["stores"][0]["id"]
    secret = "api_token=s3cr3t\n"
    (mount / "notes" / "secret.md").write_text(secret)
    out = run_script(
        "redact_under_open_readers", mount / "notes" / "secret.md", store_id, "/secret.md", secret
    )
    assert "s3cr3t" not in out
    assert len(out.split()) == 2


def test_a_redaction_reaches_files_open_for_writing(mount, store_engine: Engine) -> None:
    """A writer's buffer derived from redacted bytes is dropped too: new opens and
    grep can't see them, and the writer's close can't write them back; its unsaved
    change is reported (ENOENT at close), not kept."""
    mount.expect_log("the content it was opened with was redacted elsewhere")
    mount.expect_log("conflict: /t.md was changed by another writer")
    store_id = mount.status["stores"][0]["id"]
    notes = mount / "notes"
    (notes / "u.md").write_text("apikey=OKAPI-SECRET-77\nline2\n")
    (notes / "t.md").write_text("token=ZEBRA-SECRET-42\n")
    out = run_script("redact_under_open_writers", mount.path, notes, store_id)
    assert "SECRET" not in out
    assert "token=<removed>" in out
    assert f"close of the dirty writer: {errno.ENOENT}" in out
    memories = live(store_engine, store_id)
    assert "/u.md" not in memories
    assert all("SECRET" not in (m.content or "") for m in memories.values())


def test_reads_right_after_a_change_elsewhere_are_whole_versions(
    mounter: Mounter, make_store
) -> None:
    """Between a change arriving from elsewhere and the kernel dropping the size it
    cached, an open must not read the new content cut to the old size or padded with
    NULs to it (the open reads around the page cache then)."""
    make_store("Notes", {"/race.md": "start\n"})
    writer = mounter.mount("Notes")
    reader = mounter.mount("Notes")
    out = run_script(
        "read_while_changed_elsewhere", writer / "notes" / "race.md", reader / "notes" / "race.md"
    )
    assert out.strip() == "[]"


def test_a_redaction_leaves_content_written_after_a_truncation(
    mount, store_engine: Engine
) -> None:
    """Content written after O_TRUNC holds none of the redacted bytes: the close commits
    it (the memory is created again) instead of discarding it."""
    mount.expect_log("was deleted elsewhere while open; creating it again")
    store_id = mount.status["stores"][0]["id"]
    path = mount / "notes" / "f.md"
    path.write_text("SECRET-in-the-old-content\n")
    out = run_script("redact_after_truncation", mount.path, path, store_id, "/f.md")
    assert out.strip() == "closed"
    assert live(store_engine, store_id)["/f.md"].content == "brand new text\n"
