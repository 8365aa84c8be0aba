#!/usr/bin/env python3
"""History benchmark (issue 26, SPEC §10): every operation of "history you can use" on
one big store, side by side with its goal.

Builds one store through the engine's own write functions, a transaction per 500
writes (the same rows, versions, change feed and index entries as one call each,
minutes faster): ``--memories`` memories (default 10,000) in three directory levels,
then rewrites up to ``--versions`` versions in all (default 50,000; one in fifty a
rename, one in a hundred a delete), with a snapshot ``half-way`` through them. Then:

    snapshot create    engine.snapshots.create on a 10-memory store and on the big one,
                       in turn (median of 4 x --runs; goal < 10 ms, the same at both)
    as-of listing      history.list at ``half-way`` vs memories.list now, every page
                       of 100 (median of --runs; goal <= 1.5x)
    fork               history.fork of the big store at now (goal < 5 s)
    merge plan         history.plan_merge of that fork after 10 edits on each side
                       (median of --runs; goal < 100 ms, SPEC §12's page budget)
    fork vs origin     history.diff of the origin and that fork, both at now (the
                       same); both also read whole (the fork shortcut off: "whole")
    diff               history.diff of two snapshots 1,000 changes apart (goal < 1 s)
    restore            restores.restore of those 1,000 changes (goal < 5 s)
    as-of mount        not here: see scripts/bench-asof

and prints one table: goal, measured, measured/goal. Usage:

    scripts/bench-history [--memories N] [--versions V] [--runs R] [--database URL]
                          [--json FILE]

``--database`` takes an empty database (e.g. a PostgreSQL one); by default a SQLite file
in a temp dir that is removed. No timing is asserted anywhere in tests.
"""

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchlib.timing import every_page, median_ms  # noqa: E402

from memfs.core.config import database_url  # noqa: E402
from memfs.core.model import Actor, DeleteMode  # noqa: E402
from memfs.store import Engine, forkdiff, forks  # noqa: E402
from memfs.store.memories import create_memory, update_memory  # noqa: E402
from memfs.store.tombstones import delete_memory  # noqa: E402

ACTOR = Actor.api_key("apikey_bench")
PAGE = 100
BATCH = 500


def _timed_s(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


class Builder:
    """Writes through the engine's write functions, ``BATCH`` writes per transaction."""

    def __init__(self, engine: Engine, store_id: str) -> None:
        self.engine = engine
        self.store_id = store_id
        self.pending: list[Callable[[Any], Any]] = []
        self.results: list[Any] = []

    def add(self, write: Callable[[Any], Any]) -> None:
        self.pending.append(write)
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            with self.engine._db.write() as conn:
                self.results += [write(conn) for write in self.pending]
            self.pending = []

    def create(self, path: str, content: str) -> None:
        self.add(
            lambda conn: create_memory(
                conn,
                self.store_id,
                path,
                content,
                actor=ACTOR,
                metadata=None,
                memory_limit=100_000,
            )[0].id
        )

    def update(self, memory_id: str, *, content: str | None, path: str | None) -> None:
        self.add(
            lambda conn: update_memory(
                conn,
                self.store_id,
                memory_id,
                actor=ACTOR,
                content=content,
                path=path,
                expected_sha256=None,
                metadata=None,
                replace=False,
            )
        )

    def delete(self, memory_id: str) -> None:
        self.add(
            lambda conn: delete_memory(
                conn,
                self.store_id,
                memory_id,
                actor=ACTOR,
                expected_sha256=None,
                mode=DeleteMode.SOFT_DELETE,
                reason=None,
                replacement="",
            )
        )


def build(engine: Engine, memories: int, versions: int) -> tuple[str, list[str], set[str]]:
    """The big store: its id, its memory ids and the live ones. Progress on stderr."""
    rng = random.Random(26)
    store = engine.stores.create("bench history")
    builder = Builder(engine, store.id)
    started = time.perf_counter()
    for index in range(memories):
        path = f"/area{index % 10}/topic{index % 97}/note{index}.md"
        builder.create(path, f"note {index}\n" * rng.randint(1, 40))
    builder.flush()
    ids = list(builder.results)
    paths = {
        memory_id: f"/area{i % 10}/topic{i % 97}/note{i}.md" for i, memory_id in enumerate(ids)
    }
    print(f"  {memories} memories in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    rewrites = max(0, versions - memories)
    live = set(ids)
    for step in range(rewrites):
        if step == rewrites // 2:
            builder.flush()
            engine.for_caller(actor=ACTOR).snapshots.create(store.id, "half-way")
        memory_id = ids[rng.randrange(len(ids))]
        if memory_id not in live:
            continue
        roll = rng.random()
        if roll < 0.01:
            builder.delete(memory_id)
            live.discard(memory_id)
        elif roll < 0.03:
            paths[memory_id] = paths[memory_id].replace(".md", f"-r{step}.md")
            builder.update(memory_id, content=None, path=paths[memory_id])
        else:
            builder.update(memory_id, content=f"rewrite {step}\n" * rng.randint(1, 40), path=None)
        if step % 10_000 == 0:
            print(f"  {memories + step} versions written", file=sys.stderr)
    builder.flush()
    print(f"  built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store.id, ids, live


def thousand_changes(engine: Engine, store_id: str, live: set[str]) -> None:
    """1,000 changes between two snapshots: 950 edits and 50 renames of 1,000 memories."""
    rng = random.Random(1000)
    builder = Builder(engine, store_id)
    for index, memory_id in enumerate(rng.sample(sorted(live), min(1000, len(live)))):
        if index % 20 == 0:
            current = engine.memories.get(store_id, memory_id, with_content=False)
            builder.update(memory_id, content=None, path=current.path.replace(".md", "-moved.md"))
        else:
            builder.update(memory_id, content=f"change {index}\n" * rng.randint(1, 40), path=None)
    builder.flush()


def fork_compared(
    engine: Engine, store_id: str, fork_id: str, live: set[str], runs: int
) -> tuple[float, float, float, float, int]:
    """10 edits on each side of the fork, then the merge plan and the diff of the fork
    with its origin (now and now), median of ``runs`` each: as the engine reads them
    (only what changed since the fork, :mod:`memfs.store.forkdiff`) and read whole (the
    shortcut turned off, as a fork made before it is read), with the same results."""
    rng = random.Random(10)
    origin_side = Builder(engine, store_id)
    for index, memory_id in enumerate(rng.sample(sorted(live), 10)):
        origin_side.update(memory_id, content=f"origin edit {index}\n", path=None)
    origin_side.flush()
    fork_side = Builder(engine, fork_id)
    for index, memory in enumerate(rng.sample(engine.memories.all(fork_id), 10)):
        fork_side.update(memory.id, content=f"fork edit {index}\n", path=None)
    fork_side.flush()
    history = engine.for_caller(actor=ACTOR).history
    plan_ms, plan = median_ms(lambda: history.plan_merge(fork_id), runs)
    diff_ms, diff = median_ms(lambda: history.diff(store_id, "now", fork_id, "now"), runs)
    changed, on_fork = forkdiff.changed, forks._changed_on_fork
    forkdiff.changed = lambda *args: None  # type: ignore[assignment]
    forks._changed_on_fork = lambda *args: None  # type: ignore[assignment]
    try:
        plan_whole_ms, whole_plan = median_ms(lambda: history.plan_merge(fork_id), runs)
        diff_whole_ms, whole_diff = median_ms(
            lambda: history.diff(store_id, "now", fork_id, "now"), runs
        )
    finally:
        forkdiff.changed, forks._changed_on_fork = changed, on_fork
    assert whole_diff.entries == diff.entries, "the fork diff differs from the one read whole"
    assert len(whole_plan.steps) == len(plan.steps), "the merge plan differs"
    return plan_ms, plan_whole_ms, diff_ms, diff_whole_ms, len(plan.steps)


def measure(engine: Engine, args: argparse.Namespace) -> dict[str, Any]:
    store_id, _, live = build(engine, args.memories, args.versions)
    versions = engine.statistics()["versions"]  # before the operations add theirs
    snapshots = engine.for_caller(actor=ACTOR).snapshots
    small = engine.stores.create("bench history small")
    for index in range(10):
        engine.for_caller(actor=ACTOR).memories.create(small.id, f"/n{index}.md", f"{index}\n")
    names = iter(range(10**6))
    small_samples: list[float] = []
    big_samples: list[float] = []
    for _ in range(args.runs * 4):  # in turn, so a WAL checkpoint or a busy moment hits both
        for target, samples in ((small.id, small_samples), (store_id, big_samples)):
            start = time.perf_counter()
            snapshots.create(target, f"bench-{next(names)}")
            samples.append((time.perf_counter() - start) * 1000)
    snap_small_ms, snap_big_ms = statistics.median(small_samples), statistics.median(big_samples)
    now_ms, now_count = median_ms(
        lambda: every_page(lambda c: engine.memories.list(store_id, limit=PAGE, cursor=c)),
        args.runs,
    )
    asof_ms, asof_count = median_ms(
        lambda: every_page(
            lambda c: engine.history.list(store_id, "half-way", limit=PAGE, cursor=c)
        ),
        args.runs,
    )
    fork_s, fork = _timed_s(
        lambda: engine.for_caller(actor=ACTOR).history.fork(store_id, name="bench fork")
    )
    plan_ms, plan_whole_ms, fork_diff_ms, fork_diff_whole_ms, plan_steps = fork_compared(
        engine, store_id, fork.id, live, args.runs
    )
    snapshots.create(store_id, "before-1000")
    thousand_changes(engine, store_id, live)
    snapshots.create(store_id, "after-1000")
    diff_s, diff = _timed_s(
        lambda: engine.history.diff(store_id, "before-1000", store_id, "after-1000")
    )
    restore_s, plan = _timed_s(
        lambda: engine.for_caller(actor=ACTOR).restores.restore(store_id, "before-1000")
    )
    undone = engine.history.diff(store_id, "before-1000", store_id, "now")
    assert undone.entries == [], "the restore left differences"
    return {
        "memories_now": now_count,
        "memories_at_snapshot": asof_count,
        "versions": versions,
        "fork_memories": fork.entry_count,
        "diff_entries": len(diff.entries),
        "restore_steps": len(plan.steps),
        "snapshot_create_10_ms": round(snap_small_ms, 2),
        "snapshot_create_10000_ms": round(snap_big_ms, 2),
        "list_now_ms": round(now_ms, 1),
        "list_at_snapshot_ms": round(asof_ms, 1),
        "ratio_asof_vs_now": round(asof_ms / now_ms, 2),
        "fork_s": round(fork_s, 2),
        "diff_1000_s": round(diff_s, 3),
        "restore_1000_s": round(restore_s, 2),
        "merge_plan_steps": plan_steps,
        "merge_plan_ms": round(plan_ms, 1),
        "merge_plan_read_whole_ms": round(plan_whole_ms, 1),
        "fork_diff_ms": round(fork_diff_ms, 1),
        "fork_diff_read_whole_ms": round(fork_diff_whole_ms, 1),
    }


def table(figures: dict[str, Any], dialect: str) -> str:
    rows = [
        ("snapshot create, 10 memories", "< 10 ms", f"{figures['snapshot_create_10_ms']} ms",
         figures["snapshot_create_10_ms"] / 10),
        (f"snapshot create, {figures['memories_now']:,} memories", "< 10 ms",
         f"{figures['snapshot_create_10000_ms']} ms", figures["snapshot_create_10000_ms"] / 10),
        ("as-of listing vs listing now", "<= 1.5x",
         f"{figures['ratio_asof_vs_now']}x ({figures['list_at_snapshot_ms']:.0f} vs "
         f"{figures['list_now_ms']:.0f} ms)", figures["ratio_asof_vs_now"] / 1.5),
        (f"fork ({figures['fork_memories']:,} memories)", "< 5 s", f"{figures['fork_s']} s",
         figures["fork_s"] / 5),
        (f"merge plan, 10 changes a side ({figures['merge_plan_steps']} steps)", "< 100 ms",
         f"{figures['merge_plan_ms']} ms (whole: {figures['merge_plan_read_whole_ms']:.0f})",
         figures["merge_plan_ms"] / 100),
        ("fork vs origin diff, 10 changes a side", "< 100 ms",
         f"{figures['fork_diff_ms']} ms (whole: {figures['fork_diff_read_whole_ms']:.0f})",
         figures["fork_diff_ms"] / 100),
        (f"diff, 1,000 changes apart ({figures['diff_entries']} entries)", "< 1 s",
         f"{figures['diff_1000_s']} s", figures["diff_1000_s"] / 1),
        (f"restore of 1,000 changes ({figures['restore_steps']} steps)", "< 5 s",
         f"{figures['restore_1000_s']} s", figures["restore_1000_s"] / 5),
    ]
    lines = [
        f"{dialect}: {figures['memories_now']:,} memories now "
        f"({figures['memories_at_snapshot']:,} at the snapshot), "
        f"{figures['versions']:,} versions",
        f"| {'operation':<44} | {'goal':<8} | {'measured':<28} | {'/goal':>6} |",
        f"|{'-' * 46}|{'-' * 10}|{'-' * 30}|{'-' * 8}|",
    ]
    for name, goal, measured, ratio in rows:
        lines.append(f"| {name:<44} | {goal:<8} | {measured:<28} | {ratio:>6.2f} |")
    lines.append(
        f"| {'as-of mount vs a normal mount':<44} | {'<= 1.5x':<8} | "
        f"{'see scripts/bench-asof':<28} | {'':>6} |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database", default=None, help="an empty database (default: SQLite)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memfs-bench-history-") as tmp:
        url = database_url(args.database) if args.database else f"sqlite:///{tmp}/bench.db"
        engine = Engine(url)
        try:
            print(f"building {args.memories} memories, ~{args.versions} versions", file=sys.stderr)
            figures = measure(engine, args)
        finally:
            engine.close()
    print(table(figures, url.split(":")[0].split("+")[0]))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
