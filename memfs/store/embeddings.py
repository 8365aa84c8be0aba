"""The local embedding model of semantic search (SPEC §7): model2vec static embeddings.

A model directory (``$MEMFS_SEARCH_MODEL_DIR``, :func:`memfs.core.config.search_model_dir`)
holds what ``model2vec``'s ``StaticModel.save_pretrained`` writes, of which memfs reads:

==================== ==========================================================
``model.safetensors`` the tensor ``embeddings``: one row per token of the
                      vocabulary, ``(vocabulary size, dimensions)``, any float type
``tokenizer.json``    a Hugging Face ``tokenizers`` tokenizer over that vocabulary
``config.json``       optional; nothing in it changes how memfs embeds
==================== ==========================================================

A text's vector is the mean of its tokens' rows (special and unknown tokens left out),
scaled to length 1, so the dot product of two vectors is their cosine similarity
(what ``StaticModel.encode`` computes with ``normalize``). No network is ever used: the
files are read from the directory, and a missing or malformed file is a
SearchUnavailable naming the setting and the file.

Why this format (README "Semantic search"): a static model is a lookup table, so a
text embeds in microseconds on one CPU core with no inference runtime (numpy,
``tokenizers`` and ``safetensors`` are the whole dependency set), and multilingual
models of 8–30 MB cover Japanese. Its vectors are weaker than a transformer's; the
hybrid ranking keeps full text beside them.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfs.core import config
from memfs.core.errors import SearchUnavailable

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MODEL_FILES",
    "EmbeddingModel",
    "IndexLag",
    "configured_model",
    "load_model",
]

MODEL_FILES = ("model.safetensors", "tokenizer.json")
# Texts are cut to this many characters before tokenizing (a static model's mean over
# the first ~2,000 tokens describes a memory as well as over all of them).
MAX_EMBED_CHARS = 8_000


@dataclass(frozen=True)
class IndexLag:
    """How far the semantic index is behind the heads (``memfs status``, the API).

    Attributes:
        pending: live memories whose current content has no vector yet.
        oldest_seconds: how long the oldest of them has waited (0.0 when none).
        model: the configured model's fingerprint, or None without a model.
    """

    pending: int
    oldest_seconds: float
    model: str | None


class EmbeddingModel:
    """A loaded model2vec model: :meth:`embed` turns texts into unit vectors.

    Attributes:
        directory: where it was read from.
        fingerprint: 16 hex digits of the SHA-256 of its two files; vectors made by
            another fingerprint are never compared with this model's.
        dim: the number of dimensions of its vectors.
    """

    def __init__(self, directory: Path, table: np.ndarray, tokenizer: Any, fingerprint: str):
        self.directory = directory
        self.fingerprint = fingerprint
        self.dim = int(table.shape[1])
        self._table = table
        self._tokenizer = tokenizer
        special = set()
        for token in tokenizer.get_added_tokens_decoder().values():
            if token.special:
                special.add(tokenizer.token_to_id(token.content))
        unk = getattr(tokenizer.model, "unk_token", None)
        if unk is not None and tokenizer.token_to_id(unk) is not None:
            special.add(tokenizer.token_to_id(unk))
        self._skip = special

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors; a text with no known token is the
        zero vector (it matches nothing)."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # encode_batch_fast (tokenizers >= 0.20) skips the offsets: ~40% faster.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        encodings = encode([t[:MAX_EMBED_CHARS] for t in texts], add_special_tokens=False)
        for row, encoding in enumerate(encodings):
            ids = [i for i in encoding.ids if i not in self._skip]
            if not ids:
                continue
            mean = self._table[ids].mean(axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                out[row] = mean / norm
        return out


_cache: dict[tuple[str, tuple[int, ...]], EmbeddingModel] = {}
_cache_lock = threading.Lock()


def _stamp(directory: Path) -> tuple[int, ...]:
    stamp: list[int] = []
    for name in MODEL_FILES:
        try:
            info = (directory / name).stat()
        except OSError as exc:
            raise SearchUnavailable(
                f"the embedding model directory {directory} ({config.SEARCH_MODEL_ENV}) "
                f"lacks {name}: {exc.strerror}; install a model2vec model there (README, "
                "'Semantic search')"
            ) from exc
        stamp.extend((info.st_mtime_ns, info.st_size))
    return tuple(stamp)


def load_model(directory: Path) -> EmbeddingModel:
    """The model in ``directory``, loaded once per process (again when its files change).

    Raises:
        SearchUnavailable: a file is missing, unreadable or malformed (named, with the
            setting); nothing is downloaded.
    """
    key = (str(directory), _stamp(directory))
    with _cache_lock:
        model = _cache.get(key)
        if model is None:
            model = _read(directory)
            _cache.clear()
            _cache[key] = model
        return model


def _read(directory: Path) -> EmbeddingModel:
    import numpy as np
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    def bad(name: str, why: object) -> SearchUnavailable:
        return SearchUnavailable(
            f"the embedding model in {directory} ({config.SEARCH_MODEL_ENV}) can't be "
            f"used: {name}: {why}"
        )

    weights = directory / "model.safetensors"
    try:
        tensors = load_file(str(weights))
    except Exception as exc:  # safetensors raises its own error types
        raise bad(weights.name, exc) from exc
    table = tensors.get("embeddings")
    if table is None or table.ndim != 2 or table.shape[1] == 0:
        raise bad(weights.name, "no 2-dimensional tensor named 'embeddings'")
    try:
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises Exception itself
        raise bad("tokenizer.json", exc) from exc
    if tokenizer.get_vocab_size() > table.shape[0]:
        raise bad(
            weights.name,
            f"{table.shape[0]} rows for a vocabulary of {tokenizer.get_vocab_size()} tokens",
        )
    digest = hashlib.sha256()
    for name in MODEL_FILES:
        digest.update((directory / name).read_bytes())
    return EmbeddingModel(
        directory, np.ascontiguousarray(table, dtype=np.float32), tokenizer, digest.hexdigest()[:16]
    )


def configured_model() -> EmbeddingModel | None:
    """The model ``$MEMFS_SEARCH_MODEL_DIR`` names, or None when it names none.

    Raises:
        SearchUnavailable: it names a directory without a usable model.
    """
    directory = config.search_model_dir()
    return None if directory is None else load_model(directory)
