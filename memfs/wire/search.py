"""Search on the wire (memfs extension, SPEC §7): the body of ``POST /v1/search``, the
``search_hit`` object and the answer with the semantic index's lag."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memfs.wire.common import (
    LISTING_PREFIX_PATTERN,
    RECORD_NAME_PATTERN,
    RecordTypeName,
    RequestBody,
    WireObject,
)

__all__ = [
    "SearchHitOut",
    "SearchRequest",
    "SearchResults",
    "SemanticIndexOut",
]


class SearchRequest(RequestBody):
    """``POST /v1/search`` (memfs extension, SPEC §7): full-text search over several
    stores; the query language is documented in the README (memfs/query.py)."""

    query: str = Field(
        description='Words, "phrases", prefix*, -excluded; every term must match.',
        min_length=1,
        max_length=1000,
    )
    memory_store_ids: list[str] | None = Field(
        default=None,
        description="The stores to search (each readable by the caller); null or absent "
        "means every store the caller can read.",
        max_length=100,
    )
    path_prefix: str = Field(
        default="/",
        description="Only memories below this prefix.",
        json_schema_extra={"pattern": LISTING_PREFIX_PATTERN},
    )
    limit: int = Field(default=20, ge=1, le=100, description="At most this many hits.")
    semantic: bool = Field(
        default=False,
        description="By meaning only (as mode 'semantic'); 400 search_unavailable while "
        "no embedding model is configured.",
    )
    mode: Literal["auto", "text", "semantic", "hybrid"] = Field(
        default="auto",
        description="auto: hybrid (words and meaning fused) when the server has an "
        "embedding model, else text; semantic and hybrid need the model.",
    )
    record_type: RecordTypeName | None = Field(
        default=None, description="Only records of this type (SPEC §6 record header)."
    )
    tag: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=RECORD_NAME_PATTERN,
        description="Only records with this tag.",
    )
    min_importance: float | None = Field(
        default=None, ge=0, le=1, description="Only records of at least this importance."
    )


class SearchHitOut(WireObject):
    """One ranked hit (memfs extension, SPEC §7)."""

    read_defaults = ("type",)

    type: Literal["search_hit"] = "search_hit"
    memory_store_id: str
    memory_id: str
    path: str
    score: float = Field(description="Higher is better; comparable within one answer.")
    snippet: str = Field(description="Excerpt around the first match, matches in **…**.")


class SemanticIndexOut(WireObject):
    """How far semantic search is behind the heads (memfs extension)."""

    model: str | None = Field(description="The embedding model's fingerprint; null: none.")
    pending: int = Field(description="Live memories waiting for their vector.")
    lag_seconds: float = Field(description="How long the oldest of them has waited.")


class SearchResults(WireObject):
    """Hits best first (no pagination: ``limit`` bounds the answer)."""

    data: list[SearchHitOut]
    semantic_index: SemanticIndexOut
