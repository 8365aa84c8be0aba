"""Private files: nothing memfs keeps under ``$MEMFS_HOME`` is readable by other local
users — files 0600, directories 0700, whatever the umask — and an existing home made
world-readable by an older memfs is fixed at start, and said so once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.cli import RUN_TIMEOUT_S, Cli, memfs_env, run_memfs
from _support.mount import FUSE_UNAVAILABLE_REASON, Mounter, run, wait_until
from _support.serve import ServeProcess

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common default umask: without memfs's own care, files would be 0644."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def exposed(home: Path) -> list[str]:
    """Every file or directory below ``home`` (itself included) that group or others
    may access, with its mode."""
    found = []
    for path in [home, *home.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{oct(stat.S_IMODE(mode))} {path.relative_to(home.parent)}")
    return found


def names(home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in home.rglob("*")}


@pytest.mark.skipif(FUSE_UNAVAILABLE_REASON is not None, reason=str(FUSE_UNAVAILABLE_REASON))
def test_everything_under_a_new_home_is_private_whatever_the_umask(
    umask_022: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "fresh-home"  # made by memfs itself
    monkeypatch.setenv("MEMFS_HOME", str(home))
    monkeypatch.delenv("MEMFS_DATABASE", raising=False)
    cli = Cli(home)
    cli.run("store", "create", "notes")
    cli.run("memory", "put", "notes", "/a.md", "--content", "secret words")
    mounter = Mounter(tmp_path)
    server = ServeProcess(home / "memfs.db", tmp_path, env=memfs_env(home))
    try:
        # An embedded mount in the background (its log under logs/), a refused write
        # (its bytes under rejected/), and a remote mount (cache/, outbox/).
        embedded = tmp_path / "embedded"
        embedded.mkdir()
        mount = mounter.mount("notes", background=True, path=embedded)
        mount.expect_log("refused (EILSEQ")
        # A UTF-8 sequence cut short: refused at close, its bytes kept under rejected/.
        run("sh", "-c", f"printf 'caf\\303' > {embedded}/notes/a.md", check=False)
        token = cli.run("session", "create", "--store", "notes", "--json").json()["token"]
        remote = mounter.mount_remote(server.url, token)
        assert (remote / "notes" / "a.md").read_text() == "secret words"  # fills the cache
        (remote / "notes" / "b.md").write_text("written remotely")
        wait_until(lambda: "/b.md" in cli.paths("notes"), "the remote write to reach the server")
        live = names(home)
        live_exposed = exposed(home)
        for mount in list(mounter.mounts):
            mounter.unmount(mount)
    finally:
        try:
            mounter.close()
        finally:
            assert server.stop() == 0, server.log_text()
    for expected in ("memfs.db", "memfs.db-wal", "logs", "mounts", "rejected", "cache", "outbox"):
        assert any(n == expected or n.startswith(expected + "/") for n in live), (expected, live)
    assert any(n.startswith("mounts/") and n.endswith(".json") for n in live), live
    assert any(n.startswith("rejected/") and n.endswith("-a.md") for n in names(home))
    assert live_exposed == []
    assert exposed(home) == []


def test_an_existing_world_readable_home_is_made_private_once(
    umask_022: None, cli: Cli, store: dict[str, object]
) -> None:
    home = cli.home
    (home / "logs").mkdir(mode=0o755)
    (home / "logs" / "mount-x.log").write_text("a log an older memfs left readable\n")
    os.chmod(home / "logs", 0o755)
    os.chmod(home / "memfs.db", 0o644)
    os.chmod(home, 0o755)
    assert len(exposed(home)) == 4

    first = cli.run("store", "list")
    assert first.stderr.count("readable by other users") == 1, first.stderr
    assert f"{home} was readable by other users" in first.stderr
    assert exposed(home) == []
    assert stat.S_IMODE((home / "memfs.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "logs").stat().st_mode) == 0o700

    again = cli.run("store", "list")
    assert again.stderr == ""


def test_a_new_database_and_its_wal_are_private(umask_022: None, tmp_path: Path) -> None:
    database = tmp_path / "elsewhere" / "memfs.db"
    created = run_memfs(
        "store", "create", "x", "--database", str(database), env=memfs_env(tmp_path)
    )
    assert created.returncode == 0, created.stderr
    assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(database.stat().st_mode) == 0o600


@pytest.mark.parametrize("unit", ["memfs-server.service", "memfs-mount@.service"])
def test_the_systemd_units_set_a_private_umask(unit: str) -> None:
    lines = (REPO / "systemd" / unit).read_text().splitlines()
    assert "UMask=0077" in [line.strip() for line in lines]


@pytest.mark.parametrize(
    "args",
    [
        ("store", "list"),  # no database yet: the peek stands aside for the engine
        ("memory", "cat", "x", "/a.md"),
        ("memory", "cat", "x", "/a.md", "--at", "now"),  # the engine alone
    ],
)
def test_a_home_that_can_not_be_made_private_is_reported_once(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A command that asks the peek and then the engine secures the home once (a trial
    saw the warning twice). The failure is simulated in-process: root ignores modes, and
    `chattr +i` needs a filesystem that has it."""
    script = (
        "import sys, memfs.home as home\n"
        "def refuse(path):\n"
        "    raise PermissionError(1, 'Operation not permitted')\n"
        "home.secure_home = refuse\n"
        "from memfs.cli import main\n"
        "sys.argv = ['memfs', *sys.argv[1:]]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=memfs_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("could not make") == 1, done.stderr
    assert "no memfs database" in done.stderr
