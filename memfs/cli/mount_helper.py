"""``mount.fuse.memfs``: the helper mount(8) runs for ``-t fuse.memfs`` and for
``/etc/fstab`` lines of that type (SPEC §4 Sandboxes, issue 12 item 4).

mount(8) calls ``/sbin/mount.fuse.memfs SOURCE DIR [-sfnv] [-o OPTIONS]``; the helper
runs ``memfs mount DIR`` with the stores and options those name, in the background, and
returns once the mount is live (or with its error)::

    mount -t fuse.memfs memfs#notes /mnt/memory -o allow_other,uid=1000,gid=1000
    mount -t fuse.memfs memfs /mnt/memory -o store=notes,store=prefs:ro,umask=077

    # /etc/fstab
    memfs#notes  /mnt/memory  fuse.memfs  noauto,allow_other,uid=agent,home=/var/lib/memfs  0 0

SOURCE is ``memfs#NAME_OR_ID[:ro]`` (more stores with ``-o store=…``), a bare
``NAME_OR_ID[:ro]``, or ``memfs#`` (``memfs``, ``none``) when ``-o store=…`` names
them all. Prefer the ``memfs#`` forms: mount(8) turns a bare word into a path when a
file of that name is in its working directory.

OPTIONS are those of :mod:`memfs.cli.mount_options`. ``-f`` (fake) prints the command
instead of running it; ``-v`` prints it too, and what ``memfs mount`` says (the helper
is silent otherwise); ``-n`` and ``-s`` are accepted (memfs keeps no mtab and is never
sloppy about options: an unknown one is refused by name).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from memfs.cli.mount_options import parse_option_string
from memfs.core.errors import InvalidInput

__all__ = ["HelperCall", "main", "mount_command", "parse_helper_arguments"]

_NO_STORE_SOURCES = frozenset({"", "memfs", "none"})  # after the "memfs#" prefix


@dataclass(frozen=True)
class HelperCall:
    """What mount(8) asked for."""

    source: str
    target: str
    options: str
    fake: bool
    verbose: bool


def parse_helper_arguments(argv: Sequence[str]) -> HelperCall:
    """``SOURCE DIR [-sfnv] [-o OPTIONS] [-t TYPE]`` (mount(8) "External helpers").

    Raises:
        InvalidInput: missing SOURCE or DIR, an unknown flag, ``-N`` (another
            namespace), or a type other than fuse.memfs.
    """
    positional: list[str] = []
    options: list[str] = []
    fake = verbose = False
    arguments = list(argv)
    while arguments:
        argument = arguments.pop(0)
        if argument in ("-o", "-t", "-N"):
            if not arguments:
                raise InvalidInput(f"{argument} needs a value")
            value = arguments.pop(0)
            if argument == "-o":
                options.append(value)
            elif argument == "-t" and value not in ("fuse.memfs", "memfs"):
                raise InvalidInput(f"mount.fuse.memfs mounts fuse.memfs, not {value}")
            elif argument == "-N":
                raise InvalidInput("-N (mount in another namespace) is not supported: "
                                   "run mount inside it (nsenter --mount)")
        elif argument.startswith("-") and len(argument) > 1:
            for flag in argument[1:]:
                if flag not in "sfnv":
                    raise InvalidInput(f"unknown flag -{flag}")
                fake = fake or flag == "f"
                verbose = verbose or flag == "v"
        else:
            positional.append(argument)
    if len(positional) != 2:
        raise InvalidInput("usage: mount.fuse.memfs SOURCE DIR [-sfnv] [-o OPTIONS]")
    return HelperCall(positional[0], positional[1], ",".join(options), fake, verbose)


def mount_command(call: HelperCall, python: str = sys.executable) -> list[str]:
    """The ``memfs mount`` command for ``call`` (the daemon starts in the background).

    Raises:
        InvalidInput: a bad option (checked here, so nothing starts), or no store.
    """
    source = call.source.removeprefix("memfs#")
    parsed = parse_option_string(call.options)
    # -P: never import a `memfs` from the working directory (mount(8) runs us anywhere).
    command = [python, "-P", "-m", "memfs.cli.mounting", "mount", os.path.abspath(call.target)]
    if source not in _NO_STORE_SOURCES:
        command += ["--store", source]
    elif not parsed.stores and parsed.api is None:
        raise InvalidInput(
            f"no store: give the source as memfs#STORE or the option store=STORE "
            f"(got source {call.source!r})"
        )
    if call.options:
        command += ["-o", call.options]
    return command


def main(argv: Sequence[str] | None = None) -> None:
    """The ``mount.fuse.memfs`` console script: exits with ``memfs mount``'s status."""
    try:
        call = parse_helper_arguments(sys.argv[1:] if argv is None else argv)
        command = mount_command(call)
    except InvalidInput as exc:
        print(f"mount.fuse.memfs: {exc.message}", file=sys.stderr)
        raise SystemExit(1) from None
    if call.fake or call.verbose:
        print(shlex.join(command), file=sys.stderr)
    if call.fake:
        return
    # Silent on success, as mount(8) helpers are (`memfs mount` says where its log is).
    completed = subprocess.run(
        command, stdin=subprocess.DEVNULL,
        stdout=None if call.verbose else subprocess.DEVNULL, check=False,
    )
    raise SystemExit(completed.returncode)


if __name__ == "__main__":
    main()
