"""A tiny model2vec model written by the tests themselves (no download): a Unigram
tokenizer (it segments Japanese written without spaces) over a vocabulary whose rows
point at a handful of topics, so the nearest memory of a query is known in advance.

Imported as ``tiny_model`` (pytest puts tests/search on ``sys.path``); also run by
scripts/bench-search (``python tests/search/tiny_model.py DIR``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

# topic → words (English and Japanese) that mean it; no word belongs to two topics.
TOPICS: dict[str, tuple[str, ...]] = {
    "database": (
        "database",
        "databases",
        "sql",
        "postgres",
        "postgresql",
        "sqlite",
        "query",
        "queries",
        "table",
        "tables",
        "index",
        "データベース",
        "索引",
    ),
    "pets": ("cat", "cats", "dog", "dogs", "pet", "pets", "kitten", "puppy", "猫", "犬", "ペット"),
    "cooking": (
        "recipe",
        "recipes",
        "cook",
        "cooking",
        "bake",
        "bread",
        "cake",
        "oven",
        "料理",
        "レシピ",
        "パン",
    ),
    "travel": (
        "trip",
        "travel",
        "flight",
        "flights",
        "train",
        "hotel",
        "airport",
        "旅行",
        "ホテル",
        "空港",
        "飛行機",
    ),
    "editor": ("vim", "emacs", "editor", "keyboard", "shortcut", "エディタ", "キーボード"),
}
# Words of no topic, on two axes of their own (they dilute a mean, as function words do
# in a real model, without making two topics alike).
FILLER = (
    "the",
    "a",
    "an",
    "of",
    "and",
    "is",
    "my",
    "for",
    "with",
    "in",
    "on",
    "to",
    "の",
    "は",
    "を",
)
DIMENSIONS = len(TOPICS) + 2


def write_model(directory: Path, *, seed: int = 7) -> Path:
    """Writes ``model.safetensors``, ``tokenizer.json`` and ``config.json`` (model2vec's
    layout) into ``directory`` and returns it."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    pieces: list[tuple[str, float]] = [("[UNK]", 0.0), ("▁", -1.0)]
    rows: list[np.ndarray] = [np.zeros(DIMENSIONS), np.zeros(DIMENSIONS)]
    for axis, words in enumerate(TOPICS.values()):
        for word in words:
            row = np.zeros(DIMENSIONS)
            row[axis] = 1.0  # exactly one topic: a query of one topic scores 0 elsewhere
            pieces.append((word, -2.0))
            rows.append(row)
    for word in FILLER:
        row = np.zeros(DIMENSIONS)
        row[-2:] = rng.normal(0, 0.3, 2)
        pieces.append((word, -2.0))
        rows.append(row)
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.save(str(directory / "tokenizer.json"))
    save_file(
        {"embeddings": np.stack(rows).astype(np.float32)}, str(directory / "model.safetensors")
    )
    (directory / "config.json").write_text(
        json.dumps({"model_type": "model2vec", "normalize": True, "hidden_dim": DIMENSIONS})
    )
    return directory


if __name__ == "__main__":
    print(write_model(Path(sys.argv[1])))
