"""The three-way text merge of two concurrent saves of one memory (SPEC §4 "Concurrent
writers"): pure, no I/O, shared by the mount (:mod:`memfs.fuse.merging`) and the remote
mount's replay of queued writes (:mod:`memfs.remote.replay`).

SPEC §4: "a close commits with a precondition on the content the file was opened with.
If another writer changed it meanwhile, the two are merged three-way (base: what this
open saw) and the merge is committed as one version when the edits do not overlap (two
agents appending to one file lose no line and make no conflict copy). Where they
overlap, both contents are kept."

The rule, line by line (lines keep their endings: ``\\n``, ``\\r\\n`` and a last line
without one are all lines; nothing is normalised):

1. **Trivial**: one side left the base as it was → the other side; both made the same
   content → that content.
2. **Append/append**: both sides only appended to the base (the base is a prefix of
   both), the base is empty or ends with a line ending, and the head's appended text
   (``theirs``) is empty or ends with one → ``base + theirs' tail + ours' tail``: the
   head's lines first (they were committed first), then this writer's. Two agents each
   appending a line to a log keep both lines.
3. **General**: a diff3 on the standard library's :class:`difflib.SequenceMatcher` (the
   line-based merge of diff3 and bzr/breezy): the base's lines that both sides kept
   (the intersection of the base-vs-ours and base-vs-theirs matches) split the three
   texts into stable and changed regions. A changed region that only one side changed
   takes that side; one that both changed the same way takes it once; changes to
   different lines of the base merge cleanly. A region that both sides changed
   differently is an overlap (a conflict) — regions that touch count as one, a
   conflict copy rather than a guess — with one exception that extends rule 2
   soundly: when both sides only *inserted* lines after the base's last line (the
   region replaces no base line and begins at its end), the head's inserted lines come
   first, then this writer's, under the same line-ending condition — an appender whose
   file was also edited elsewhere (``sed -i`` of other lines) still merges.

Why the conditions make rule 2 sound: a base ending mid-line means each side extended
that last line (``"abc"`` → ``"abcX\\n"`` and ``"abcY\\n"``): one line changed two ways,
an overlap. A head tail without a final line ending would glue its last line to this
writer's first (``"t"`` + ``"o\\n"`` → ``"to\\n"``), which neither writer wrote. Both
are left to the general rule, which reports them as overlaps. Inserts at the same place
*inside* the base stay overlaps: their order means something there.

Identical appended lines are kept twice (both writers wrote them); a caller that may
replay a save already applied must recognise that itself (the remote replay does).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher
from typing import NamedTuple

__all__ = ["MERGE_ATTEMPTS", "merge_bytes", "merge_texts"]

# How many times a merge is made (again) when the head moved once more before it could
# be committed; then both are kept. Each attempt costs a few ms (a mount holds its lock).
# Measured: a writer on another mount closing in a tight loop (a commit every ~2 ms)
# beat 5 attempts in a row a few times per 100 saves; at 50 a run of losses that long
# is not expected while the other writer leaves any gap between its saves.
MERGE_ATTEMPTS = 50


def _ends_line(text: str) -> bool:
    """Whether ``text`` is empty or ends with a line ending (``str.splitlines`` rules
    cover ``\\r\\n`` and ``\\r`` too)."""
    return not text or text.endswith(("\n", "\r"))


class _Stable(NamedTuple):
    """Lines kept by both sides: ``base[base_start:base_end]`` equals
    ``ours[ours_start:…]`` and ``theirs[theirs_start:…]`` (indices in lines, same
    length on all three)."""

    base_start: int
    base_end: int
    ours_start: int
    theirs_start: int


def _matches(base: Sequence[str], other: Sequence[str]) -> list[tuple[int, int, int]]:
    """The runs of lines ``base`` and ``other`` share, in order: ``(base index, other
    index, length)``, without difflib's closing empty run. difflib's ``autojunk`` stays
    on (as in bzr/breezy's merge): in a text of 200 lines or more, a line making up more
    than 1% of it (a blank line) anchors no match by itself. Off, a 4,000-line memory
    with 30% blank lines took 1.1 s per diff instead of 0.08 s."""
    matcher = SequenceMatcher(None, base, other)
    return [(b, o, n) for b, o, n in matcher.get_matching_blocks() if n]


def _stable_runs(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]
) -> list[_Stable]:
    """The base lines both sides kept, as runs in base order (the diff3 sync points),
    ending with an empty run at the end of all three texts."""
    ours_runs, theirs_runs = _matches(base, ours), _matches(base, theirs)
    stable: list[_Stable] = []
    i = j = 0
    while i < len(ours_runs) and j < len(theirs_runs):
        o_base, o_at, o_len = ours_runs[i]
        t_base, t_at, t_len = theirs_runs[j]
        start = max(o_base, t_base)
        end = min(o_base + o_len, t_base + t_len)
        if start < end:  # both kept base[start:end]
            stable.append(_Stable(start, end, o_at + start - o_base, t_at + start - t_base))
        # The run that ends first in the base can share no more lines with the other.
        if o_base + o_len < t_base + t_len:
            i += 1
        else:
            j += 1
    stable.append(_Stable(len(base), len(base), len(ours), len(theirs)))
    return stable


class _Changed(NamedTuple):
    """A region between two stable runs: ``base[base_start:base_end]`` became
    ``ours[ours_start:ours_end]`` on one side and ``theirs[theirs_start:theirs_end]``
    on the other (either may equal the base's lines)."""

    base_start: int
    base_end: int
    ours_start: int
    ours_end: int
    theirs_start: int
    theirs_end: int


def _regions(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]
) -> Iterator[_Changed | _Stable]:
    """The three texts cut at the stable runs, in order: each changed region (where at
    least one side differs from the base) then the stable run after it."""
    base_at = ours_at = theirs_at = 0
    for run in _stable_runs(base, ours, theirs):
        if run.ours_start > ours_at or run.theirs_start > theirs_at:
            yield _Changed(
                base_at, run.base_start, ours_at, run.ours_start, theirs_at, run.theirs_start
            )
        # A base region that both sides deleted yields nothing: neither side has lines.
        if run.base_end > run.base_start:
            yield run
        length = run.base_end - run.base_start
        base_at = run.base_end
        ours_at, theirs_at = run.ours_start + length, run.theirs_start + length


def merge_texts(base: str, ours: str, theirs: str) -> str | None:
    """Merges this writer's content ``ours`` and the head's ``theirs``, both made from
    ``base`` (SPEC §4 concurrent writers; the rule is in the module docstring).

    Args:
        base: the content this writer's open saw.
        ours: the content this writer saves.
        theirs: the head: the content another writer committed meanwhile.

    Returns:
        The merged content, or None when the edits overlap (the caller keeps both).
    """
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if ours.startswith(base) and theirs.startswith(base) and _ends_line(base):
        theirs_tail, ours_tail = theirs[len(base):], ours[len(base):]
        if _ends_line(theirs_tail):
            return base + theirs_tail + ours_tail
    base_lines = base.splitlines(keepends=True)
    ours_lines = ours.splitlines(keepends=True)
    theirs_lines = theirs.splitlines(keepends=True)
    merged: list[str] = []
    for region in _regions(base_lines, ours_lines, theirs_lines):
        if isinstance(region, _Stable):
            merged.extend(base_lines[region.base_start:region.base_end])
            continue
        was = base_lines[region.base_start:region.base_end]
        ours_part = ours_lines[region.ours_start:region.ours_end]
        theirs_part = theirs_lines[region.theirs_start:region.theirs_end]
        if ours_part == theirs_part or theirs_part == was:  # the same change, or ours only
            merged.extend(ours_part)
        elif ours_part == was:  # theirs only
            merged.extend(theirs_part)
        else:  # both changed it differently: an overlap, but for inserts at the end
            inserted_at_end = region.base_start == region.base_end == len(base_lines)
            theirs_text = "".join(theirs_part)
            if not (inserted_at_end and _ends_line(theirs_text)):
                return None
            merged.append(theirs_text)
            merged.extend(ours_part)
    return "".join(merged)


def merge_bytes(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """:func:`merge_texts` of UTF-8 content (memories are UTF-8 text, SPEC §1).

    Returns:
        The merged bytes, or None when the edits overlap or a side is not UTF-8.
    """
    try:
        texts = base.decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8")
    except UnicodeDecodeError:
        return None
    merged = merge_texts(*texts)
    return merged.encode("utf-8") if merged is not None else None
