"""Who may use a mount (SPEC §4 Sandboxes): a root-mounted store with
``--allow-other --uid --gid --umask`` (or ``-o``), used by an unprivileged agent uid
through ``runuser`` with ordinary tools; another uid is refused where the modes say so.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from _support.mount import MEMFS, Mounter, errno_of, live, run, versions, wait_until
from sandbox_helpers import Agent, agent_errno, run_as

from memfs.core.model import Actor, MemoryStore
from memfs.fuse import mounts
from memfs.store import Engine


def _mount_options(path: Path) -> set[str]:
    with open("/proc/self/mountinfo") as file:
        for line in file:
            fields = line.split()
            if fields[4] == str(path):
                super_options = fields[fields.index("-") + 3]
                return set(fields[5].split(",")) | set(super_options.split(","))
    raise AssertionError(f"{path} is not in the mount table")


def _modes(agent: Agent, *paths: Path) -> dict[str, tuple[str, int, int]]:
    """stat(2) of each path as ``agent``: (mode as ls shows it, uid, gid)."""
    listing = run_as(agent, "stat", "-c", "%n %A %u %g", *paths).stdout.splitlines()
    result = {}
    for line in listing:
        name, mode, uid, gid = line.rsplit(" ", 3)
        result[Path(name).name or name] = (mode, int(uid), int(gid))
    return result


def test_an_agent_uid_uses_its_stores_with_ordinary_tools(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine,
    agents: tuple[Agent, Agent], shared_dir: Path,
) -> None:
    agent, other = agents
    notes = make_store("Notes", {"/hello.md": "hello\n", "/old.md": "old\n"})
    reference = make_store("Ref", {"/ref.md": "ref\n"})
    archived = make_store("Old", {"/gone.md": "gone\n"})
    path = shared_dir / "mnt"
    path.mkdir()
    mount = mounter.mount(
        "Notes", "Ref:ro", "Old", path=path,
        extra_args=("--allow-other", "--uid", str(agent.uid), "--gid", str(agent.gid),
                    "--umask", "077"),
    )
    assert {"allow_other", "default_permissions"} <= _mount_options(path)
    store_engine.stores.archive(archived.id)  # elsewhere: the mount turns it read-only
    wait_until(
        lambda: _modes(agent, path / "old/gone.md")["gone.md"][0] == "-r--------",
        "the archived store's files to show no write bits",
    )

    # What the agent sees: its own files, no write bits where nothing can be written.
    modes = _modes(agent, path, path / "notes", path / "notes/hello.md", path / "ref",
                   path / "ref/ref.md", path / "old", path / "old/gone.md")
    owner = (agent.uid, agent.gid)
    assert modes == {
        "mnt": ("dr-x------", *owner),
        "notes": ("drwx------", *owner),
        "hello.md": ("-rw-------", *owner),
        "ref": ("dr-x------", *owner),
        "ref.md": ("-r--------", *owner),
        "old": ("dr-x------", *owner),
        "gone.md": ("-r--------", *owner),
    }

    # ls, cat, echo >, sed -i, mv, rm as the agent.
    script = """
        set -e
        cd notes
        ls
        cat hello.md
        echo new > new.md
        sed -i s/hello/bonjour/ hello.md
        mv new.md moved.md
        rm old.md
    """
    done = run_as(agent, "sh", "-c", script, cwd=path)
    assert done.stdout == "hello.md\nold.md\nhello\n"
    memories = live(store_engine, notes.id)
    assert {p: m.content for p, m in memories.items()} == {
        "/hello.md": "bonjour\n", "/moved.md": "new\n",
    }
    session = Actor.session(mount.session_id)
    written = [v for v in versions(store_engine, notes.id) if v.created_by is not None]
    # new.md, renamed moments after its create, is folded into moved.md (SPEC §4 one
    # save, one version): its one version is at /moved.md.
    assert {v.path for v in written} == {"/hello.md", "/moved.md", "/old.md"}
    assert all(v.created_by == session for v in written)

    # The read-only store: the kernel refuses what its modes forbid (EACCES, the agent
    # is no root), memfs what they let through (EROFS); root, whom modes don't stop,
    # gets memfs's EROFS for a write (SPEC §4 order of refusals).
    target = path / "ref/ref.md"
    assert agent_errno(agent, f"open({str(target)!r}, 'w')") == "EACCES"
    assert agent_errno(agent, f"open({str(path / 'ref/new.md')!r}, 'w')") == "EACCES"
    assert agent_errno(agent, f"os.utime({str(target)!r})") == "EROFS"
    assert agent_errno(agent, f"os.chmod({str(target)!r}, 0o600)") == "EROFS"
    assert agent_errno(agent, f"os.mkdir({str(path / 'top')!r})") == "EACCES"
    assert errno_of(f"open({str(target)!r}, 'w')") == "EROFS"
    assert errno_of(f"open({str(path / 'old/gone.md')!r}, 'a')") == "EROFS"
    assert live(store_engine, reference.id)["/ref.md"].content == "ref\n"
    # The system-prompt note of this mount tells the agent what it just met.
    note = run(MEMFS, "prompt", "--mount", path).stdout
    assert 'fails with "Permission denied" (EACCES; "Read-only file system" (EROFS) ' \
        "when running as root)" in note

    # Another uid, not named: the modes (umask 077) keep it out of everything, from
    # the mount root (dr-x------) down.
    for code in (
        f"os.stat({str(path / 'notes')!r})",
        f"os.listdir({str(path / 'notes')!r})",
        f"open({str(path / 'notes/hello.md')!r}).read()",
        f"open({str(path / 'notes/intruder.md')!r}, 'w')",
    ):
        assert agent_errno(other, code) == "EACCES", code
    assert set(live(store_engine, notes.id)) == {"/hello.md", "/moved.md"}


def test_mount_options_string_gives_the_same_access(
    mounter: Mounter, make_store: Callable[..., MemoryStore], store_engine: Engine,
    agents: tuple[Agent, Agent], shared_dir: Path,
) -> None:
    agent, other = agents
    notes = make_store("Notes", {"/hello.md": "hello\n"})
    path = shared_dir / "mnt"
    path.mkdir()
    # In the background (the daemon gets the options from `memfs mount`), by name.
    mounter.mount(
        "Notes", path=path, background=True,
        extra_args=("-o", f"allow_other,uid={agent.name},gid={agent.gid},umask=027"),
    )
    assert {"allow_other", "default_permissions"} <= _mount_options(path)
    assert _modes(agent, path / "notes/hello.md")["hello.md"] == (
        "-rw-r-----", agent.uid, agent.gid
    )
    run_as(agent, "sh", "-c", "echo agent >> hello.md", cwd=path / "notes")
    assert agent_errno(other, f"open({str(path / 'notes/hello.md')!r}).read()") == "EACCES"
    assert live(store_engine, notes.id)["/hello.md"].content == "hello\nagent\n"


def test_without_allow_other_only_the_mounter_gets_in(
    mounter: Mounter, make_store: Callable[..., MemoryStore],
    agents: tuple[Agent, Agent], shared_dir: Path,
) -> None:
    agent, _ = agents
    make_store("Notes", {"/hello.md": "hello\n"})
    path = shared_dir / "mnt"
    path.mkdir()
    mounter.mount("Notes", path=path, extra_args=("--uid", str(agent.uid)))
    assert "allow_other" not in _mount_options(path)
    assert os.stat(path / "notes/hello.md").st_uid == agent.uid
    assert stat.S_IMODE(os.stat(path / "notes/hello.md").st_mode) == 0o644
    assert agent_errno(agent, f"os.stat({str(path / 'notes')!r})") == "EACCES"


def test_bad_options_are_refused_by_name(
    make_store: Callable[..., MemoryStore], shared_dir: Path, memfs_home: Path
) -> None:
    make_store("Notes")
    from _support.cli import MEMFS

    for options, message in (
        (("-o", "allow_other,colour=blue"), "unknown mount option 'colour'"),
        (("--umask", "999"), "umask=999: not an octal number"),
        (("-o", "uid=no-such-user-here"), "uid=no-such-user-here: no such user"),
        (("-o", "allow_other=1"), "mount option allow_other takes no value"),
    ):
        completed = subprocess.run(
            [MEMFS, "mount", str(shared_dir), "--store", "Notes", *options],
            capture_output=True, text=True, timeout=30, check=False,
        )
        assert completed.returncode == 1, completed
        assert message in completed.stderr, completed.stderr
        assert not mounts.is_mounted(str(shared_dir))
