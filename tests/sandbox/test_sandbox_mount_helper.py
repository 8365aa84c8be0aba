"""``mount.fuse.memfs`` (SPEC §4 Sandboxes): ``mount -t fuse.memfs``
and ``/etc/fstab`` lines mount memfs, ``umount`` unmounts it; option strings as
mount(8) passes them are parsed, and bad ones refused by name.

The real mounts run in a private mount namespace whose ``/sbin`` holds this checkout's
helper (and whose ``/etc/fstab`` is the test's): the machine's are left alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _support.mount import live, wait_until
from sandbox_helpers import in_namespace

from memfs.cli.mount_helper import HelperCall, mount_command, parse_helper_arguments
from memfs.cli.mount_options import MountOptions, parse_option_string
from memfs.core.errors import InvalidInput
from memfs.core.model import MemoryStore
from memfs.fuse.status import log_path, status_path
from memfs.store import Engine

HELPER = Path(sys.executable).parent / "mount.fuse.memfs"


def test_an_fstab_option_string_is_parsed() -> None:
    options = parse_option_string(
        "rw,noauto,nofail,_netdev,x-systemd.automount,allow_other,uid=0,gid=0,umask=077,"
        "store=notes,store=mem_x:ro,layout=flat,home=/var/lib/memfs,nodev,nosuid"
    )
    assert options == MountOptions(
        allow_other=True, uid=0, gid=0, umask=0o077, stores=["notes", "mem_x:ro"],
        layout="flat", home="/var/lib/memfs",
    )
    assert parse_option_string("ro,store=a,store=b:rw").store_arguments(["c"]) == [
        "c:ro", "a:ro", "b:ro",
    ]
    with pytest.raises(InvalidInput, match="unknown mount option 'colour'"):
        parse_option_string("allow_other,colour=blue")
    with pytest.raises(InvalidInput, match="mount option store needs a value"):
        parse_option_string("store=")
    with pytest.raises(InvalidInput, match="umask=8: not an octal number"):
        parse_option_string("umask=8")


def test_the_helper_turns_mount_arguments_into_memfs_mount() -> None:
    call = parse_helper_arguments(
        ["memfs#notes:ro", "/mnt/memory", "-n", "-o", "rw,allow_other,uid=0", "-t", "fuse.memfs"]
    )
    assert call == HelperCall("memfs#notes:ro", "/mnt/memory", "rw,allow_other,uid=0",
                              fake=False, verbose=False)
    assert mount_command(call, python="py") == [
        "py", "-P", "-m", "memfs.cli.mounting", "mount", "/mnt/memory", "--store", "notes:ro",
        "-o", "rw,allow_other,uid=0",
    ]
    by_option = parse_helper_arguments(["memfs#", "/m", "-fv", "-o", "store=a,store=b"])
    assert by_option.fake
    assert mount_command(by_option, python="py")[6:] == ["-o", "store=a,store=b"]
    for argv, message in (
        (["memfs", "/m"], "no store: give the source as memfs#STORE or the option store="),
        (["memfs#a", "/m", "-N", "1"], "-N (mount in another namespace) is not supported"),
        (["memfs#a"], "usage: mount.fuse.memfs SOURCE DIR"),
        (["memfs#a", "/m", "-o", "bogus"], "unknown mount option 'bogus'"),
    ):
        with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
            mount_command(parse_helper_arguments(argv))


def _with_helper(body: str, fstab: Path | None = None) -> str:
    """``body`` in a namespace whose /sbin holds only this checkout's helper."""
    sbin = os.path.realpath("/sbin")
    lines = [
        f"mount -t tmpfs -o mode=755 memfs-test-sbin {sbin}",
        f"ln -s {HELPER} {sbin}/mount.fuse.memfs",
    ]
    if fstab is not None:
        lines.append(f"mount --bind {fstab} /etc/fstab")
    return "\n".join(lines) + "\n" + body


@pytest.mark.usefixtures("fuse_available", "as_root")
def test_mount_t_fuse_memfs_and_umount_round_trip(
    make_store: Callable[..., MemoryStore], store_engine: Engine, tmp_path: Path
) -> None:
    notes = make_store("Notes", {"/hello.md": "hello\n"})
    path = tmp_path / "mnt"
    path.mkdir()
    done = in_namespace(_with_helper(f"""
        mount -t fuse.memfs memfs#Notes {path} -o allow_other,umask=077
        grep " {path} " /proc/self/mountinfo
        cat {path}/notes/hello.md
        echo new > {path}/notes/new.md
        umount {path}
        grep -c " {path} " /proc/self/mountinfo || true
    """))
    mountinfo, hello, remaining = done.stdout.splitlines()[-3:]
    assert " fuse.memfs memfs " in mountinfo
    assert "allow_other" in mountinfo
    assert hello == "hello"
    assert remaining == "0"
    # The daemon finishes after umount(8) returns; its status file goes last.
    wait_until(lambda: not status_path(str(path)).exists(), "the daemon to finish")
    assert {p: m.content for p, m in live(store_engine, notes.id).items()} == {
        "/hello.md": "hello\n", "/new.md": "new\n",
    }
    _assert_clean_log(path)
    assert list(store_engine.iter_fsck_findings()) == []


def _assert_clean_log(path: Path) -> None:
    log = log_path(str(path)).read_text()
    assert "unmounted" in log
    for bad in (" ERROR ", " WARNING ", "Traceback"):
        assert bad not in log, log


@pytest.mark.usefixtures("fuse_available", "as_root")
def test_an_etc_fstab_line_mounts(
    make_store: Callable[..., MemoryStore], store_engine: Engine, tmp_path: Path,
    memfs_home: Path,
) -> None:
    notes = make_store("Notes", {"/hello.md": "hello\n"})
    reference = make_store("Ref", {"/ref.md": "ref\n"})
    path = tmp_path / "mnt"
    path.mkdir()
    fstab = tmp_path / "fstab"
    fstab.write_text(
        f"memfs#Notes  {path}  fuse.memfs  noauto,store={reference.id}:ro,"
        f"home={memfs_home}  0 0\n"
    )
    done = in_namespace(_with_helper(f"""
        mount {path}
        ls {path}
        echo more >> {path}/notes/hello.md
        echo no > {path}/ref/ref.md 2>/dev/null && exit 3
        umount {path}
    """, fstab), env={"MEMFS_HOME": "/nonexistent"})  # home= is what counts
    assert done.stdout.split() == ["notes", "ref"]
    wait_until(lambda: not status_path(str(path)).exists(), "the daemon to finish")
    assert live(store_engine, notes.id)["/hello.md"].content == "hello\nmore\n"
    _assert_clean_log(path)
    assert list(store_engine.iter_fsck_findings()) == []
