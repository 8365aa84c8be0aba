"""The results: a markdown table of medians with ratios, the targets, a JSON document.

Each cell is the median over the repeats, followed by its ratio to tmpfs (``×T``) and to
rclone (``×R``) when those were measured, and memfs's also to the patched pyfuse3 floor
(``×P``, issue 17); a figure that failed reads ``FAILED [n]`` with
the reason below the table, and a caveat reads ``[n]`` with the note below the table.

The targets are issue 5's (for memfs): warm read, metadata and search within 1.5× of
tmpfs; copy in and small edits within 3× of the pyfuse3 floor; faster than rclone on
every timed workload (1–6); mount of the metadata store < 1 s; daemon peak RSS < 150 MB.
Then issue 17's: warm read and search within 1.2× of the patched floor; copy in and
small edits no slower than rclone (its find and ls -lR limit, 1.5× tmpfs, is issue 5's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchlib.workloads import Measurement, SystemRun, WorkloadSpec

__all__ = ["Target", "evaluate_targets", "format_report", "format_value", "to_json"]

TMPFS, RCLONE, FLOOR, MEMFS = "tmpfs", "rclone", "floor", "memfs"
FLOOR_PATCHED, MEMFS_STOCK = "floor_patched", "memfs_stock"

# Workloads 1-6: the ones memfs must do faster than rclone.
TIMED_WORKLOADS = (
    "copy_generated",
    "copy_corpus",
    "warm_generated",
    "warm_corpus",
    "cold_generated",
    "cold_corpus",
    "find",
    "ls_lR",
    "grep",
    "edits",
)
# (workloads, system, limit): memfs's median ≤ limit × that system's.
_WRITES = ("copy_generated", "copy_corpus", "edits")
_RELATIVE_TARGETS = (
    (("warm_generated", "warm_corpus", "find", "ls_lR", "grep"), TMPFS, 1.5),
    (_WRITES, FLOOR, 3.0),
    (("warm_generated", "warm_corpus", "grep"), FLOOR_PATCHED, 1.2),  # issue 17
    (_WRITES, RCLONE, 1.0),  # issue 17
)
MOUNT_LIMIT_S = 1.0
RSS_LIMIT_MB = 150.0


def format_value(value: float, unit: str) -> str:
    """``0.0123`` s → ``"12.3 ms"``; three significant figures; MB with one decimal."""
    if unit == "MB":
        return f"{value:.1f} MB"
    milliseconds = value * 1000
    if milliseconds < 10:
        return f"{milliseconds:.2f} ms"
    if milliseconds < 100:
        return f"{milliseconds:.1f} ms"
    if milliseconds < 10_000:
        return f"{milliseconds:.0f} ms"
    return f"{value:.1f} s"


def _ratio(value: float, base: Measurement | None) -> str | None:
    if base is None or base.median is None or base.median <= 0:
        return None
    ratio = value / base.median
    return f"{ratio:.2f}" if ratio < 10 else f"{ratio:.0f}"


@dataclass(frozen=True)
class Target:
    """One of issue 5's targets, evaluated. ``passed`` is None when not measured."""

    description: str
    measured: str
    passed: bool | None


def evaluate_targets(
    specs: list[WorkloadSpec], runs: dict[str, SystemRun], metadata_files: int
) -> list[Target]:
    """Issue 5's targets for memfs, each with the figure it was judged on."""
    targets: list[Target] = []
    labels = {spec.key: spec.label for spec in specs}

    def result(system: str, key: str) -> float | None:
        run = runs.get(system)
        return run.results.get(key, Measurement()).median if run else None

    def relative(key: str, base: str, limit: float) -> None:
        mine, theirs = result(MEMFS, key), result(base, key)
        label = labels[key].split(" ", 1)[1]
        name = "patched floor" if base == FLOOR_PATCHED else base
        description = f"{label}: memfs ≤ {limit:g}× {name}"
        if mine is None or theirs is None or theirs <= 0:
            targets.append(Target(description, "not measured", None))
            return
        ratio = mine / theirs
        targets.append(Target(description, f"{ratio:.2f}×", ratio <= limit))

    for keys, base, limit in _RELATIVE_TARGETS:
        for key in keys:
            relative(key, base, limit)
    slower, compared = [], 0
    for key in TIMED_WORKLOADS:
        mine, theirs = result(MEMFS, key), result(RCLONE, key)
        if mine is None or theirs is None or theirs <= 0:
            continue
        compared += 1
        if mine >= theirs:
            slower.append(f"{labels[key].split(' ', 1)[1]} {mine / theirs:.2f}×")
    if compared == 0:
        targets.append(Target("faster than rclone on workloads 1-6", "not measured", None))
    else:
        measured = ("slower on " + "; ".join(slower)) if slower else f"faster on all {compared}"
        if compared < len(TIMED_WORKLOADS):
            measured += f" ({len(TIMED_WORKLOADS) - compared} not measured)"
        targets.append(Target("faster than rclone on workloads 1-6", measured, not slower))
    mount = result(MEMFS, "mount")
    scale = "" if metadata_files >= 10_000 else f" (at {metadata_files:,}; the target is at 10,000)"
    targets.append(
        Target(
            f"mount of the {metadata_files:,}-memory store < {MOUNT_LIMIT_S:g} s{scale}",
            format_value(mount, "s") if mount is not None else "not measured",
            None if mount is None else mount < MOUNT_LIMIT_S,
        )
    )
    peaks = [v for v in (result(MEMFS, "rss_metadata"), result(MEMFS, "rss_search")) if v]
    peak = max(peaks) if peaks else None
    targets.append(
        Target(
            f"daemon peak RSS < {RSS_LIMIT_MB:g} MB{scale}",
            format_value(peak, "MB") if peak is not None else "not measured",
            None if peak is None else peak < RSS_LIMIT_MB,
        )
    )
    return targets


def _ratios(system: str, spec: WorkloadSpec, median: float, runs: dict[str, SystemRun]) -> str:
    """`` (0.52×T, 0.31×R)``: the ratios a cell shows, or ``""``."""
    wanted = []
    if system != TMPFS and spec.unit == "s":
        wanted.append((TMPFS, "T"))
    if system != RCLONE:
        wanted.append((RCLONE, "R"))
    if system in (MEMFS, MEMFS_STOCK) and spec.unit == "s":
        wanted.append((FLOOR_PATCHED, "P"))
    ratios = []
    for base, letter in wanted:
        run = runs.get(base)
        ratio = _ratio(median, run.results.get(spec.key) if run else None)
        if ratio:
            ratios.append(f"{ratio}×{letter}")
    return " (" + ", ".join(ratios) + ")" if ratios else ""


def format_report(
    specs: list[WorkloadSpec],
    runs: dict[str, SystemRun],
    titles: dict[str, str],
    notes: dict[str, list[str]],
    header: list[str],
    targets: list[Target],
) -> str:
    """The text printed at the end of a run (markdown, so it pastes into the README)."""
    footnotes: list[str] = []

    def footnote(text: str) -> int:
        if text not in footnotes:
            footnotes.append(text)
        return footnotes.index(text) + 1

    def cell(system: str, spec: WorkloadSpec) -> str:
        measurement = runs[system].results.get(spec.key, Measurement(error="not run"))
        if measurement.error:
            return f"FAILED [{footnote(f'{system}: {measurement.error}')}]"
        median = measurement.median
        if median is None:
            return f"— [{footnote(measurement.note)}]" if measurement.note else "—"
        text = format_value(median, spec.unit) + _ratios(system, spec, median, runs)
        if measurement.note:
            text += f" [{footnote(measurement.note)}]"
        return text

    systems = list(runs)
    lines = list(header)
    lines.append("")
    lines.append("| workload | " + " | ".join(titles[s] for s in systems) + " |")
    lines.append("|---|" + "---:|" * len(systems))
    for spec in specs:
        cells = [cell(system, spec) for system in systems]
        lines.append(f"| {spec.label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "×T = ratio to tmpfs, ×R = ratio to rclone, ×P = ratio to the patched floor "
        "(lower is faster)."
    )
    for number, text in enumerate(footnotes, 1):
        lines.append(f"[{number}] {text}")
    lines += _systems_and_targets(runs, titles, notes, targets)
    return "\n".join(lines)


def _systems_and_targets(
    runs: dict[str, SystemRun],
    titles: dict[str, str],
    notes: dict[str, list[str]],
    targets: list[Target],
) -> list[str]:
    """The lines below the table: each system's notes and failure, then the targets."""
    lines = ["", "Systems:"]
    for system, run in runs.items():
        lines += [f"- {titles[system]}: {note}" for note in notes.get(system, [])]
        if run.failure:
            lines.append(
                f"- {titles[system]}: FAILED, the remaining workloads were not run: {run.failure}"
            )
    if MEMFS in runs:
        lines += ["", "Targets (issues 5 and 17, for memfs):"]
        for target in targets:
            verdict = {True: "PASS", False: "FAIL", None: "  — "}[target.passed]
            lines.append(f"  {verdict}  {target.description}: {target.measured}")
    return lines


def to_json(
    specs: list[WorkloadSpec],
    runs: dict[str, SystemRun],
    titles: dict[str, str],
    notes: dict[str, list[str]],
    machine: dict[str, object],
    config: dict[str, object],
    targets: list[Target],
) -> dict[str, Any]:
    """The JSON document written by ``--json``: every sample, not only the medians."""
    return {
        "format": "memfs-bench/1",
        "machine": machine,
        "config": config,
        "systems": {
            key: {
                "title": titles[key],
                "notes": notes.get(key, []),
                "failure": run.failure,
                "engine_seed_ms_per_memory": run.seed_rate_ms,
            }
            for key, run in runs.items()
        },
        "workloads": [
            {
                "key": spec.key,
                "label": spec.label,
                "unit": spec.unit,
                "results": {
                    key: {
                        "median": run.results.get(spec.key, Measurement()).median,
                        "samples": run.results.get(spec.key, Measurement()).samples,
                        "error": run.results.get(spec.key, Measurement()).error,
                        "note": run.results.get(spec.key, Measurement()).note,
                    }
                    for key, run in runs.items()
                },
            }
            for spec in specs
        ],
        "targets": [
            {"target": t.description, "measured": t.measured, "passed": t.passed} for t in targets
        ],
    }
