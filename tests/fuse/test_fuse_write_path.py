"""What a close costs: the mount's own commits come back to it through the
change feed, and must not make it fetch the memory they wrote, nor read the feed twice
when it next catches up.

``cp`` creates each file with ``O_EXCL`` (committed at once, an empty version), then
writes and closes it (the content version). By the time the feed delivers the entry of
the empty version, the file already shows the newer one: without knowing its own
versions the mount fetched every copied memory back from the store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from _support.mount import Mount, run, wait_until

from memfs.backend.embedded import EmbeddedBackend
from memfs.core.model import MemoryStore
from memfs.store import Engine

FILES = 20


def _fetches(mount: Mount) -> int | None:
    kernel: dict[str, Any] | None = mount.status.get("kernel_cache")
    return None if kernel is None else int(kernel["change_fetches"])


def test_cp_of_new_files_fetches_nothing_back(
    mount: Mount, store_engine: Engine, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for index in range(FILES):
        (source / f"note-{index}.md").write_text(f"note {index}\n")
    run("cp", "-r", source, mount / "notes" / "copied")
    store_id = mount.status["stores"][0]["id"]
    copied = {m.path for m in store_engine.memories.all(store_id) if m.path.startswith("/copied/")}
    assert len(copied) == FILES
    # A change made elsewhere needs one fetch. The feed is applied in order, so once
    # the status counts it, every entry of the copy before it was applied too.
    store_engine.memories.create(store_id, "/elsewhere.md", "from the API\n")
    fetches = wait_until(lambda: _fetches(mount), "the change made elsewhere in the status")
    assert fetches == 1, f"{fetches - 1} of the mount's own writes were fetched back"
    assert (mount / "notes" / "elsewhere.md").read_text() == "from the API\n"


class _CountingEngine:
    """The engine, counting the feed reads a backend makes through it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._engine, name)
        if name == "feed":
            return _CountingFeed(value, self)
        if name == "for_caller":
            return lambda **binding: _CountingCaller(value(**binding), self)
        return value


class _CountingFeed:
    """A feed facade whose reads count on ``counter``."""

    def __init__(self, feed: Any, counter: _CountingEngine) -> None:
        self._feed = feed
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._feed, name)
        if name in ("changes_since", "last_seq"):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self._counter.reads += 1
                return value(*args, **kwargs)

            return counted
        return value


class _CountingCaller:
    """A caller whose feed reads count on ``counter``."""

    def __init__(self, caller: Any, counter: _CountingEngine) -> None:
        self._caller = caller
        self.feed = _CountingFeed(caller.feed, counter)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._caller, name)


async def test_a_catch_up_after_changes_reads_the_feed_once(
    store_engine: Engine, make_store: Callable[..., MemoryStore]
) -> None:
    """An open or a lookup miss asks for the change counter, then applies what is new:
    one read of the feed, not two (the counter read keeps the batch it saw)."""
    store = make_store()
    counting = _CountingEngine(store_engine)
    backend = EmbeddedBackend(counting)  # type: ignore[arg-type]
    assert await backend.changes_since(store.id, 0) == []
    first = store_engine.memories.create(store.id, "/a.md", "a\n")
    counting.reads = 0
    newest = await backend.change_counter(store.id)
    batch = await backend.changes_since(store.id, 0)
    assert counting.reads == 1
    assert [c.memory_id for c in batch] == [first.id]
    assert newest == batch[-1].seq
    # Nothing new: the counter is one read and says so.
    assert await backend.change_counter(store.id) == newest
    # A change made after the kept batch: the next counter read sees it (close-to-open).
    second = store_engine.memories.create(store.id, "/b.md", "b\n")
    assert await backend.change_counter(store.id) > newest
    later = await backend.changes_since(store.id, newest)
    assert [c.memory_id for c in later] == [second.id]
