#!/usr/bin/env python3
"""Side-by-side benchmark of memfs (issue 5): run it as ``scripts/bench [--quick]``.

In one run on one machine, the same workloads (see :mod:`benchlib.workloads`) run on:

- kernel tmpfs (the limit),
- ``rclone mount`` of a local directory with ``--vfs-cache-mode writes`` (a widely used
  FUSE peer),
- ``scripts/floorfs.py``, a minimal in-memory pyfuse3 filesystem (the floor of the stack
  memfs is built on),
- the same with ``--kernel-cache``, the *patched floor*: what the pyfuse3 patch of
  third_party/pyfuse3 lets the kernel cache (issue 17),
- memfs, embedded mount,

on a generated tree of markdown notes, on a real corpus found on the machine, and on a
three-level tree for metadata and search. It prints a markdown table of medians with
ratios to tmpfs and to rclone, then issue 5's targets, and with ``--json`` writes every
sample. Every mount it makes is unmounted and every scratch directory removed at the
end, also after a failure or Ctrl-C. A system that fails shows ``FAILED`` with the reason;
the other columns still run. Exit status: 0 when every figure was measured, 1 when any
failed, 130 when interrupted.

Needs /dev/fuse and fusermount3; runs best as root (root mounts a private tmpfs for the
sources and drops the page cache before cold reads; otherwise /dev/shm is used and cold
reads are only as cold as a remount makes them, which the table says).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import host
from benchlib.report import evaluate_targets, format_report, to_json
from benchlib.systems import (
    FloorSystem,
    MemfsSystem,
    PatchedFloorSystem,
    RcloneSystem,
    Scratch,
    StockMemfsSystem,
    System,
    TmpfsSystem,
    fusermount_command,
)
from benchlib.trees import Tree, collect_corpus, generate_markdown_tree
from benchlib.workloads import SystemRun, run_system, workload_specs

REPO = Path(__file__).resolve().parent.parent
ALL_SYSTEMS = ("tmpfs", "rclone", "floor", "floor_patched", "memfs_stock", "memfs")
# memfs_stock (memfs with issue 17's kernel caching off) only when asked for.
DEFAULT_SYSTEMS = tuple(s for s in ALL_SYSTEMS if s != "memfs_stock")

# (generated files, corpus files, metadata files, repeats)
FULL_SIZES = (1000, 1000, 10_000, 5)
QUICK_SIZES = (100, 100, 500, 3)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench",
        description="Side-by-side benchmark: tmpfs, rclone mount, pyfuse3 floor, memfs.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer files and repeats: a run of under a minute"
    )
    parser.add_argument("--repeats", type=int, help="timed repeats per workload (median)")
    parser.add_argument("--files", type=int, help="files in the generated tree (default 1000)")
    parser.add_argument("--corpus-files", type=int, help="at most this many corpus files")
    parser.add_argument(
        "--meta-files", type=int, help="files in the metadata/search tree (default 10000)"
    )
    parser.add_argument(
        "--systems",
        default=",".join(DEFAULT_SYSTEMS),
        help=f"comma-separated subset of {','.join(ALL_SYSTEMS)}",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every sample here")
    parser.add_argument(
        "--scratch-dir",
        type=Path,
        default=Path("/var/tmp"),
        help="where the backing data goes (rclone's directory, memfs's "
        "store); default /var/tmp, i.e. a real disk",
    )
    parser.add_argument(
        "--memfs-command",
        default=str(REPO / ".venv" / "bin" / "memfs"),
        help="the memfs CLI to mount with",
    )
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    args.files = args.files or sizes[0]
    args.corpus_files = args.corpus_files or sizes[1]
    args.meta_files = args.meta_files or sizes[2]
    args.repeats = args.repeats or sizes[3]
    requested = {s.strip() for s in args.systems.split(",") if s.strip()}
    unknown = requested - set(ALL_SYSTEMS)
    args.systems = [s for s in ALL_SYSTEMS if s in requested]  # columns in a fixed order
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    if min(args.files, args.corpus_files, args.meta_files, args.repeats) < 1:
        parser.error("sizes and repeats must be at least 1")
    return args


class _Progress:
    """Progress lines on stderr, stamped with seconds since the start."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, line: str) -> None:
        print(
            f"[bench {time.monotonic() - self.started:6.1f}s] {line}", file=sys.stderr, flush=True
        )


def _ram_directory(disk: Path, progress: _Progress) -> tuple[Path, bool]:
    """A directory on tmpfs for the sources and the tmpfs system; True if we mounted it."""
    ram = disk / "ram"
    ram.mkdir()
    if os.geteuid() == 0:
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "mode=0755", "memfs-bench", str(ram)],
            capture_output=True,
            text=True,
        )
        if result.returncode == 0:
            return ram, True
        progress(f"cannot mount a tmpfs ({result.stderr.strip()}); using /dev/shm")
    if host.filesystem_type(Path("/dev/shm")) == "tmpfs":
        ram.rmdir()
        return Path(tempfile.mkdtemp(prefix="memfs-bench-", dir="/dev/shm")), False
    raise SystemExit("scripts/bench: no tmpfs available (run as root, or mount /dev/shm)")


def _make_system(key: str, scratch: Scratch, args: argparse.Namespace) -> System:
    if key == "tmpfs":
        return TmpfsSystem(scratch)
    if key == "rclone":
        return RcloneSystem(scratch)
    if key == "floor":
        return FloorSystem(scratch)
    if key == "floor_patched":
        return PatchedFloorSystem(scratch)
    if key == "memfs_stock":
        return StockMemfsSystem(scratch, args.memfs_command)
    return MemfsSystem(scratch, args.memfs_command)


def _header(
    args: argparse.Namespace,
    machine: dict[str, object],
    trees: list[Tree],
    disk: Path,
    load_at_start: tuple[float, ...],
) -> list[str]:
    generated, corpus, metadata = trees
    load_at_end = os.getloadavg()
    mb = 1e6
    return [
        f"memfs benchmark ({'--quick' if args.quick else 'full run'}), "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, medians of {args.repeats} repeats",
        f"machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB RAM; "
        f"{machine['distribution']}, kernel {machine['kernel']}; load average at start "
        f"{load_at_start[0]:.2f}, at end {load_at_end[0]:.2f} (1 min; other work skews the "
        "figures)",
        f"software: Python {machine['python']}, pyfuse3 {machine['pyfuse3']}, "
        f"libfuse {machine['libfuse3']}, {machine['rclone']}, memfs {machine['memfs_commit']}",
        f"backing data (rclone's directory, memfs's SQLite) on {machine['backing_dir_fs']} "
        f"({disk}); sources and tmpfs on {machine['ram_dir_fs']}; page cache dropped before "
        f"cold reads: {'yes' if machine['drop_caches'] else 'NO (not root)'}",
        f"trees: generated = {len(generated.files):,} markdown notes of 1–8 KiB "
        f"({generated.total_bytes / mb:.1f} MB); corpus = {len(corpus.files):,} text files "
        f"from /usr/share/common-licenses and /usr/share/doc ({corpus.total_bytes / mb:.1f} MB); "
        f"metadata = {len(metadata.files):,} notes in 3 levels "
        f"({metadata.total_bytes / mb:.1f} MB)",
    ]


def _cleanup(
    systems: list[System], disk: Path, ram: Path, mounted_ram: bool, progress: _Progress
) -> None:
    """Unmounts everything below the scratch directories and removes them. Never raises."""
    for system in systems:
        with contextlib.suppress(Exception):
            system.abandon()
    for mount_point in sorted(host.mounts_below(disk), key=len, reverse=True):
        if mounted_ram and mount_point == str(ram):
            continue
        progress(f"clean-up: lazily unmounting leftover {mount_point}")
        subprocess.run([fusermount_command(), "-u", "-z", mount_point], capture_output=True)
    if mounted_ram:
        subprocess.run(["umount", str(ram)], capture_output=True)
    else:
        shutil.rmtree(ram, ignore_errors=True)
    if host.mounts_below(disk):
        progress(f"clean-up: mounts remain below {disk}; leaving it in place")
    else:
        shutil.rmtree(disk, ignore_errors=True)


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark; returns the exit status (see the module docstring)."""
    args = _parse_args(argv)
    progress = _Progress()
    load_at_start = os.getloadavg()
    # Also SIGINT: a shell starts background jobs with SIGINT ignored, and Python keeps it so.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_interrupt)
    args.scratch_dir.mkdir(parents=True, exist_ok=True)
    disk = Path(tempfile.mkdtemp(prefix="memfs-bench-", dir=args.scratch_dir)).resolve()
    progress(f"scratch directory {disk}")
    ram, mounted_ram = disk / "ram", False
    systems: list[System] = []
    try:
        ram, mounted_ram = _ram_directory(disk, progress)
        progress(f"generating trees in {ram} ({host.filesystem_type(ram)})")
        sources = ram / "src"
        generated = generate_markdown_tree(
            sources / "generated", "generated", args.files, levels=2, seed=5
        )
        corpus = collect_corpus(sources / "corpus", args.corpus_files)
        metadata = generate_markdown_tree(
            sources / "metadata", "metadata", args.meta_files, levels=3, seed=7
        )
        trees = [generated, corpus, metadata]
        progress(
            f"trees ready: {len(generated.files)} generated, {len(corpus.files)} corpus, "
            f"{len(metadata.files)} metadata files"
        )
        scratch = Scratch(ram, disk, REPO)
        work = disk / "lists"
        work.mkdir()
        runs: dict[str, SystemRun] = {}
        for key in args.systems:
            system = _make_system(key, scratch, args)
            systems.append(system)
            progress(f"=== {system.title}")
            runs[key] = run_system(
                system,
                generated=generated,
                corpus=corpus,
                metadata=metadata,
                repeats=args.repeats,
                work=work,
                progress=progress,
            )
        specs = workload_specs(generated, corpus, metadata)
        titles = {s.key: s.title for s in systems}
        notes = {s.key: s.notes for s in systems}
        machine = host.machine_description(REPO, disk, ram)
        targets = evaluate_targets(specs, runs, len(metadata.files))
        print(
            format_report(
                specs,
                runs,
                titles,
                notes,
                _header(args, machine, trees, disk, load_at_start),
                targets,
            )
        )
        if args.json is not None:
            config = {
                "quick": args.quick,
                "repeats": args.repeats,
                "generated_files": len(generated.files),
                "corpus_files": len(corpus.files),
                "metadata_files": len(metadata.files),
                "systems": args.systems,
                "scratch_dir": str(args.scratch_dir),
                "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                "load_average_at_start": list(load_at_start),
            }
            document = to_json(specs, runs, titles, notes, machine, config, targets)
            args.json.write_text(json.dumps(document, indent=2) + "\n")
            progress(f"wrote {args.json}")
        failed = any(
            run.failure or any(m.error for m in run.results.values()) for run in runs.values()
        )
        return 1 if failed else 0
    except KeyboardInterrupt:
        progress("interrupted: unmounting and cleaning up")
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # let the clean-up finish
        _cleanup(systems, disk, ram, mounted_ram, progress)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        progress("done")


if __name__ == "__main__":
    sys.exit(main())
