"""Prometheus metrics of memfs: every family, defined once, with its unit in its name.

The only module importing ``prometheus_client`` (tests/test_layers.py). Families follow
the Prometheus naming conventions: ``memfs_`` prefix, base units (``_seconds``,
``_bytes``), ``_total`` on counters (the client adds it to the counter's name).

Where each is counted, and what it costs there:

=================================================  =====================================
family                                             counted by
=================================================  =====================================
``memfs_http_requests_total{method,route,status}``  the API's request middleware, by route
``memfs_http_request_duration_seconds{method,route}``  template (``/v1/memory_stores/{…}``)
``memfs_store_write_transactions_total{outcome}``  the store's write transaction, through
``memfs_store_write_transaction_duration_seconds``  ``Engine.observe_writes`` (a server, a mount)
``memfs_fuse_requests_total{operation,errno}``     the FUSE handler decorator (``OK`` or
``memfs_fuse_request_duration_seconds{operation}``  the errno's name)
``memfs_mount_commits_total{operation}``           a backend write of a mount
``memfs_fuse_invalidations_total{kind}``           the kernel-notice thread
``memfs_mount_conflicts_total``,                   :data:`MOUNT_STATE`, set by the daemon's
``memfs_mount_merges_total``,
``memfs_mount_rejected_writes_total``,
``memfs_mount_outbox_depth``,
``memfs_mount_outbox_oldest_age_seconds``,         status refresh (every 0.25 s) from its
``memfs_mount_cache_hits_total``,                  status record: no cost on a request
``memfs_mount_cache_misses_total``,
``memfs_mount_cache_size_bytes``
``memfs_change_feed_seq{store_id}``,               :data:`SERVER_STATE`, read from the
``memfs_database_size_bytes``,                     database when scraped
``memfs_search_embedding_queue_depth``,
``memfs_dreams{status}``
=================================================  =====================================

On a hot path a family costs one dict lookup of the labelled child
(:func:`http_request` caches them) and the client's own counter increment or histogram
observation (a ``threading.Lock`` each): no I/O, no await. The FUSE families, counted
at every request of a mount, are plain tallies turned into families when scraped
(:class:`FuseRequests`, a quarter of that cost).
Label values are bounded: route templates (never a raw path), operation names, errno
names, store ids; never a memory path, content or credential.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

__all__ = [
    "CONTENT_TYPE",
    "FUSE_INVALIDATIONS",
    "FUSE_REQUESTS",
    "MOUNT_COMMITS",
    "MOUNT_STATE",
    "SERVER_STATE",
    "WRITE_TRANSACTIONS",
    "WRITE_TRANSACTION_DURATION",
    "write_transaction",
    "FuseRequests",
    "MountState",
    "ServerSnapshot",
    "ServerState",
    "fuse_request",
    "http_request",
    "render",
    "serve_http",
]

# No `_created` series beside each counter and histogram: they double the exposition
# and no dashboard of ours reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

CONTENT_TYPE = CONTENT_TYPE_LATEST  # the text exposition format (prometheus-client's newest)

# Latency buckets in seconds: a FUSE request or a write transaction takes 50 µs to a
# few ms; an HTTP request up to a long poll of the change feed (30 s).
_FAST_BUCKETS_S = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0,
)
# The ``le`` label of each of them, as the client writes it, and the +Inf bucket's.
_FAST_BUCKET_LABELS = (
    *(floatToGoString(b) for b in _FAST_BUCKETS_S),  # type: ignore[no-untyped-call]
    "+Inf",
)
_HTTP_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0)

HTTP_REQUESTS = Counter(
    "memfs_http_requests", "HTTP requests answered by memfs serve, by route template and "
    "status code.", ["method", "route", "status"],
)
HTTP_REQUEST_DURATION = Histogram(
    "memfs_http_request_duration_seconds", "Time from a request's arrival to the end of "
    "its response, by route template.", ["method", "route"], buckets=_HTTP_BUCKETS_S,
)
WRITE_TRANSACTIONS = Counter(
    "memfs_store_write_transactions", "Write transactions of this process on the store "
    "database, by outcome (committed or failed).", ["outcome"],
)
WRITE_TRANSACTION_DURATION = Histogram(
    "memfs_store_write_transaction_duration_seconds", "Time a write transaction held "
    "this process's turn to write, waiting for the database lock included.",
    buckets=_FAST_BUCKETS_S,
)
MOUNT_COMMITS = Counter(
    "memfs_mount_commits", "Writes this mount made to its store (embedded: committed; "
    "remote: sent or queued in the outbox), by operation.", ["operation"],
)
FUSE_INVALIDATIONS = Counter(
    "memfs_fuse_invalidations", "Kernel cache invalidations sent, by kind (entry, "
    "inode).", ["kind"],
)

_http_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}


def fuse_request(operation: str, errno_name: str, duration_s: float) -> None:
    """Counts one FUSE request of ``operation`` answered with ``errno_name`` (``OK``
    when none) after ``duration_s`` seconds (:data:`FUSE_REQUESTS`)."""
    FUSE_REQUESTS.count(operation, errno_name, duration_s)


def write_transaction(committed: bool, duration_s: float) -> None:
    """Counts one write transaction on the store database (``committed`` or failed)
    that held this process's turn to write for ``duration_s`` seconds: the observer a
    server or mount gives :meth:`memfs.store.Engine.observe_writes`."""
    WRITE_TRANSACTIONS.labels("committed" if committed else "failed").inc()
    WRITE_TRANSACTION_DURATION.observe(duration_s)


def http_request(method: str, route: str, status: int, duration_s: float) -> None:
    """Counts one HTTP request: ``route`` is its route template (``unmatched`` when no
    route took it), ``status`` the response's status code, ``duration_s`` in seconds."""
    key = (method, route, str(status))
    children = _http_children.get(key)
    if children is None:
        children = (HTTP_REQUESTS.labels(method, route, str(status)),
                    HTTP_REQUEST_DURATION.labels(method, route))
        _http_children[key] = children
    children[0].inc()
    children[1].observe(duration_s)


class MountState(Collector):
    """The mount's families that are snapshots of its state, set by the daemon's status
    refresh with :meth:`update` and read when scraped (none before the first update)."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self._lock = threading.Lock()

    def update(self, **values: float) -> None:
        """Sets ``outbox_depth``, ``outbox_oldest_age_s``, ``cache_hits``,
        ``cache_misses``, ``cache_size_bytes``, and the counts since the mount started
        ``conflicts``, ``merges``, ``rejected_writes`` (any subset)."""
        with self._lock:
            self.values.update(values)

    def collect(self) -> Iterator[Any]:
        with self._lock:
            values = dict(self.values)
        if not values:
            return
        yield GaugeMetricFamily(
            "memfs_mount_outbox_depth", "Writes accepted by a remote mount and not yet "
            "confirmed by its server.", value=values.get("outbox_depth", 0),
        )
        yield GaugeMetricFamily(
            "memfs_mount_outbox_oldest_age_seconds", "How long the oldest unconfirmed "
            "write has waited (0 when none).", value=values.get("outbox_oldest_age_s", 0),
        )
        yield CounterMetricFamily(
            "memfs_mount_cache_hits", "Reads of content found in the mount's memory cache.",
            value=values.get("cache_hits", 0),
        )
        yield CounterMetricFamily(
            "memfs_mount_cache_misses", "Reads of content the mount had to fetch.",
            value=values.get("cache_misses", 0),
        )
        yield GaugeMetricFamily(
            "memfs_mount_cache_size_bytes", "Content bytes in the mount's memory cache.",
            value=values.get("cache_size_bytes", 0),
        )
        yield CounterMetricFamily(
            "memfs_mount_conflicts", "Saves kept as a conflict copy (both contents kept).",
            value=values.get("conflicts", 0),
        )
        yield CounterMetricFamily(
            "memfs_mount_merges", "Saves merged three-way with a change made elsewhere.",
            value=values.get("merges", 0),
        )
        yield CounterMetricFamily(
            "memfs_mount_rejected_writes", "Writes refused at close (their bytes kept "
            "under rejected/).", value=values.get("rejected_writes", 0),
        )


@dataclass(frozen=True)
class ServerSnapshot:
    """What :data:`SERVER_STATE` reads from the database when scraped.

    Attributes:
        feed_seq: the newest change-feed seq of each store, by store id.
        database_size_bytes: the database's size on disk (SQLite: file and WAL).
        embedding_queue_depth: live memories waiting for their vector (0 without a
            configured model: nothing is embedded then, so nothing waits).
        dreams_by_status: how many dreams are in each status (SPEC §11), every status.
    """

    feed_seq: Mapping[str, int]
    database_size_bytes: int
    embedding_queue_depth: int
    dreams_by_status: Mapping[str, int]


class ServerState(Collector):
    """The server's families read from the database when scraped (from the scrape's
    worker thread), through the reader :meth:`provide` set (none before)."""

    def __init__(self) -> None:
        self.read: Callable[[], ServerSnapshot] | None = None

    def provide(self, read: Callable[[], ServerSnapshot] | None) -> None:
        """Sets (None: clears) the function that reads the snapshot."""
        self.read = read

    def collect(self) -> Iterator[Any]:
        if self.read is None:
            return
        snapshot = self.read()
        seq = GaugeMetricFamily(
            "memfs_change_feed_seq", "The newest change-feed seq of a store (a follower "
            "behind it by this much has changes to apply).", labels=["store_id"],
        )
        for store_id, value in sorted(snapshot.feed_seq.items()):
            seq.add_metric([store_id], value)
        yield seq
        yield GaugeMetricFamily(
            "memfs_database_size_bytes", "Size of the store database on disk.",
            value=snapshot.database_size_bytes,
        )
        yield GaugeMetricFamily(
            "memfs_search_embedding_queue_depth", "Live memories waiting for their "
            "semantic-search vector (0 without an embedding model).",
            value=snapshot.embedding_queue_depth,
        )
        dreams = GaugeMetricFamily(
            "memfs_dreams", "Dreams in each status (pending, running, completed, failed, "
            "canceled).", labels=["status"],
        )
        for status, count in sorted(snapshot.dreams_by_status.items()):
            dreams.add_metric([status], count)
        yield dreams


class FuseRequests(Collector):
    """``memfs_fuse_requests_total{operation,errno}`` and
    ``memfs_fuse_request_duration_seconds{operation}`` (buckets ``_FAST_BUCKETS_S``),
    tallied in plain dicts and lists and turned into families when scraped.

    A mount answers every FUSE request through :meth:`count` (`find` over 10,000 files
    sends 224): two dict lookups, a bisection and three additions, about 0.3 µs where
    the client's labelled counter and histogram took 1.2 µs with their locks. Counted
    from one thread only (the daemon's event loop, where handlers run); a scrape from
    another thread copies the tallies first and may miss the request being counted.
    """

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], int] = {}
        # operation → requests per bucket (the last one +Inf), then the sum of seconds
        self._durations: dict[str, list[float]] = {}

    def count(self, operation: str, errno_name: str, duration_s: float) -> None:
        """One request of ``operation`` answered with ``errno_name`` in ``duration_s``."""
        key = (operation, errno_name)
        answers = self._answers
        answers[key] = answers.get(key, 0) + 1
        tally = self._durations.get(operation)
        if tally is None:
            tally = self._durations[operation] = [0.0] * (len(_FAST_BUCKETS_S) + 2)
        tally[bisect.bisect_left(_FAST_BUCKETS_S, duration_s)] += 1
        tally[-1] += duration_s

    def collect(self) -> Iterator[Any]:
        answers = CounterMetricFamily(
            "memfs_fuse_requests", "FUSE requests answered by this mount, by operation "
            "and errno (OK: no error).", labels=["operation", "errno"],
        )
        for (operation, errno_name), count in sorted(list(self._answers.items())):
            answers.add_metric([operation, errno_name], count)
        yield answers
        durations = HistogramMetricFamily(
            "memfs_fuse_request_duration_seconds", "Time a FUSE request handler took, by "
            "operation.", labels=["operation"],
        )
        for operation, tally in sorted(list(self._durations.items())):
            counts = list(tally)
            cumulative = list(itertools.accumulate(counts[:-1]))
            durations.add_metric(
                [operation], list(zip(_FAST_BUCKET_LABELS, cumulative, strict=True)),
                sum_value=counts[-1],
            )
        yield durations


FUSE_REQUESTS = FuseRequests()
MOUNT_STATE = MountState()
SERVER_STATE = ServerState()
REGISTRY.register(FUSE_REQUESTS)
REGISTRY.register(MOUNT_STATE)
REGISTRY.register(SERVER_STATE)


def render() -> bytes:
    """The text exposition of every family of this process (``Content-Type``:
    :data:`CONTENT_TYPE`)."""
    return generate_latest(REGISTRY)


def serve_http(port: int, host: str = "127.0.0.1") -> int:
    """Serves :func:`render` at ``http://HOST:PORT/metrics`` from a daemon thread (a
    mount daemon's ``--metrics-port``). Returns the port (``port`` 0 picks a free one).

    Raises:
        OSError: the port is in use or may not be bound.
    """
    server, _thread = start_http_server(port, addr=host, registry=REGISTRY)
    return int(server.server_port)

