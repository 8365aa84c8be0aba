"""The three-way merge of concurrent saves (SPEC §4 "Concurrent writers"):
:func:`memfs.core.merging.merge_texts`, the rule the mounts apply at close."""

from __future__ import annotations

import pytest

from memfs.core.merging import merge_bytes, merge_texts

BASE = "one\ntwo\nthree\n"


def test_edits_of_lines_apart_merge() -> None:
    base = "one\ntwo\nthree\nfour\n"
    assert merge_texts(base, "ONE\ntwo\nthree\nfour\n", "one\ntwo\nthree\nFOUR\n") == (
        "ONE\ntwo\nthree\nFOUR\n"
    )


def test_edits_of_the_same_line_overlap() -> None:
    assert merge_texts(BASE, "one\nours\nthree\n", "one\ntheirs\nthree\n") is None


def test_adjacent_edits_overlap() -> None:
    # merge3 treats touching regions as one: a conflict copy rather than a guess.
    assert merge_texts(BASE, "ONE\ntwo\nthree\n", "one\nTWO\nthree\n") is None


@pytest.mark.parametrize(
    ("ours", "theirs", "merged"),
    [
        (BASE, "theirs\n", "theirs\n"),  # ours unchanged: the head
        ("ours\n", BASE, "ours\n"),  # theirs unchanged: ours
        ("same\n", "same\n", "same\n"),  # the same change on both sides
    ],
)
def test_one_side_unchanged_or_both_alike(ours: str, theirs: str, merged: str) -> None:
    assert merge_texts(BASE, ours, theirs) == merged


def test_two_appends_keep_both_lines_the_heads_first() -> None:
    assert merge_texts(BASE, BASE + "ours\n", BASE + "theirs\n") == BASE + "theirs\nours\n"


def test_identical_appended_lines_are_kept_twice() -> None:
    assert merge_texts(BASE, BASE + "ok\n", BASE + "ok\n") == BASE + "ok\n"  # one content
    assert merge_texts(BASE, BASE + "ok\n", BASE + "ok\nmore\n") == BASE + "ok\nmore\nok\n"


def test_appends_to_an_empty_base_merge() -> None:
    assert merge_texts("", "ours\n", "theirs\n") == "theirs\nours\n"


def test_an_append_merges_with_an_edit_elsewhere() -> None:
    # sed -i of line 2 on one side, an append on the other, either way round.
    assert merge_texts(BASE, BASE + "x\n", "one\nTWO\nthree\n") == "one\nTWO\nthree\nx\n"
    assert merge_texts(BASE, "one\nTWO\nthree\n", BASE + "x\n") == "one\nTWO\nthree\nx\n"


def test_two_appends_merge_when_the_head_was_also_edited() -> None:
    # The head: line 1 edited (sed -i) and a line appended; ours: a line appended.
    theirs = "ONE\ntwo\nthree\nt\n"
    assert merge_texts(BASE, BASE + "o\n", theirs) == "ONE\ntwo\nthree\nt\no\n"


def test_inserts_at_the_same_place_inside_the_base_overlap() -> None:
    assert merge_texts(BASE, "one\nours\ntwo\nthree\n", "one\ntheirs\ntwo\nthree\n") is None


def test_appends_after_a_last_line_without_a_line_ending_overlap() -> None:
    # Each side extended the last line "three": one line changed two ways.
    base = "one\nthree"
    assert merge_texts(base, base + "\nours\n", base + "\ntheirs\n") is None


def test_a_head_append_without_a_line_ending_is_not_glued_to_ours() -> None:
    # "theirs" + "ours\n" would make a line neither writer wrote.
    assert merge_texts(BASE, BASE + "ours\n", BASE + "theirs") is None


def test_ours_may_end_without_a_line_ending() -> None:
    assert merge_texts(BASE, BASE + "ours", BASE + "theirs\n") == BASE + "theirs\nours"


def test_crlf_lines_are_kept_as_they_are() -> None:
    base = "one\r\ntwo\r\n"
    assert merge_texts(base, base + "o\r\n", "ONE\r\ntwo\r\n") == "ONE\r\ntwo\r\no\r\n"
    assert merge_texts(base, base + "o\r\n", base + "t\r\n") == base + "t\r\no\r\n"


def test_merge_bytes_decodes_utf8_and_refuses_other_bytes() -> None:
    base = "é\n".encode()
    assert merge_bytes(base, base + "ö\n".encode(), base + "ü\n".encode()) == (
        "é\nü\nö\n".encode()
    )
    assert merge_bytes(b"\xff", b"\xff\n", b"a") is None
