"""The file trees the workloads run on.

- :func:`generate_markdown_tree`: realistic markdown notes of 1–8 KiB each (headings,
  paragraphs, lists, code blocks, links, a table now and then), fully determined by a
  seed, so every system and every run sees the same bytes. A rare word
  (:data:`SEARCH_WORD`) is planted in about one file in twenty for the search workload.
- :func:`collect_corpus`: a real corpus found on any Debian machine
  (``/usr/share/common-licenses`` and ``/usr/share/doc``), filtered to what memfs accepts
  (SPEC §1: UTF-8 text without forbidden control characters, at most 102,400 bytes,
  valid path segments), copied into a plain tree with symlinks resolved.

Every tree is described by a :class:`Tree`: its file list in a fixed order, sizes and
the SHA-256 of all contents concatenated in that order, which the read workloads check.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SEARCH_WORD",
    "Tree",
    "collect_corpus",
    "generate_markdown_tree",
    "is_acceptable_content",
]

# Planted in about 1 file in 20; never produced by the vocabulary below.
SEARCH_WORD = "quokka"
SEARCH_WORD_EVERY = 20

# SPEC §1: content beyond 102,400 bytes is refused (EFBIG).
MAX_CONTENT_BYTES = 102_400
MIN_FILE_BYTES = 1024
MAX_FILE_BYTES = 8192

CORPUS_ROOTS = (Path("/usr/share/common-licenses"), Path("/usr/share/doc"))


@dataclass(frozen=True)
class Tree:
    """A directory of regular files the workloads copy, read and search.

    Attributes:
        name: short name used in labels and destination directories ("generated").
        path: the directory (on tmpfs, so reading the source costs next to nothing).
        files: relative paths (POSIX, no leading "/"), in the order reads use.
        sizes_bytes: size of each file of ``files``, same order.
        sha256: hex digest of every file's bytes concatenated in ``files`` order.
        search_hits: how many files contain :data:`SEARCH_WORD`.
        directories: how many directories below ``path`` (``path`` itself excluded).
    """

    name: str
    path: Path
    files: tuple[str, ...]
    sizes_bytes: tuple[int, ...]
    sha256: str
    search_hits: int
    directories: int

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes_bytes)

    def write_file_list(self, destination: Path) -> Path:
        """Writes ``files`` NUL-separated (the ``xargs -0 -a`` input); returns the path."""
        destination.write_bytes(b"".join(f.encode() + b"\0" for f in self.files))
        return destination


def _describe(name: str, path: Path, files: list[str]) -> Tree:
    digest = hashlib.sha256()
    sizes: list[int] = []
    hits = 0
    word = SEARCH_WORD.encode()
    for relative in files:
        data = (path / relative).read_bytes()
        digest.update(data)
        sizes.append(len(data))
        hits += word in data
    directories = {parent for f in files for parent in Path(f).parents} - {Path(".")}
    return Tree(name, path, tuple(files), tuple(sizes), digest.hexdigest(), hits, len(directories))


# ------------------------------------------------------------------ generated markdown

_WORD_TEXT = """
the a of to and in for on with is that this it as be by are from at or an we will
can should not use when each which run build test deploy release review merge branch
cache memory store file path version commit agent user session token query index
latency throughput error retry timeout config service server client request response
schema table column migration backup restore snapshot mount kernel page buffer queue
worker thread event loop handler callback promise async await lock mutex transaction
decision meeting notes action item owner deadline risk plan goal metric dashboard alert
incident postmortem root cause fix follow up summary context background proposal design
trade off option pros cons estimate scope milestone sprint backlog priority customer
feedback bug feature flag rollout canary rollback monitor log trace span sample rate
"""
_WORDS = _WORD_TEXT.split()

_TITLES = """
Deploy checklist|Weekly sync|Design review|Incident report|Onboarding notes|Release plan
|API conventions|Retry policy|Cache invalidation|Schema migration|Customer feedback
|Quarterly goals|On-call handbook|Postmortem|Reading list|Architecture decision record
|Benchmark results|Roadmap|Glossary|Troubleshooting guide
""".replace("\n", "").split("|")

_UNICODE_SPICE = ["café", "naïve", "—", "“quoted”", "façade", "résumé", "→", "±5 %"]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 16))]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(_UNICODE_SPICE))
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", ".", ".", "?", "!"])


def _block(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        return " ".join(_sentence(rng) for _ in range(rng.randint(2, 6))) + "\n"
    if kind < 0.65:
        return "".join(f"- {_sentence(rng)}\n" for _ in range(rng.randint(2, 6)))
    if kind < 0.75:
        return "".join(f"{n}. {_sentence(rng)}\n" for n in range(1, rng.randint(3, 6)))
    if kind < 0.85:
        lines = [
            f"{rng.choice(['result', 'value', 'item'])}_{n} = {rng.choice(_WORDS)}({n})"
            for n in range(rng.randint(2, 8))
        ]
        language = rng.choice(["python", "bash", "sql", "text"])
        return f"```{language}\n" + "\n".join(lines) + "\n```\n"
    if kind < 0.93:
        target = f"https://example.org/{rng.choice(_WORDS)}/{rng.randint(1, 999)}"
        return f"See [{rng.choice(_WORDS)} {rng.choice(_WORDS)}]({target}) for details.\n"
    rows = [
        f"| {rng.choice(_WORDS)} | {rng.randint(0, 9999)} | {rng.choice(_WORDS)} |"
        for _ in range(rng.randint(2, 5))
    ]
    return "| name | value | note |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def markdown_document(rng: random.Random, size_bytes: int, *, plant_word: bool) -> bytes:
    """One markdown note of exactly ``size_bytes`` bytes (cut at a character boundary,
    ending with a newline); contains :data:`SEARCH_WORD` iff ``plant_word``."""
    parts = [f"# {rng.choice(_TITLES)} {rng.randint(1, 99)}\n\n"]
    if plant_word:
        parts.append(f"Remember the {SEARCH_WORD} rule from the last review.\n\n")
    length = sum(len(p.encode()) for p in parts)
    while length < size_bytes:
        block = (f"## {_sentence(rng)[:-1]}\n\n" if rng.random() < 0.2 else "") + _block(rng)
        parts.append(block + "\n")
        length += len(parts[-1].encode())
    data = "".join(parts).encode()[: size_bytes - 1]
    # Do not cut a multi-byte character in half.
    data = data.decode("utf-8", errors="ignore").encode()
    return data + b"\n" * (size_bytes - len(data))


def generate_markdown_tree(
    destination: Path, name: str, file_count: int, *, levels: int, seed: int
) -> Tree:
    """Writes ``file_count`` markdown notes below ``destination``.

    Args:
        destination: a directory that does not exist yet.
        name: the tree's name (labels, destination directories).
        file_count: number of files.
        levels: 2 gives ``area/note.md`` (10 areas); 3 gives ``area/topic/note.md``
            (10 areas of 10 topics), the "three levels" of the metadata workload.
        seed: the random seed; same seed, same bytes.

    Returns:
        The tree's description.
    """
    rng = random.Random(seed)
    destination.mkdir(parents=True)
    fan_out = 10
    leaves = fan_out ** (levels - 1)
    files: list[str] = []
    for index in range(file_count):
        leaf = index % leaves
        parts = []
        for _ in range(levels - 1):
            parts.append(leaf % fan_out)
            leaf //= fan_out
        directory = "/".join(
            f"{['area', 'topic'][depth]}-{number:02d}" for depth, number in enumerate(parts)
        )
        title = rng.choice(_TITLES).lower().replace(" ", "-")
        relative = f"{directory}/{index:05d}-{title}.md"
        size = rng.randint(MIN_FILE_BYTES, MAX_FILE_BYTES)
        data = markdown_document(rng, size, plant_word=index % SEARCH_WORD_EVERY == 7)
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files.append(relative)
    return _describe(name, destination, files)


# ------------------------------------------------------------------------ real corpus


def is_acceptable_content(data: bytes) -> bool:
    """True when memfs would store ``data`` (SPEC §1 content rules), judged by
    :func:`memfs.core.rules.validate_content_bytes` when memfs is importable."""
    if not data or len(data) > MAX_CONTENT_BYTES:
        return False
    try:
        from memfs.core.errors import MemfsError
        from memfs.core.rules import validate_content_bytes
    except ImportError:  # running without memfs: approximate the rule
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return not any(ord(c) < 32 and c not in "\t\n\r" for c in text)
    try:
        validate_content_bytes(data)
    except MemfsError:
        return False
    return True


def _acceptable_path(relative: str) -> bool:
    if any(part.startswith(".") for part in relative.split("/")):
        return False
    try:
        from memfs.core.errors import MemfsError
        from memfs.core.rules import validate_path
    except ImportError:
        return relative.isascii() and " " not in relative
    try:
        validate_path("/" + relative)
    except MemfsError:
        return False
    return True


def _candidate_files(roots: Iterable[Path]) -> list[tuple[str, Path]]:
    """(relative destination, real source) pairs below ``roots``, one per real file."""
    seen: set[Path] = set()
    found: list[tuple[str, Path]] = []
    for root in roots:
        if not root.is_dir():
            continue
        for directory, _subdirs, names in os.walk(root):
            for name in sorted(names):
                source = Path(directory, name)
                try:
                    real = source.resolve(strict=True)
                    if not real.is_file() or real in seen:
                        continue
                    if not 0 < real.stat().st_size <= MAX_CONTENT_BYTES:
                        continue
                except OSError:
                    continue
                seen.add(real)
                relative = f"{root.name}/{source.relative_to(root).as_posix()}"
                found.append((relative, real))
    found.sort()
    return found


def collect_corpus(
    destination: Path,
    limit: int,
    *,
    roots: Iterable[Path] = CORPUS_ROOTS,
    accept: Callable[[bytes], bool] = is_acceptable_content,
) -> Tree:
    """Copies up to ``limit`` real text files from ``roots`` into ``destination``.

    Files are taken evenly across the sorted candidates (so a small limit still mixes
    licenses and package documents), symlinks resolved, duplicates of the same real
    file dropped, and only content that ``accept`` admits (memfs's rules by default).

    Raises:
        RuntimeError: no acceptable file was found.
    """
    candidates = [
        (relative, real) for relative, real in _candidate_files(roots) if _acceptable_path(relative)
    ]
    chosen: list[tuple[str, bytes]] = []
    # Walk candidates in an evenly spread order until `limit` acceptable ones are found.
    stride = max(1, len(candidates) // max(limit, 1))
    order = [i for start in range(stride) for i in range(start, len(candidates), stride)]
    for index in order:
        if len(chosen) >= limit:
            break
        relative, real = candidates[index]
        try:
            data = real.read_bytes()
        except OSError:
            continue
        if accept(data):
            chosen.append((relative, data))
    if not chosen:
        raise RuntimeError(f"no acceptable text file found below {[str(r) for r in roots]}")
    chosen.sort()
    destination.mkdir(parents=True)
    for relative, data in chosen:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return _describe("corpus", destination, [relative for relative, _ in chosen])
