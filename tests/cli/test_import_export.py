"""``memfs import`` and ``memfs export``: refusals with reasons, no-op re-imports, round trips."""

from __future__ import annotations

import filecmp
import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from _support.cli import Cli, memfs_command

STORE = "Project Notes"


def make_tree(root: Path) -> dict[str, str]:
    """A folder with good files and every kind of refused entry; returns source → reason code."""
    (root / "notes" / "deep").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("alpha\n")
    (root / "notes" / "deep" / "b.txt").write_text("beta ✓\n")
    (root / "top.txt").write_text("top\n")
    (root / "empty.txt").write_text("")
    (root / "link.txt").symlink_to(root / "top.txt")  # followed: same content, deduplicated
    (root / "binary.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "latin1.txt").write_bytes(b"caf\xe9\n")
    (root / "huge.txt").write_bytes(b"x" * 102_401)
    (root / "trailing ").write_text("x")
    (root / "e\u0301.txt").write_text("x")
    (root / "notes.md~").write_text("backup")
    (root / ".hidden").write_text("x")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "dangling").symlink_to(root / "missing")
    (root / "dirlink").symlink_to(root / "notes")
    os.mkfifo(root / "fifo")
    return {
        ".git/": "hidden",
        ".hidden": "hidden",
        "binary.png": "invalid_content",
        "dangling": "not_regular_file",
        "dirlink/": "not_regular_file",
        "e\u0301.txt": "invalid_path",
        "fifo": "not_regular_file",
        "huge.txt": "content_too_large",
        "latin1.txt": "invalid_content",
        "notes.md~": "scratch_name",
        "trailing ": "invalid_path",
    }


IMPORTED = {
    "/docs/empty.txt": "",
    "/docs/link.txt": "top\n",
    "/docs/notes/a.md": "alpha\n",
    "/docs/notes/deep/b.txt": "beta ✓\n",
    "/docs/top.txt": "top\n",
}


def contents(cli: Cli) -> dict[str, str]:
    return {path: cli.content(STORE, path) for path in cli.paths(STORE)}


def version_count(cli: Cli) -> int:
    return len(cli.versions(STORE))


def test_import_reports_each_refusal_with_its_reason(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    refused = make_tree(source)
    result = cli.run("import", str(source), "--store", STORE, "--prefix", "/docs")
    assert result.stdout == (
        f'imported {source} into "Project Notes": 5 created, 0 updated, 0 unchanged, '
        "11 refused (5 files, 23 bytes)\n"
    )
    reasons = {
        line.split(":")[0].removeprefix("refused ").split(" -> ")[0]: line
        for line in result.stderr.splitlines()
    }
    assert sorted(reasons) == sorted(refused)
    assert reasons["binary.png"].endswith("content is not valid UTF-8 text (byte offset 0)")
    assert reasons["latin1.txt"].endswith("content is not valid UTF-8 text (byte offset 3)")
    assert reasons["huge.txt"].endswith("file is 102,401 bytes; the limit is 102,400 bytes")
    assert reasons["trailing "].endswith("has leading or trailing whitespace")
    assert reasons["e\u0301.txt"].endswith("is not in Unicode NFC")
    assert reasons["dangling"].endswith("broken symbolic link")
    assert reasons["dirlink/"].endswith("symbolic link to a directory, not followed")
    assert reasons["fifo"].endswith("not a regular file")
    assert "scratch" in reasons["notes.md~"]
    assert "--include-hidden" in reasons[".git/"]
    # Every refusal names the memory path it would have had, when its name is a valid one.
    assert {
        source: line.split(" -> ")[1].split(": ")[0]
        for source, line in reasons.items()
        if " -> " in line
    } == {
        ".git/": "/docs/.git/",
        ".hidden": "/docs/.hidden",
        "binary.png": "/docs/binary.png",
        "dangling": "/docs/dangling",
        "dirlink/": "/docs/dirlink/",
        "fifo": "/docs/fifo",
        "huge.txt": "/docs/huge.txt",
        "latin1.txt": "/docs/latin1.txt",
        "notes.md~": "/docs/notes.md~",
    }
    assert contents(cli) == IMPORTED

    report = cli.run("import", str(source), "--store", STORE, "--prefix", "/docs", "--json").json()
    assert {f["source"]: f["code"] for f in report["files"] if f["status"] == "refused"} == refused
    assert (report["created"], report["unchanged"], report["refused"]) == (0, 5, 11)


def test_reimport_writes_only_what_changed(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "a.md").write_text("a\n")
    (source / "sub" / "b.md").write_text("b\n")
    cli.run("import", str(source), "--store", STORE)
    assert version_count(cli) == 2

    again = cli.run("import", str(source), "--store", STORE)
    assert "0 created, 0 updated, 2 unchanged, 0 refused" in again.stdout
    assert version_count(cli) == 2  # no no-op versions

    (source / "a.md").write_text("a, edited\n")
    (source / "c.md").write_text("c\n")
    third = cli.run("import", str(source), "--store", STORE, "--verbose")
    assert "1 created, 1 updated, 1 unchanged, 0 refused" in third.stdout
    assert sorted(third.stderr.splitlines()) == [
        "created /c.md (2 bytes)",
        "unchanged /sub/b.md (2 bytes)",
        "updated /a.md (10 bytes)",
    ]
    assert version_count(cli) == 4


def test_import_collisions_and_strict(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    cli.put(STORE, "/sub", "a file where the folder goes")
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "x.md").write_text("x")
    (source / "ok.md").write_text("ok")
    result = cli.run("import", str(source), "--store", STORE)
    assert result.stderr == (
        "refused sub/x.md -> /sub/x.md: path '/sub/x.md' is below the memory '/sub', "
        "which is a file\n"
    )
    assert "1 created" in result.stdout
    assert "1 refused" in result.stdout
    strict = cli.run("import", str(source), "--store", STORE, "--strict", expect=1)
    assert "1 refused" in strict.stdout


def test_import_fatal_errors(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    assert cli.error("import", str(tmp_path / "nope"), "--store", STORE) == (
        f"cannot import {tmp_path / 'nope'}: {tmp_path / 'nope'} does not exist"
    )
    source = tmp_path / "src"
    source.mkdir()
    assert "no memory store named" in cli.error("import", str(source), "--store", "Nope")
    assert cli.error("import", str(source), "--store", STORE, "--prefix", "relative") == (
        "a path prefix starts with '/': 'relative' is not one (did you mean '/relative/'?)"
    )
    created = cli.run("import", str(source), "--store", "Fresh", "--create")
    assert 'into "Fresh": 0 created' in created.stdout
    cli.run("store", "show", "Fresh")
    cli.run("store", "archive", STORE)
    (source / "a.md").write_text("a")
    message = cli.error("import", str(source), "--store", STORE)
    assert message.startswith("import stopped:")
    assert "archived" in message


def test_import_reads_the_consoles_zip_and_tar_gz_exports(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    """A .zip or .tar.gz of files (what the console's export downloads) imports as the
    folder it holds would, by its first bytes whatever its name; refusals keep their
    reasons, and a file that is no archive at all is one named error."""
    import io
    import tarfile
    import zipfile

    members = {
        "notes/a.md": b"alpha\n",
        "top.txt": b"top\n",
        "latin1.txt": b"caf\xe9\n",
        ".hidden": b"x",
    }
    zipped = tmp_path / "export.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    result = cli.run("import", str(zipped), "--store", STORE, "--prefix", "/z/", "--json").json()
    assert {f["source"]: f["status"] for f in result["files"]} == {
        ".hidden": "refused",
        "latin1.txt": "refused",
        "notes/a.md": "created",
        "top.txt": "created",
    }
    assert {f["source"]: f["code"] for f in result["files"] if f["status"] == "refused"} == {
        ".hidden": "hidden",
        "latin1.txt": "invalid_content",
    }

    tarred = tmp_path / "export.bin"  # named by its bytes, not its suffix
    with tarfile.open(tarred, "w:gz") as archive:
        for name, data in members.items():
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
    again = cli.run("import", str(tarred), "--store", STORE, "--prefix", "/t/")
    assert "2 created, 0 updated, 0 unchanged, 2 refused" in again.stdout
    assert contents(cli) == {
        "/t/notes/a.md": "alpha\n",
        "/t/top.txt": "top\n",
        "/z/notes/a.md": "alpha\n",
        "/z/top.txt": "top\n",
    }

    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    assert cli.error("import", str(broken), "--store", STORE) == (
        f"cannot import {broken}: broken.zip is a broken archive: File is not a zip file"
    )
    text = tmp_path / "plain.txt"
    text.write_text("hello")
    assert cli.error("import", str(text), "--store", STORE, "--format", "archive") == (
        f"cannot import {text}: plain.txt is not a zip or .tar.gz archive"
    )


def test_import_stops_when_the_store_is_full(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("a", "b", "c"):
        (source / name).write_text(name)
    result = cli.run(
        "import", str(source), "--store", STORE, expect=1, env={"MEMFS_MEMORY_LIMIT": "2"}
    )
    assert "2 created" in result.stdout
    assert result.stderr.startswith("memfs: error: import stopped:")
    assert result.stderr.rstrip().endswith("(1 entries not imported)")


def test_export_files_round_trip(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    make_tree(source)
    cli.run("import", str(source), "--store", STORE, "--prefix", "/docs")
    out = tmp_path / "out"
    exported = cli.run("export", STORE, str(out))
    assert exported.stdout == f'exported 5 memories (23 bytes) from "Project Notes" to {out}\n'
    for path in IMPORTED:
        relative = path.removeprefix("/docs/")
        assert filecmp.cmp(out / "docs" / relative, source / relative, shallow=False)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "docs/empty.txt",
        "docs/link.txt",
        "docs/notes/a.md",
        "docs/notes/deep/b.txt",
        "docs/top.txt",
    ]

    assert (
        cli.error("export", STORE, str(out))
        == f"{out} is not empty (pass --force to write into it)"
    )
    sub = tmp_path / "sub"
    cli.run("export", STORE, str(sub), "--prefix", "/docs/notes")
    assert sorted(str(p.relative_to(sub)) for p in sub.rglob("*") if p.is_file()) == [
        "a.md",
        "deep/b.txt",
    ]
    cli.run("export", STORE, str(out), "--force")


def test_export_writes_a_memory_whose_name_is_255_bytes(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    # A segment of 255 bytes is a valid memory name (SPEC §1) and a valid file name
    # (NAME_MAX): the temporary file the export writes first must not be longer.
    long_name = "n" * 252 + ".md"
    cli.put(STORE, f"/a/{long_name}", "long\n")
    cli.put(STORE, "/b.md", "short\n")
    out = tmp_path / "out"
    for extra in ((), ("--force",)):
        exported = cli.run("export", STORE, str(out), *extra)
        assert exported.stdout.startswith("exported 2 memories (11 bytes)")
        assert (out / "a" / long_name).read_text() == "long\n"
        assert (out / "b.md").read_text() == "short\n"
        assert sorted(p.name for p in out.rglob("*")) == ["a", "b.md", long_name]


def test_export_error_lists_the_files_written_before_it(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    for path in ("/0.md", "/a/b.md", "/z.md"):
        cli.put(STORE, path, f"{path}\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a").write_text("a file where the export needs a folder\n")
    result = cli.run("export", STORE, str(out), "--force", expect=1)
    assert result.stderr.splitlines() == [
        f"written {out / '0.md'}",
        f"memfs: error: cannot write {out / 'a'}: File exists "
        "(export stopped: 1 of 3 memories written, listed above)",
    ]
    # What was written is whole, and no temporary file is left behind.
    assert sorted(p.name for p in out.iterdir()) == ["0.md", "a"]
    assert (out / "0.md").read_text() == "/0.md\n"


def test_export_jsonl_round_trip_keeps_metadata(
    cli: Cli, store: dict[str, Any], tmp_path: Path
) -> None:
    cli.run("memory", "put", STORE, "/a.md", "--content", "α\n", "-m", "type=preference")
    cli.put(STORE, "/b/c.md", "c")
    dump = cli.run("export", STORE, "-", "--format", "jsonl")
    assert dump.stderr == ""
    records = [json.loads(line) for line in dump.lines]
    assert [(r["type"], r["path"], r["content"]) for r in records] == [
        ("memory", "/a.md", "α\n"),
        ("memory", "/b/c.md", "c"),
    ]
    assert records[0]["metadata"] == {"type": "preference"}

    file = tmp_path / "backup.jsonl"
    file.write_text(dump.stdout + "\nnot json\n" + json.dumps({"path": "/x"}) + "\n")
    cli.create_store("Copy")
    result = cli.run("import", str(file), "--store", "Copy")
    assert "2 created" in result.stdout
    assert "2 refused" in result.stdout
    assert "refused backup.jsonl:4: not JSON" in result.stderr
    assert "refused backup.jsonl:5 -> /x: no string field 'content'" in result.stderr
    copied = cli.run("memory", "ls", "Copy", "--json").json()["data"]
    assert [(m["path"], m["metadata"]) for m in copied] == [
        ("/a.md", {"type": "preference"}),
        ("/b/c.md", {}),
    ]
    assert cli.content("Copy", "/a.md") == "α\n"
    cli.run("import", str(file), "--store", "Copy", "--prefix", "/restored/")
    assert cli.paths("Copy") == ["/a.md", "/b/c.md", "/restored/a.md", "/restored/b/c.md"]
    assert cli.error("export", STORE, str(file), "--format", "jsonl") == (
        f"{file} exists (pass --force to overwrite it)"
    )
    assert cli.error("export", STORE, "-") == "exporting to stdout (-) needs --format jsonl"
    # A destination named .jsonl is a JSON Lines file without --format, not a folder.
    named = tmp_path / "named.jsonl"
    cli.run("export", STORE, str(named))
    assert named.is_file()
    assert [json.loads(line)["path"] for line in named.read_text().splitlines()] == [
        "/a.md",
        "/b/c.md",
    ]


def run_on_terminal(cli: Cli, *args: str, expect: int = 0) -> str:
    """Runs memfs with stdin, stdout and stderr on a pseudo-terminal; returns its output."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        memfs_command(*args),
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env={**cli.env, "TERM": "xterm-256color"},
    )
    os.close(secondary)
    output = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], deadline - time.monotonic())
        if not ready:
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(primary)
    assert process.wait(timeout=60) == expect
    return output.decode("utf-8", "replace")


@pytest.mark.parametrize("command", ["import", "export"])
def test_progress_is_shown_on_a_terminal_only(
    cli: Cli, store: dict[str, Any], tmp_path: Path, command: str
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.md").write_text("a")
    if command == "import":
        args = ("import", str(source), "--store", STORE)
    else:
        cli.run("import", str(source), "--store", STORE)
        args = ("export", STORE, str(tmp_path / "out"))
    on_terminal = run_on_terminal(cli, *args)
    assert f"{command}ing" in on_terminal  # the progress bar's description
    assert "\x1b[" in on_terminal
    if command == "export":
        args = ("export", STORE, str(tmp_path / "out2"))
    piped = cli.run(*args)
    assert "\x1b[" not in piped.stdout + piped.stderr
    assert len(piped.lines) == 1  # the summary only


def test_listings_walk_every_page(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    names = [f"note-{i:03}.md" for i in range(105)]  # more than one engine page (100)
    for name in names:
        (source / name).write_text(name)
    cli.run("import", str(source), "--store", STORE)
    listed = cli.run("memory", "ls", STORE, "--json").json()
    assert [m["path"] for m in listed["data"]] == [f"/{name}" for name in names]
    assert len(cli.run("memory", "ls", STORE).lines) == 1 + 105
    assert version_count(cli) == 105
    assert cli.run("store", "show", STORE, "--json").json()["entry_count"] == 105


def test_put_does_not_wait_for_a_terminal(cli: Cli, store: dict[str, Any]) -> None:
    output = run_on_terminal(cli, "memory", "put", STORE, "/a.md", expect=1)
    assert "memfs: error: no content: pass --content TEXT or pipe the content on stdin" in output
    assert cli.paths(STORE) == []
