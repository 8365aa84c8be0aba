"""Properties of the three-way merge of concurrent saves (SPEC §4 "Concurrent
writers"), on generated texts: :func:`memfs.core.merging.merge_texts` (a diff3 on
``difflib``; the examples it must keep are in tests/test_merging.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memfs.core.merging import merge_texts

# Lines from a small alphabet, so generated texts share lines and the diffs have work.
_LINE = st.sampled_from(["a", "b", "c", "", "a b", "é"]).flatmap(
    lambda text: st.sampled_from([text + "\n", text + "\r\n", text])
)
_TEXT = st.lists(_LINE, max_size=12).map("".join)


@given(base=_TEXT, other=_TEXT)
def test_a_side_left_unchanged_gives_the_other_side(base: str, other: str) -> None:
    assert merge_texts(base, base, other) == other
    assert merge_texts(base, other, base) == other


@given(base=_TEXT, both=_TEXT)
def test_the_same_change_on_both_sides_is_made_once(base: str, both: str) -> None:
    assert merge_texts(base, both, both) == both


# What each side does to one line of the base: keep it, replace it, delete it.
_KEEP, _OURS, _THEIRS = "keep", "ours", "theirs"


@st.composite
def _edits_apart(draw: st.DrawFn) -> tuple[int, list[tuple[str, bool]]]:
    """Lines of a base and, per line, who edits it and whether the edit deletes it,
    with a kept line between any line ours edits and any line theirs edits."""
    count = draw(st.integers(min_value=1, max_value=30))
    plan: list[tuple[str, bool]] = []
    for _ in range(count):
        who = draw(st.sampled_from([_KEEP, _KEEP, _OURS, _THEIRS]))
        last = plan[-1][0] if plan else _KEEP
        if {who, last} == {_OURS, _THEIRS}:
            who = _KEEP  # touching edits of both sides are one overlap, by design
        plan.append((who, draw(st.booleans())))
    return count, plan


@given(_edits_apart())
def test_edits_of_lines_apart_are_both_applied(edits: tuple[int, list[tuple[str, bool]]]) -> None:
    _, plan = edits
    base = [f"line {i}\n" for i in range(len(plan))]

    def side(name: str) -> list[str]:
        return [
            line if who != name else ("" if deletes else f"{name} {i}\n")
            for i, (line, (who, deletes)) in enumerate(zip(base, plan, strict=True))
        ]

    ours, theirs = side(_OURS), side(_THEIRS)
    expected = [
        o if who == _OURS else t
        for o, t, (who, _) in zip(ours, theirs, plan, strict=True)
    ]
    assert merge_texts("".join(base), "".join(ours), "".join(theirs)) == "".join(expected)


def test_a_long_memory_with_many_blank_lines_merges_edits_apart() -> None:
    # 4,000 lines, a third of them blank (difflib's autojunk case): edits far apart on
    # each side, an insert and a delete among them, merge into both.
    base = [("" if i % 3 == 0 else f"line {i}") + "\n" for i in range(4000)]
    ours, theirs, expected = list(base), list(base), list(base)
    ours[100] = expected[100] = "ours\n"
    theirs[3000] = expected[3000] = "theirs\n"
    ours.insert(2000, "new\n")
    del theirs[500]
    expected.insert(2000, "new\n")
    del expected[500]
    merged = merge_texts("".join(base), "".join(ours), "".join(theirs))
    assert merged == "".join(expected)
