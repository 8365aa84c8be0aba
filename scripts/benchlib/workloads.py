"""The workloads of issue 5, timed by wall clock, each checked for correctness.

A workload's timed command writes to ``/dev/null``; an untimed run of the same command
(the warm-up, or a check afterwards) is compared with what the tree says it must
produce, so a filesystem that loses or garbles data fails loudly instead of looking fast.

Sequence for one system (``R`` = repeats):

files session (empty filesystem):
    1. copy in: ``cp -r`` of each tree into a new directory, R times (every copy kept);
       checked: same names and sizes.
    2. warm read: ``cat`` every file of the last copy; one untimed, checked run, then R.
    3. cold read: R times: make the system cold (see :mod:`benchlib.systems`), ``cat``
       every file of each tree; checked once afterwards.
    6. small edits: ``echo LINE >> f`` once per file of the generated tree, in one
       ``bash`` loop (no fork per append); one untimed round, then R; checked: sizes.
metadata session (preloaded with the three-level tree, untimed):
    7. mount time: the first mount (page cache dropped), then R remounts (warm cache).
    4. metadata: ``find .`` and ``ls -lR .``; one untimed, checked run each, then R.
    5. search: ``grep -r WORD .``; one untimed run checked against the tree, then R.
    7. daemon peak RSS (``VmHWM``) after 4 and after 5.
"""

from __future__ import annotations

import hashlib
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import host
from benchlib.systems import COMMAND_ENV, SetupFailed, System, tree_listing
from benchlib.trees import SEARCH_WORD, Tree

__all__ = [
    "Measurement",
    "WORKLOADS",
    "WorkloadFailed",
    "WorkloadSpec",
    "run_system",
]

COMMAND_TIMEOUT_S = 900.0
EDIT_LINE = "- edited: one more line, appended with echo >> f"


class WorkloadFailed(RuntimeError):
    """A workload's command failed or produced wrong results; the message says which."""


@dataclass
class Measurement:
    """The result of one workload on one system.

    Attributes:
        samples: the timed repeats, in seconds (or MB, 10**6 bytes, for memory figures).
        error: why there are no samples (the workload failed, or was not run).
        note: a caveat printed beside the figure (e.g. "cold = warm").
    """

    samples: list[float] = field(default_factory=list)
    error: str | None = None
    note: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples and not self.error else None


@dataclass(frozen=True)
class WorkloadSpec:
    """One row of the table. ``unit`` is "s" (time) or "MB" (memory, 10**6 bytes)."""

    key: str
    label: str
    unit: str = "s"


def workload_specs(generated: Tree, corpus: Tree, metadata: Tree) -> list[WorkloadSpec]:
    """The rows, in print order, labelled with the sizes actually used."""
    g, c, m = len(generated.files), len(corpus.files), len(metadata.files)
    return [
        WorkloadSpec("copy_generated", f"1 copy in: cp -r, {g:,} generated files"),
        WorkloadSpec("copy_corpus", f"1 copy in: cp -r, {c:,} corpus files"),
        WorkloadSpec("warm_generated", f"2 warm read: cat, {g:,} generated"),
        WorkloadSpec("warm_corpus", f"2 warm read: cat, {c:,} corpus"),
        WorkloadSpec("cold_generated", f"3 cold read: cat, {g:,} generated"),
        WorkloadSpec("cold_corpus", f"3 cold read: cat, {c:,} corpus"),
        WorkloadSpec("find", f"4 metadata: find, {m:,} files"),
        WorkloadSpec("ls_lR", f"4 metadata: ls -lR, {m:,} files"),
        WorkloadSpec("grep", f"5 search: grep -r, {m:,} files"),
        WorkloadSpec("edits", f"6 small edits: {g:,} × echo >> f"),
        WorkloadSpec("rss_metadata", "7 daemon peak RSS after 4", "MB"),
        WorkloadSpec("rss_search", "7 daemon peak RSS after 5", "MB"),
        WorkloadSpec("mount", f"7 mount, {m:,}-file store"),
        WorkloadSpec("mount_cold", f"7 mount, {m:,}-file store, cold cache"),
    ]


_NO_TREE = Tree("", Path(), (), (), "", 0, 0)
# The row keys in print order (the labels need the trees' sizes; the keys do not).
WORKLOADS = [spec.key for spec in workload_specs(_NO_TREE, _NO_TREE, _NO_TREE)]


# ------------------------------------------------------------------------- commands


def _run(
    argv: list[str], cwd: Path, *, capture: bool = False
) -> subprocess.CompletedProcess[bytes]:
    _require_directory(cwd)
    try:
        result = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=COMMAND_ENV,
            timeout=COMMAND_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        # A command this slow means a hung daemon: give up on the whole system.
        raise SetupFailed(f"`{' '.join(argv)}` timed out after {COMMAND_TIMEOUT_S:.0f} s") from exc
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", errors="replace").strip()[-600:]
        raise WorkloadFailed(f"`{' '.join(argv)}` exited {result.returncode}: {tail}")
    return result


def _require_directory(directory: Path) -> None:
    if not directory.is_dir():
        raise WorkloadFailed(f"not run: {directory.name} is missing (did copy in fail?)")


def timed(argv: list[str], cwd: Path) -> float:
    """Wall-clock seconds of one run of ``argv`` in ``cwd`` (output to /dev/null).

    Raises:
        WorkloadFailed: non-zero exit status (the message carries stderr's tail).
        SetupFailed: the command hung past :data:`COMMAND_TIMEOUT_S`.
    """
    started = time.perf_counter()
    _run(argv, cwd)
    return time.perf_counter() - started


def _cat_argv(list_file: Path) -> list[str]:
    return ["xargs", "-0", "-a", str(list_file), "cat"]


def _edit_argv(list_file: Path, line: str) -> list[str]:
    # One bash process; `echo` is a builtin, so each append is open+write+close only.
    script = 'while IFS= read -r -d "" f; do echo "$1" >> "$f"; done < "$0"'
    return ["bash", "-c", script, str(list_file), line]


def check_copy(tree: Tree, destination: Path) -> None:
    """Raises :class:`WorkloadFailed` unless ``destination`` holds ``tree``'s files."""
    expected = dict(zip(tree.files, tree.sizes_bytes, strict=True))
    found = tree_listing(destination)
    if found != expected:
        missing = sorted(set(expected) - set(found))[:3]
        extra = sorted(set(found) - set(expected))[:3]
        wrong = sorted(k for k in set(found) & set(expected) if found[k] != expected[k])[:3]
        raise WorkloadFailed(
            f"copy of {tree.name} is wrong: missing {missing}, unexpected {extra}, "
            f"wrong size {wrong} (first three of each)"
        )


def check_read(tree: Tree, directory: Path, list_file: Path) -> None:
    """Raises :class:`WorkloadFailed` unless reading every file gives ``tree``'s bytes."""
    data = _run(_cat_argv(list_file), directory, capture=True).stdout
    if hashlib.sha256(data).hexdigest() != tree.sha256:
        raise WorkloadFailed(
            f"reading {tree.name} gave {len(data):,} bytes with a different SHA-256 "
            f"(expected {tree.total_bytes:,} bytes)"
        )


# ------------------------------------------------------------------------- the runner


@dataclass
class SystemRun:
    """Everything measured on one system; ``failure`` names a fatal setup error."""

    results: dict[str, Measurement] = field(default_factory=dict)
    failure: str | None = None
    seed_rate_ms: float | None = None


Progress = Callable[[str], None]


def run_system(
    system: System,
    *,
    generated: Tree,
    corpus: Tree,
    metadata: Tree,
    repeats: int,
    work: Path,
    progress: Progress,
) -> SystemRun:
    """Runs every workload on ``system``; never raises for a failure of the system.

    Args:
        system: the filesystem under test (no session open).
        generated, corpus, metadata: the trees (see :mod:`benchlib.trees`).
        repeats: timed repeats per workload (the median is reported).
        work: a scratch directory for file lists.
        progress: called with one line per step.

    Returns:
        The measurements; a workload that failed has ``error`` set, and after a
        :class:`SetupFailed` every workload not yet run says so.
    """
    runner = _Runner(system, generated, corpus, metadata, repeats, work, progress)
    run = runner.run
    try:
        runner.files_session()
        runner.metadata_session()
    except Exception as exc:  # SetupFailed, or a system breaking the harness's assumptions
        run.failure = str(exc) if isinstance(exc, SetupFailed) else repr(exc)
        progress(f"{system.key}: FAILED: {run.failure}")
        system.abandon()
    except BaseException:
        system.abandon()
        raise
    for key in WORKLOADS:
        if key not in run.results and run.failure:
            run.results[key] = Measurement(error=f"not run: {run.failure}")
    return run


class _Runner:
    """The workloads of :func:`run_system`, in the order they run (two sessions)."""

    def __init__(
        self,
        system: System,
        generated: Tree,
        corpus: Tree,
        metadata: Tree,
        repeats: int,
        work: Path,
        progress: Progress,
    ) -> None:
        self.system = system
        self.generated, self.corpus, self.metadata = generated, corpus, metadata
        self.repeats = repeats
        self.progress = progress
        self.run = SystemRun()
        self.lists = {
            tree.name: tree.write_file_list(work / f"{tree.name}.list")
            for tree in (generated, corpus, metadata)
        }
        self.root = Path()
        self.last = repeats - 1

    def record(self, key: str, action: Callable[[], Measurement]) -> None:
        try:
            self.run.results[key] = action()
        except SetupFailed:
            raise
        except Exception as exc:  # a misbehaving system fails its cell, never the run
            message = str(exc) if isinstance(exc, WorkloadFailed) else repr(exc)
            problems = self.system.daemon_problems()
            if problems:
                message += f" | daemon log: {problems}"
            self.run.results[key] = Measurement(error=message)
            self.progress(f"{self.system.key}: {key} FAILED: {message}")

    def repeat(self, label: str, once: Callable[[], float]) -> Measurement:
        samples = []
        for index in range(self.repeats):
            samples.append(once())
            self.progress(
                f"{self.system.key}: {label} {index + 1}/{self.repeats}: "
                f"{samples[-1] * 1000:.1f} ms"
            )
        return Measurement(samples)

    def _copy(self, tree: Tree) -> Path:
        return self.root / f"{tree.name}-{self.last}"

    # ------------------------------------------------------------ files session

    def files_session(self) -> None:
        self.root = self.system.open_session("files")
        for tree in (self.generated, self.corpus):
            self.record(f"copy_{tree.name}", lambda tree=tree: self.copy_in(tree))
        self.system.settle()
        for tree in (self.generated, self.corpus):
            self.record(f"warm_{tree.name}", lambda tree=tree: self.warm(tree))
        cold_samples, cold_errors = self.cold_reads()
        for tree in (self.generated, self.corpus):

            def cold(tree: Tree = tree) -> Measurement:
                if tree.name in cold_errors:
                    raise WorkloadFailed(cold_errors[tree.name])
                check_read(tree, self._copy(tree), self.lists[tree.name])
                return Measurement(cold_samples[tree.name], note=self.system.cold_note)

            self.record(f"cold_{tree.name}", cold)
        self.record("edits", self.edits)
        self.system.close_session()

    def copy_in(self, tree: Tree) -> Measurement:
        samples = []
        for index in range(self.repeats):
            destination = self.root / f"{tree.name}-{index}"
            samples.append(timed(["cp", "-r", str(tree.path), str(destination)], self.root))
            self.progress(
                f"{self.system.key}: copy {tree.name} {index + 1}/{self.repeats}: "
                f"{samples[-1] * 1000:.1f} ms"
            )
            check_copy(tree, destination)
        return Measurement(samples)

    def warm(self, tree: Tree) -> Measurement:
        directory = self._copy(tree)
        check_read(tree, directory, self.lists[tree.name])
        return self.repeat(
            f"warm read {tree.name}", lambda: timed(_cat_argv(self.lists[tree.name]), directory)
        )

    def cold_reads(self) -> tuple[dict[str, list[float]], dict[str, str]]:
        """Each repeat makes the system cold once, then reads both trees."""
        samples: dict[str, list[float]] = {self.generated.name: [], self.corpus.name: []}
        errors: dict[str, str] = {}
        for index in range(self.repeats):
            self.system.go_cold()
            self.root = self.system.root or self.root
            for tree in (self.generated, self.corpus):
                if tree.name in errors:
                    continue
                try:
                    seconds = timed(_cat_argv(self.lists[tree.name]), self._copy(tree))
                except WorkloadFailed as exc:
                    errors[tree.name] = str(exc)
                    continue
                samples[tree.name].append(seconds)
                self.progress(
                    f"{self.system.key}: cold read {tree.name} {index + 1}/{self.repeats}: "
                    f"{seconds * 1000:.1f} ms"
                )
        return samples, errors

    def edits(self) -> Measurement:
        generated = self.generated
        directory = self._copy(generated)
        file_list = self.lists[generated.name]
        lines = [f"{EDIT_LINE} (round {n})" for n in range(self.repeats + 1)]
        _run(_edit_argv(file_list, lines[0]), directory)
        rounds = iter(lines[1:])
        samples = self.repeat(
            "edits", lambda: timed(_edit_argv(file_list, next(rounds)), directory)
        )
        grown = sum(len(line.encode()) + 1 for line in lines)
        expected = {
            f: size + grown for f, size in zip(generated.files, generated.sizes_bytes, strict=True)
        }
        if tree_listing(directory) != expected:
            raise WorkloadFailed("after the appends, file sizes are not what was appended")
        return samples

    # --------------------------------------------------------- metadata session

    def metadata_session(self) -> None:
        system = self.system
        self.root = system.open_session("meta", preload=self.metadata)
        self.run.seed_rate_ms = getattr(system, "seed_rate_ms", None)
        first_mount_s = system.last_mount_s
        self.record("find", self.find)
        self.record("ls_lR", self.ls_lr)
        self.record("rss_metadata", self.peak_rss)
        self.record("grep", self.grep)
        self.record("rss_search", self.peak_rss)
        self.record("mount", lambda: self.mount_time(first_mount_s))
        if not system.can_remount or first_mount_s is None:
            self.run.results["mount_cold"] = Measurement(note=system.mount_note and "see mount")
        else:
            note = None if host.can_drop_caches() else "page cache NOT dropped (not root)"
            self.run.results["mount_cold"] = Measurement([first_mount_s], note=note)
        system.close_session()

    @property
    def _meta_directory(self) -> Path:
        return self.root / self.metadata.name

    def find(self) -> Measurement:
        directory = self._meta_directory
        listed = _run(["find", "."], directory, capture=True).stdout.count(b"\n")
        expected = len(self.metadata.files) + self.metadata.directories + 1
        if listed != expected:
            raise WorkloadFailed(f"find listed {listed:,} entries, expected {expected:,}")
        return self.repeat("find", lambda: timed(["find", "."], directory))

    def ls_lr(self) -> Measurement:
        directory = self._meta_directory
        out = _run(["ls", "-lR", "."], directory, capture=True).stdout
        regular = sum(1 for line in out.splitlines() if line.startswith(b"-"))
        if regular != len(self.metadata.files):
            raise WorkloadFailed(
                f"ls -lR listed {regular:,} files, expected {len(self.metadata.files):,}"
            )
        return self.repeat("ls -lR", lambda: timed(["ls", "-lR", "."], directory))

    def grep(self) -> Measurement:
        directory = self._meta_directory
        out = _run(["grep", "-rl", SEARCH_WORD, "."], directory, capture=True).stdout
        hits = out.count(b"\n")
        if hits != self.metadata.search_hits:
            raise WorkloadFailed(
                f"grep found {SEARCH_WORD!r} in {hits:,} files, "
                f"expected {self.metadata.search_hits:,}"
            )
        return self.repeat("grep -r", lambda: timed(["grep", "-r", SEARCH_WORD, "."], directory))

    def peak_rss(self) -> Measurement:
        pid = self.system.daemon_pid()
        if pid is None:
            return Measurement(note="no daemon")
        kib = host.memory_kib(pid, "VmHWM")
        if kib is None:
            raise WorkloadFailed(f"cannot read /proc/{pid}/status")
        return Measurement([kib * 1024 / 1e6])

    def mount_time(self, first_mount_s: float | None) -> Measurement:
        system = self.system
        if not system.can_remount:
            samples = [first_mount_s] if first_mount_s is not None else []
            return Measurement(samples, note=system.mount_note)

        def once() -> float:
            system.remount(drop_caches=False)
            assert system.last_mount_s is not None
            return system.last_mount_s

        return self.repeat("mount", once)
