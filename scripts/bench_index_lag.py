"""Index lag under a burst of writes (README "Performance", "Search"): how long after
its commit a memory's full-text document is written by the indexer thread
(memfs/store/indexer.py), and what the first search after the burst pays to catch up.

    .venv/bin/python scripts/bench_index_lag.py [--writes 1000] [--database PATH]

One engine with its indexer writes ``--writes`` notes of 1-8 KiB back to back (as a
``cp -r`` into a mount does); a second thread reads the queue every 2 ms and notes when
each memory left it. Then a burst of the same size is written with no indexer, and one
search pays for the whole queue. Prints the lags' p50/p99/max and the close times.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy import create_engine, text

from memfs.core.config import database_url
from memfs.core.model import Actor
from memfs.store import Engine

WORDS = (
    "kernel", "cache", "page", "write", "commit", "close", "version", "memory", "store",
    "index", "search", "query", "agent", "note", "draft", "plan", "review", "merge", "branch",
    "test", "deploy", "rollback", "canary", "latency",
)


def note(rng: random.Random) -> str:
    size = rng.randint(1024, 8192)
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[:size]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--database", type=Path, default=None)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="memfs-lag-"))
    path = args.database or directory / "store.db"
    rng = random.Random(29)
    actor = Actor.api_key("apikey_bench")
    engine = Engine(database_url(str(path)))
    store = engine.stores.create("lag")
    writer = engine.for_caller(actor=actor)
    raw = create_engine(database_url(str(path)))

    # 1. With the indexer thread: lag from commit to document.
    assert engine.start_indexer()
    committed: dict[str, float] = {}
    indexed: dict[str, float] = {}
    stop = threading.Event()

    def watch() -> None:
        with raw.connect() as conn:
            while not stop.is_set():
                queued = set(conn.execute(text("SELECT memory_id FROM search_pending")).scalars())
                conn.rollback()
                now = time.perf_counter()
                for memory_id in list(committed):
                    if memory_id not in queued and memory_id not in indexed:
                        indexed[memory_id] = now
                time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    closes: list[float] = []
    burst_start = time.perf_counter()
    for i in range(args.writes):
        body = note(rng)
        started = time.perf_counter()
        memory = writer.memories.create(store.id, f"/burst/{i:05d}.md", body)
        done = time.perf_counter()
        closes.append(done - started)
        committed[memory.id] = done
    burst_s = time.perf_counter() - burst_start
    deadline = time.perf_counter() + 60
    while len(indexed) < len(committed) and time.perf_counter() < deadline:
        time.sleep(0.01)
    stop.set()
    watcher.join()
    lags = [indexed[m] - committed[m] for m in committed if m in indexed]
    p50, p99 = statistics.median(closes) * 1000, percentile(closes, 0.99) * 1000
    print(f"burst of {args.writes} creates in {burst_s:.2f} s; create p50 {p50:.2f} ms, "
          f"p99 {p99:.2f} ms")
    print(f"indexer lag (commit -> document): p50 {statistics.median(lags):.3f} s, "
          f"p99 {percentile(lags, 0.99):.3f} s, max {max(lags):.3f} s "
          f"({len(lags)} of {len(committed)} indexed)")
    engine.close()

    # 2. No indexer: the first search after the burst indexes the whole queue.
    engine = Engine(database_url(str(path)))
    writer = engine.for_caller(actor=actor)
    for i in range(args.writes):
        writer.memories.create(store.id, f"/cold/{i:05d}.md", note(rng))
    started = time.perf_counter()
    hits = engine.search.query("canary", [store.id], limit=5)
    first = time.perf_counter() - started
    started = time.perf_counter()
    engine.search.query("canary", [store.id], limit=5)
    second = time.perf_counter() - started
    print(f"first search after {args.writes} unindexed writes: {first * 1000:.0f} ms "
          f"(catching up); the next: {second * 1000:.1f} ms ({len(hits)} hits)")
    engine.close()
    raw.dispose()


if __name__ == "__main__":
    main()
