"""The search query language (memfs/query.py): parsed once, errors named, snippets."""

from __future__ import annotations

import pytest

from memfs.core.errors import InvalidInput
from memfs.core.query import Term, TermKind, holds_unspaced_script, parse, snippet


def test_every_kind_of_term() -> None:
    assert parse('kernel "page  cache" seriali* -fuse -"a b" 記憶').terms == (
        Term("kernel", TermKind.WORD),
        Term("page cache", TermKind.PHRASE),
        Term("seriali", TermKind.PREFIX),
        Term("fuse", TermKind.WORD, negated=True),
        Term("a b", TermKind.PHRASE, negated=True),
        Term("記憶", TermKind.WORD, substring=True),
    )


def test_quotes_and_stars_are_no_syntax_injection() -> None:
    assert parse('"a NEAR(b" OR').terms == (
        Term("a NEAR(b", TermKind.PHRASE),
        Term("OR", TermKind.WORD),
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "at least one term that is not negated"),
        ("-a -b", "at least one term that is not negated"),
        ('"open', "unterminated quote"),
        ("a.b*", "a prefix term ends one word"),
        ("*", "a prefix term ends one word"),
        ("a\x00", "NUL"),
        ("x " * 33, "more than 32 terms"),
        ("x" * 1001, "longer than 1000 characters"),
    ],
)
def test_bad_queries_are_named(query: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse(query)


def test_snippets_cut_and_highlight() -> None:
    text = "x " * 100 + "the Kernel caches kernels " + "y " * 100
    cut = snippet(text, parse("kernel*"))
    assert cut.startswith("…")
    assert cut.endswith("…")
    assert "the **Kernel** caches **kernels**" in cut
    assert snippet("a kernel", parse("kern")) == "a kernel"  # a whole word, not a prefix
    assert snippet("東京タワー", parse("タワー")) == "東京**タワー**"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain ascii notes " * 200, False),
        ("café — naïve résumé", False),
        ("ascii first " * 200 + "終", True),
        ("会議のメモ", True),
        ("ภาษาไทย", True),
        ("𠀋 (a CJK extension B character)", True),
        ("", False),
    ],
)
def test_which_text_holds_a_script_written_without_spaces(text: str, expected: bool) -> None:
    assert holds_unspaced_script(text) is expected
