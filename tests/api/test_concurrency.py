"""Two API servers on one database writing the same store: no lost update (SPEC §2).

Each worker thread has its own SDK client, bound to one of the two ``memfs serve``
processes, and increments one shared counter memory with read-modify-write under a
``content_sha256`` precondition, retrying on 409. If any update were lost, the final
count or the chain of versions would show it.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

import anthropic

if TYPE_CHECKING:
    from tests.api.conftest import Server

WORKERS_PER_SERVER = 3
INCREMENTS_PER_WORKER = 8


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_no_lost_update_across_two_servers(server: Server, second_url: str, store: Any) -> None:
    counter = server.client().beta.memory_stores.memories.create(
        store.id, path="/counter.md", content="0"
    )
    errors: list[BaseException] = []
    conflicts = [0]
    lock = threading.Lock()

    def worker(url: str) -> None:
        client = anthropic.Anthropic(api_key=server.admin_secret, base_url=url, timeout=30)
        memories = client.beta.memory_stores.memories
        try:
            done = 0
            while done < INCREMENTS_PER_WORKER:
                current = memories.retrieve(counter.id, memory_store_id=store.id)
                assert current.content is not None
                try:
                    memories.update(
                        counter.id,
                        memory_store_id=store.id,
                        content=str(int(current.content) + 1),
                        precondition={
                            "type": "content_sha256",
                            "content_sha256": _sha(current.content),
                        },
                    )
                except anthropic.ConflictError as exc:
                    if exc.type != "memory_precondition_failed_error":
                        raise  # any other conflict fails the test via `errors`
                    with lock:
                        conflicts[0] += 1
                    continue
                done += 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            client.close()

    threads = [
        threading.Thread(target=worker, args=(url,), name=f"writer-{i}-{url}")
        for url in (server.url, second_url)
        for i in range(WORKERS_PER_SERVER)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer did not finish"
    assert errors == []
    total = 2 * WORKERS_PER_SERVER * INCREMENTS_PER_WORKER
    admin = server.client().beta.memory_stores
    assert admin.memories.retrieve(counter.id, memory_store_id=store.id).content == str(total)
    history = [
        v.content for v in admin.memory_versions.list(store.id, memory_id=counter.id, view="full")
    ]
    assert history == [str(n) for n in range(total, -1, -1)]  # every step, once, in order
    assert conflicts[0] > 0, "the writers never raced; the test proved nothing"


def test_concurrent_creates_of_one_path_have_one_winner(
    server: Server, second_url: str, store: Any
) -> None:
    barrier = threading.Barrier(6)
    outcomes: list[str] = []
    lock = threading.Lock()

    def create(url: str, n: int) -> None:
        with anthropic.Anthropic(api_key=server.admin_secret, base_url=url, timeout=30) as client:
            barrier.wait(timeout=30)
            try:
                client.beta.memory_stores.memories.create(store.id, path="/race.md", content=str(n))
                outcome = "created"
            except anthropic.ConflictError as exc:
                outcome = exc.type or "?"
        with lock:
            outcomes.append(outcome)

    threads = [
        threading.Thread(target=create, args=(url, n), name=f"creator-{n}")
        for n, url in enumerate([server.url, second_url] * 3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["created"] + ["memory_path_conflict_error"] * 5
    listed = list(server.client().beta.memory_stores.memories.list(store.id))
    assert [m.path for m in listed] == ["/race.md"]
