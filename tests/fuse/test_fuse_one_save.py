"""One save, one version (SPEC §4 "Semantics the agent can rely on": "Atomic save",
"One save, one version", ``O_CREAT|O_EXCL``), with the tools agents really save with.

Each test drives a real mount with a real tool in a subprocess, then asserts the store's
versions, ids and contents:

- a temporary file this mount created and renamed over a file (or to a new name) soon
  after is folded into its target: one version of the target (none if unchanged), the
  target's id kept, no memory and no version ever stored under the temporary name;
- an ``O_EXCL`` create is a claim, not a version: a file written once has one ``created``
  version holding its content;
- a file removed and created again under the same path by the same mount soon after
  keeps its id: one ``modified`` version, none if unchanged (``tar``, ``unzip -o``,
  ``git``);
- ``link(2)``: ``link(temporary, new)`` + ``unlink(temporary)`` (the no-clobber rename)
  gives ``new`` one ``created`` version and ``EEXIST`` when ``new`` exists; a backup link
  of a file about to be replaced is a copy of its content at link time.

A ``kill -9`` of the daemon between a temporary file's close and its rename loses
nothing: the save never completed, so the target is as it was and the temporary name
holds the bytes as one ``created`` version. The mounter checks fsck after each test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from _support.mount import (
    COMMAND_TIMEOUT_S,
    Mount,
    Mounter,
    kill_daemon,
    run,
    run_script,
    script_command,
    script_env,
    versions,
)

from memfs.core.model import MemoryStore, Operation
from memfs.store import Engine

TESTS_DIR = Path(__file__).resolve().parents[1]
NODE_MODULES = TESTS_DIR.parent / ".cache" / "node" / "node_modules"
NODE = shutil.which("node")

ORIGINAL = "alpha\nbeta\ngamma\n"
EDITED = "alpha\nBETA\ngamma\n"
FILE = "f.md"

History = list[tuple[Operation, str | None]]


@dataclass
class Notes:
    """The store "Notes" mounted at ``mount/notes``, and what the store holds."""

    mount: Mount
    engine: Engine
    store_id: str

    @property
    def directory(self) -> Path:
        return self.mount / "notes"

    def history(self, path: str) -> History:
        """Every version of the live memory at ``path``, oldest first: (operation, content)."""
        memory = self.engine.memories.get_by_path(self.store_id, path, with_content=False)
        return [
            (v.operation, self.engine.versions.get(self.store_id, v.id).content)
            for v in versions(self.engine, self.store_id, memory.id)
        ]

    def ids(self) -> dict[str, str]:
        """The live memories' ids, by path."""
        return {m.path: m.id for m in self.engine.memories.all(self.store_id)}

    def contents(self) -> dict[str, str | None]:
        """The live memories' contents, by path."""
        return {
            m.path: self.engine.memories.get(self.store_id, m.id, with_content=True).content
            for m in self.engine.memories.all(self.store_id)
        }

    def paths_ever_stored(self) -> set[str]:
        """The path of every version the store holds, deleted memories' included: a
        temporary name that ever reached the store shows here."""
        return {v.path for v in versions(self.engine, self.store_id)}

    def listing(self) -> list[str]:
        return sorted(os.listdir(self.directory))


@pytest.fixture
def open_notes(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine
) -> Callable[[dict[str, str]], Notes]:
    """Makes the store "Notes" holding ``files`` (path → content, one version each) and
    mounts it."""

    def open_notes(files: dict[str, str]) -> Notes:
        store = make_store("Notes", files)
        return Notes(mounter.mount("Notes"), store_engine, store.id)

    return open_notes


def _require(program: str, package: str) -> str:
    found = shutil.which(program)
    if found is None:
        pytest.skip(
            f"{program} is not installed (Debian package {package}; scripts/setup installs it)"
        )
    return found


def _require_write_file_atomic() -> None:
    if NODE is None:
        pytest.skip("node is not installed (Debian package nodejs; scripts/setup installs it)")
    if not (NODE_MODULES / "write-file-atomic").is_dir():
        pytest.skip(
            f"Node's write-file-atomic is not in {NODE_MODULES} (scripts/setup installs it)"
        )


# write-file-atomic's promise API, as npm and Node-based agents save: a temporary file
# beside the target (``f.md.<murmur hash>``), written, fsync'd, closed, renamed over it.
_WRITE_FILE_ATOMIC_JS = """
const writeFileAtomic = require("write-file-atomic");
const [file, content] = process.argv.slice(1);
writeFileAtomic(file, content).catch((error) => { console.error(error); process.exit(1); });
"""


def _write_file_atomic(directory: Path, name: str, content: str) -> None:
    _require_write_file_atomic()
    assert NODE is not None
    run(NODE, "-e", _WRITE_FILE_ATOMIC_JS, name, content, cwd=directory,
        env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))


def _python_saver(case: str) -> Callable[[Path, str, str], None]:
    """A saver of ``tests/_scripts/one_save.py``, run on ``directory/name``."""

    def save(directory: Path, name: str, content: str) -> None:
        out = run_script("one_save", case, directory / name, content)
        assert out == "", f"{case} of {name}: {out}"

    return save


def _line_patch(current: str, index: int, line: str) -> str:
    """A unified diff (``patch -p1``) that turns line ``index`` of ``FILE``, which holds
    ``current``, into ``line``; every other line is context."""
    lines = current.splitlines(keepends=True)
    body = "".join(
        f"-{old}+{line}\n" if i == index else f" {old}" for i, old in enumerate(lines)
    )
    count = len(lines)
    return f"--- a/{FILE}\n+++ b/{FILE}\n@@ -1,{count} +1,{count} @@\n{body}"


# An in-place edit: run in the store's directory, it makes FILE (which holds ORIGINAL or
# EDITED) hold EDITED. Run again, it rewrites FILE with the content it already has.
InPlaceEdit = Callable[[Path], None]


def _perl(directory: Path) -> None:
    run(_require("perl", "perl"), "-pi", "-e", "s/beta/BETA/", FILE, cwd=directory)


def _gawk(directory: Path) -> None:
    gawk = _require("gawk", "gawk")
    run(gawk, "-i", "inplace", '{ sub(/beta/, "BETA") } 1', FILE, cwd=directory)


def _sed(directory: Path) -> None:
    run("sed", "-i", "s/beta/BETA/", FILE, cwd=directory)


def _patch(directory: Path) -> None:
    """``patch -p1`` with a diff from what FILE holds now to line 2 reading ``BETA``."""
    diff = _line_patch((directory / FILE).read_text(), 1, "BETA")
    run(_require("patch", "patch"), "-p1", input=diff, cwd=directory)


def _saves_edited(save: Callable[[Path, str, str], None]) -> InPlaceEdit:
    """The in-place edit of a tool that saves whole contents: it saves EDITED as FILE."""
    return lambda directory: save(directory, FILE, EDITED)


IN_PLACE_EDITS: dict[str, InPlaceEdit] = {
    "perl -pi -e": _perl,
    "gawk -i inplace": _gawk,
    "patch": _patch,
    "sed -i": _sed,
    "write-file-atomic": _saves_edited(_write_file_atomic),
    "atomicwrites overwrite=True": _saves_edited(_python_saver("atomicwrites_rename")),
    "NamedTemporaryFile + os.replace": _saves_edited(_python_saver("named_temporary_replace")),
    "mkstemp + os.replace": _saves_edited(_python_saver("mkstemp_replace")),
}


@pytest.mark.parametrize("tool", sorted(IN_PLACE_EDITS))
def test_an_in_place_edit_is_one_version_of_the_file(
    open_notes: Callable[[dict[str, str]], Notes], tool: str
) -> None:
    """The tool's temporary file is folded into f.md: one ``modified`` version, the id
    kept, the temporary name never stored; run again (same content), no version."""
    notes = open_notes({f"/{FILE}": ORIGINAL})
    memory_id = notes.ids()[f"/{FILE}"]
    once: History = [(Operation.CREATED, ORIGINAL), (Operation.MODIFIED, EDITED)]

    IN_PLACE_EDITS[tool](notes.directory)
    assert (notes.directory / FILE).read_text() == EDITED
    assert notes.history(f"/{FILE}") == once
    assert notes.ids() == {f"/{FILE}": memory_id}
    assert notes.paths_ever_stored() == {f"/{FILE}"}
    assert notes.listing() == [FILE]

    IN_PLACE_EDITS[tool](notes.directory)
    assert notes.history(f"/{FILE}") == once
    assert notes.ids() == {f"/{FILE}": memory_id}
    assert notes.paths_ever_stored() == {f"/{FILE}"}
    assert notes.listing() == [FILE]


def test_jq_into_a_temporary_then_mv_is_one_version(
    open_notes: Callable[[dict[str, str]], Notes],
) -> None:
    """``jq . f.json > tmp && mv tmp f.json``: ``tmp`` is no scratch name, yet it leaves
    nothing in the store; run again (same content), no version."""
    jq = _require("jq", "jq")
    compact, pretty = '{"a":1,"b":"beta"}\n', '{\n  "a": 1,\n  "b": "beta"\n}\n'
    notes = open_notes({"/f.json": compact})
    memory_id = notes.ids()["/f.json"]
    once: History = [(Operation.CREATED, compact), (Operation.MODIFIED, pretty)]
    for _ in range(2):
        run("bash", "-c", f"{jq} . f.json > tmp && mv tmp f.json", cwd=notes.directory)
        assert (notes.directory / "f.json").read_text() == pretty
        assert notes.history("/f.json") == once
        assert notes.ids() == {"/f.json": memory_id}
        assert notes.paths_ever_stored() == {"/f.json"}
        assert notes.listing() == ["f.json"]


def test_a_copy_edited_in_place_and_moved_back_is_one_version(
    open_notes: Callable[[dict[str, str]], Notes],
) -> None:
    """``cp f g; sed -i … g; mv g f``: the copy is a file this mount created, and stays
    one after the ``sed -i`` saved over it, so moving it back is an atomic save of ``f``:
    one ``modified`` version, ``f``'s id kept (it was a delete of ``f`` and ``g``'s memory
    taking its path)."""
    notes = open_notes({f"/{FILE}": ORIGINAL})
    memory_id = notes.ids()[f"/{FILE}"]
    run("bash", "-c", f"cp {FILE} g.md && sed -i s/beta/BETA/ g.md && mv g.md {FILE}",
        cwd=notes.directory)
    assert (notes.directory / FILE).read_text() == EDITED
    assert notes.history(f"/{FILE}") == [
        (Operation.CREATED, ORIGINAL), (Operation.MODIFIED, EDITED)
    ]
    assert notes.ids() == {f"/{FILE}": memory_id}
    assert notes.listing() == [FILE]


def test_gawk_s_backup_link_is_a_copy_of_the_file_before_the_edit(
    open_notes: Callable[[dict[str, str]], Notes],
) -> None:
    """``gawk -i inplace -v inplace::suffix=.old``: ``link(f.md, f.md.old)``, then the
    temporary file renamed over f.md. f.md.old is a new memory holding f.md's content at
    link time (one ``created`` version); f.md gets one version and keeps its id."""
    gawk = _require("gawk", "gawk")
    notes = open_notes({f"/{FILE}": ORIGINAL})
    memory_id = notes.ids()[f"/{FILE}"]
    edit = [gawk, "-i", "inplace", "-v", "inplace::suffix=.old", '{ sub(/beta/, "BETA") } 1', FILE]
    once: History = [(Operation.CREATED, ORIGINAL), (Operation.MODIFIED, EDITED)]

    completed = run(*edit, cwd=notes.directory)
    # A refused link is a warning in gawk 5.1 ("inplace::end: link(`f.md', `f.md.old')
    # failed"), fatal in 5.2: either way it shows on stderr.
    assert completed.stderr == ""
    assert (notes.directory / FILE).read_text() == EDITED
    assert (notes.directory / f"{FILE}.old").read_text() == ORIGINAL
    assert notes.history(f"/{FILE}") == once
    assert notes.history(f"/{FILE}.old") == [(Operation.CREATED, ORIGINAL)]
    ids = notes.ids()
    assert ids[f"/{FILE}"] == memory_id
    assert sorted(ids) == [f"/{FILE}", f"/{FILE}.old"]
    assert ids[f"/{FILE}.old"] != memory_id
    assert notes.paths_ever_stored() == {f"/{FILE}", f"/{FILE}.old"}
    assert notes.listing() == [FILE, f"{FILE}.old"]

    # Again: f.md.old is removed and linked anew to f.md (now EDITED); f.md is unchanged.
    run(*edit, cwd=notes.directory)
    assert notes.history(f"/{FILE}") == once
    assert notes.contents() == {f"/{FILE}": EDITED, f"/{FILE}.old": EDITED}
    assert notes.ids()[f"/{FILE}"] == memory_id
    assert notes.paths_ever_stored() == {f"/{FILE}", f"/{FILE}.old"}
    assert notes.listing() == [FILE, f"{FILE}.old"]


def _noclobber_redirection(directory: Path, name: str, content: str) -> None:
    """bash's ``set -o noclobber; printf … > name``: an ``O_CREAT|O_EXCL`` open, then one
    write: the claim becomes the first version."""
    run("bash", "-c", 'set -o noclobber; printf %s "$1" > "$2"', "bash", content, name,
        cwd=directory)


NEW_FILE_SAVERS: dict[str, Callable[[Path, str, str], None]] = {
    "write-file-atomic": _write_file_atomic,
    "atomicwrites overwrite=True (rename)": _python_saver("atomicwrites_rename"),
    "atomicwrites overwrite=False (link + unlink)": _python_saver("atomicwrites_link"),
    "mkstemp + os.replace": _python_saver("mkstemp_replace"),
    "bash noclobber (O_EXCL)": _noclobber_redirection,
}


@pytest.mark.parametrize("tool", sorted(NEW_FILE_SAVERS))
def test_an_atomic_save_of_a_new_file_is_one_created_version(
    open_notes: Callable[[dict[str, str]], Notes], tool: str
) -> None:
    notes = open_notes({f"/{FILE}": ORIGINAL})
    NEW_FILE_SAVERS[tool](notes.directory, "new.md", "new\n")
    assert (notes.directory / "new.md").read_text() == "new\n"
    assert notes.history("/new.md") == [(Operation.CREATED, "new\n")]
    assert notes.history(f"/{FILE}") == [(Operation.CREATED, ORIGINAL)]
    assert notes.paths_ever_stored() == {f"/{FILE}", "/new.md"}
    assert notes.listing() == [FILE, "new.md"]


def test_atomicwrites_no_clobber_save_over_a_file_is_eexist_and_changes_nothing(
    open_notes: Callable[[dict[str, str]], Notes],
) -> None:
    """``atomic_write(f.md)`` (``overwrite=False``) when f.md exists: ``link`` says
    ``EEXIST``, atomicwrites removes its temporary file; f.md is as it was. The
    temporary's content never reached a name, so its removal is an ordinary ``rm``: a
    soft delete, restorable (nothing written is silently lost)."""
    notes = open_notes({f"/{FILE}": ORIGINAL})
    memory_id = notes.ids()[f"/{FILE}"]
    out = run_script("one_save", "atomicwrites_link", notes.directory / FILE, EDITED)
    assert out == "EEXIST\n"
    assert (notes.directory / FILE).read_text() == ORIGINAL
    assert notes.history(f"/{FILE}") == [(Operation.CREATED, ORIGINAL)]
    assert notes.ids() == {f"/{FILE}": memory_id}
    [temporary] = notes.paths_ever_stored() - {f"/{FILE}"}
    deleted = notes.engine.memories.deleted(notes.store_id)
    assert [m.path for m in deleted] == [temporary]
    assert notes.listing() == [FILE]


# Four files; an archive or a branch changes b.md, or b.md and c.md.
FOUR = {"a.md": "a\n", "b.md": "b\n", "c.md": "c\n", "d.md": "d\n"}
B_CHANGED = {**FOUR, "b.md": "b changed\n"}
B_AND_C_CHANGED = {**B_CHANGED, "c.md": "c changed\n"}


def _assert_rewritten(notes: Notes, ids: dict[str, str], changes: dict[str, list[str]]) -> None:
    """Every file of FOUR kept its id; ``changes[name]`` are the contents of its
    ``modified`` versions (oldest first; none for a file left out); nothing else was
    ever stored and the directory holds the four files."""
    assert notes.ids() == ids
    for name, content in FOUR.items():
        expected = [(Operation.CREATED, content)]
        expected += [(Operation.MODIFIED, c) for c in changes.get(name, [])]
        assert notes.history(f"/{name}") == expected, name
    assert notes.paths_ever_stored() == {f"/{name}" for name in FOUR}
    assert notes.listing() == sorted(FOUR)


def _tar(archive_dir: Path, files: dict[str, str], directory: Path) -> None:
    archive = archive_dir / "notes.tar"
    source = archive_dir / "tar-source"
    source.mkdir(exist_ok=True)
    with tarfile.open(archive, "w") as tar:
        for name, content in files.items():
            (source / name).write_text(content)
            tar.add(source / name, arcname=name)
    # GNU tar's default for an existing file: its O_EXCL create fails, so it unlinks the
    # file and creates it again.
    run("tar", "-xf", archive, cwd=directory)


def _unzip(archive_dir: Path, files: dict[str, str], directory: Path) -> None:
    unzip = _require("unzip", "unzip")
    archive = archive_dir / "notes.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for name, content in files.items():
            zipped.writestr(name, content)
    run(unzip, "-o", "-q", archive, cwd=directory)  # unlinks an existing file, then creates


EXTRACTORS: dict[str, Callable[[Path, dict[str, str], Path], None]] = {
    "tar -x": _tar,
    "unzip -o": _unzip,
}


@pytest.mark.parametrize("tool", sorted(EXTRACTORS))
def test_extracting_over_files_changes_only_the_changed_one(
    open_notes: Callable[[dict[str, str]], Notes], tmp_path: Path, tool: str
) -> None:
    """An archive of the four files with b.md changed: b.md gets one ``modified``
    version, the others none, every id kept; extracted again, no version."""
    notes = open_notes({f"/{name}": content for name, content in FOUR.items()})
    ids = notes.ids()
    for _ in range(2):
        EXTRACTORS[tool](tmp_path, B_CHANGED, notes.directory)
        assert {name: (notes.directory / name).read_text() for name in FOUR} == B_CHANGED
        _assert_rewritten(notes, ids, {"b.md": ["b changed\n"]})


@dataclass
class Repository:
    """A git repository whose work tree is the store's directory and whose git dir is
    outside the mount: branch ``main`` holds FOUR, branch ``change`` B_AND_C_CHANGED."""

    git_dir: Path
    work_tree: Path
    env: dict[str, str]

    def git(self, *args: str | Path) -> str:
        return run(
            "git", f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *args,
            cwd=self.work_tree, env=self.env,
        ).stdout


@pytest.fixture
def repository(
    open_notes: Callable[[dict[str, str]], Notes], tmp_path: Path
) -> tuple[Notes, Repository]:
    """The store holding FOUR (``main``'s tree), its directory the work tree of a
    repository built outside the mount; ``git status`` has refreshed the index."""
    _require("git", "git")
    home = tmp_path / "git-home"
    home.mkdir()
    env = dict(
        os.environ, HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Tester",
        GIT_AUTHOR_EMAIL="tester@example.com", GIT_COMMITTER_NAME="Tester",
        GIT_COMMITTER_EMAIL="tester@example.com",
    )
    source = tmp_path / "git-source"
    source.mkdir()
    repo = Repository(tmp_path / "repo.git", source, env)
    repo.git("init", "-q", "--initial-branch=main")
    for files, branch in ((FOUR, "main"), (B_AND_C_CHANGED, "change")):
        if branch != "main":
            repo.git("checkout", "-q", "-b", branch)
        for name, content in files.items():
            (source / name).write_text(content)
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", branch)
    repo.git("checkout", "-q", "main")

    notes = open_notes({f"/{name}": content for name, content in FOUR.items()})
    repo.work_tree = notes.directory
    assert repo.git("status", "--porcelain") == ""  # reads every file, writes only the git dir
    return notes, repo


def test_git_checkout_of_a_branch_rewrites_only_the_changed_files(
    repository: tuple[Notes, Repository],
) -> None:
    notes, repo = repository
    ids = notes.ids()
    repo.git("checkout", "-q", "change")
    assert repo.git("status", "--porcelain") == ""
    _assert_rewritten(notes, ids, {"b.md": ["b changed\n"], "c.md": ["c changed\n"]})


def test_git_apply_of_a_patch_rewrites_only_the_changed_files(
    repository: tuple[Notes, Repository], tmp_path: Path
) -> None:
    notes, repo = repository
    ids = notes.ids()
    patch = tmp_path / "change.patch"
    patch.write_text(repo.git("diff", "main", "change"))
    repo.git("apply", patch)
    assert repo.git("status", "--porcelain") == " M b.md\n M c.md\n"
    _assert_rewritten(notes, ids, {"b.md": ["b changed\n"], "c.md": ["c changed\n"]})


def test_git_stash_and_stash_pop_rewrite_only_the_edited_file(
    repository: tuple[Notes, Repository],
) -> None:
    notes, repo = repository
    ids = notes.ids()
    run("bash", "-c", "echo 'b edited' > b.md", cwd=notes.directory)  # the agent's edit
    repo.git("stash", "-q")
    assert (notes.directory / "b.md").read_text() == "b\n"
    repo.git("stash", "pop", "-q")
    assert (notes.directory / "b.md").read_text() == "b edited\n"
    _assert_rewritten(notes, ids, {"b.md": ["b edited\n", "b\n", "b edited\n"]})


def test_a_daemon_killed_between_a_temporary_s_close_and_its_rename_loses_nothing(
    open_notes: Callable[[dict[str, str]], Notes], mounter: Mounter
) -> None:
    """``kill -9`` of the daemon after ``mkstemp`` + write + close, before ``os.replace``.
    The save never completed: after a remount f.md is as it was, and the temporary name
    holds the bytes as one ``created`` version (close made them durable; SPEC §4
    close-to-open consistency); no empty memory, nothing else."""
    notes = open_notes({f"/{FILE}": ORIGINAL})
    memory_id = notes.ids()[f"/{FILE}"]
    saver = subprocess.Popen(
        script_command("one_save", "hold_temp", notes.directory, EDITED), env=script_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert saver.stdout is not None
        assert saver.stdin is not None
        temporary = saver.stdout.readline().strip()  # written and closed
        assert temporary, "the saver exited before writing its temporary file"
        kill_daemon(notes.mount)
        saver.stdin.close()  # the saver exits without renaming
        assert saver.wait(timeout=COMMAND_TIMEOUT_S) == 0
    finally:
        if saver.poll() is None:
            saver.kill()
            saver.wait()

    remounted = mounter.mount("Notes", path=notes.mount.path)
    remounted.expect_log("removing the stale mount")
    notes = Notes(remounted, notes.engine, notes.store_id)
    assert (notes.directory / FILE).read_text() == ORIGINAL
    assert (notes.directory / temporary).read_text() == EDITED
    assert notes.history(f"/{FILE}") == [(Operation.CREATED, ORIGINAL)]
    assert notes.history(f"/{temporary}") == [(Operation.CREATED, EDITED)]
    assert notes.ids()[f"/{FILE}"] == memory_id
    assert notes.contents() == {f"/{FILE}": ORIGINAL, f"/{temporary}": EDITED}
    assert notes.paths_ever_stored() == {f"/{FILE}", f"/{temporary}"}
    assert notes.listing() == sorted([FILE, temporary])


def test_a_file_removed_and_made_again_keeps_its_id_and_history(
    open_notes: Callable[[dict[str, str]], Notes],
) -> None:
    """SPEC §4 same name, same memory, for a file this mount wrote moments earlier
    (``tar -x`` twice in a row into a fresh directory): the first content stays in its
    history, the second is one ``modified`` version of the same memory."""
    notes = open_notes({})
    path = notes.directory / "g.md"
    path.write_text("v1\n")
    memory_id = notes.ids()["/g.md"]
    os.unlink(path)
    path.write_text("v2\n")
    assert notes.ids() == {"/g.md": memory_id}
    assert notes.history("/g.md") == [(Operation.CREATED, "v1\n"), (Operation.MODIFIED, "v2\n")]


def test_a_snapshot_keeps_what_a_fold_would_erase(
    open_notes: Callable[[dict[str, str]], Notes],
) -> None:
    """SPEC §10: versions a snapshot needs are history; a later fold of the same file
    (a rename over a target moments after its create) leaves them in place."""
    notes = open_notes({f"/{FILE}": ORIGINAL})
    draft = notes.directory / "draft.md"
    draft.write_text("draft\n")
    notes.engine.snapshots.create(notes.store_id, "with-draft")
    os.rename(draft, notes.directory / FILE)
    at_snapshot = notes.engine.history.get_by_path(notes.store_id, "/draft.md", at="with-draft")
    assert at_snapshot.content == "draft\n"
    assert (notes.directory / FILE).read_text() == "draft\n"
