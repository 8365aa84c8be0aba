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
3. **General**: :class:`merge3.Merge3` (the line-based merge of bzr/breezy): changes to
   different lines of the base merge cleanly. A region that both sides changed is an
   overlap (a conflict), with one exception that extends rule 2 soundly: when both
   sides only *inserted* lines after the base's last line (the region replaces no base
   line and begins at its end), the head's inserted lines come first, then this
   writer's, under the same line-ending condition — an appender whose file was also
   edited elsewhere (``sed -i`` of other lines) still merges.

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

import merge3

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
    regions = merge3.Merge3(base_lines, ours_lines, theirs_lines).merge_regions()
    for region in regions:
        match region:
            case ("unchanged", start, end):
                merged.extend(base_lines[start:end])
            case ("a" | "same", start, end):
                merged.extend(ours_lines[start:end])
            case ("b", start, end):
                merged.extend(theirs_lines[start:end])
            case ("conflict", base_start, base_end, ours_start, ours_end, theirs_start,
                  theirs_end):
                inserted_at_end = base_start == base_end == len(base_lines)
                theirs_part = "".join(theirs_lines[theirs_start:theirs_end])
                if not (inserted_at_end and _ends_line(theirs_part)):
                    return None
                merged.append(theirs_part)
                merged.extend(ours_lines[ours_start:ours_end])
            case _:  # a region this rule does not know: keep both rather than guess
                return None
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
