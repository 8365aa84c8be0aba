"""Mount option strings: ``memfs mount -o …``, ``mount -t fuse.memfs -o …`` and
``/etc/fstab`` (SPEC §4 Sandboxes, issue 12).

An option string is comma-separated, as mount(8) has it::

    allow_other,uid=1000,gid=1000,umask=077,store=notes,store=prefs:ro

memfs's own options:

===========================  ============================================================
``allow_other``              other uids may use the mount (implies default_permissions)
``default_permissions``      the kernel checks modes
``uid=N|NAME``, ``gid=``     the owner files and directories show
``umask=OCTAL``              bits cleared from every mode (default 022)
``store=NAME_OR_ID[:ro]``    a store to attach (repeat for several)
``ro``                       every store read-only
``layout=per-store|flat``    the layout
``database=URL_OR_PATH``     the database of an embedded mount
``api=URL``                  mount from a memfs server (the token in ``$MEMFS_TOKEN``)
``home=DIR``                 ``$MEMFS_HOME`` of the daemon (fstab mounts run as root)
``nonempty``, ``debug``      as ``--nonempty``, ``--debug``
===========================  ============================================================

mount(8)'s generic options (``rw``, ``defaults``, ``noauto``, ``nofail``, ``_netdev``,
``x-systemd.*``, ``nodev``, ``nosuid``, …) are accepted and left to mount(8). Values
can't hold commas (name a store by its id instead). Anything else is refused by name.
"""

from __future__ import annotations

import grp
import pwd
from collections.abc import Sequence
from dataclasses import dataclass, field

from memfs.core.errors import InvalidInput

__all__ = ["MountOptions", "parse_group", "parse_option_string", "parse_umask", "parse_user"]

# mount(8) options that concern mount(8) or the VFS and that memfs leaves alone.
_GENERIC_FLAGS = frozenset({
    "rw", "defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
    "owner", "group", "dev", "nodev", "suid", "nosuid", "exec", "noexec", "atime",
    "noatime", "relatime", "norelatime", "strictatime", "nodiratime", "diratime", "sync",
    "async", "loud", "silent", "lazytime", "nolazytime",
})
_GENERIC_PREFIXES = ("x-", "comment=", "fsname=", "subtype=", "helper=")


@dataclass
class MountOptions:
    """What an option string asks for; None/False/empty: not given."""

    allow_other: bool = False
    default_permissions: bool = False
    uid: int | None = None
    gid: int | None = None
    umask: int | None = None
    stores: list[str] = field(default_factory=list)
    read_only: bool = False
    layout: str | None = None
    database: str | None = None
    api: str | None = None
    home: str | None = None
    nonempty: bool = False
    debug: bool = False

    def store_arguments(self, given: Sequence[str] = ()) -> list[str]:
        """The ``--store`` arguments: ``given`` (from ``--store``) then ``store=``'s,
        each ``:ro`` when ``ro`` was given."""
        stores = [*given, *self.stores]
        if not self.read_only:
            return stores
        return [s if s.endswith(":ro") else s.removesuffix(":rw") + ":ro" for s in stores]


def parse_user(value: str) -> int:
    """A uid from a number or a user name. Raises InvalidInput."""
    if value.isdigit():
        return int(value)
    try:
        return pwd.getpwnam(value).pw_uid
    except KeyError:
        raise InvalidInput(f"uid={value}: no such user") from None


def parse_group(value: str) -> int:
    """A gid from a number or a group name. Raises InvalidInput."""
    if value.isdigit():
        return int(value)
    try:
        return grp.getgrnam(value).gr_gid
    except KeyError:
        raise InvalidInput(f"gid={value}: no such group") from None


def parse_umask(value: str) -> int:
    """``"077"`` → 0o077 (octal, 0 to 777). Raises InvalidInput."""
    try:
        umask = int(value, 8)
    except ValueError:
        raise InvalidInput(f"umask={value}: not an octal number") from None
    if not 0 <= umask <= 0o777:
        raise InvalidInput(f"umask={value}: must be from 000 to 777")
    return umask


_FLAGS = {"allow_other", "default_permissions", "ro", "nonempty", "debug"}
_VALUED = {"uid", "gid", "umask", "store", "layout", "database", "api", "home"}


def _apply(options: MountOptions, name: str, value: str) -> None:
    if name == "uid":
        options.uid = parse_user(value)
    elif name == "gid":
        options.gid = parse_group(value)
    elif name == "umask":
        options.umask = parse_umask(value)
    elif name == "store":
        options.stores.append(value)
    else:
        setattr(options, name, value)


def parse_option_string(text: str, into: MountOptions | None = None) -> MountOptions:
    """Parses one ``-o`` string (see the module docstring) into ``into`` (or a new
    :class:`MountOptions`); several ``-o`` add up.

    Raises:
        InvalidInput: an unknown option, a flag given a value, a valued option without
            one, or a bad uid/gid/umask; it names the option.
    """
    options = into if into is not None else MountOptions()
    for item in text.split(","):
        item = item.strip()
        if not item or item in _GENERIC_FLAGS or item.startswith(_GENERIC_PREFIXES):
            continue
        name, has_value, value = item.partition("=")
        if name in _FLAGS:
            if has_value:
                raise InvalidInput(f"mount option {name} takes no value (got {item!r})")
            if name == "ro":
                options.read_only = True
            else:
                setattr(options, name, True)
        elif name in _VALUED:
            if not value:
                raise InvalidInput(f"mount option {name} needs a value ({name}=…)")
            _apply(options, name, value)
        else:
            raise InvalidInput(
                f"unknown mount option {name!r} (memfs knows "
                f"{', '.join(sorted(_FLAGS | {v + '=' for v in _VALUED}))})"
            )
    return options
