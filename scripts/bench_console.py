"""The console's pages timed server-side on a store of N memories (default 10,000):
each page is requested in-process (no network) REPEATS times after a warm-up; the
median and worst times are printed, and pages over the 100 ms goal are flagged.

History (SPEC §10): a snapshot of the seeded store, then 20 edits, 5 new memories and 5
deletions after it; a fork with 10 edits of its own. Dreams (SPEC §11): one
``memfs-consolidate`` dream run to completion over the store. The exports are
downloads of the whole store, timed but not held to the page goal."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _support.console import ConsoleClient

from memfs.api.app import create_app
from memfs.console import create_console
from memfs.core.config import database_url
from memfs.core.dreams import OutputBehavior
from memfs.core.model import Actor, DeleteMode, Scope
from memfs.dreams import run_dream
from memfs.store import Engine

GOAL_MS = 100.0
REPEATS = 15


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as home:
        engine = Engine(database_url(str(Path(home) / "bench.db")), memory_limit=count + 10)
        store = engine.stores.create("bench")
        writer = engine.for_caller(actor=Actor.api_key("apikey_bench"))
        started = time.monotonic()
        first = None
        for i in range(count):
            memory = writer.memories.create(
                store.id, f"/d{i % 100:02d}/note-{i:05d}.md",
                f"note {i} about topic {i % 37} and the walrus\n" * 4,
            )
            first = first or memory
        assert first is not None
        for n in range(3):
            writer.memories.update(store.id, first.id, content=f"edited {n}\n")
        print(f"seeded {count} memories in {time.monotonic() - started:.1f} s")
        versions = engine.versions.list(store.id, memory_id=first.id).items
        engine.snapshots.create(store.id, "seeded")
        everything = engine.memories.all(store.id)
        for memory in everything[100:120]:
            writer.memories.update(store.id, memory.id, content=f"changed {memory.path}\n")
        for i in range(5):
            writer.memories.create(store.id, f"/new/n{i}.md", f"new {i}\n")
        for memory in everything[200:205]:
            writer.memories.delete(store.id, memory.id, mode=DeleteMode.SOFT_DELETE)
        fork = writer.history.fork(store.id, name="bench-fork")
        for memory in engine.memories.all(fork.id)[300:310]:
            writer.memories.update(fork.id, memory.id, content=f"forked {memory.path}\n")
        started = time.monotonic()
        engine.dreams.create(store.id, session_ids=None, model_id="memfs-consolidate",
                             output_behavior=OutputBehavior.CREATE_NEW)
        claimed = engine.dreams.claim("bench")
        assert claimed is not None
        dream = run_dream(engine, claimed)
        print(f"history seeded, dream {dream.status.value} in {time.monotonic() - started:.1f} s")
        _, secret = engine.api_keys.create("bench", [Scope.ADMIN])
        base = f"/console/stores/{store.id}"
        pages = {
            "stores": "/console/",
            "tree (root)": base,
            "tree (directory, 100 memories)": base + "?prefix=/d42/",
            "search": base + "?q=walrus+topic",
            "memory": f"{base}/memories/{first.id}",
            "versions": f"{base}/memories/{first.id}/versions",
            "version": f"{base}/versions/{versions[-1].id}",
            "diff (inline)": (
                f"{base}/memories/{first.id}/diff?a={versions[-1].id}&b={versions[0].id}"
            ),
            "deleted": base + "/deleted",
            "audit trail": base + "/audit",
            "sessions and keys": "/console/credentials",
            "tree (record filter)": base + "?record_type=episodic",
            "history": base + "/history",
            "as of (root)": base + "/as-of?at=seeded",
            "as of (directory)": base + "/as-of?at=seeded&prefix=/d01/",
            "as of (memory)": f"{base}/as-of/memories/{first.id}?at=seeded",
            "store diff (inline)": base + "/diff?from=seeded&to=now",
            "store diff (side by side)": base + "/diff?from=seeded&to=now&layout=side",
            "restore plan": base + "/restore?to=seeded",
            "merge plan": f"/console/stores/{fork.id}/merge",
            "dreams": base + "/dreams",
            "dream review": f"/console/dreams/{dream.id}",
            "dream apply plan": f"/console/dreams/{dream.id}/apply",
            "import and export": base + "/transfer",
        }
        downloads = {
            "export (JSONL)": base + "/export?format=jsonl",
            "export (zip)": base + "/export?format=zip",
        }
        app = create_app(engine, mounts={"/console": create_console})
        worst_page = 0.0
        with TestClient(app) as client:
            console = ConsoleClient(client)
            console.sign_in(secret)
            print(f"{'page':34} {'median ms':>10} {'max ms':>8}")
            for name, url in {**pages, **downloads}.items():
                assert client.get(url).status_code == 200, url
                times = []
                for _ in range(REPEATS if name in pages else 3):
                    t0 = time.perf_counter()
                    response = client.get(url)
                    times.append((time.perf_counter() - t0) * 1000)
                    assert response.status_code == 200
                median = statistics.median(times)
                if name in downloads:
                    print(f"{name:34} {median:10.1f} {max(times):8.1f}  (a download)")
                    continue
                worst_page = max(worst_page, median)
                flag = "" if median < GOAL_MS else "  OVER THE 100 ms GOAL"
                print(f"{name:34} {median:10.1f} {max(times):8.1f}{flag}")
        engine.close()
        print(f"slowest page (median): {worst_page:.1f} ms; goal {GOAL_MS:.0f} ms")


if __name__ == "__main__":
    main()
