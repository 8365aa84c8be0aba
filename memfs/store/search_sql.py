"""The SQL text of a full-text search (SPEC §7), per dialect: the document expression
PostgreSQL's GIN index and queries share, and the compilation of a parsed
:class:`memfs.core.query.Query` into joins, conditions and a score over ``search_docs``
(``d``) for :mod:`memfs.store.search`. No I/O: strings and parameters only.
"""

from __future__ import annotations

from typing import Any

from memfs.core.query import Query, Term, TermKind

__all__ = ["Compiled", "compile_postgresql", "compile_sqlite", "pg_document"]

# bm25 weights of the (path, body) columns: a word in the path counts twice.
_BM25_WEIGHTS = "2.0, 1.0"
_TRIGRAM_MIN_CHARS = 3


# The path's separators become spaces: PostgreSQL's parser would keep "/a/b.md" as one
# file-path word, where unicode61 sees the words a, b and md.
def pg_document(alias: str = "") -> str:
    """The tsvector of a document (``alias``: ``"d."`` in queries); one expression for
    the index and the queries, so the GIN index serves them."""
    path, body = f"{alias}path", f"{alias}body"
    return f"to_tsvector('simple'::regconfig, translate({path}, '/._-', '    ') || ' ' || {body})"


def _fts_string(term: Term) -> str:
    """One term as an FTS5 string (quotes doubled: no FTS5 syntax gets through)."""
    quoted = '"' + term.text.replace('"', '""') + '"'
    return quoted + "*" if term.kind is TermKind.PREFIX else quoted


def _like_pattern(term: Term) -> str:
    escaped = term.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Compiled:
    """A query being compiled: SQL fragments and their parameters."""

    def __init__(self) -> None:
        self.joins: list[str] = []
        self.where: list[str] = []
        self.score: list[str] = []
        self.params: dict[str, Any] = {}

    def param(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f":{name}"


def _substring_score(compiled: Compiled, term: Term, lower: str) -> str:
    """Occurrences of a substring term per kilobyte-ish of text (bm25-like damping)."""
    needle = compiled.param(term.text.lower())
    haystack = f"{lower}(d.path || ' ' || d.body)"
    return (
        f"((length({haystack}) - length(replace({haystack}, {needle}, ''))) * 1.0 "
        f"/ length({needle}) / (1.0 + length(d.body) / 2000.0))"
    )


def compile_sqlite(compiled: Compiled, query: Query) -> None:
    words = [t for t in query.positive if not t.substring]
    trigrams = [t for t in query.positive if t.substring and len(t.text) >= _TRIGRAM_MIN_CHARS]
    short = [t for t in query.positive if t.substring and len(t.text) < _TRIGRAM_MIN_CHARS]
    for table, terms in (("search_fts_words", words), ("search_fts_trigram", trigrams)):
        if not terms:
            continue
        match = compiled.param(" AND ".join(_fts_string(t) for t in terms))
        alias = "w" if table == "search_fts_words" else "t"
        compiled.joins.append(
            f"JOIN (SELECT rowid AS doc_id, bm25({table}, {_BM25_WEIGHTS}) AS rank "
            f"FROM {table} WHERE {table} MATCH {match}) {alias} ON {alias}.doc_id = d.doc_id"
        )
        compiled.score.append(f"-{alias}.rank")
    for term in short:
        compiled.where.append(
            f"(d.path || ' ' || d.body) LIKE {compiled.param(_like_pattern(term))} ESCAPE '\\'"
        )
        compiled.score.append(_substring_score(compiled, term, "lower"))
    for term in query.negative:
        if term.substring:
            pattern = compiled.param(_like_pattern(term))
            compiled.where.append(f"(d.path || ' ' || d.body) NOT LIKE {pattern} ESCAPE '\\'")
        else:
            match = compiled.param(_fts_string(term))
            compiled.where.append(
                "d.doc_id NOT IN (SELECT rowid FROM search_fts_words "
                f"WHERE search_fts_words MATCH {match})"
            )


def _tsquery(compiled: Compiled, term: Term) -> str:
    if term.kind is TermKind.PREFIX:
        return f"to_tsquery('simple', {compiled.param(term.text + ':*')})"
    return f"phraseto_tsquery('simple', {compiled.param(term.text)})"


def compile_postgresql(compiled: Compiled, query: Query) -> None:
    document = pg_document("d.")
    words = [t for t in query.positive if not t.substring]
    if words:
        tsquery = " && ".join(_tsquery(compiled, t) for t in words)
        compiled.where.append(f"{document} @@ ({tsquery})")
        compiled.score.append(f"ts_rank({document}, ({tsquery}))")
    for term in query.positive:
        if term.substring:
            pattern = compiled.param(_like_pattern(term))
            compiled.where.append(f"(d.body ILIKE {pattern} OR d.path ILIKE {pattern})")
            compiled.score.append(_substring_score(compiled, term, "lower"))
    for term in query.negative:
        if term.substring:
            pattern = compiled.param(_like_pattern(term))
            compiled.where.append(f"NOT (d.body ILIKE {pattern} OR d.path ILIKE {pattern})")
        else:
            compiled.where.append(f"NOT ({document} @@ {_tsquery(compiled, term)})")
