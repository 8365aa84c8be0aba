"""Helpers of the conformance tests: the expectations file, the build of the suites,
pjdfstest's TAP output, and the README tables rendered from the expectations.

The suites are third-party code (pjdfstest, xfstests' fsx with a text-only patch)
whose sources live outside the repository, in ``$MEMFS_CONFORMANCE_SOURCES`` (default
``shared/conformance`` beside the repository, else ``/work/shared/conformance``);
``scripts/build-conformance`` builds them once into a cache keyed by the sources' sha256.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _support.mount import Mount

from memfs.core.model import MemoryStore
from memfs.store import Engine

HERE = Path(__file__).parent
REPO = HERE.parent.parent
EXPECTATIONS_FILE = HERE / "expectations.toml"
BUILD_SCRIPT = REPO / "scripts" / "build-conformance"
README = REPO / "README.md"
# shared/conformance beside the repository (as CI lays it out), else /work/shared's.
_SIBLING_SOURCES = REPO.parent / "shared" / "conformance"
DEFAULT_SOURCES = (
    _SIBLING_SOURCES if _SIBLING_SOURCES.is_dir() else Path("/work/shared/conformance")
)
SOURCES = Path(os.environ.get("MEMFS_CONFORMANCE_SOURCES", str(DEFAULT_SOURCES)))
APPLICABLE_LIST = SOURCES / "pjdfstest_applicable.txt"
BUILD_TIMEOUT_S = 600.0
# scripts/build-conformance exits 2 when a source file or a build tool is missing.
BUILD_MISSING_INPUT = 2

# What every fsx mode passes (see the [fsx] comment in expectations.toml): files of at
# most 100,000 bytes (the store's limit is 102,400, SPEC §1), none of the operations a
# text store can't do, no mapped writes.
FSX_COMMON_ARGS = (
    "-q", "-l", "100000", "-W", "-a",
    "-F", "-K", "-u", "-H", "-z", "-C", "-I", "-0", "-J", "-B", "-E",
)

# The store every conformance test mounts, and its directory in a per-store mount.
STORE_NAME = "Conformance"
STORE_DIR = "conformance"

README_BEGIN = "<!-- conformance tables: rendered from tests/conformance/expectations.toml -->"
README_END = "<!-- end of conformance tables -->"


def load_expectations() -> dict[str, Any]:
    """The parsed ``expectations.toml``: ``reasons``, ``pjdfstest`` (by ``dir/NN.t``),
    ``fsx`` (by mode)."""
    with open(EXPECTATIONS_FILE, "rb") as f:
        return tomllib.load(f)


def expected_failures(entry: dict[str, Any]) -> dict[int, str]:
    """The test numbers a pjdfstest file is expected to fail, with their reason keys."""
    return {int(number): reason for number, reason in entry.get("fail", {}).items()}


def racy_tests(entry: dict[str, Any]) -> dict[int, str]:
    """The test numbers whose outcome a named memfs bug makes depend on timing, with the
    bug's reason key: either outcome is accepted for those alone."""
    return {int(number): reason for number, reason in entry.get("racy", {}).items()}


@dataclass(frozen=True)
class Build:
    """Where ``scripts/build-conformance`` put the suites."""

    root: Path

    @property
    def pjdfstest_tests(self) -> Path:
        return self.root / "pjdfstest" / "tests"

    @property
    def fsx_text(self) -> Path:
        return self.root / "fsx_text"


@dataclass(frozen=True)
class StoreMount:
    """A mounted store (the ``store_mount`` fixture): the engine on its database, the
    store, the live mount."""

    engine: Engine
    store: MemoryStore
    mount: Mount

    @property
    def directory(self) -> Path:
        """The store's directory in the mount (the mount root itself is read-only)."""
        return Path(self.mount.path, STORE_DIR)


class SourcesMissing(Exception):
    """The third-party sources are not on this machine (the message says which)."""


def build_suites() -> Build:
    """Runs ``scripts/build-conformance`` (a no-op when the cached build is current).

    Raises:
        SourcesMissing: a source file or a build tool is missing (exit status 2).
        AssertionError: the build failed; the message holds the end of its log.
    """
    completed = subprocess.run(
        [str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
        check=False, stdin=subprocess.DEVNULL,
    )
    if completed.returncode == BUILD_MISSING_INPUT:
        raise SourcesMissing(completed.stderr.strip())
    if completed.returncode != 0:
        raise AssertionError(
            f"scripts/build-conformance exited {completed.returncode}:\n{completed.stderr}"
        )
    return Build(Path(completed.stdout.strip()))


@dataclass
class TapResult:
    """What one pjdfstest file printed, in TAP: its plan, each test's outcome."""

    planned: int | None = None
    passed: dict[int, bool] = field(default_factory=dict)
    bailed_out: bool = False
    duplicates: list[int] = field(default_factory=list)


_PLAN = re.compile(r"^1\.\.(\d+)\s*$")
_RESULT = re.compile(r"^(not )?ok (\d+)\b")


def parse_tap(output: str) -> TapResult:
    """Parses TAP output: ``1..N``, ``ok N``/``not ok N`` (a ``# TODO`` directive does not
    turn a failure into a pass here: the expectations name those too), ``Bail out!``."""
    result = TapResult()
    for line in output.splitlines():
        if result.planned is None and (plan := _PLAN.match(line)):
            result.planned = int(plan.group(1))
        elif outcome := _RESULT.match(line):
            number = int(outcome.group(2))
            if number in result.passed:
                result.duplicates.append(number)
            result.passed[number] = outcome.group(1) is None
        elif line.startswith("Bail out!"):
            result.bailed_out = True
    return result


def compare(name: str, entry: dict[str, Any], result: TapResult, output: str) -> list[str]:
    """Every difference between a file's TAP result and its expectations (empty: equal)."""
    problems: list[str] = []
    if result.planned != entry["tests"]:
        problems.append(f"{name}: planned {result.planned} tests, expected {entry['tests']}")
    if result.duplicates:
        problems.append(f"{name}: tests reported twice: {result.duplicates}")
    if "bail_out" in entry:
        if not result.bailed_out:
            problems.append(f"{name}: expected to bail out ({entry['bail_out']}), it did not")
        return problems + _with_output(problems, output)
    if result.bailed_out:
        problems.append(f"{name}: bailed out unexpectedly")
    failing = expected_failures(entry)
    racy = racy_tests(entry)
    for number in range(1, entry["tests"] + 1):
        if number not in result.passed:
            problems.append(f"{name} #{number}: did not run")
        elif number in racy:
            continue
        elif result.passed[number] and number in failing:
            problems.append(
                f"{name} #{number}: passed, expected to fail ({failing[number]}): "
                "update expectations.toml and the README table"
            )
        elif not result.passed[number] and number not in failing:
            problems.append(f"{name} #{number}: failed unexpectedly")
    extra = sorted(set(result.passed) - set(range(1, entry["tests"] + 1)))
    if extra:
        problems.append(f"{name}: tests beyond the plan: {extra}")
    return problems + _with_output(problems, output)


def _with_output(problems: list[str], output: str) -> list[str]:
    """The file's output, shortened (pjdfstest's names of 4,095-byte paths are long)."""
    if not problems:
        return []
    short = re.sub(r"[0-9a-f]{32,}(/[0-9a-f]+)*", "<name>", output)
    return ["    " + line[:300] for line in short.splitlines() if not line.startswith("ok ")]


def _by_design(entry: dict[str, Any]) -> tuple[int, str]:
    """How many of a file's tests pass by design, and its "by design" table cell."""
    if "bail_out" in entry:
        return 0, f"all: {entry['bail_out']} (bails out)"
    failing = expected_failures(entry)
    cell = ", ".join(f"{n}: {reason}" for n, reason in sorted(failing.items()))
    racy = racy_tests(entry)
    if racy:
        numbers = ", ".join(str(n) for n in sorted(racy))
        cell += f"; racy {numbers}: " + ", ".join(sorted(set(racy.values())))
    return entry["tests"] - len(failing), cell.removeprefix("; ")


def render_tables(expectations: dict[str, Any]) -> str:
    """The README's conformance tables (markdown), from the expectations alone."""
    lines = [
        "| pjdfstest file | what it checks | tests | passed | by design (test: reason) |",
        "|---|---|---:|---:|---|",
    ]
    total_tests = total_passed = total_racy = 0
    for name, entry in expectations["pjdfstest"].items():
        passed, cell = _by_design(entry)
        total_tests += entry["tests"]
        total_passed += passed
        total_racy += len(racy_tests(entry))
        desc = entry["desc"].replace("|", "\\|")
        lines.append(f"| `{name}` | {desc} | {entry['tests']} | {passed} | {cell} |")
    lines.append(
        f"| **{len(expectations['pjdfstest'])} files** | | **{total_tests}** "
        f"| **{total_passed}** | **{total_tests - total_passed} by design, 0 unexpected; "
        f"{total_racy} racy (a memfs bug)** |"
    )
    lines += ["", "| reason | why | SPEC |", "|---|---|---|"]
    lines += [f"| {key} | {r['why']} | {r['spec']} |" for key, r in expectations["reasons"].items()]
    lines += [
        "",
        "| fsx-text mode | what it exercises | options beyond the common ones | ops | seed |",
        "|---|---|---|---:|---:|",
    ]
    for mode, entry in expectations["fsx"].items():
        args = f"`{' '.join(entry['args'])}`" if entry["args"] else "—"
        lines.append(
            f"| {mode} | {entry['what']} | {args} | {entry['ops']:,} | {entry['seed']} |"
        )
    lines.append("")
    lines.append(
        f"Every fsx mode runs `FSX_TEXT=1 fsx_text {' '.join(FSX_COMMON_ARGS)}"
        " -N <ops> -S <seed> -P <log dir> <store dir>/<mode>.txt` plus its own options."
    )
    return "\n".join([README_BEGIN, *lines, README_END])
