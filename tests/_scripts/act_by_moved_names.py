"""Changes by path through mount B after the names were moved or deleted through mount
A (tests/fuse/test_fuse_close_to_open.py), ROUNDS times: rm, truncate and setxattr by a
moved name, rm of a name deleted and made again, and a write through a descriptor held
across a move. Prints ``<action> <errno or ok>`` for each of the first four.

Usage: act_by_moved_names A B ROUNDS
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial

from _scripts import errno_name


def main(a: str, b: str, rounds: str) -> None:
    def named(name: str) -> None:
        with open(f"{a}/{name}", "w") as f:
            f.write(name + "\n")
        with open(f"{b}/{name}") as f:
            f.read()  # mount B knows it by this name

    def errno_of(action: Callable[[], object]) -> str:
        try:
            action()
        except OSError as e:
            return errno_name(e)
        return "ok"

    for i in range(int(rounds)):
        named(f"q{i}")
        os.rename(f"{a}/q{i}", f"{a}/q{i}-moved")
        print("rm", errno_of(partial(os.unlink, f"{b}/q{i}")))
        named(f"t{i}")
        os.rename(f"{a}/t{i}", f"{a}/t{i}-moved")
        print("truncate", errno_of(partial(os.truncate, f"{b}/t{i}", 0)))
        named(f"x{i}")
        os.rename(f"{a}/x{i}", f"{a}/x{i}-moved")
        print("setxattr", errno_of(partial(os.setxattr, f"{b}/x{i}", "user.meta.k", b"v")))
        named(f"r{i}")
        os.unlink(f"{a}/r{i}")
        with open(f"{a}/r{i}", "w") as f:
            f.write("again\n")
        print("rm-made-again", errno_of(partial(os.unlink, f"{b}/r{i}")))
        named(f"h{i}")
        with open(f"{b}/h{i}", "a") as held:
            os.rename(f"{a}/h{i}", f"{a}/h{i}-moved")
            held.write("appended\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
