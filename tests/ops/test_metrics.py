"""Prometheus metrics (README "Metrics"): ``memfs serve`` at ``/metrics`` and a mount
daemon at ``--metrics-port`` and through ``memfs status --prometheus``, scraped for
real; the Grafana dashboard in ``deploy/`` names only families they expose."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx
from _support.cli import REPO_ROOT, memfs_env, run_memfs
from _support.mount import Mounter, run_python, wait_until
from _support.serve import ServeProcess

from memfs.core.model import MemoryStore, Scope
from memfs.store import Engine

DASHBOARD = REPO_ROOT / "deploy" / "grafana-memfs.json"

SERVER_FAMILIES = {
    "memfs_http_requests": "counter",
    "memfs_http_request_duration_seconds": "histogram",
    "memfs_store_write_transactions": "counter",
    "memfs_store_write_transaction_duration_seconds": "histogram",
    "memfs_change_feed_seq": "gauge",
    "memfs_database_size_bytes": "gauge",
    "memfs_search_embedding_queue_depth": "gauge",
    "memfs_dreams": "gauge",
}
MOUNT_FAMILIES = {
    "memfs_fuse_requests": "counter",
    "memfs_fuse_request_duration_seconds": "histogram",
    "memfs_mount_commits": "counter",
    "memfs_mount_conflicts": "counter",
    "memfs_mount_merges": "counter",
    "memfs_mount_rejected_writes": "counter",
    "memfs_fuse_invalidations": "counter",
    "memfs_mount_outbox_depth": "gauge",
    "memfs_mount_outbox_oldest_age_seconds": "gauge",
    "memfs_mount_cache_hits": "counter",
    "memfs_mount_cache_misses": "counter",
    "memfs_mount_cache_size_bytes": "gauge",
    "memfs_store_write_transactions": "counter",
}


def families(exposition: str) -> dict[str, str]:
    """``{family: type}`` of the ``# TYPE`` lines of a text exposition (a counter's
    family without the ``_total`` its samples and newer TYPE lines carry)."""
    found = {}
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            found[name.removesuffix("_total") if kind == "counter" else name] = kind
    return found


def sample(exposition: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name{labels}`` (labels in any order; others allowed)."""
    for line in exposition.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.rsplit(" ", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_server_exposes_its_families(
    store_engine: Engine, make_store: Callable[..., MemoryStore], memfs_home: Path,
    tmp_path: Path,
) -> None:
    store = make_store("Notes", {"/a.md": "a\n"})
    _, secret = store_engine.api_keys.create("metrics", [Scope.ADMIN])
    # A canceled dream (final: the server's dream job leaves it as it is).
    dream = store_engine.dreams.create(store.id, session_ids=None, model_id="memfs-consolidate")
    store_engine.dreams.cancel(dream.id)
    env = {k: v for k, v in memfs_env(memfs_home).items() if k != "MEMFS_SEARCH_MODEL_DIR"}
    server = ServeProcess(memfs_home / "memfs.db", tmp_path, env=env)
    try:
        headers = {"Authorization": f"Bearer {secret}"}
        with httpx.Client(base_url=server.url, headers=headers) as client:
            listed = client.get(f"/v1/memory_stores/{store.id}/memories")
            assert listed.status_code == 200
            assert client.get("/v1/memory_stores/memstore_nope").status_code == 404
            assert client.get("/no/such/route").status_code == 404
            assert client.get("/console/sign-in").status_code == 200
            assert client.get("/console/no/such/page").status_code == 404
            scraped = httpx.get(f"{server.url}/metrics")  # no credential needed
    finally:
        assert server.stop() == 0
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=")
    text = scraped.text
    assert {k: families(text).get(k) for k in SERVER_FAMILIES} == SERVER_FAMILIES
    route = "/v1/memory_stores/{memory_store_id}/memories"
    assert sample(text, "memfs_http_requests_total", route=route, status="200") == 1
    assert sample(text, "memfs_http_requests_total", route="unmatched", status="404") == 1
    assert sample(text, "memfs_http_request_duration_seconds_count", route=route) == 1
    assert store.id not in "".join(re.findall(r'route="[^"]*"', text))  # templates only
    # The console's routes carry their /console prefix; its own 404s the prefix alone.
    assert sample(text, "memfs_http_requests_total", route="/console/sign-in",
                  status="200") == 1
    assert sample(text, "memfs_http_requests_total", route="/console", status="404") == 1
    assert sample(text, "memfs_dreams", status="canceled") == 1
    assert sample(text, "memfs_dreams", status="pending") == 0
    # No embedding model configured: nothing waits for a vector (the queue does not grow).
    assert sample(text, "memfs_search_embedding_queue_depth") == 0
    assert sample(text, "memfs_change_feed_seq", store_id=store.id) == 1
    assert (sample(text, "memfs_database_size_bytes") or 0) > 0
    assert secret not in text


def test_a_mount_exposes_its_families(
    mounter: Mounter, make_store: Callable[..., MemoryStore], memfs_home: Path
) -> None:
    make_store("Notes", {"/a.md": "a\n"})
    mount = mounter.mount("Notes", extra_args=("--metrics-port", "0"))
    run_python(f"""
        import pathlib
        notes = pathlib.Path({str(mount / "notes")!r})
        (notes / "b.md").write_text("b\\n")
        assert (notes / "a.md").read_text() == "a\\n"
        assert not (notes / "missing.md").exists()
    """)
    url = wait_until(lambda: mount.status.get("metrics_url"), "the metrics URL")
    live = httpx.get(url).text
    assert {k: families(live).get(k) for k in MOUNT_FAMILIES} == MOUNT_FAMILIES
    assert (sample(live, "memfs_fuse_requests_total", operation="lookup", errno="ENOENT")
            or 0) >= 1
    assert (sample(live, "memfs_fuse_requests_total", operation="create", errno="OK")
            or 0) >= 1
    assert (sample(live, "memfs_mount_commits_total", operation="create") or 0) >= 1
    assert sample(live, "memfs_mount_outbox_depth") == 0

    def printed() -> str | None:
        result = run_memfs("status", str(mount.path), "--prometheus", env=memfs_env(memfs_home))
        if result.returncode != 0 or "memfs_mount_commits_total" not in result.stdout:
            return None
        return result.stdout

    text = wait_until(printed, "memfs status --prometheus")
    assert {k: families(text).get(k) for k in MOUNT_FAMILIES} == MOUNT_FAMILIES

    # The dashboard names only families these two expose.
    known = set(families(live)) | set(SERVER_FAMILIES)
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    assert len(expressions) >= 10
    for expression in expressions:
        names = re.findall(r"\bmemfs_[a-z_]+", expression)
        assert names, expression
        for name in names:
            family = re.sub(r"_(total|bucket|sum|count)$", "", name)
            assert family in known, f"{name} in {expression!r} is no family memfs exposes"


def test_the_fuse_tallies_expose_what_the_client_s_counter_and_histogram_would() -> None:
    """FuseRequests keeps plain tallies (a mount counts every request); scraped, they
    are the samples prometheus-client's own labelled Counter and Histogram give."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    from memfs import metrics

    ours = metrics.FuseRequests()
    registry = CollectorRegistry()
    theirs_count = Counter(
        "memfs_fuse_requests", "FUSE requests answered by this mount, by operation and "
        "errno (OK: no error).", ["operation", "errno"], registry=registry,
    )
    theirs_time = Histogram(
        "memfs_fuse_request_duration_seconds", "Time a FUSE request handler took, by "
        "operation.", ["operation"], buckets=metrics._FAST_BUCKETS_S, registry=registry,
    )
    requests = [("opendir", "OK", 0.00001), ("opendir", "OK", 0.00025),
                ("lookup", "ENOENT", 0.0003), ("lookup", "OK", 7.0),
                ("lookup", "ENOENT", 0.05)]
    for operation, answered, seconds in requests:
        ours.count(operation, answered, seconds)
        theirs_count.labels(operation, answered).inc()
        theirs_time.labels(operation).observe(seconds)
    mine = CollectorRegistry()
    mine.register(ours)

    def samples(exposition: bytes) -> list[str]:
        return sorted(line for line in exposition.decode().splitlines()
                      if line and not line.startswith("#") and "_created" not in line)

    assert samples(generate_latest(mine)) == samples(generate_latest(registry))
    assert sample(generate_latest(mine).decode(), "memfs_fuse_requests_total",
                  operation="lookup", errno="ENOENT") == 2
