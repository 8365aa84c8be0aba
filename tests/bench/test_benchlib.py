"""The benchmark's pure parts: trees, value formatting and the targets' verdicts."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from benchlib.report import evaluate_targets, format_report, format_value
from benchlib.systems import MemfsSystem, Scratch, StockMemfsSystem, TmpfsSystem
from benchlib.trees import (
    MAX_FILE_BYTES,
    MIN_FILE_BYTES,
    SEARCH_WORD,
    Tree,
    collect_corpus,
    generate_markdown_tree,
    markdown_document,
)
from benchlib.workloads import Measurement, SystemRun, run_system, workload_specs

from memfs.core.rules import validate_content_bytes, validate_path


def test_generated_tree_is_deterministic_valid_and_sized(tmp_path: Path) -> None:
    first = generate_markdown_tree(tmp_path / "a", "generated", 120, levels=3, seed=11)
    second = generate_markdown_tree(tmp_path / "b", "generated", 120, levels=3, seed=11)
    other = generate_markdown_tree(tmp_path / "c", "generated", 120, levels=3, seed=12)
    assert first.sha256 == second.sha256
    assert first.files == second.files
    assert other.sha256 != first.sha256

    assert len(first.files) == 120
    assert all(MIN_FILE_BYTES <= size <= MAX_FILE_BYTES for size in first.sizes_bytes)
    assert all(len(Path(f).parts) == 3 for f in first.files)  # area/topic/note.md
    assert first.directories == 10 + 100  # 10 areas of 10 topics, all in use
    digest = hashlib.sha256()
    hits = 0
    for relative, size in zip(first.files, first.sizes_bytes, strict=True):
        data = (tmp_path / "a" / relative).read_bytes()
        assert len(data) == size
        validate_content_bytes(data)  # memfs accepts every generated file
        validate_path("/" + relative)
        digest.update(data)
        hits += SEARCH_WORD.encode() in data
    assert digest.hexdigest() == first.sha256
    assert hits == first.search_hits == 6  # indexes 7, 27, 47, ... below 120


def test_markdown_document_has_the_exact_size_and_whole_characters() -> None:
    rng = random.Random(3)
    for size in (MIN_FILE_BYTES, 1500, 4097, MAX_FILE_BYTES):
        data = markdown_document(rng, size, plant_word=False)
        assert len(data) == size
        text = data.decode("utf-8")  # no character cut in half
        assert text.startswith("# ")
        assert text.endswith("\n")
        assert SEARCH_WORD not in text


def test_corpus_keeps_only_what_memfs_accepts(tmp_path: Path) -> None:
    root = tmp_path / "doc"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "copyright").write_text("Copyright 2024 Somebody\n")
    (root / "pkg" / "README").write_text("naïve café\n")
    (root / "pkg" / "alias").symlink_to("copyright")  # same real file: kept once, as a file
    (root / "pkg" / "latin1").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "pkg" / "formfeed").write_text("page one\fpage two\n")
    (root / "pkg" / "huge").write_text("x" * 102_401)
    (root / "pkg" / ".hidden").write_text("hidden\n")
    (root / "pkg" / "empty").write_text("")

    corpus = collect_corpus(tmp_path / "out", 100, roots=[root])

    # "alias" sorts before "copyright", so the symlink's name is the one kept.
    assert corpus.files == ("doc/pkg/README", "doc/pkg/alias")
    assert (tmp_path / "out" / "doc" / "pkg" / "README").read_text() == "naïve café\n"
    alias = tmp_path / "out" / "doc" / "pkg" / "alias"
    assert not alias.is_symlink()
    assert alias.read_text() == "Copyright 2024 Somebody\n"


def test_corpus_limit_spreads_across_candidates(tmp_path: Path) -> None:
    root = tmp_path / "doc"
    for n in range(40):
        (root / f"pkg{n:02d}").mkdir(parents=True)
        (root / f"pkg{n:02d}" / "copyright").write_text(f"package {n}\n")
    corpus = collect_corpus(tmp_path / "out", 4, roots=[root])
    assert corpus.files == tuple(f"doc/pkg{n:02d}/copyright" for n in (0, 10, 20, 30))


def test_corpus_without_any_text_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "doc").mkdir()
    (tmp_path / "doc" / "blob").write_bytes(b"\x00\x01\x02")
    with pytest.raises(RuntimeError, match="no acceptable text file"):
        collect_corpus(tmp_path / "out", 10, roots=[tmp_path / "doc"])


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.00123, "s", "1.23 ms"),
        (0.0456, "s", "45.6 ms"),
        (0.789, "s", "789 ms"),
        (9.5, "s", "9500 ms"),
        (12.34, "s", "12.3 s"),
        (86.25, "MB", "86.2 MB"),
    ],
)
def test_format_value(value: float, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


def _trees() -> list[Tree]:
    return [
        Tree(name, Path(), ("f",) * n, (1,) * n, "", 0, 0)
        for name, n in (("generated", 1000), ("corpus", 900), ("metadata", 10_000))
    ]


def _runs(
    memfs: dict[str, float], tmpfs: float, floor: float, rclone: float
) -> dict[str, SystemRun]:
    specs = workload_specs(*_trees())
    runs = {name: SystemRun() for name in ("tmpfs", "rclone", "floor", "floor_patched", "memfs")}
    for spec in specs:
        runs["tmpfs"].results[spec.key] = Measurement([tmpfs])
        runs["floor"].results[spec.key] = Measurement([floor])
        runs["floor_patched"].results[spec.key] = Measurement([floor])
        runs["rclone"].results[spec.key] = Measurement([rclone])
        runs["memfs"].results[spec.key] = Measurement([memfs.get(spec.key, tmpfs)])
    return runs


def test_targets_pass_and_fail_on_the_issue_limits() -> None:
    specs = workload_specs(*_trees())
    runs = _runs(
        {
            "warm_generated": 1.49,
            "warm_corpus": 1.51,
            "copy_generated": 3.0,
            "copy_corpus": 3.1,
            "grep": 5.0,
            "mount": 0.9,
            "rss_metadata": 149.0,
            "rss_search": 120.0,
        },
        tmpfs=1.0,
        floor=1.0,
        rclone=4.0,
    )
    targets = evaluate_targets(specs, runs, 10_000)
    by_measure = [(t.description, t.measured, t.passed) for t in targets]
    assert ("warm read: cat, 1,000 generated: memfs ≤ 1.5× tmpfs", "1.49×", True) in by_measure
    assert ("warm read: cat, 900 corpus: memfs ≤ 1.5× tmpfs", "1.51×", False) in by_measure
    assert ("copy in: cp -r, 1,000 generated files: memfs ≤ 3× floor", "3.00×", True) in by_measure
    assert ("copy in: cp -r, 900 corpus files: memfs ≤ 3× floor", "3.10×", False) in by_measure
    # The targets: reads within 1.2× of the patched floor, writes no slower than rclone
    warm = "warm read: cat, 1,000 generated: memfs ≤ 1.2× patched floor"
    assert (warm, "1.49×", False) in by_measure
    grep = "search: grep -r, 10,000 files: memfs ≤ 1.2× patched floor"
    assert (grep, "5.00×", False) in by_measure
    assert ("copy in: cp -r, 1,000 generated files: memfs ≤ 1× rclone", "0.75×", True) in by_measure
    rclone = next(t for t in targets if "workloads 1-6" in t.description)
    assert rclone.passed is False
    assert rclone.measured == "slower on search: grep -r, 10,000 files 1.25×"
    mount = next(t for t in targets if t.description.startswith("mount"))
    assert (mount.measured, mount.passed) == ("900 ms", True)
    rss = next(t for t in targets if "RSS" in t.description)
    assert (rss.measured, rss.passed) == ("149.0 MB", True)


def test_targets_say_not_measured_when_memfs_failed() -> None:
    specs = workload_specs(*_trees())
    runs = _runs({}, tmpfs=1.0, floor=1.0, rclone=1.0)
    runs["memfs"] = SystemRun(failure="memfs mount exited 1")
    for spec in specs:
        runs["memfs"].results[spec.key] = Measurement(error="not run: memfs mount exited 1")
    targets = evaluate_targets(specs, runs, 10_000)
    assert {t.passed for t in targets} == {None}
    assert all(t.measured == "not measured" for t in targets)


class _BrokenCopyTarget(TmpfsSystem):
    """tmpfs whose every copy of the generated tree fails: the destinations are files."""

    def open_session(self, session: str, preload: Tree | None = None) -> Path:
        root = super().open_session(session, preload)
        for index in range(5):
            (root / f"generated-{index}").write_text("in the way\n")
        return root


def test_a_failing_workload_fails_its_cells_and_the_rest_still_runs(tmp_path: Path) -> None:
    ram = tmp_path / "ram"
    ram.mkdir()
    scratch = Scratch(ram, tmp_path / "disk", tmp_path)
    generated = generate_markdown_tree(tmp_path / "src" / "g", "generated", 5, levels=2, seed=1)
    corpus = generate_markdown_tree(tmp_path / "src" / "c", "corpus", 4, levels=2, seed=2)
    metadata = generate_markdown_tree(tmp_path / "src" / "m", "metadata", 30, levels=3, seed=3)
    (tmp_path / "lists").mkdir()
    lines: list[str] = []

    run = run_system(
        _BrokenCopyTarget(scratch), generated=generated, corpus=corpus, metadata=metadata,
        repeats=2, work=tmp_path / "lists", progress=lines.append,
    )  # fmt: skip

    assert run.failure is None
    assert "`cp -r" in run.results["copy_generated"].error
    for key in ("warm_generated", "cold_generated", "edits"):
        assert run.results[key].error == "not run: generated-1 is missing (did copy in fail?)"
    for key in ("copy_corpus", "warm_corpus", "cold_corpus", "find", "ls_lR", "grep"):
        assert run.results[key].error is None, run.results[key]
        assert len(run.results[key].samples) == 2
    assert any("copy_generated FAILED" in line for line in lines)


def test_memfs_cells_show_the_ratio_to_the_patched_floor() -> None:
    specs = workload_specs(*_trees())
    runs = _runs({"find": 3.0}, tmpfs=1.0, floor=2.0, rclone=4.0)
    titles = {key: key for key in runs}
    report = format_report(specs, runs, titles, {}, [], evaluate_targets(specs, runs, 10_000))
    find_row = next(line for line in report.splitlines() if "metadata: find" in line)
    assert find_row.endswith("| 3000 ms (3.00×T, 0.75×R, 1.50×P) |")
    assert "×P = ratio to the patched floor" in report


def test_the_stock_memfs_column_turns_the_kernel_caching_off(tmp_path: Path) -> None:
    scratch = Scratch(tmp_path / "ram", tmp_path / "disk", tmp_path)
    stock = StockMemfsSystem(scratch, "memfs")
    assert stock.daemon_environment()["MEMFS_FUSE_KERNEL_CACHE"] == "0"
    assert "MEMFS_FUSE_KERNEL_CACHE" not in MemfsSystem(scratch, "memfs").daemon_environment()
    assert stock.home != MemfsSystem(scratch, "memfs").home  # sessions never share a store
