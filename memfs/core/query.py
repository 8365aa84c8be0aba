"""The full-text search query language (SPEC §7), parsed once, with no I/O.

A query is terms separated by white space; every term must match (AND):

=================  ==========================================================
``word``           the word, case-insensitively (``memfs`` finds ``Memfs``)
``"two words"``    the phrase: these words next to each other, in this order
``pref*``          a word starting with ``pref`` (letters, digits, ``_`` only)
``-word``          leaves out memories holding the word (also ``-"a phrase"``)
=================  ==========================================================

Text written without spaces (Japanese, Chinese, Thai …) has no words to split, so a
term holding such characters matches as a substring anywhere in the content
(``記憶`` finds ``長期記憶の設計``); :attr:`Term.substring` says which terms do.
Matching covers a memory's path and content. At least one term must not be negated.

:func:`parse` is the one parser; :mod:`memfs.store.search` compiles its
:class:`Query` for SQLite FTS5 and PostgreSQL. :func:`snippet` cuts the highlighted
excerpt of a hit the same way on both dialects.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

from memfs.core.errors import InvalidInput

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "HIGHLIGHT_END",
    "HIGHLIGHT_START",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "MAX_TERMS",
    "SEARCH_AUTO",
    "SEARCH_HYBRID",
    "SEARCH_MODES",
    "SEARCH_SEMANTIC",
    "SEARCH_TEXT",
    "Query",
    "SearchHit",
    "Term",
    "TermKind",
    "holds_unspaced_script",
    "parse",
    "snippet",
    "validate_limit",
    "validate_mode",
]

MAX_QUERY_CHARS = 1_000
MAX_TERMS = 32
DEFAULT_SEARCH_LIMIT = 20
MAX_SEARCH_LIMIT = 100
# How a search ranks (memfs.store.search.Search.query): auto is hybrid when an embedding model
# is configured, else full text.
SEARCH_AUTO = "auto"
SEARCH_TEXT = "text"
SEARCH_SEMANTIC = "semantic"
SEARCH_HYBRID = "hybrid"
SEARCH_MODES = (SEARCH_AUTO, SEARCH_TEXT, SEARCH_SEMANTIC, SEARCH_HYBRID)
# The markers around matched text in a snippet (Markdown bold: memories are Markdown).
HIGHLIGHT_START = "**"
HIGHLIGHT_END = "**"
SNIPPET_CONTEXT_CHARS = 60

# Scripts written without spaces between words: Han, Hiragana, Katakana (and their
# halfwidth forms), Thai, Lao, Khmer, Myanmar. A term holding one matches as a substring.
_NO_SPACE_SCRIPTS = (
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\u0e00-\u0eff\u1780-\u17ff\u1000-\u109f\U00020000-\U0002fa1f]"
)


@functools.cache
def _no_space_scripts() -> re.Pattern[str]:
    """:data:`_NO_SPACE_SCRIPTS` compiled on first use: compiling its wide ranges takes
    ~2 ms, which every process importing this module paid, searching or not."""
    return re.compile(_NO_SPACE_SCRIPTS)


_PREFIX_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r'\s*(-?)(?:"([^"]*)("?)|(\S+))')


class TermKind(enum.Enum):
    """How a term matches."""

    WORD = "word"
    PHRASE = "phrase"
    PREFIX = "prefix"


@dataclass(frozen=True)
class Term:
    """One term of a query.

    Attributes:
        text: the word, the phrase's words (single spaces), or the prefix without ``*``.
        kind: WORD, PHRASE or PREFIX.
        negated: True for ``-term``: memories holding it are left out.
        substring: True when ``text`` holds characters of a script written without
            spaces; the term then matches as a case-insensitive substring.
    """

    text: str
    kind: TermKind
    negated: bool = False
    substring: bool = False


@dataclass(frozen=True)
class Query:
    """A parsed query: its terms in the order written (all must match)."""

    terms: tuple[Term, ...]

    @property
    def positive(self) -> tuple[Term, ...]:
        """The terms that must match."""
        return tuple(t for t in self.terms if not t.negated)

    @property
    def negative(self) -> tuple[Term, ...]:
        """The terms that must not match."""
        return tuple(t for t in self.terms if t.negated)


@dataclass(frozen=True)
class SearchHit:
    """One ranked hit of a search.

    Attributes:
        store_id, memory_id, path: the live memory found (its current path).
        score: higher is better; comparable within one search only.
        snippet: an excerpt of the content around the first match, matches between
            :data:`HIGHLIGHT_START` and :data:`HIGHLIGHT_END`.
    """

    store_id: str
    memory_id: str
    path: str
    score: float
    snippet: str


def parse(text: str) -> Query:
    """Parses a query (the language of this module's docstring).

    Raises:
        InvalidInput: empty or only negated terms, an unterminated quote, a prefix
            ``*`` on something other than one word, more than :data:`MAX_TERMS`
            terms or :data:`MAX_QUERY_CHARS` characters, a NUL character.
    """
    if "\x00" in text:
        raise InvalidInput("the search query must not contain the NUL character (U+0000)")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the search query is longer than {MAX_QUERY_CHARS} characters")
    terms = [t for t in map(_token_term, _TOKEN.finditer(text.strip())) if t is not None]
    if len(terms) > MAX_TERMS:
        raise InvalidInput(f"the search query has more than {MAX_TERMS} terms")
    if not any(not t.negated for t in terms):
        raise InvalidInput("the search query needs at least one term that is not negated")
    return Query(tuple(terms))


def _token_term(match: re.Match[str]) -> Term | None:
    """The term of one token of :data:`_TOKEN`, or None for nothing (``""``, a lone ``-``).

    Raises:
        InvalidInput: an unterminated quote, a ``*`` after something other than a word.
    """
    negated = match.group(1) == "-"
    phrase, closing, bare = match.group(2), match.group(3), match.group(4)
    if phrase is not None:
        if not closing:
            raise InvalidInput(f"unterminated quote in the search query: {match.group(0)!r}")
        words = " ".join(phrase.split())
        return _term(words, TermKind.PHRASE, negated) if words else None
    if bare is None or bare == "-":
        return None
    if not bare.endswith("*"):
        return _term(bare, TermKind.WORD, negated)
    prefix = bare.rstrip("*")
    if not _PREFIX_WORD.fullmatch(prefix):
        raise InvalidInput(f"a prefix term ends one word with '*' (letters, digits, _): {bare!r}")
    return _term(prefix, TermKind.PREFIX, negated)


def holds_unspaced_script(text: str) -> bool:
    """True when ``text`` holds a character of a script written without spaces (Han,
    Hiragana, Katakana, Thai, Lao, Khmer, Myanmar): the rule that makes a query term a
    substring term (:attr:`Term.substring`), so also the rule for which documents the
    substring index must hold: a substring term holds such a character, so it can only
    match text that holds one. Changing the ranges changes which documents SQLite's
    trigram table holds: it needs a migration that rebuilds it (as 0010 does), or
    deletes would name rows never inserted.

    ASCII text is answered without a scan (``str.isascii`` reads a flag of CPython's
    string): the regex costs about 15 us per KiB, and every write asks it of the old
    and the new document (what a write costs the index, SPEC §7)."""
    return not text.isascii() and _no_space_scripts().search(text) is not None


def _term(text: str, kind: TermKind, negated: bool) -> Term:
    return Term(text, kind, negated, substring=holds_unspaced_script(text))


def validate_limit(limit: int) -> int:
    """Raises InvalidInput unless 1 ≤ ``limit`` ≤ :data:`MAX_SEARCH_LIMIT`."""
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
    return limit


def validate_mode(mode: str) -> str:
    """Raises InvalidInput unless ``mode`` is one of :data:`SEARCH_MODES`."""
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"search mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
    return mode


def _pattern(term: Term) -> str:
    """A regular expression finding ``term`` in text, as the index matches it."""
    if term.substring:
        return re.escape(term.text)
    words = [re.escape(w) for w in re.findall(r"\w+", term.text)] or [re.escape(term.text)]
    body = r"\W+".join(words)
    tail = r"\w*" if term.kind is TermKind.PREFIX else r"(?!\w)"
    return r"(?<!\w)" + body + tail


def snippet(content: str, query: Query, *, context_chars: int = SNIPPET_CONTEXT_CHARS) -> str:
    """An excerpt of ``content`` around the first match of a positive term of ``query``,
    every match inside it highlighted; the start of the content when nothing in it
    matches (a hit by path). ``…`` marks a cut."""
    patterns = [_pattern(t) for t in query.positive]
    finder = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    first = finder.search(content)
    start = 0 if first is None else max(0, first.start() - context_chars)
    end = min(len(content), (first.end() if first else 0) + context_chars * 2)
    window = " ".join(content[start:end].split())
    marked = finder.sub(lambda m: f"{HIGHLIGHT_START}{m.group(0)}{HIGHLIGHT_END}", window)
    return ("…" if start > 0 else "") + marked + ("…" if end < len(content) else "")
