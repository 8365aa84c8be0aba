"""Who may use a mount and where it lives (SPEC §4 "Sandboxes").

* :class:`MountAccess`: ``allow_other``, ``default_permissions``, ``uid``, ``gid``,
  ``umask``: the kernel's mount options and the owner and modes every file shows.
* :func:`check_can_mount`: the conditions the kernel and ``fusermount3`` would refuse a
  mount for, checked first so the refusal names the cause and the fix (``/dev/fuse``
  that can't be opened, ``allow_other`` without ``user_allow_other`` in
  ``/etc/fuse.conf``, no setuid ``fusermount3`` for a non-root mounter).
* :class:`NamespaceWatch`: whether the private mount namespace the daemon runs in has
  ended. A mount made inside ``unshare -m`` lives in that namespace only; the daemon is
  itself a member, so the namespace (and the mount) would outlive everything that
  could use it. The daemon ends its mount once the other processes there are gone
  (:mod:`memfs.fuse.daemon`).

Nothing here imports pyfuse3: the CLI uses it too.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shutil
import stat
from dataclasses import dataclass

__all__ = [
    "FUSE_CONF",
    "FUSE_DEVICE",
    "FuseUnavailable",
    "MountAccess",
    "NamespaceWatch",
    "check_can_mount",
    "entered_from",
    "mount_namespace",
]

FUSE_DEVICE = "/dev/fuse"
FUSE_CONF = "/etc/fuse.conf"
FUSERMOUNT = "fusermount3"


class FuseUnavailable(RuntimeError):
    """The kernel or ``fusermount3`` would refuse this mount; the message says why and
    what fixes it. (A RuntimeError like pyfuse3's own refusal: the CLI reports both.)"""


@dataclass(frozen=True)
class MountAccess:
    """Who may use a mount and what owner and modes its files show (SPEC §4 Sandboxes).

    Attributes:
        allow_other: let other uids in (the kernel's ``allow_other``); implies
            ``default_permissions``, so the kernel checks the modes below.
        default_permissions: the kernel checks modes (implied by ``allow_other``).
        uid, gid: the owner every file and directory shows; None: the mounter's.
        umask: bits cleared from every mode (0o022: files 0644, directories 0755).

    Read-only places (read-only or archived stores, the per-store mount root) show no
    write bits whatever the umask.
    """

    allow_other: bool = False
    default_permissions: bool = False
    uid: int | None = None
    gid: int | None = None
    umask: int = 0o022

    def __post_init__(self) -> None:
        if not 0 <= self.umask <= 0o777:
            raise ValueError(f"umask must be an octal number from 000 to 777, not {self.umask:o}")
        for name, value in (("uid", self.uid), ("gid", self.gid)):
            if value is not None and not 0 <= value < 2**32 - 1:
                raise ValueError(f"{name} must be a number from 0 to 4294967294, not {value}")

    @property
    def checks_permissions(self) -> bool:
        """Whether the kernel checks modes (``default_permissions``)."""
        return self.allow_other or self.default_permissions

    def kernel_options(self) -> set[str]:
        """The FUSE mount options (mount.fuse3(8)) these add."""
        options = set()
        if self.allow_other:
            options.add("allow_other")
        if self.checks_permissions:
            options.add("default_permissions")
        return options

    def owner(self) -> tuple[int, int]:
        """(uid, gid) every inode shows."""
        return (
            os.getuid() if self.uid is None else self.uid,
            os.getgid() if self.gid is None else self.gid,
        )

    def directory_mode(self, writable: bool) -> int:
        """Permission bits of a directory (without S_IFDIR)."""
        return (0o777 if writable else 0o555) & ~self.umask

    def file_mode(self, writable: bool) -> int:
        """Permission bits of a file (without S_IFREG)."""
        return (0o666 if writable else 0o444) & ~self.umask


def _device_fix(device: str, error: OSError, info: os.stat_result | None) -> str:
    if info is None:
        return (
            f"{device} does not exist: load the FUSE kernel module (`modprobe fuse`) or, "
            f"in a container, pass the device in (`--device {device}`)"
        )
    if error.errno == errno.EPERM:
        return (
            f"the device cgroup refuses {device}: in a container, run it with "
            f"`--device {device}` (and `--cap-add SYS_ADMIN` to mount as root inside)"
        )
    group = _group_name(info.st_gid)
    return (
        f"give uid {os.geteuid()} read-write access to it: `chmod 0666 {device}` (the "
        f"usual mode) or add the user to group {group}; in a container, run it with "
        f"`--device {device}`"
    )


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def check_fuse_device(device: str = FUSE_DEVICE) -> None:
    """Opens the FUSE device the way a mount does, to name the device, its mode and
    the fix when it can't be opened (libfuse says only "fuse_session_mount failed").

    Raises:
        FuseUnavailable: it can't be opened read-write.
    """
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        try:
            info: os.stat_result | None = os.stat(device)
        except OSError:
            info = None
        described = (
            f" ({stat.filemode(info.st_mode)} {_user_name(info.st_uid)}:"
            f"{_group_name(info.st_gid)})" if info is not None else ""
        )
        raise FuseUnavailable(
            f"can't open {device}{described} as uid {os.geteuid()}: {exc.strerror}; "
            + _device_fix(device, exc, info)
        ) from exc
    os.close(fd)


def user_allow_other(conf: str = FUSE_CONF) -> bool:
    """Whether ``conf`` has the ``user_allow_other`` line (fuse(8))."""
    try:
        with open(conf) as file:
            return any(line.strip() == "user_allow_other" for line in file)
    except OSError:
        return False


def check_can_mount(access: MountAccess, device: str = FUSE_DEVICE) -> None:
    """What the kernel or ``fusermount3`` would refuse, with the cause and the fix.

    A non-root mounter mounts through the setuid ``fusermount3``, which allows
    ``allow_other`` only with ``user_allow_other`` in ``/etc/fuse.conf``. memfs never
    edits that file: it is the machine's policy.

    Raises:
        FuseUnavailable: the device can't be opened, ``fusermount3`` is missing or not
            setuid root (non-root mounter), or ``allow_other`` is not allowed.
    """
    check_fuse_device(device)
    if os.geteuid() == 0:
        return
    program = shutil.which(FUSERMOUNT)
    if program is None:
        raise FuseUnavailable(
            f"a non-root user (uid {os.geteuid()}) mounts through {FUSERMOUNT}, which is "
            "not installed: install the fuse3 package"
        )
    info = os.stat(program)
    if not (info.st_mode & stat.S_ISUID and info.st_uid == 0):
        raise FuseUnavailable(
            f"a non-root user (uid {os.geteuid()}) mounts through {program}, which is not "
            f"setuid root ({stat.filemode(info.st_mode)}): `chmod u+s {program}` as root"
        )
    if access.allow_other and not user_allow_other():
        raise FuseUnavailable(
            f"allow_other needs a line `user_allow_other` in {FUSE_CONF} when a non-root "
            f"user (uid {os.geteuid()}) mounts; add it as root (memfs does not edit "
            f"{FUSE_CONF}), or mount as root"
        )


def mount_namespace(pid: int | str = "self") -> str | None:
    """The mount namespace of ``pid`` (``"mnt:[4026531841]"``), or None when it is gone
    or not ours to see (proc(5): ptrace access mode is needed)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return int(file.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def entered_from() -> str | None:
    """The mount namespace this process's nearest ancestor in another one is in: set
    when this process runs in a namespace made below it (``unshare -m``, ``nsenter``),
    None when every ancestor it can see shares its namespace (the host's, a
    container's, a systemd service's)."""
    own = mount_namespace()
    pid = os.getpid()
    while own is not None:
        parent = _parent_of(pid)
        if parent is None or parent == 0:
            return None
        namespace = mount_namespace(parent)
        if namespace is None:
            return None  # not ours to see: assume nothing
        if namespace != own:
            return namespace
        pid = parent
    return None


class NamespaceWatch:
    """Whether the private mount namespace this daemon runs in has ended: the processes
    that were in it with the daemon are all gone.

    Watched only when the daemon started in a namespace made below an ancestor of it
    (:func:`entered_from`); the host's, a container's or a service's namespace is never
    watched (a container's ends by killing its processes). The namespace counts as
    ended once some other process was seen in it and none is left. One check costs one
    ``readlink`` while the process found last is alive, a scan of ``/proc`` when it
    is gone.
    """

    def __init__(self) -> None:
        self.namespace = mount_namespace()
        self.watched = self.namespace is not None and entered_from() is not None
        self._companion: int | None = None
        self._seen_others = False
        self._own = {os.getpid()}  # this daemon and its helpers

    def own(self, pid: int) -> None:
        """Counts process ``pid`` (a helper of this daemon) as none of the others."""
        self._own.add(pid)

    def ended(self) -> bool:
        """True when others were in the namespace and none is left (False when not
        watched)."""
        if not self.watched:
            return False
        if self._others_left():
            self._seen_others = True
            return False
        return self._seen_others

    def _others_left(self) -> bool:
        if self._companion is not None and mount_namespace(self._companion) == self.namespace:
            return True
        self._companion = None
        try:
            entries = os.listdir("/proc")
        except OSError:
            return True
        for entry in entries:
            if not entry.isdigit() or int(entry) in self._own:
                continue
            if mount_namespace(entry) == self.namespace:
                self._companion = int(entry)
                return True
        return False
