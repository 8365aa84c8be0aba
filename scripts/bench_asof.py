#!/usr/bin/env python3
"""As-of listing benchmark (issue 26, SPEC §10): what reading the past costs.

Builds one SQLite store through the engine: ``--memories`` memories (default 10,000)
in three directory levels, then ``--versions`` versions in all (default 50,000: each
memory rewritten about four times, one in fifty renamed, one in a hundred deleted),
with a snapshot half-way through the rewrites. Then, ``--runs`` times each, in turn:

    now       engine.memories.list, every page of 100 (what ``memfs memory ls`` does)
    @snapshot engine.history.list at the snapshot, every page of 100
    @now      engine.history.list at ``now``, every page of 100
    depth=1   the first page of each with depth 1 (rolled-up directories)
    snapshot  engine.snapshots.create (ms; the same at any size: one row)

and prints the medians and the ratios as-of / now (goal ≤ 1.5×). Then the mounts,
``--mount-runs`` times each (default 3), in turn: ``memfs mount`` of the store now
(``--store NAME``) and as of the snapshot (``--store NAME@half-way``, SPEC §10), each
timed to ready, then ``ls -lR``, ``find`` and ``cat`` of every file, cold (the mount
just made) then warm (once more), then ``memfs umount``; it prints the medians side by
side with the ratio as-of / now (goal ≤ 1.5×). Usage:

    scripts/bench-asof [--memories N] [--versions V] [--runs R] [--mount-runs M]
                       [--no-mount] [--json FILE]

Runs in a fresh temp dir that it removes. No timing is asserted anywhere in tests.
"""

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchlib.timing import every_page, median_ms  # noqa: E402

from memfs.core.model import Actor  # noqa: E402
from memfs.store import Engine  # noqa: E402

ACTOR = Actor.api_key("apikey_bench")
PAGE = 100


def build(engine: Engine, memories: int, versions: int) -> str:
    """The store; returns its id. Prints progress to stderr."""
    rng = random.Random(26)
    store = engine.stores.create("bench as-of")
    writer = engine.for_caller(actor=ACTOR).memories
    ids: list[str] = []
    started = time.perf_counter()
    for index in range(memories):
        path = f"/area{index % 10}/topic{index % 97}/note{index}.md"
        ids.append(writer.create(store.id, path, f"note {index}\n" * rng.randint(1, 40)).id)
    rewrites = max(0, versions - memories)
    live = set(ids)
    for step in range(rewrites):
        if step == rewrites // 2:
            engine.for_caller(actor=ACTOR).snapshots.create(store.id, "half-way")
        memory_id = ids[rng.randrange(len(ids))]
        if memory_id not in live:
            continue
        roll = rng.random()
        if roll < 0.01:
            writer.delete(store.id, memory_id)
            live.discard(memory_id)
        elif roll < 0.03:
            current = writer.get(store.id, memory_id, with_content=False)
            writer.update(store.id, memory_id, path=current.path.replace(".md", f"-r{step}.md"))
        else:
            writer.update(store.id, memory_id, content=f"rewrite {step}\n" * rng.randint(1, 40))
        if step % 5000 == 0:
            print(f"  {memories + step} versions written", file=sys.stderr)
    print(f"  built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store.id


# The walks of the mount benchmark, in this order on a fresh mount (cold: the kernel's
# caches are empty, the daemon has loaded the tree), then once more (warm).
WALKS = {
    "ls -lR": "ls -lR {d} > /dev/null",
    "find": "find {d} > /dev/null",
    "cat all": "find {d} -type f -print0 | xargs -0 cat > /dev/null",
}


def _timed(command: str) -> float:
    """Seconds ``command`` (a shell line) takes; it must succeed."""
    start = time.perf_counter()
    subprocess.run(["bash", "-c", command], check=True)
    return time.perf_counter() - start


def _mount_once(tmp: Path, database: str, spec: str, index: int) -> dict[str, float]:
    """One ``memfs mount`` of ``spec`` (returns when ready), the walks cold then warm,
    ``memfs umount``: seconds of each."""
    target = tmp / f"mnt-{index}"
    target.mkdir()
    env = dict(os.environ, MEMFS_HOME=str(tmp / "home"))
    memfs = [sys.executable, "-P", "-m", "memfs.cli.mounting"]
    times: dict[str, float] = {}
    start = time.perf_counter()
    subprocess.run([*memfs, "mount", str(target), "--store", spec, "--database", database],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    times["mount"] = time.perf_counter() - start
    try:
        (directory,) = os.listdir(target)
        quoted = shlex.quote(str(target / directory))
        for phase in ("cold", "warm"):
            for name, command in WALKS.items():
                times[f"{name} {phase}"] = _timed(command.format(d=quoted))
    finally:
        subprocess.run([*memfs, "umount", str(target)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    return times


def bench_mounts(tmp: Path, database: str, store: str, runs: int) -> dict[str, Any]:
    """The mount benchmark: a mount of the store now and an as-of mount at the snapshot,
    in turn, ``runs`` times each; the median seconds of each step, by kind."""
    specs = {"now": store, "as-of": f"{store}@half-way"}
    samples: dict[str, list[dict[str, float]]] = {kind: [] for kind in specs}
    index = 0
    for run in range(runs):
        # Turn about (now first, then as-of first), so that a drift of the machine's
        # load favours neither.
        order = list(specs.items()) if run % 2 == 0 else list(reversed(specs.items()))
        for kind, spec in order:
            print(f"  mount {kind}, run {run + 1} of {runs}", file=sys.stderr)
            samples[kind].append(_mount_once(tmp, database, spec, index))
            index += 1
    return {
        kind: {step: round(statistics.median(s[step] for s in runs_of), 3)
               for step in runs_of[0]}
        for kind, runs_of in samples.items()
    }


def print_mounts(mounted: dict[str, dict[str, float]]) -> None:
    now, past = mounted["now"], mounted["as-of"]
    print()
    print(f"{'mount (median s)':<24}{'now':>10}{'as-of':>10}{'ratio':>9}")
    for step in now:
        ratio = past[step] / now[step] if now[step] else float("nan")
        print(f"{step:<24}{now[step]:>10.3f}{past[step]:>10.3f}{ratio:>8.2f}x")
    walk = [step for step in now if step != "mount"]
    total_now = sum(now[s] for s in walk)
    total_past = sum(past[s] for s in walk)
    print(f"{'all walks':<24}{total_now:>10.3f}{total_past:>10.3f}"
          f"{total_past / total_now:>8.2f}x (goal <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mount-runs", type=int, default=3)
    parser.add_argument("--no-mount", action="store_true", help="skip the mount benchmark")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memfs-bench-asof-") as tmp:
        engine = Engine(f"sqlite:///{tmp}/bench.db")
        try:
            print(f"building {args.memories} memories, ~{args.versions} versions", file=sys.stderr)
            store_id = build(engine, args.memories, args.versions)
            history = engine.history
            now_ms, now_count = median_ms(
                lambda: every_page(
                    lambda c: engine.memories.list(store_id, limit=PAGE, cursor=c)
                ),
                args.runs,
            )
            snap_ms, snap_count = median_ms(
                lambda: every_page(
                    lambda c: history.list(store_id, "half-way", limit=PAGE, cursor=c)
                ),
                args.runs,
            )
            asof_now_ms, asof_now_count = median_ms(
                lambda: every_page(lambda c: history.list(store_id, "now", limit=PAGE, cursor=c)),
                args.runs,
            )
            assert asof_now_count == now_count, (asof_now_count, now_count)
            depth_now_ms, _ = median_ms(
                lambda: engine.memories.list(store_id, depth=1, limit=PAGE), args.runs
            )
            depth_snap_ms, _ = median_ms(
                lambda: history.list(store_id, "half-way", depth=1, limit=PAGE), args.runs
            )
            names = iter(range(10**6))
            create_ms, _ = median_ms(
                lambda: engine.for_caller(actor=ACTOR).snapshots.create(
                    store_id, f"bench-{next(names)}"
                ),
                args.runs,
            )
            versions = engine.statistics()["versions"]
            store_name = engine.stores.get(store_id).name
        finally:
            engine.close()
        mounted = (
            None if args.no_mount
            else bench_mounts(Path(tmp), f"sqlite:///{tmp}/bench.db", store_name, args.mount_runs)
        )
    figures = {
        "memories_now": now_count,
        "memories_at_snapshot": snap_count,
        "versions": versions,
        "list_now_ms": round(now_ms, 1),
        "list_at_snapshot_ms": round(snap_ms, 1),
        "list_at_now_ms": round(asof_now_ms, 1),
        "depth1_page_now_ms": round(depth_now_ms, 2),
        "depth1_page_at_snapshot_ms": round(depth_snap_ms, 2),
        "snapshot_create_ms": round(create_ms, 2),
        "ratio_snapshot_vs_now": round(snap_ms / now_ms, 2),
        "ratio_at_now_vs_now": round(asof_now_ms / now_ms, 2),
    }
    print(f"store: {now_count} memories now, {snap_count} at the snapshot, {versions} versions")
    print(f"{'listing (every page of 100)':<40}{'median ms':>12}")
    print(f"{'now (memories.list)':<40}{now_ms:>12.1f}")
    print(f"{'as of the snapshot (history.list)':<40}{snap_ms:>12.1f}")
    print(f"{'as of now (history.list)':<40}{asof_now_ms:>12.1f}")
    print(f"{'first page, depth=1, now':<40}{depth_now_ms:>12.2f}")
    print(f"{'first page, depth=1, as of snapshot':<40}{depth_snap_ms:>12.2f}")
    print(f"{'snapshot create':<40}{create_ms:>12.2f}")
    print(
        f"ratio as-of/now: {figures['ratio_snapshot_vs_now']}x at the snapshot, "
        f"{figures['ratio_at_now_vs_now']}x at now (goal <= 1.5x)"
    )
    if mounted is not None:
        figures["mount"] = mounted
        print_mounts(mounted)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
