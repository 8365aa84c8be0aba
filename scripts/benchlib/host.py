"""Facts about the machine and the kernel that the benchmark needs.

- the mount table (``/proc/self/mountinfo``): is a path a mount point, which filesystem
  type holds a path;
- the page cache: :func:`drop_caches` (root only; ``/proc/sys/vm/drop_caches``);
- a daemon's memory: :func:`memory_kib` reads ``VmHWM`` (peak resident set) or
  ``VmRSS`` from ``/proc/PID/status``;
- :func:`machine_description`: CPU, memory, kernel, distribution and tool versions, for
  the header of the results.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MountEntry",
    "drop_caches",
    "filesystem_type",
    "is_mount_point",
    "machine_description",
    "memory_kib",
    "mounts_below",
]

_DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass(frozen=True)
class MountEntry:
    """One line of ``/proc/self/mountinfo``: where, what type, from which source."""

    mount_point: str
    fs_type: str
    source: str


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo (proc(5)).
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and i + 3 < len(field):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_table() -> list[MountEntry]:
    """Every mount of this process's mount namespace, in mount order."""
    entries = []
    with open("/proc/self/mountinfo") as stream:
        for line in stream:
            left, right = line.split(" - ", 1)
            mount_point = _unescape(left.split()[4])
            fs_type, source = right.split()[:2]
            entries.append(MountEntry(mount_point, fs_type, _unescape(source)))
    return entries


def is_mount_point(path: Path) -> bool:
    """True when ``path`` is the mount point of a live mount."""
    target = os.path.abspath(path)
    return any(entry.mount_point == target for entry in mount_table())


def mounts_below(path: Path) -> list[str]:
    """Mount points at or below ``path`` (the leftovers a clean-up must remove)."""
    prefix = os.path.abspath(path)
    return [
        entry.mount_point
        for entry in mount_table()
        if entry.mount_point == prefix or entry.mount_point.startswith(prefix + "/")
    ]


def filesystem_type(path: Path) -> str:
    """The type of the filesystem holding ``path`` (longest mount point prefix wins)."""
    target = os.path.realpath(path)
    best, best_type = "", "unknown"
    for entry in mount_table():
        point = entry.mount_point
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, entry.fs_type
    return best_type


def drop_caches() -> bool:
    """Writes back dirty pages, then drops the page cache, dentries and inodes.

    Returns:
        False when not permitted (not root, or a read-only ``/proc/sys``); the caller
        reports that cold reads were only as cold as a remount makes them.
    """
    os.sync()
    try:
        _DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


def can_drop_caches() -> bool:
    """True when :func:`drop_caches` is permitted."""
    return os.access(_DROP_CACHES, os.W_OK)


def memory_kib(pid: int, field: str = "VmHWM") -> int | None:
    """A memory figure of process ``pid`` in KiB from ``/proc/PID/status``.

    Args:
        pid: the process.
        field: ``VmHWM`` (peak resident set size, "high water mark") or ``VmRSS``.

    Returns:
        The value in KiB, or None when the process is gone.
    """
    try:
        with open(f"/proc/{pid}/status") as stream:
            for line in stream:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _command_output(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None


def _first_field(path: str, prefix: str) -> str | None:
    """What follows ``prefix`` on the first line of ``path`` starting with it."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
    except OSError:
        pass
    return None


def _pyfuse3_version() -> str | None:
    """The installed pyfuse3's version (``3.5.0+memfs.kernelcache`` when patched)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyfuse3")
    except PackageNotFoundError:
        return None


def machine_description(repo: Path, backing: Path, ram: Path) -> dict[str, object]:
    """The facts printed above the results and stored in the JSON document."""
    cpu = (_first_field("/proc/cpuinfo", "model name") or ":unknown").split(":", 1)[1].strip()
    memory_total = _first_field("/proc/meminfo", "MemTotal:")
    memory_total_kib = int(memory_total.split()[0]) if memory_total else None
    distribution = (_first_field("/etc/os-release", "PRETTY_NAME=") or "unknown").strip('"')
    rclone = _command_output(["rclone", "version"])
    commit = _command_output(["git", "-C", str(repo), "describe", "--always", "--dirty"])
    pyfuse3_version = _pyfuse3_version()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_total_kib / 2**20, 1) if memory_total_kib else None,
        "kernel": platform.release(),
        "distribution": distribution,
        "python": platform.python_version(),
        "pyfuse3": pyfuse3_version,
        "libfuse3": _command_output(["pkg-config", "--modversion", "fuse3"]),
        "rclone": rclone.splitlines()[0] if rclone else None,
        "memfs_commit": commit,
        "backing_dir_fs": filesystem_type(backing),
        "ram_dir_fs": filesystem_type(ram),
        "drop_caches": can_drop_caches(),
        "load_average_1_5_15_min": [round(x, 2) for x in os.getloadavg()],
        "executable": sys.executable,
    }
