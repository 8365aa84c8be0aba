#!/usr/bin/env python3
"""Search benchmark (issue 14), side by side in one run, over the 10,000-memory tree.

The tree is scripts/bench's metadata/search tree (benchlib.trees: 10,000 markdown notes
of 1-8 KB in three levels, the word "quokka" planted in one note of twenty). It is
written into three SQLite stores through the engine, one write to each in turn so that
all see the same machine load: one with the search indexes (this build), one with
indexing switched off in this process (the full-text documents and the embedding queue
not written), a third with full text but no embedding queue. Then:

    text search   Engine.search (full text) of each query word: p50 / p99 ms
    grep -rliw    the same word through a real memfs mount of the indexed store (warm:
                  a first run before the timed ones), p50 / p99 ms
    rg -liw       likewise, when ripgrep is installed
    write         memories.create p50 / p99 ms: indexing on, full text only, off; ratios
    index size    bytes per memory: full text (search_docs, FTS5 tables), vectors, queue
    semantic      a model2vec-format model of random vectors (--dim, default 256, over
                  the tree's vocabulary: the figures are speed, not quality): embedding
                  rate, semantic and hybrid query p50 / p99 ms at 10,000 memories, and
                  the lag from a write's return to its vector (the embedder thread)

It prints a table, then the issue's goals as ratios. Usage:

    scripts/bench-search [--memories N] [--queries Q] [--grep-runs R] [--dim D] [--json F]

Needs /dev/fuse (the grep column); runs in a fresh temp dir that it removes.
"""

import argparse
import contextlib
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from benchlib.trees import _WORDS, SEARCH_WORD, generate_markdown_tree  # noqa: E402

from memfs.core.config import SEARCH_MODEL_ENV, database_url  # noqa: E402
from memfs.core.model import Actor  # noqa: E402
from memfs.store import Engine  # noqa: E402

QUERIES = (SEARCH_WORD, "rollback", "canary deploy")
SEMANTIC_QUERIES = ("rollback of a canary release", "kernel page cache", "quokka")
ACTOR = Actor.api_key("apikey_bench")


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    """(p50, p99) of samples in ms."""
    ordered = sorted(samples_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed(action: Callable[[], object]) -> float:
    """How long ``action()`` took, in ms."""
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


# ------------------------------------------------------------- indexing on / off

# What the next writes of this process index (bench only: builds without search, for
# the write-latency comparison): "all", "text" (full text, no embedding queue), "none".
_indexing = "all"


@contextlib.contextmanager
def indexing(kind: str) -> Iterator[None]:
    """The writes inside index ``kind`` only."""
    global _indexing
    _indexing = kind
    try:
        yield
    finally:
        _indexing = "all"


def _install_switch() -> None:
    from memfs.store import search, semantic  # bench only: the store's insides

    def switch(module: object, name: str, kinds: tuple[str, ...]) -> None:
        original = getattr(module, name)

        def switched(*args: object, **kwargs: object) -> None:
            if _indexing in kinds:
                original(*args, **kwargs)

        setattr(module, name, switched)

    for name in ("queue", "queue_many", "unindex_memory"):
        switch(search, name, ("all", "text"))
    switch(semantic, "enqueue", ("all",))


# ------------------------------------------------------------------ the model


def write_random_model(directory: Path, dim: int) -> Path:
    """A model2vec-layout model (model.safetensors + tokenizer.json) of random unit rows
    over the tree's vocabulary: real loading and embedding code, meaningless vectors."""
    import numpy as np
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    directory.mkdir(parents=True)
    vocab = {"[UNK]": 0}
    for word in dict.fromkeys(w.lower() for w in _WORDS + [SEARCH_WORD]):
        vocab[word] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(directory / "tokenizer.json"))
    rows = np.random.default_rng(14).normal(size=(len(vocab), dim)).astype(np.float32)
    save_file({"embeddings": rows}, str(directory / "model.safetensors"))
    return directory


# ----------------------------------------------------------------- the mount


@contextlib.contextmanager
def mounted(database: Path, home: Path, mount_point: Path) -> Iterator[Path]:
    """``memfs mount MOUNT --store bench`` (background daemon) on ``database``; the
    store's directory. Unmounted at the end, also after a failure."""
    env = dict(os.environ, MEMFS_HOME=str(home), MEMFS_DATABASE=str(database))
    env.pop(SEARCH_MODEL_ENV, None)
    home.mkdir(mode=0o700)
    mount_point.mkdir()
    memfs = str(REPO / ".venv" / "bin" / "memfs")
    subprocess.run([memfs, "mount", str(mount_point), "--store", "bench"], env=env, check=True)
    try:
        yield mount_point / "bench"
    finally:
        subprocess.run([memfs, "umount", str(mount_point)], env=env, check=False)


def command_ms(argv: list[str], runs: int) -> list[float]:
    """``runs`` timings of a command (after one untimed warm-up run)."""
    subprocess.run(argv, capture_output=True, check=False)
    return [
        timed(lambda: subprocess.run(argv, capture_output=True, check=False)) for _ in range(runs)
    ]


# ---------------------------------------------------------------- index size


def index_bytes(database: Path) -> dict[str, int]:
    """Bytes of the search tables and their indexes (SQLite dbstat), by part."""
    import sqlite3

    parts = {"full text": 0, "vectors": 0, "queue": 0}
    with contextlib.closing(sqlite3.connect(database)) as conn:
        for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            if "search_vectors" in name:
                parts["vectors"] += size
            elif "search_queue" in name:
                parts["queue"] += size
            elif "search" in name:
                parts["full text"] += size
    return parts


# ---------------------------------------------------------------------- main


WRITE_KINDS = ("all", "text", "none")


def build(args: argparse.Namespace, root: Path) -> tuple[Engine, str, dict[str, list[float]]]:
    """Writes the tree into three stores, one write to each in turn (rotating which goes
    first): indexed fully, by full text only, not at all. Returns the fully indexed
    engine, its store id and the write timings (ms) per kind."""
    tree = generate_markdown_tree(root / "tree", "search", args.memories, levels=3, seed=7)
    limit = args.memories + 1_000
    engines = {
        k: Engine(database_url(str(root / f"{k}.db")), memory_limit=limit) for k in WRITE_KINDS
    }
    stores = {k: e.stores.create("bench").id for k, e in engines.items()}
    timings: dict[str, list[float]] = {k: [] for k in WRITE_KINDS}
    for i, relative in enumerate(tree.files):
        content = (tree.path / relative).read_text(encoding="utf-8")
        for j in range(len(WRITE_KINDS)):
            kind = WRITE_KINDS[(i + j) % len(WRITE_KINDS)]
            write = functools.partial(
                engines[kind].for_caller(actor=ACTOR).memories.create,
                stores[kind],
                "/" + relative,
                content,
            )
            with indexing(kind):
                timings[kind].append(timed(write))
    for kind in ("text", "none"):
        engines[kind].close()
    return engines["all"], stores["all"], timings


def measure_semantic(
    engine: Engine, store_id: str, args: argparse.Namespace, root: Path
) -> dict[str, object]:
    os.environ[SEARCH_MODEL_ENV] = str(write_random_model(root / "model", args.dim))
    start = time.perf_counter()
    embedded = engine.search.embed_pending()
    rate = embedded / (time.perf_counter() - start)
    semantic = [
        timed(lambda q=q: engine.search.query(q, [store_id], mode="semantic"))
        for _ in range(args.queries // len(SEMANTIC_QUERIES))
        for q in SEMANTIC_QUERIES
    ]
    hybrid = [
        timed(lambda q=q: engine.search.query(q, [store_id], mode="hybrid"))
        for _ in range(args.queries // len(SEMANTIC_QUERIES))
        for q in SEMANTIC_QUERIES
    ]
    assert engine.start_embedder()
    lags: list[float] = []
    for i in range(args.lag_writes):
        engine.for_caller(actor=ACTOR).memories.create(
            store_id, f"/lag/{i}.md", f"rollback canary {i}"
        )
        start = time.perf_counter()
        while engine.search.index_lag().pending:
            time.sleep(0.005)
        lags.append((time.perf_counter() - start) * 1000)
    return {"embedded": embedded, "rate": rate, "semantic": semantic, "hybrid": hybrid, "lag": lags}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300, help="timed searches per query kind")
    parser.add_argument("--grep-runs", type=int, default=5)
    parser.add_argument("--lag-writes", type=int, default=20)
    parser.add_argument("--dim", type=int, default=256, help="the random model's dimensions")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    args = parser.parse_args()
    _install_switch()
    os.environ.pop(SEARCH_MODEL_ENV, None)
    rows: list[tuple[str, float, float]] = []
    samples: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        root = Path(tmp)
        print(f"writing {args.memories} memories three times ...", file=sys.stderr)
        engine, store_id, writes = build(args, root)
        text: dict[str, list[float]] = {}
        for query in QUERIES:
            text[query] = [
                timed(lambda q=query: engine.search.query(q, [store_id], mode="text"))
                for _ in range(args.queries)
            ]
            rows.append((f"text search {query!r}", *percentiles(text[query])))
        all_text = [t for ts in text.values() for t in ts]
        grep: dict[str, list[float]] = {}
        rg: dict[str, list[float]] = {}
        with mounted(root / "all.db", root / "home", root / "mnt") as directory:
            for query in QUERIES[:2]:
                grep[query] = command_ms(["grep", "-rliw", query, str(directory)], args.grep_runs)
                rows.append((f"grep -rliw {query!r} (mount)", *percentiles(grep[query])))
                if shutil.which("rg"):
                    rg[query] = command_ms(["rg", "-liw", query, str(directory)], args.grep_runs)
                    rows.append((f"rg -liw {query!r} (mount)", *percentiles(rg[query])))
        rows.append(("create_memory, indexing on", *percentiles(writes["all"])))
        rows.append(("create_memory, full text only", *percentiles(writes["text"])))
        rows.append(("create_memory, indexing off", *percentiles(writes["none"])))
        print(f"embedding {args.memories} memories ({args.dim} dimensions) ...", file=sys.stderr)
        semantic = measure_semantic(engine, store_id, args, root)
        rows.append(("semantic search (3 queries)", *percentiles(semantic["semantic"])))
        rows.append(("hybrid search (3 queries)", *percentiles(semantic["hybrid"])))
        rows.append(("write -> vector lag (embedder)", *percentiles(semantic["lag"])))
        engine.close()
        sizes = index_bytes(root / "all.db")
    print(f"\n{args.memories} memories (scripts/bench's search tree), SQLite, one run\n")
    print(f"| {'measure':40} | {'p50 ms':>9} | {'p99 ms':>9} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 11}|")
    for name, p50, p99 in rows:
        print(f"| {name:40} | {p50:9.2f} | {p99:9.2f} |")
    per_memory = {part: size / args.memories for part, size in sizes.items()}
    print(
        "\nindex size per memory: "
        + ", ".join(f"{part} {size:,.0f} B" for part, size in per_memory.items())
    )
    print(f"embedding rate: {semantic['rate']:,.0f} memories/s ({args.dim} dimensions)")
    text_p50 = statistics.median(text[SEARCH_WORD])
    grep_p50 = statistics.median(grep[SEARCH_WORD])
    off = statistics.median(writes["none"])
    write_ratio = statistics.median(writes["all"]) / off
    text_ratio = statistics.median(writes["text"]) / off
    semantic_p50 = statistics.median(semantic["semantic"])
    lag_p99 = percentiles(semantic["lag"])[1]
    print("\ngoals (issue 14):")
    speedup = grep_p50 / text_p50
    print(f"- text search vs grep -rl through the mount: {speedup:,.0f}x faster (goal >= 50x)")
    if rg:
        rg_p50 = statistics.median(rg[SEARCH_WORD])
        print(f"- text search vs rg through the mount: {rg_p50 / text_p50:,.0f}x faster")
    else:
        print("- rg: not installed")
    print(
        f"- write latency, indexing on / off: {write_ratio:.2f}x (goal <= 1.10x); full text "
        f"alone {text_ratio:.2f}x, so the embedding queue adds {write_ratio / text_ratio:.2f}x"
    )
    print(f"- semantic query p50 at {args.memories} memories: {semantic_p50:.1f} ms (goal < 50 ms)")
    print(f"- embedding lag p99: {lag_p99 / 1000:.2f} s (goal < 2 s)")
    print(f"- all text queries p50: {statistics.median(all_text):.2f} ms")
    if args.json:
        samples.update(
            text=text,
            grep=grep,
            rg=rg,
            writes=writes,
            index_bytes=sizes,
            semantic=semantic,
        )
        args.json.write_text(json.dumps(samples, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
